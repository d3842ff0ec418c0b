// Package bench is Herald's load generator: `herald bench` (run by
// `go tool task bench`) starts Herald's web and worker processes on a fresh
// database, fires notification requests over HTTP, and prints intake
// throughput and latency, end-to-end throughput, accepted-to-provider
// latency at a fixed rate, and the worker's peak memory, each next to a
// baseline measured on the same database in the same run. The statements
// it runs live in package db (db/bench.go), with the rest of Herald's SQL.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/jobs"
)

// Config says how hard to push.
type Config struct {
	// DatabaseURL names the server; the benchmark creates its own database
	// (herald_bench, or HERALD_BENCH_DATABASE) there and drops it at the end unless Keep is set.
	DatabaseURL string
	// Binary is the herald executable to start as web and worker.
	Binary      string
	Tenants     int
	Concurrency int
	Requests    int
	// Rate and RateDuration drive the fixed-rate latency phase.
	Rate         int
	RateDuration time.Duration
	Keep         bool
	// ProfileDir, when set, receives CPU profiles of the web process during
	// intake and of the worker during the end-to-end phase.
	ProfileDir string
	Out        io.Writer
	// Messages is how many messages the pages phase gives one tenant; 0 skips it.
	Messages int
}

// Result holds the figures the run measured.
type Result struct {
	IntakeRPS                   float64
	IntakeP50, IntakeP99        time.Duration
	EndToEndMPS                 float64
	LatencyP50, LatencyP95      time.Duration
	LatencyP99                  time.Duration
	LatencyEvents               int
	WorkerPeakRSSMB             float64
	RiverNoopJPS, InsertTxPS    float64
	IntakeErrors, LatencyErrors int64
	PagesMaxMS                  float64
	IntakeP99At10M              time.Duration
}

// Run runs the whole benchmark and prints a report.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	b := &bench{cfg: cfg, res: &Result{}}
	defer b.cleanup()
	if err := b.prepare(ctx); err != nil {
		return nil, err
	}
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"baseline: single-row insert transactions", b.insertBaseline},
		{"baseline: River no-op jobs", b.riverBaseline},
		{"intake (workers stopped)", b.intake},
		{"end to end (workers drain the intake backlog)", b.endToEnd},
		{"latency at a fixed rate", b.latency},
		{"pages at many messages (explorer, booking panel, dashboard, API)", b.pages},
	}
	for _, s := range steps {
		b.logf("== %s", s.name)
		if err := s.fn(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	b.res.WorkerPeakRSSMB = peakRSSMB(b.worker)
	b.report()
	return b.res, nil
}

type bench struct {
	cfg     Config
	res     *Result
	dbURL   string
	admin   string
	pool    *pgxpool.Pool
	dataDir string
	addr    string
	web     *exec.Cmd
	worker  *exec.Cmd
	keys    []string
	client  *http.Client
	seq     atomic.Int64
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.cfg.Out, format+"\n", args...)
}

// prepare creates the database, migrates it, makes the tenants and starts
// the web process.
func (b *bench) prepare(ctx context.Context) error {
	b.admin = b.cfg.DatabaseURL
	u, err := url.Parse(b.admin)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	u.Path = "/" + db.BenchDatabase()
	b.dbURL = u.String()
	if err := db.BenchCreateDatabase(ctx, b.admin); err != nil {
		return err
	}
	if b.dataDir, err = os.MkdirTemp("", "herald-bench-"); err != nil {
		return err
	}
	if _, err := b.herald(ctx, "migrate"); err != nil {
		return err
	}
	for i := range b.cfg.Tenants {
		slug := fmt.Sprintf("bench-%d", i+1)
		if _, err := b.herald(ctx, "admin", "create-tenant", "--slug", slug, "--name", "Bench "+strconv.Itoa(i+1), "--plan", "ENTERPRISE"); err != nil {
			return err
		}
		key, err := b.herald(ctx, "admin", "create-api-key", "--tenant", slug, "--name", "bench")
		if err != nil {
			return err
		}
		b.keys = append(b.keys, strings.TrimSpace(key))
	}
	// The benchmark reads every tenant's rows: a platform-scoped session.
	pcfg, err := pgxpool.ParseConfig(b.dbURL)
	if err != nil {
		return err
	}
	pcfg.MaxConns = int32(b.cfg.Concurrency) + 4
	pcfg.ConnConfig.RuntimeParams["herald.scope"] = "platform"
	if b.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	b.addr = ln.Addr().String()
	_ = ln.Close()
	b.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: b.cfg.Concurrency * 2, MaxConnsPerHost: 0}, Timeout: 30 * time.Second}
	if b.web, err = b.start("web"); err != nil {
		return err
	}
	return b.waitReady(ctx)
}

