package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
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
	// IOStall is the share of the window in which some task waited for
	// the disk (the kernel's pressure stall information), 0 where the
	// kernel does not tell.
	IOStall float64
	// Waits counts what the process's active Postgres sessions waited on,
	// sampled every waitSample ("CPU" when running), and Samples how many
	// samples were taken.
	Waits   map[string]int
	Samples int
	// WALBytes and WALFPI are the WAL the server wrote per request, and
	// the full-page images in it: a change to a page that is the page's
	// first since the last checkpoint writes the whole page, so the more
	// distinct pages a window's inserts touch (a large index's leaves, say)
	// the more WAL each commit waits to have on disk.
	WALBytes, WALFPI float64
	// Autovacuum counts the autovacuum workers seen in the database over
	// the same samples: after mass deletes they vacuum the tables and
	// every index, and take CPU and disk from whatever runs beside them.
	Autovacuum int
	// Others counts, over the same samples, the active sessions of other
	// databases on the server: their work is in Busy, IOStall and the WAL
	// figures, which are the machine's and the server's.
	Others int
	SQL    SQLFigures
}

// waitSample is how often a window samples its sessions' wait events.
const waitSample = 100 * time.Millisecond

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
	share := func(a, b float64) float64 { return (a*float64(w.Requests) + b*float64(o.Requests)) / float64(n) }
	waits := maps.Clone(w.Waits)
	if waits == nil {
		waits = map[string]int{}
	}
	for k, v := range o.Waits {
		waits[k] += v
	}
	return WindowCost{
		Requests:   n,
		CPU:        weigh(w.CPU, o.CPU),
		PGCPU:      weigh(w.PGCPU, o.PGCPU),
		Busy:       share(w.Busy, o.Busy),
		IOStall:    share(w.IOStall, o.IOStall),
		WALBytes:   share(w.WALBytes, o.WALBytes),
		WALFPI:     share(w.WALFPI, o.WALFPI),
		Waits:      waits,
		Samples:    w.Samples + o.Samples,
		Autovacuum: w.Autovacuum + o.Autovacuum,
		Others:     w.Others + o.Others,
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

// ioStallTotal is the time, in microseconds since boot, that some task
// waited for the disk (/proc/pressure/io), and false where the kernel does
// not tell.
func ioStallTotal() (int64, bool) {
	b, err := os.ReadFile("/proc/pressure/io")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "total="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// costMeter measures a WindowCost: start before the window, stop after.
type costMeter struct {
	b       *bench
	cmd     *exec.Cmd
	role    string
	cpu     cpuSample
	machine machineCPU
	start   time.Time
	io      int64
	ioOK    bool
	// walBytes and walFPI are the server's WAL counters at the start,
	// walOK whether they could be read.
	walBytes, walFPI int64
	walOK            bool
	// waits is sampled until stopWaits is closed; done closes after the
	// last sample.
	waits      map[string]int
	samples    int
	autovacuum int
	others     int
	stopWaits  chan struct{}
	done       chan struct{}
}

func (b *bench) startCost(ctx context.Context, cmd *exec.Cmd, role string) *costMeter {
	m := &costMeter{b: b, cmd: cmd, role: role, cpu: b.sampleCPU(ctx, cmd, role), machine: readMachineCPU(),
		start: time.Now(), waits: map[string]int{}, stopWaits: make(chan struct{}), done: make(chan struct{})}
	m.io, m.ioOK = ioStallTotal()
	var err error
	m.walBytes, m.walFPI, err = readWAL(ctx, b.mon)
	m.walOK = err == nil
	go m.sampleWaits(ctx)
	return m
}

// sampleWaits counts the wait events of the role's active sessions every
// waitSample on the monitor connection (whose statements the SQL counts
// leave out).
func (m *costMeter) sampleWaits(ctx context.Context) {
	defer close(m.done)
	tick := time.NewTicker(waitSample)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.stopWaits:
			return
		case <-tick.C:
		}
		waits, err := readWaits(ctx, m.b.mon, "herald-"+m.role, m.b.cfg.Database)
		if err != nil {
			continue
		}
		m.samples++
		for k, n := range waits {
			m.waits[k] += n
		}
		if autovacuum, others, err := countNeighbours(ctx, m.b.mon, m.b.cfg.Database); err == nil {
			m.autovacuum += autovacuum
			m.others += others
		}
	}
}

// stop ends the measure over requests.
func (m *costMeter) stop(ctx context.Context, requests int) WindowCost {
	close(m.stopWaits)
	<-m.done
	elapsed := time.Since(m.start)
	busy := readMachineCPU().busySince(m.machine)
	process, sessions := m.b.sampleCPU(ctx, m.cmd, m.role).since(m.cpu)
	w := WindowCost{Requests: requests, Busy: busy, Waits: m.waits, Samples: m.samples, Autovacuum: m.autovacuum, Others: m.others}
	if io, ok := ioStallTotal(); ok && m.ioOK && elapsed > 0 {
		w.IOStall = float64(time.Duration(io-m.io)*time.Microsecond) / float64(elapsed)
	}
	if requests > 0 {
		w.CPU, w.PGCPU = process/time.Duration(requests), sessions/time.Duration(requests)
		if bytes, fpi, err := readWAL(ctx, m.b.mon); err == nil && m.walOK {
			w.WALBytes, w.WALFPI = float64(bytes-m.walBytes)/float64(requests), float64(fpi-m.walFPI)/float64(requests)
		}
	}
	return w
}

