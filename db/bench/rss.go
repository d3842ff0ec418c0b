package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rssSampler reads a process's resident memory once a second.
type rssSampler struct {
	stop       chan struct{}
	done       chan struct{}
	mu         sync.Mutex
	peak, last float64
}

// startRSS samples the worker's memory from now to the end of the run.
func (b *bench) startRSS(cmd *exec.Cmd) {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	b.rss = s
	pid := cmd.Process.Pid
	go func() {
		defer close(s.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if mb, ok := rssMB(pid, "VmRSS:"); ok {
				s.mu.Lock()
				s.last, s.peak = mb, max(s.peak, mb)
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// stopRSS ends the sampling and records peak and last; the kernel's own
// high-water mark (VmHWM) also counts towards the peak, so a spike between
// two samples is not missed.
func (b *bench) stopRSS() {
	s := b.rss
	if s == nil {
		return
	}
	b.rss = nil
	if b.worker != nil && b.worker.Process != nil {
		if mb, ok := rssMB(b.worker.Process.Pid, "VmHWM:"); ok {
			s.mu.Lock()
			s.peak = max(s.peak, mb)
			s.mu.Unlock()
		}
	}
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	b.res.WorkerPeakRSSMB, b.res.WorkerLastRSSMB = max(b.res.WorkerPeakRSSMB, s.peak), s.last
}

// rssMB reads one memory line (VmRSS, VmHWM) of a process from /proc.
func rssMB(pid int, field string) (float64, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024, err == nil
		}
	}
	return 0, false
}

func itoa(n int) string { return strconv.Itoa(n) }