func (b *bench) env() []string {
	env := append(os.Environ(),
		"DATABASE_URL="+b.dbURL,
		"HERALD_ADDR="+b.addr,
		"HERALD_DATA_DIR="+b.dataDir,
		"HERALD_LOG_LEVEL=error",
		"HERALD_SANDBOX_DELAY=0s",
	)
	return env
}

// herald runs one herald command to completion and returns its stdout.
func (b *bench) herald(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, b.cfg.Binary, args...)
	cmd.Env = b.env()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("herald %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// start starts a long-running herald process.
func (b *bench) start(role string) (*exec.Cmd, error) {
	cmd := exec.Command(b.cfg.Binary, role)
	cmd.Env = b.env()
	if b.cfg.ProfileDir != "" {
		cmd.Env = append(cmd.Env, "HERALD_PPROF_ADDR="+pprofAddr[role])
	}
	cmd.Stdout = io.Discard
	logFile, err := os.Create(filepath.Join(b.dataDir, role+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start herald %s: %w", role, err)
	}
	return cmd, nil
}

var pprofAddr = map[string]string{"web": "127.0.0.1:16061", "worker": "127.0.0.1:16062"}

// profile records a CPU profile of a process in the background.
func (b *bench) profile(role string, d time.Duration) func() {
	if b.cfg.ProfileDir == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr[role], int(d.Seconds())))
		if err != nil {
			b.logf("   profile %s: %v", role, err)
			return
		}
		defer resp.Body.Close()
		path := filepath.Join(b.cfg.ProfileDir, role+".pprof")
		f, err := os.Create(path)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
		b.logf("   CPU profile of %s: %s", role, path)
	}()
	return func() { <-done }
}

func (b *bench) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := b.client.Get("http://" + b.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("herald web did not answer /healthz within 30 s; see " + filepath.Join(b.dataDir, "web.log"))
}

func (b *bench) cleanup() {
	for _, c := range []*exec.Cmd{b.worker, b.web} {
		if c != nil && c.Process != nil {
			_ = c.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = c.Process.Kill()
			}
		}
	}
	if b.pool != nil {
		b.pool.Close()
	}
	if !b.cfg.Keep && b.admin != "" {
		_ = db.BenchDropDatabase(context.Background(), b.admin)
	}
	if b.dataDir != "" && !b.cfg.Keep {
		_ = os.RemoveAll(b.dataDir)
	}
}

// request is one notification: a repeating, e-mail-only event, so every
// request yields exactly one message and no quota applies (ENTERPRISE).
func (b *bench) request() []byte {
	n := b.seq.Add(1)
	body, _ := json.Marshal(map[string]any{
		"event_id":             fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), n),
		"trigger_event":        "BOOKING_REFUNDED",
		"recipients":           []map[string]any{{"name": "Bench Passenger", "email": fmt.Sprintf("p%d@bench.example", n%5000)}},
		"context":              map[string]any{"passenger_name": "Bench Passenger", "booking_reference": fmt.Sprintf("BK-%d", n), "refund_amount": "12.00 EUR"},
		"conversation_context": map[string]any{"type": "booking", "id": fmt.Sprintf("BK-%d", n)},
		"channels":             []string{"EMAIL"},
	})
	return body
}

// post sends one request and returns its latency.
func (b *bench) post(key string) (time.Duration, error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+b.addr+"/api/v1/notifications", bytes.NewReader(b.request()))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	return time.Since(start), nil
}

