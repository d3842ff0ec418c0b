package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// A restarted herald process and a restarted cluster must find their port
// again, so each experiment picks its ports once and lets go of them. A
// port the kernel hands out for ":0" sits in the ephemeral range, where the
// next outgoing connection or test listener may take it before the process
// binds it; ports below that range are handed out only here, and never twice.
const (
	portLow  = 20000
	portHigh = 32000 // below Linux's default ephemeral range (32768-60999)
)

var (
	portsMu sync.Mutex
	ports   = map[int]bool{}
)

// freePort returns a port on 127.0.0.1 that was free when asked and that no
// other experiment of this process has been given.
func freePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 200 {
		p := portLow + rand.IntN(portHigh-portLow)
		if ports[p] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		_ = ln.Close()
		ports[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free port between %d and %d", portLow, portHigh)
}
