package bench

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// WindowCost is what a window of intake at a fixed rate cost the machine:
// the CPU of a herald process and its Postgres sessions per request, how
// busy the machine's CPUs were in all (the benchmark's own client
// included), and, where counted, the SQL each request ran. Two windows'
// costs side by side say why their latencies differ: at a busy machine's
// saturation a request waits for a CPU, and p99 measures that queue.
type WindowCost struct {
	Requests int
	// CPU and PGCPU are the process's and its sessions' CPU time per
	// request.
	CPU, PGCPU time.Duration
	// Busy is the share of the machine's CPU time spent busy (all
	// processes, every core) over the window.
	Busy float64
	SQL  SQLFigures
}

// total is the CPU time of the process and its sessions per request.
func (w WindowCost) total() time.Duration { return w.CPU + w.PGCPU }

// add sums two windows' costs, weighted by their requests.
func (w WindowCost) add(o WindowCost) WindowCost {
	n := w.Requests + o.Requests
	if n == 0 {
		return w
	}
	weigh := func(a, b time.Duration) time.Duration {
		return time.Duration((int64(a)*int64(w.Requests) + int64(b)*int64(o.Requests)) / int64(n))
	}
	return WindowCost{
		Requests: n,
		CPU:      weigh(w.CPU, o.CPU),
		PGCPU:    weigh(w.PGCPU, o.PGCPU),
		Busy:     (w.Busy*float64(w.Requests) + o.Busy*float64(o.Requests)) / float64(n),
	}
}

// machineCPU is the CPU time the machine has spent, busy and in all, from
// /proc/stat's first line (every core).
type machineCPU struct{ busy, total int64 }

func readMachineCPU() machineCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return machineCPU{}
	}
	var m machineCPU
	for i, s := range f[1:] {
		v, _ := strconv.ParseInt(s, 10, 64)
		m.total += v
		// idle and iowait (the fourth and fifth fields) are not busy.
		if i != 3 && i != 4 {
			m.busy += v
		}
	}
	return m
}

// busySince is the share of CPU time busy since an earlier reading.
func (m machineCPU) busySince(earlier machineCPU) float64 {
	if m.total <= earlier.total {
		return 0
	}
	return float64(m.busy-earlier.busy) / float64(m.total-earlier.total)
}

// costMeter measures a WindowCost: start before the window, stop after.
type costMeter struct {
	b       *bench
	cmd     *exec.Cmd
	role    string
	cpu     cpuSample
	machine machineCPU
}

func (b *bench) startCost(ctx context.Context, cmd *exec.Cmd, role string) *costMeter {
	return &costMeter{b: b, cmd: cmd, role: role, cpu: b.sampleCPU(ctx, cmd, role), machine: readMachineCPU()}
}

// stop ends the measure over requests.
func (m *costMeter) stop(ctx context.Context, requests int) WindowCost {
	busy := readMachineCPU().busySince(m.machine)
	process, sessions := m.b.sampleCPU(ctx, m.cmd, m.role).since(m.cpu)
	w := WindowCost{Requests: requests, Busy: busy}
	if requests > 0 {
		w.CPU, w.PGCPU = process/time.Duration(requests), sessions/time.Duration(requests)
	}
	return w
}

// countedOpenLoop runs an open-loop window (openLoop) and measures its
// cost, its SQL included: the statistics of what ran before are published
// first, and the window's after it.
func (b *bench) countedOpenLoop(ctx context.Context, rate float64, d time.Duration, settled bool) ([]time.Duration, int64, WindowCost, error) {
	counter := b.newSQLCounter(ctx)
	defer counter.close()
	if !settled {
		b.logf("   waiting %s for Postgres to publish the statistics of what ran before", statsFlush)
		if err := sleepCtx(ctx, statsFlush); err != nil {
			return nil, 0, WindowCost{}, err
		}
	}
	if err := counter.begin(ctx); err != nil {
		return nil, 0, WindowCost{}, err
	}
	meter := b.startCost(ctx, b.web, "web")
	lat, errs := b.openLoop(ctx, rate, d)
	cost := meter.stop(ctx, len(lat))
	b.logf("   CPU per request: web %s, its Postgres sessions %s; the machine's CPU %.0f%% busy",
		ms3(cost.CPU), ms3(cost.PGCPU), 100*cost.Busy)
	b.logf("   waiting %s for Postgres to publish the window's statistics", statsFlush)
	if err := sleepCtx(ctx, statsFlush); err != nil {
		return nil, 0, WindowCost{}, err
	}
	var err error
	cost.SQL, err = counter.end(ctx, len(lat)-int(errs), "accepted request")
	return lat, errs, cost, err
}