func (b *bench) intake(ctx context.Context) error {
	lat := make([]time.Duration, b.cfg.Requests)
	var next, errs atomic.Int64
	var wg sync.WaitGroup
	// A short warm-up fills connection pools on both sides.
	for i := range 200 {
		_, _ = b.post(b.keys[i%len(b.keys)])
	}
	wait := b.profile("web", 3*time.Second)
	defer wait()
	cpuBefore := b.sampleCPU(ctx, b.web, "web")
	b.logf("   load average %s", loadAverage())
	start := time.Now()
	for w := range b.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := b.keys[w%len(b.keys)]
			for {
				i := next.Add(1) - 1
				if i >= int64(b.cfg.Requests) {
					return
				}
				d, err := b.post(key)
				if err != nil {
					errs.Add(1)
				}
				lat[i] = d
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.res.IntakeRPS = float64(b.cfg.Requests) / elapsed.Seconds()
	b.res.IntakeP50, b.res.IntakeP99 = percentile(lat, 50), percentile(lat, 99)
	b.res.IntakeErrors = errs.Load()
	b.logf("   %d requests, concurrency %d, %s: %.0f req/s, p50 %s, p99 %s, errors %d",
		b.cfg.Requests, b.cfg.Concurrency, elapsed.Round(time.Millisecond), b.res.IntakeRPS,
		b.res.IntakeP50.Round(10*time.Microsecond), b.res.IntakeP99.Round(10*time.Microsecond), b.res.IntakeErrors)
	web, sessions := b.sampleCPU(ctx, b.web, "web").since(cpuBefore)
	b.logf("   CPU per request: web %s, its Postgres sessions %s (load average %s)",
		perUnit(web, b.cfg.Requests), perUnit(sessions, b.cfg.Requests), loadAverage())
	return nil
}

func (b *bench) endToEnd(ctx context.Context) error {
	total, err := db.BenchCountEvents(ctx, b.pool)
	if err != nil {
		return err
	}
	b.logf("   load average %s", loadAverage())
	start := time.Now()
	if b.worker, err = b.start("worker"); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond)
	wait := b.profile("worker", 5*time.Second)
	defer wait()
	deadline := start.Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		// The count query runs on the same database; once a second keeps
		// its cost out of the figure.
		time.Sleep(250 * time.Millisecond)
		n, err := db.BenchCountSent(ctx, b.pool)
		if err != nil {
			return err
		}
		if n >= total {
			elapsed := time.Since(start)
			b.res.EndToEndMPS = float64(n) / elapsed.Seconds()
			b.logf("   %d messages routed and sent in %s (worker start included): %.0f messages/s",
				n, elapsed.Round(time.Millisecond), b.res.EndToEndMPS)
			if err := b.settle(ctx); err != nil {
				return err
			}
			// The worker and its sessions started with this phase, so their
			// whole CPU time is the backlog's: routing, dispatch, receipts.
			worker, sessions := b.sampleCPU(ctx, b.worker, "worker").since(cpuSample{})
			b.logf("   CPU per message (route, dispatch, 2 receipts): worker %s, its Postgres sessions %s (load average %s)",
				perUnit(worker, n), perUnit(sessions, n), loadAverage())
			return nil
		}
	}
	return errors.New("the workers did not send the backlog within 10 minutes; see " + filepath.Join(b.dataDir, "worker.log"))
}

// settle waits until the sandbox's receipts for the backlog have been
// applied (they run in the worker, outside River's queues), so the latency
// phase starts on an idle worker.
func (b *bench) settle(ctx context.Context) error {
	start := time.Now()
	for time.Since(start) < 5*time.Minute {
		pending, err := db.BenchBacklog(ctx, b.pool)
		if err != nil {
			return err
		}
		if pending == 0 {
			b.logf("   receipts of the backlog applied after another %s", time.Since(start).Round(time.Second))
			time.Sleep(time.Second)
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return errors.New("the backlog's receipts were not applied within 5 minutes")
}

func (b *bench) latency(ctx context.Context) error {
	since, err := db.BenchNow(ctx, b.pool)
	if err != nil {
		return err
	}
	interval := time.Second / time.Duration(b.cfg.Rate)
	total := int(b.cfg.RateDuration / interval)
	var wg sync.WaitGroup
	var errs atomic.Int64
	ticker := time.NewTicker(interval)
	for i := range total {
		<-ticker.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.post(b.keys[i%len(b.keys)]); err != nil {
				errs.Add(1)
			}
		}()
	}
	ticker.Stop()
	wg.Wait()
	b.res.LatencyErrors = errs.Load()

	deadline := time.Now().Add(2 * time.Minute)
	for {
		waiting, err := db.BenchUnsent(ctx, b.pool, since)
		if err != nil {
			return err
		}
		if waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d messages still unsent two minutes after the last request", waiting)
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.res.LatencyP50, b.res.LatencyP95, b.res.LatencyP99, b.res.LatencyEvents, err = db.BenchLatency(ctx, b.pool, since)
	if err != nil {
		return err
	}
	b.logf("   %d events at %d/s for %s: accepted-to-provider p50 %s, p95 %s, p99 %s, errors %d",
		b.res.LatencyEvents, b.cfg.Rate, b.cfg.RateDuration, b.res.LatencyP50.Round(100*time.Microsecond),
		b.res.LatencyP95.Round(100*time.Microsecond), b.res.LatencyP99.Round(100*time.Microsecond), b.res.LatencyErrors)
	return nil
}

// insertBaseline measures how many single-row insert transactions the
// database commits per second at the same concurrency: the floor under any
// intake that writes durably.
func (b *bench) insertBaseline(ctx context.Context) error {
	if err := db.BenchCreateRowsTable(ctx, b.pool); err != nil {
		return err
	}
	var count atomic.Int64
	runCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for range b.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				tx, err := b.pool.Begin(runCtx)
				if err != nil {
					return
				}
				if err := db.BenchInsertRow(runCtx, tx); err != nil {
					_ = tx.Rollback(ctx)
					return
				}
				if tx.Commit(runCtx) == nil {
					count.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	b.res.InsertTxPS = float64(count.Load()) / time.Since(start).Seconds()
	b.logf("   %.0f transactions/s", b.res.InsertTxPS)
	return nil
}

type noopArgs struct {
	N int `json:"n"`
}

// Kind is the job kind db.BenchDeleteNoopJobs deletes after the baseline.
func (noopArgs) Kind() string { return "bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	done *atomic.Int64
}

func (w *noopWorker) Work(context.Context, *river.Job[noopArgs]) error {
	w.done.Add(1)
	return nil
}

// riverBaseline measures River working no-op jobs on this database: the
// ceiling for any pipeline built of River jobs.
func (b *bench) riverBaseline(ctx context.Context) error {
	const n = 20000
	var done atomic.Int64
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{done: &done})
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{
		Queues:  map[string]river.QueueConfig{"bench": {MaxWorkers: 100}},
		Workers: workers, FetchCooldown: jobs.FetchCooldown,
	})
	if err != nil {
		return err
	}
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noopArgs{N: i}, InsertOpts: &river.InsertOpts{Queue: "bench"}}
	}
	if _, err := client.InsertManyFast(ctx, params); err != nil {
		return err
	}
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return err
	}
	for done.Load() < n && time.Since(start) < 5*time.Minute {
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = client.Stop(stopCtx)
	b.res.RiverNoopJPS = float64(done.Load()) / elapsed.Seconds()
	b.logf("   %d no-op jobs in %s: %.0f jobs/s", done.Load(), elapsed.Round(time.Millisecond), b.res.RiverNoopJPS)
	return db.BenchDeleteNoopJobs(ctx, b.pool)
}

