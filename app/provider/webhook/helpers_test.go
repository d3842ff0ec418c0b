package webhook_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// trapped is a listener that records every connection it accepts, in the
// order the kernel queued them.
type trapped struct {
	l       net.Listener
	mu      sync.Mutex
	remotes []string
	arrived chan struct{}
}

// trap listens on addr and accepts (and records) whatever connects.
func trap(t *testing.T, addr string) (net.Listener, *trapped) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	tr := &trapped{l: l, arrived: make(chan struct{}, 1)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			tr.mu.Lock()
			tr.remotes = append(tr.remotes, c.RemoteAddr().String())
			tr.mu.Unlock()
			select {
			case tr.arrived <- struct{}{}:
			default:
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return l, tr
}

// requireNone asserts that nothing connected to the trap. It connects
// itself and waits until its own connection is accepted: connections are
// accepted in the order they arrived, so any earlier one would come first.
// No pause is needed, whatever the machine's speed.
func (tr *trapped) requireNone(t *testing.T) {
	t.Helper()
	c, err := net.Dial("tcp", tr.l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	mine := c.LocalAddr().String()
	for {
		tr.mu.Lock()
		got := slices.Clone(tr.remotes)
		tr.mu.Unlock()
		if slices.Contains(got, mine) {
			require.Equal(t, []string{mine}, got, "the listener accepted a connection")
			return
		}
		<-tr.arrived
	}
}

// connectRecorder is a connect hook that records every dial the guard let
// through and then aborts it, so that no packet is ever sent.
type connectRecorder struct {
	mu    sync.Mutex
	dials []string
}

var errConnectSuppressed = errors.New("test: connect suppressed")

func (r *connectRecorder) hook(network, address string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dials = append(r.dials, network+" "+address)
	return errConnectSuppressed
}

func (r *connectRecorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.dials...)
}

// fakeDNS runs a DNS server on loopback that answers every A or AAAA query
// with answer (SERVFAIL when answer is the zero Addr), and returns a
// resolver that asks only it. It stands in for an attacker's name server in
// DNS rebinding tests, and for a failing one.
func fakeDNS(t *testing.T, answer netip.Addr) (*net.Resolver, *atomic.Int32) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	var queries atomic.Int32
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := dnsAnswer(buf[:n], answer); resp != nil {
				queries.Add(1)
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	return r, &queries
}

// dnsAnswer builds the response to a one-question query: the question
// echoed and, when the type matches the address family, one record.
func dnsAnswer(q []byte, answer netip.Addr) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	end := 12
	for end < len(q) && q[end] != 0 {
		end += int(q[end]) + 1
	}
	end += 5 // root label, QTYPE, QCLASS
	if end > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[end-4 : end-2])
	var rdata []byte
	switch {
	case qtype == 1 && answer.Is4():
		a := answer.As4()
		rdata = a[:]
	case qtype == 28 && answer.Is6():
		a := answer.As16()
		rdata = a[:]
	}
	resp := append([]byte{}, q[0:2]...)
	if !answer.IsValid() {
		resp = append(resp, 0x81, 0x82, 0, 1, 0, 0, 0, 0, 0, 0) // SERVFAIL
		return append(resp, q[12:end]...)
	}
	resp = append(resp, 0x81, 0x80, 0, 1) // response, recursion desired and available; one question
	if rdata == nil {
		resp = append(resp, 0, 0, 0, 0, 0, 0)
		return append(resp, q[12:end]...)
	}
	resp = append(resp, 0, 1, 0, 0, 0, 0)
	resp = append(resp, q[12:end]...)
	resp = append(resp, 0xc0, 12) // name: pointer to the question
	resp = binary.BigEndian.AppendUint16(resp, qtype)
	resp = append(resp, 0, 1, 0, 0, 0, 60) // class IN, TTL 60
	resp = binary.BigEndian.AppendUint16(resp, uint16(len(rdata)))
	return append(resp, rdata...)
}
