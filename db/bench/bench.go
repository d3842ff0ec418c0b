package main

import (
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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config says how hard to push.
type Config struct {
	// DatabaseURL names the server; the benchmark creates its own database
	// (Database) there and drops it at the end unless Keep is set.
	DatabaseURL string
	// Database is the benchmark database's name (databaseName).
	Database string
	// Binary is the herald executable to start as web and worker.
	Binary  string
	Tenants int
	// Concurrency and Requests drive the closed-loop intake phase.
	Concurrency int
	Requests    int
	// OpenDuration is the length of the open-loop intake phase, which sends
	// at half the closed loop's rate.
	OpenDuration time.Duration
	// Rate and RateDuration drive the latency phase (Rate 0: 80% of the
	// end-to-end phase's rate, the delivery promise's load); Drain bounds
	// the wait for its backlog afterwards.
	Rate         int
	RateDuration time.Duration
	Drain        time.Duration
	// BaselineDuration is the length of each insert baseline.
	BaselineDuration time.Duration
	// RiverJobs is the number of no-op jobs of the River baseline.
	RiverJobs int
	// PoolSize and Workers are the worker's database pool size and its
	// workers per queue, read from the same configuration the worker
	// process loads, so the River baseline runs with what Herald runs with.
	PoolSize int32
	Workers  map[string]int
	Keep     bool
	// ProfileDir, when set, receives CPU profiles of the web process during
	// intake and of the worker during the end-to-end phase.
	ProfileDir string
	Out        io.Writer
	// PruneMessages is how many old messages the retention phase seeds and
	// has Herald prune while intake runs; 0 skips the phase.
	PruneMessages int
	// Messages is how many messages the pages phase gives one tenant; 0
	// skips it.
	Messages int
	// Burst is the busy tenant's burst in the noisy-neighbour phase (and
	// its trip's passengers); Backlog the reminders queued ahead of the
	// urgent-first phase's urgent event. 0 skips the phase.
	Burst, Backlog int
}

// Defaults returns the full run's settings, or with quick the small ones
// for development and tests, where every phase shrinks to seconds.
func Defaults(quick bool) Config {
	if quick {
		return Config{
			Tenants: 2, Concurrency: 16, Requests: 2000, OpenDuration: 5 * time.Second,
			RateDuration: 10 * time.Second, Drain: 30 * time.Second,
			BaselineDuration: 3 * time.Second, RiverJobs: 10000, Burst: 300, Backlog: 1000,
		}
	}
	return Config{
		Tenants: 4, Concurrency: 64, Requests: 20000, OpenDuration: 20 * time.Second,
		RateDuration: 2 * time.Minute, Drain: time.Minute,
		BaselineDuration: 10 * time.Second, RiverJobs: 100000, PruneMessages: 1000000, Messages: 10000000,
		Burst: 5000, Backlog: 20000,
	}
}

// Check says what is wrong with a configuration, or nil.
func (c Config) Check() error {
	switch {
	case c.Tenants < 1 || c.Concurrency < 1 || c.Requests < 1 || c.RiverJobs < 1:
		return errors.New("counts must be positive")
	case c.Rate < 0:
		return errors.New("the rate must not be negative (0: 80% of the end-to-end rate)")
	case c.Messages < 0 || c.PruneMessages < 0 || c.Burst < 0 || c.Backlog < 0:
		return errors.New("message counts must not be negative")
	case c.RateDuration <= 0 || c.OpenDuration <= 0 || c.Drain <= 0 || c.BaselineDuration <= 0:
		return errors.New("durations must be positive")
	}
	return nil
}

// step is one phase of the run.
type step struct {
	name string
	fn   func(context.Context) error
}

// Run runs the whole benchmark and prints a report.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Database == "" {
		return nil, errors.New("no benchmark database named")
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	b := &bench{cfg: cfg, res: &Result{Config: cfg, LoadStart: loadAverage()}}
	defer b.cleanup()
	b.logf("Herald benchmark, load average at start %s", b.res.LoadStart)
	if err := b.prepare(ctx); err != nil {
		return nil, err
	}
	steps := []step{
		{"baseline: single-row insert transactions", b.phaseInsertBaseline},
		{"baseline: River no-op jobs", b.phaseRiverBaseline},
		{"intake, closed loop (workers stopped)", b.phaseIntake},
		{"intake, open loop at half the closed loop's rate", b.phaseOpenLoop},
		{"end to end (workers drain the intake backlog)", b.phaseEndToEnd},
		{"latency at a sustained rate", b.phaseLatency},
		{"noisy neighbour: a burst and a broadcast beside another tenant's confirmations", b.phaseNeighbour},
		{"urgent first: an urgent event behind a backlog of reminders", b.phaseUrgent},
		{"intake while retention prunes old messages", b.retention},
		{"pages at many messages (explorer, booking panel, dashboard, API)", b.pages},
	}
	for _, s := range steps {
		load := loadAverage()
		b.res.Loads = append(b.res.Loads, PhaseLoad{Phase: s.name, Load: load})
		b.logf("== %s (load average %s)", s.name, load)
		if err := s.fn(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	b.stopRSS()
	b.report()
	return b.res, nil
}

type bench struct {
	cfg     Config
	res     *Result
	dbURL   string
	dataDir string
	addr    string
	web     *exec.Cmd
	worker  *exec.Cmd
	keys    []string
	// fair holds the fairness phases' tenants (fairness.go).
	fair   fairTenants
	client *http.Client
	seq    atomic.Int64
	// mon runs every statement the benchmark itself sends to its database
	// while Herald works, on one connection, and counts them: their commits
	// are the benchmark's, not Herald's.
	mon *monitor
	// rss samples the worker's memory once it runs.
	rss *rssSampler
	// pool is the platform-scoped pool of the phases that seed and read
	// many rows (retention, pages), opened by the first of them.
	pool *pgxpool.Pool
}

// openPool opens b.pool unless it is open: a few platform-scoped
// connections (the seeding phases read and write every tenant's rows) that
// close when idle.
func (b *bench) openPool(ctx context.Context) error {
	if b.pool != nil {
		return nil
	}
	pcfg, err := pgxpool.ParseConfig(b.dbURL)
	if err != nil {
		return err
	}
	pcfg.MaxConns, pcfg.MinConns, pcfg.MaxConnIdleTime = 4, 0, 2*time.Second
	pcfg.ConnConfig.RuntimeParams["herald.scope"] = "platform"
	b.pool, err = pgxpool.NewWithConfig(ctx, pcfg)
	return err
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.cfg.Out, format+"\n", args...)
}

// prepare creates the database, migrates it, makes the tenants and starts
// the web process.
func (b *bench) prepare(ctx context.Context) error {
	if b.cfg.ProfileDir != "" {
		if err := os.MkdirAll(b.cfg.ProfileDir, 0o755); err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
	}
	u, err := url.Parse(b.cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	u.Path = "/" + b.cfg.Database
	b.dbURL = u.String()
	if err := createDatabase(ctx, b.cfg.DatabaseURL, b.cfg.Database); err != nil {
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
		if err := b.unlimit(ctx, slug); err != nil {
			return err
		}
		key, err := b.herald(ctx, "admin", "create-api-key", "--tenant", slug, "--name", "bench")
		if err != nil {
			return err
		}
		b.keys = append(b.keys, strings.TrimSpace(key))
	}
	if b.mon, err = newMonitor(ctx, b.dbURL); err != nil {
		return err
	}
	if err := b.fairnessTenants(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	b.addr = ln.Addr().String()
	_ = ln.Close()
	// Idle connections are few and short-lived: the benchmark's sockets
	// must not pile up on the web process between phases. MaxConnsPerHost
	// bounds the open loop too: a request that waits for a connection
	// still counts from its scheduled time.
	b.client = &http.Client{
		Transport: &http.Transport{
			MaxIdleConns: b.cfg.Concurrency, MaxIdleConnsPerHost: b.cfg.Concurrency,
			MaxConnsPerHost: max(256, b.cfg.Concurrency), IdleConnTimeout: 5 * time.Second,
		},
		Timeout: 30 * time.Second,
	}
	if b.web, err = b.start("web"); err != nil {
		return err
	}
	return b.waitReady(ctx)
}

// monitor is one connection to the benchmark database, safe for the
// benchmark's goroutines, counting the statements it runs. Each runs in its
// own autocommit transaction in the simple protocol (no prepare, no ping),
// so the count is also the number of commits the benchmark adds.
type monitor struct {
	mu   sync.Mutex
	cfg  *pgx.ConnConfig
	conn *pgx.Conn
	n    atomic.Int64
}

func newMonitor(ctx context.Context, dbURL string) (*monitor, error) {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	// The benchmark reads every tenant's rows: a platform-scoped session.
	cfg.RuntimeParams["herald.scope"] = "platform"
	cfg.RuntimeParams["application_name"] = "herald-bench"
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &monitor{cfg: cfg, conn: conn}, nil
}

// ready reconnects when the connection was closed (pgx closes it when a
// query's context ends mid-query); the caller holds mu.
func (m *monitor) ready(ctx context.Context) error {
	if !m.conn.IsClosed() {
		return nil
	}
	conn, err := pgx.ConnectConfig(ctx, m.cfg)
	if err != nil {
		return err
	}
	m.conn = conn
	return nil
}

func (m *monitor) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ready(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	m.n.Add(1)
	return m.conn.Exec(ctx, sql, args...)
}

// Query holds the connection until the rows are closed (pgx.CollectRows
// and Scan close them).
func (m *monitor) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	m.mu.Lock()
	if err := m.ready(ctx); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	m.n.Add(1)
	rows, err := m.conn.Query(ctx, sql, args...)
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	return &lockedRows{Rows: rows, unlock: sync.OnceFunc(m.mu.Unlock)}, nil
}

// QueryRow holds the connection until the row is scanned.
func (m *monitor) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := m.Query(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return &lockedRow{rows: rows}
}

// lockedRows releases the monitor's connection when closed.
type lockedRows struct {
	pgx.Rows
	unlock func()
}

func (r *lockedRows) Close() {
	r.Rows.Close()
	r.unlock()
}

func (r *lockedRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

// lockedRow scans the first row like pgx.Conn.QueryRow does.
type lockedRow struct{ rows pgx.Rows }

func (r *lockedRow) Scan(dest ...any) error {
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// statements returns how many statements the monitor has run.
func (m *monitor) statements() int64 { return m.n.Load() }

func (m *monitor) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	_ = m.conn.Close(context.Background())
}

func (b *bench) env() []string {
	env := append(os.Environ(),
		"DATABASE_URL="+b.dbURL,
		"HERALD_ADDR="+b.addr,
		"HERALD_DATA_DIR="+b.dataDir,
		"HERALD_LOG_LEVEL=error",
		"HERALD_SANDBOX_DELAY=0s",
		// The bench measures sending at whatever time of day it runs: a
		// message deferred to the morning would never count as sent.
		"HERALD_QUIET_HOURS=off",
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
	// Always profiled: the report says where the CPU went.
	cmd.Env = append(cmd.Env, "HERALD_PPROF_ADDR="+pprofAddr[role])
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

// profile records a CPU profile of a process in the background, in
// ProfileDir when set and in the run's data directory otherwise; the
// function it returns waits for it and ranks its functions (empty when it
// could not be taken: the log says why). A process just started may not
// serve its profiler yet, so the first request is retried for a while.
func (b *bench) profile(role string, d time.Duration) func() Profile {
	dir := b.cfg.ProfileDir
	if dir == "" {
		dir = b.dataDir
	}
	path := filepath.Join(dir, role+".pprof")
	done := make(chan Profile, 1)
	go func() {
		p, err := b.takeProfile(role, d, path)
		if err != nil {
			b.logf("   profile %s: %v", role, err)
		} else if b.cfg.ProfileDir != "" {
			b.logf("   CPU profile of %s: %s", role, path)
		}
		done <- p
	}()
	return func() Profile { return <-done }
}

func (b *bench) takeProfile(role string, d time.Duration, path string) (Profile, error) {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr[role], int(d.Seconds()))
	var resp *http.Response
	_, err := waitFor(context.Background(), 100*time.Millisecond, 15*time.Second, func() (bool, error) {
		var err error
		resp, err = http.Get(url)
		return err == nil, nil
	})
	if err != nil || resp == nil {
		return Profile{}, fmt.Errorf("the profiler at %s did not answer", pprofAddr[role])
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Profile{}, fmt.Errorf("the profiler answered %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return Profile{}, err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return Profile{}, err
	}
	if err := f.Close(); err != nil {
		return Profile{}, err
	}
	return readProfile(path)
}

// waitFor checks cond on a ticker until it holds, fails or the time is up.
func waitFor(ctx context.Context, every, limit time.Duration, cond func() (bool, error)) (bool, error) {
	t := time.NewTicker(every)
	defer t.Stop()
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if ok || err != nil {
			return ok, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-t.C:
		}
	}
}

func (b *bench) waitReady(ctx context.Context) error {
	ok, err := waitFor(ctx, 50*time.Millisecond, 30*time.Second, func() (bool, error) {
		resp, err := b.client.Get("http://" + b.addr + "/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == 200, nil
	})
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("herald web did not answer /healthz within 30 s; see " + filepath.Join(b.dataDir, "web.log"))
	}
	return nil
}

func (b *bench) cleanup() {
	b.stopRSS()
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
	if b.client != nil {
		b.client.CloseIdleConnections()
	}
	if b.mon != nil {
		b.mon.close()
	}
	if b.pool != nil {
		b.pool.Close()
	}
	if !b.cfg.Keep && b.cfg.DatabaseURL != "" {
		b.drop()
	}
	if b.dataDir != "" && !b.cfg.Keep {
		_ = os.RemoveAll(b.dataDir)
	}
}

// drop drops the benchmark database. The server may refuse for a
// moment (busy, or a session of a cancelled query still ending): it tries a
// few times, and says so when the database stays behind.
func (b *bench) drop() {
	var err error
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = dropDatabase(ctx, b.cfg.DatabaseURL, b.cfg.Database)
		cancel()
		if err == nil {
			return
		}
		time.Sleep(2 * time.Second)
	}
	b.logf("could not drop the benchmark database %s: %v", b.cfg.Database, err)
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
	start := time.Now()
	if _, err := b.postBody(key, b.request()); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// percentile returns the p-th percentile (nearest rank) of ds.
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

// unlimit lifts a bench tenant's limits at intake, as an operator would
// for a tenant expected to send this much: the bench measures Herald's
// throughput, not the defaults that stop a leaked key.
func (b *bench) unlimit(ctx context.Context, slug string) error {
	_, err := b.herald(ctx, "admin", "set-limits", "--tenant", slug, "--intake-per-minute", "1000000",
		"--daily-email", "100000000", "--daily-sms", "100000000", "--daily-whatsapp", "100000000", "--daily-webhook", "100000000")
	return err
}