func (b *bench) report() {
	r := b.res
	check := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	b.logf("")
	b.logf("Herald benchmark (%d tenants, sandbox provider with zero delay)", b.cfg.Tenants)
	b.logf("%-40s %14s %30s %8s", "figure", "measured", "target", "")
	b.logf("%-40s %10.0f/s %30s %8s", "intake requests", r.IntakeRPS, ">= 3000/s", check(r.IntakeRPS >= 3000))
	b.logf("%-40s %12s %30s %8s", "intake p50", r.IntakeP50.Round(10*time.Microsecond), "", "")
	b.logf("%-40s %12s %30s %8s", "intake p99", r.IntakeP99.Round(10*time.Microsecond), "<= 25ms", check(r.IntakeP99 <= 25*time.Millisecond))
	b.logf("%-40s %10.0f/s %30s %8s", "end-to-end messages (intake to SENT)", r.EndToEndMPS, ">= 2000/s", check(r.EndToEndMPS >= 2000))
	b.logf("%-40s %12s %30s %8s", fmt.Sprintf("accepted-to-provider p50 @ %d/s", b.cfg.Rate), r.LatencyP50.Round(100*time.Microsecond), "<= 50ms", check(r.LatencyP50 <= 50*time.Millisecond))
	b.logf("%-40s %12s %30s %8s", "accepted-to-provider p95", r.LatencyP95.Round(100*time.Microsecond), "", "")
	b.logf("%-40s %12s %30s %8s", "accepted-to-provider p99", r.LatencyP99.Round(100*time.Microsecond), "<= 250ms", check(r.LatencyP99 <= 250*time.Millisecond))
	b.logf("%-40s %10.1fMB %30s %8s", "worker peak RSS", r.WorkerPeakRSSMB, "<= 200MB", check(r.WorkerPeakRSSMB > 0 && r.WorkerPeakRSSMB <= 200))
	b.logf("")
	b.logf("Baselines on the same database")
	b.logf("%-40s %10.0f/s   intake is %.2fx of it", "single-row insert transactions", r.InsertTxPS, r.IntakeRPS/r.InsertTxPS)
	b.logf("%-40s %10.0f/s   end to end is %.2fx of it (each message is 2 jobs: route and dispatch)", "River no-op jobs", r.RiverNoopJPS, r.EndToEndMPS/r.RiverNoopJPS)
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i]
}

// peakRSSMB reads the process's high-water resident set from /proc.
func peakRSSMB(cmd *exec.Cmd) float64 {
	if cmd == nil || cmd.Process == nil {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}
