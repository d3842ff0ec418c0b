package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux Herald runs on).
const clockTick = 10 * time.Millisecond

// cpuSample is the CPU time used so far by a process and by the Postgres
// sessions of one application name, keyed by backend pid.
type cpuSample struct {
	process  time.Duration
	sessions map[int]time.Duration
}

// procCPU returns the user and system CPU time a process has used, or 0
// when /proc cannot tell (not Linux, or the process is gone).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may contain spaces; fields after it are
	// counted from its closing parenthesis.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * clockTick
}

// sampleCPU reads the CPU time of a herald process and of its Postgres
// sessions (by application name). It works when Postgres runs on this
// machine, as the benchmark's own cluster does; elsewhere the session
// figures stay 0.
func (b *bench) sampleCPU(ctx context.Context, cmd *exec.Cmd, role string) cpuSample {
	s := cpuSample{sessions: map[int]time.Duration{}}
	if cmd != nil && cmd.Process != nil {
		s.process = procCPU(cmd.Process.Pid)
	}
	pids, err := sessionPIDs(ctx, b.mon, "herald-"+role, b.cfg.Database)
	if err != nil {
		return s
	}
	for _, pid := range pids {
		s.sessions[pid] = procCPU(pid)
	}
	return s
}

// since returns the CPU time used since an earlier sample by the
// process and by its Postgres sessions. Sessions that closed in between
// are missed, which the pool's long idle time makes rare.
func (s cpuSample) since(earlier cpuSample) (process, sessions time.Duration) {
	for pid, d := range s.sessions {
		sessions += d - earlier.sessions[pid]
	}
	return s.process - earlier.process, sessions
}

// total is the CPU time the process and its sessions used since an
// earlier sample, together.
func (s cpuSample) total(earlier cpuSample) time.Duration {
	process, sessions := s.since(earlier)
	return process + sessions
}

// loadAverage returns the one-minute load average, to show how busy the
// machine was (the figures are only comparable at similar load).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// perUnit formats CPU time per unit of work in milliseconds.
func perUnit(d time.Duration, n int) string {
	if n == 0 {
		return "?"
	}
	return fmt.Sprintf("%.2fms", float64(d)/float64(n)/float64(time.Millisecond))
}