// perSample is a count over the window's samples as an average per sample.
func (w WindowCost) perSample(n int) float64 {
	if w.Samples == 0 {
		return 0
	}
	return float64(n) / float64(w.Samples)
}

// autovacuums is the average number of autovacuum workers per sample.
func (w WindowCost) autovacuums() float64 { return w.perSample(w.Autovacuum) }

// others is the average number of other databases' active sessions per
// sample.
func (w WindowCost) others() float64 { return w.perSample(w.Others) }

// topWaits formats the most sampled wait events, with the average number
// of sessions in each per sample.
func (w WindowCost) topWaits(n int) string {
	if w.Samples == 0 || len(w.Waits) == 0 {
		return "none sampled"
	}
	names := make([]string, 0, len(w.Waits))
	for k := range w.Waits {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if w.Waits[names[i]] != w.Waits[names[j]] {
			return w.Waits[names[i]] > w.Waits[names[j]]
		}
		return names[i] < names[j]
	})
	var parts []string
	for _, k := range names[:min(len(names), n)] {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(w.Waits[k])/float64(w.Samples)))
	}
	return strings.Join(parts, ", ")
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
	b.logf("   CPU per request: web %s, its Postgres sessions %s; the machine's CPU %.0f%% busy, some task waiting for the disk %.0f%% of the time",
		ms3(cost.CPU), ms3(cost.PGCPU), 100*cost.Busy, 100*cost.IOStall)
	b.logf("   the web's active Postgres sessions, on average per sample: %s", cost.topWaits(5))
	b.logf("   waiting %s for Postgres to publish the window's statistics", statsFlush)
	if err := sleepCtx(ctx, statsFlush); err != nil {
		return nil, 0, WindowCost{}, err
	}
	var err error
	cost.SQL, err = counter.end(ctx, len(lat)-int(errs), "accepted request")
	return lat, errs, cost, err
}

// Windows is a series of equal open-loop windows at one rate: each
// window's p99 and their cost together. A series compares two states of
// the database where one window would not: on a shared machine a single
// stall (a WAL fsync, a neighbour's burst) decides one window's p99, and
// the median of several leaves such a window out.
type Windows struct {
	Rate   float64
	Length time.Duration
	P99    []time.Duration
	Cost   WindowCost
}

// compareWindows is how many windows each side of the 10M goal's
// comparison runs.
const compareWindows = 5

// median is the middle window's p99.
func (w Windows) median() time.Duration { return percentile(w.P99, 50) }

// spread lists the windows' p99s in the order they ran, in milliseconds.
func (w Windows) spread() string { return durations(w.P99) }

// levelStart checkpoints the database and writes the system's cache to
// disk, so that windows measured after it start where other windows
// measured after it started: what earlier phases wrote is on disk, and no
// checkpoint of their writes is due.
func (b *bench) levelStart(ctx context.Context, what string) {
	if _, err := b.mon.Exec(ctx, benchTag+`CHECKPOINT`); err != nil {
		b.logf("   no checkpoint before %s (%v): they may meet earlier phases' writes", what, err)
	}
	syscall.Sync()
}

// windowSeries runs compareWindows open-loop windows at rate, each d long,
// and measures their cost (without SQL counts, which need a pause for
// Postgres's statistics around each).
//
// A series starts right after a checkpoint whose writes have reached the
// disk. The two sides of a comparison run 25 minutes apart, after
// different work: without a common start one side would meet a checkpoint
// of earlier phases' writes (its flushes compete with commits for the disk,
// and every page first changed after it goes whole into the WAL) and the
// other not.
func (b *bench) windowSeries(ctx context.Context, rate float64, d time.Duration) (Windows, error) {
	w := Windows{Rate: rate, Length: d}
	b.levelStart(ctx, "the windows")
	for range compareWindows {
		meter := b.startCost(ctx, b.web, "web")
		lat, errs := b.openLoop(ctx, rate, d)
		w.Cost = w.Cost.add(meter.stop(ctx, len(lat)))
		if err := ctx.Err(); err != nil {
			return w, err
		}
		if errs > 0 {
			return w, fmt.Errorf("%d of %d requests failed in a window at %.0f/s", errs, len(lat), rate)
		}
		w.P99 = append(w.P99, percentile(lat, 99))
	}
	b.logf("   %d windows of %s at %.0f/s: p99 %s, median %.1f ms; the machine's CPU %.0f%% busy; web sessions per sample: %s; "+
		"WAL per request %.0f bytes, %.2f full-page images",
		compareWindows, d, rate, w.spread(), ms(w.median()), 100*w.Cost.Busy, w.Cost.topWaits(3), w.Cost.WALBytes, w.Cost.WALFPI)
	if o := w.Cost.others(); o > 0 {
		b.logf("   other databases' active sessions beside them: %.2f per sample (the machine's and the WAL's figures include their work)", o)
	}
	return w, nil
}
