package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
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

	"github.com/heraldhq/herald/db/internal/tool"
)

// Config says what to run and how hard.
type Config struct {
	// DatabaseURL names the server; each experiment creates a database of
	// its own there (herald_chaos_<pid>_<experiment>) and drops it after.
	DatabaseURL string
	// Binary is the herald executable to start as web and worker.
	Binary string
	// Messages is the number of events (one message each) per experiment.
	Messages int
	// Kills is how often experiment a kills the worker and b the web process.
	Kills int
	// Seed drives the moments of the kills; 0 picks one (printed).
	Seed uint64
	// Storm is how long the provider answers 503 in experiment d, Throttle
	// how long it then answers 429 with Retry-After.
	Storm, Throttle time.Duration
	// Rate is the account's sends per second in experiment e, Quota the
	// plan's monthly webhook quota there (0: half the messages).
	Rate  float64
	Quota int
	// Concurrency is the number of API clients.
	Concurrency int
	// Experiments lists the experiments to run by letter, e.g. "abcdef".
	Experiments string
	// PGRestart says where experiment c restarts Postgres: "local" (the
	// project's cluster DATABASE_URL names, skipped when it names another
	// server), "throwaway" (a cluster the suite creates under a temporary
	// directory, so concurrent tests on the local one are not disturbed),
	// or "off" (experiment c is skipped).
	PGRestart string
	// PGData overrides the local cluster's data directory.
	PGData string
	// Latency is how long the Meta and SES fakes take to accept a send
	// (zero: 1s-3s), so that kills and SIGTERMs meet sends in flight.
	Latency latency
	// SlowLatency is how long it takes in experiment g, for SlowFor; g
	// runs its processes with HERALD_SEND_TIMEOUT=SendTimeout (0: Herald's
	// default), so that Herald hangs up on sends Meta and SES then accept.
	SlowLatency, SlowFor, SendTimeout time.Duration
	// MetaFail is the share of WhatsApp messages the Meta fake gives a
	// failed status (131026, undeliverable): FAILED messages the suite
	// expects.
	MetaFail float64
	// LockHold is how long experiment i holds each lock.
	LockHold time.Duration
	// ConfirmWindow is the tenant's confirmation window for every event
	// (PUT /api/v1/confirmation-windows), how long Herald waits for a
	// provider's confirmation of a send it never had the answer to; zero
	// keeps Herald's defaults (5 minutes, 1 for urgent events).
	ConfirmWindow time.Duration
	// Timeout bounds each experiment.
	Timeout time.Duration
	// Keep keeps the databases and the processes' logs.
	Keep bool
	Out  io.Writer
}

// Row is one experiment's outcome, a line of the table.
type Row struct {
	Name, Title      string
	Skipped          string
	Accepted         int
	Events, Messages int
	Sent, Failed     int
	Lost, Missing    int
	DupEvents        int // event rows beyond one per event_id
	DupMessages      int // message rows beyond one per idempotency key
	DupCalls         int // webhook calls taken beyond one per message
	// HookSameID and HookNewID split DupCalls: repeats that carried the
	// webhook-id the message had been taken with, and ones with another.
	HookSameID, HookNewID int
	// WhatsApp is the messages Meta accepted, WADup its sends beyond one
	// per message (0 allowed), WAInFlight the calls Meta was working on at
	// each fault.
	WhatsApp, WADup, WACut int
	WAInFlight             []int
	// Mail is the e-mail messages SES accepted, MailCut its calls Herald
	// had hung up on, MailDup its sends beyond one per message (0
	// allowed), MailInFlight the calls SES was working on at each fault.
	Mail, MailCut, MailDup int
	MailInFlight           []int
	// Injected is the FAILED messages a fault explains (the Meta fake's
	// failed statuses), Unexplained the FAILED ones nothing explains.
	Injected, Unexplained int
	// Unreached is the messages failed outcome_unknown whose call a worker
	// SIGKILL stopped before it reached Meta or SES (explained).
	Unreached int
	InFlight  []int
	Recover   []time.Duration
	Failures  []string
}

// Broke reports whether the experiment broke an invariant.
func (r *Row) Broke() bool { return len(r.Failures) > 0 }

// experiments are the letters Run knows, in order.
var experiments = []struct{ name, title string }{
	{"a", "worker SIGKILLed and restarted"},
	{"b", "web SIGKILLed during intake, clients retry"},
	{"c", "Postgres restarted (pg_ctl restart -m fast)"},
	{"d", "provider 503 storm, then 429 Retry-After"},
	{"e", "two workers share a rate limit and a quota"},
	{"f", "worker SIGTERMed (drains), restarted"},
	{"g", "Meta and SES slower than Herald's send timeout"},
	{"h", "pg_terminate_backend of the worker's sessions"},
	{"i", "database slowed by lock waits on the send path"},
}

// Run runs the experiments and prints the timelines and the table. The
// error says whether any invariant broke; rows are returned either way.
func Run(ctx context.Context, cfg Config) ([]Row, error) {
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64() >> 1
	}
	if cfg.Quota == 0 {
		cfg.Quota = max(cfg.Messages/2, 1)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Minute
	}
	if cfg.Latency == (latency{}) {
		cfg.Latency = latency{time.Second, 3 * time.Second}
	}
	cfg.SlowLatency = cmp.Or(cfg.SlowLatency, 30*time.Second)
	cfg.SlowFor = cmp.Or(cfg.SlowFor, time.Minute)
	cfg.LockHold = cmp.Or(cfg.LockHold, 3*time.Second)
	s := &suite{cfg: cfg}
	s.logf("Herald chaos: %d messages per experiment, %d kills, seed %d, load average %s", cfg.Messages, cfg.Kills, cfg.Seed, loadAverage())
	var rows []Row
	for _, x := range experiments {
		if !strings.Contains(cfg.Experiments, x.name) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		s.logf("\n== %s: %s", x.name, x.title)
		row := s.run(ctx, x.name, x.title)
		rows = append(rows, row)
	}
	s.table(rows)
	failed := 0
	for _, r := range rows {
		if r.Broke() {
			failed++
		}
	}
	if ctx.Err() != nil {
		return rows, ctx.Err()
	}
	if failed > 0 {
		return rows, fmt.Errorf("%d of %d experiments broke an invariant", failed, len(rows))
	}
	return rows, nil
}

type suite struct {
	cfg Config
	mu  sync.Mutex
}

func (s *suite) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.cfg.Out, format+"\n", args...)
}

// run sets up one experiment, runs it and checks it.
func (s *suite) run(ctx context.Context, name, title string) Row {
	row := Row{Name: name, Title: title}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	e := &experiment{suite: s, name: name, row: &row, rng: rand.New(rand.NewPCG(s.cfg.Seed, uint64(name[0])))}
	defer e.cleanup()

	var cl *cluster
	var err error
	if name == "c" {
		switch s.cfg.PGRestart {
		case "off":
			row.Skipped = "Postgres restart off (--pg-restart off)"
		case "throwaway":
			cl, err = throwawayCluster(ctx)
		default:
			cl, err = localCluster(s.cfg.DatabaseURL, s.cfg.PGData)
			if err != nil {
				row.Skipped, err = err.Error(), nil
			}
		}
		if row.Skipped != "" {
			s.logf("   skipped: %s", row.Skipped)
			return row
		}
		if err != nil {
			row.Failures = append(row.Failures, "set up the throwaway cluster: "+err.Error())
			return row
		}
		e.cluster = cl
		if cl.tempRoot != "" {
			e.logf("throwaway cluster in %s", cl.tempRoot)
		}
	}
	admin := s.cfg.DatabaseURL
	if cl != nil {
		admin = cl.adminURL
	}
	rate, workers := 100000.0, 1 // no rate limit to speak of outside e
	var extra []string
	if name == "e" {
		rate, workers = s.cfg.Rate, 2
		extra = append(extra, "HERALD_QUOTA_PRO_WEBHOOK="+strconv.Itoa(s.cfg.Quota))
	}
	if name == "g" && s.cfg.SendTimeout > 0 {
		extra = append(extra, "HERALD_SEND_TIMEOUT="+s.cfg.SendTimeout.String())
	}
	if err := e.setup(ctx, admin, rate, workers, extra); err != nil {
		row.Failures = append(row.Failures, "setup: "+err.Error())
		s.logf("   setup failed: %v", err)
		return row
	}
	e.start = time.Now()
	if name == "g" {
		// Slow from the first send on: every send of the spell outlasts
		// Herald's send timeout.
		e.meta.setLatency(latency{s.cfg.SlowLatency, s.cfg.SlowLatency})
		e.ses.setLatency(latency{s.cfg.SlowLatency, s.cfg.SlowLatency})
		e.logf("Meta and SES take %s a send for %s; Herald's send timeout is %s", s.cfg.SlowLatency, s.cfg.SlowFor, cmp.Or(s.cfg.SendTimeout, 15*time.Second))
	}

	faultDone := make(chan error, 1)
	go func() { faultDone <- e.fault(ctx) }()
	e.intake(ctx)
	e.logf("intake done: %d accepted", e.acceptedN.Load())
	if err := <-faultDone; err != nil {
		row.Failures = append(row.Failures, "fault: "+err.Error())
		e.logf("fault failed: %v", err)
	}
	if err := e.waitFor(ctx, "every accepted event to reach a final state", e.drained); err != nil {
		row.Failures = append(row.Failures, err.Error())
	} else {
		e.logf("all messages final")
		// Receipts are applied by the worker after the web process took
		// them, within seconds (it polls the inbox every 5 s at the least);
		// checkWhatsApp names the messages still behind after two minutes.
		if err := e.waitWithin(ctx, "Herald to apply every status Meta and event SES posted", 2*time.Minute, e.statusesApplied); err == nil {
			e.logf("every status Meta and event SES posted is applied")
		}
	}
	e.check(context.WithoutCancel(ctx))
	return row
}

type experiment struct {
	*suite
	name    string
	row     *Row
	rng     *rand.Rand
	cluster *cluster

	dbName, dbURL, dataDir, addr string
	pool                         *pgxpool.Pool
	prov                         *provider
	meta                         *metaFake
	ses                          *sesFake
	metaAccount                  string
	web                          *proc
	workers                      []*proc
	key                          string
	client                       *http.Client
	start                        time.Time
	extraEnv                     []string

	mu        sync.Mutex
	accepted  []string
	rejected  []string
	acceptedN atomic.Int64
	intakeEnd atomic.Bool
	dupBound  int
	// workerKilled: a worker was SIGKILLed, which may stop a call between
	// Herald's marker and the request (see checkFailed).
	workerKilled bool
	cleanupDB    func()
	counted      map[string]int // message id -> provider accepts counted as in flight
}

func (e *experiment) logf(format string, args ...any) {
	at := 0.0
	if !e.start.IsZero() {
		at = time.Since(e.start).Seconds()
	}
	e.suite.logf("   %s t+%6.1fs  %s", e.name, at, fmt.Sprintf(format, args...))
}

func (e *experiment) setup(ctx context.Context, admin string, rate float64, workers int, extra []string) error {
	e.extraEnv = extra
	e.prov = newProvider()
	var err error
	if e.meta, err = newMetaFake(e.cfg.Latency, e.cfg.MetaFail, e.cfg.Seed^uint64(e.name[0])); err != nil {
		return err
	}
	if e.ses, err = newSESFake(e.cfg.Latency, e.cfg.Seed^uint64(e.name[0])<<8); err != nil {
		return err
	}
	e.dbName = fmt.Sprintf("herald_chaos_%d_%s", os.Getpid(), e.name)
	u, err := url.Parse(admin)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	u.Path = "/" + e.dbName
	e.dbURL = u.String()
	if err := tool.AdminExec(ctx, admin, `DROP DATABASE IF EXISTS `+e.dbName+` WITH (FORCE)`, `CREATE DATABASE `+e.dbName); err != nil {
		return fmt.Errorf("create database %s (the role needs CREATEDB): %w", e.dbName, err)
	}
	e.cleanupDB = func() {
		// A busy server may refuse the connection for a moment: try a few
		// times, and say so when the database stays behind.
		var err error
		for range 5 {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err = tool.AdminExec(ctx, admin, `DROP DATABASE IF EXISTS `+e.dbName+` WITH (FORCE)`)
			cancel()
			if err == nil {
				return
			}
			time.Sleep(time.Second)
		}
		e.suite.logf("   could not drop database %s: %v", e.dbName, err)
	}
	if e.dataDir, err = os.MkdirTemp("", "herald-chaos-"+e.name+"-"); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	e.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	e.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: e.cfg.Concurrency * 2}, Timeout: 30 * time.Second}
	if _, err := e.herald(ctx, "migrate"); err != nil {
		return err
	}
	// The demo key is the one key the command line issues with the manage
	// scope, which creating a channel account takes; the demo tenant is on
	// the PRO plan.
	out, err := e.herald(ctx, "demo")
	if err != nil {
		return err
	}
	for line := range strings.Lines(out) {
		if k, ok := strings.CutPrefix(strings.TrimSpace(line), "api key: "); ok {
			e.key = strings.TrimSpace(k)
		}
	}
	if e.key == "" {
		return errors.New("herald demo printed no api key")
	}
	pcfg, err := pgxpool.ParseConfig(e.dbURL)
	if err != nil {
		return err
	}
	pcfg.MaxConns = 4
	pcfg.ConnConfig.RuntimeParams["herald.scope"] = "platform"
	if e.pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		return err
	}
	if e.web, err = e.startProc("web"); err != nil {
		return err
	}
	if err := e.waitFor(ctx, "herald web to answer /healthz", e.webReady); err != nil {
		return err
	}
	if err := e.createAccount(ctx, rate); err != nil {
		return err
	}
	if err := e.createMetaAccount(ctx); err != nil {
		return err
	}
	if err := e.setConfirmWindow(ctx); err != nil {
		return err
	}
	if err := e.createSESAccount(ctx); err != nil {
		return err
	}
	for range workers {
		w, err := e.startProc("worker")
		if err != nil {
			return err
		}
		e.workers = append(e.workers, w)
	}
	return e.waitFor(ctx, "the worker to sync the approved Meta templates", e.templatesSynced)
}

// createAccount makes the tenant's webhook account point at the fake
// provider, with the given rate limit, and makes it the active one.
func (e *experiment) createAccount(ctx context.Context, rate float64) error {
	var acct struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	status, raw, err := e.call(ctx, http.MethodPost, "/api/v1/channel-accounts", map[string]any{
		"provider": "webhook", "name": "chaos receiver",
		"config": map[string]any{"url": e.prov.URL()},
	}, &acct)
	if err != nil || status != http.StatusCreated {
		return fmt.Errorf("create webhook account: %d %v %s", status, err, raw)
	}
	// Neither the API nor the console sets an account's rate_per_second
	// (it is an operator's setting the dispatcher reads from the account's
	// configuration), so the suite writes it before any worker starts.
	if err := setRate(ctx, e.pool, acct.ID, strconv.FormatFloat(rate, 'f', -1, 64)); err != nil {
		return fmt.Errorf("set the webhook account's rate: %w", err)
	}
	if !strings.EqualFold(acct.Status, "active") {
		status, raw, err = e.call(ctx, http.MethodPost, "/api/v1/channel-accounts/"+acct.ID+"/activate", map[string]any{"replace": true}, &acct)
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("activate webhook account: %d %v %s", status, err, raw)
		}
	}
	return nil
}

func (e *experiment) call(ctx context.Context, method, path string, body, out any) (int, []byte, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, method, "http://"+e.addr+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+e.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		_ = json.Unmarshal(raw, out)
	}
	return resp.StatusCode, raw, nil
}

func (e *experiment) env() []string {
	return append(os.Environ(), append([]string{
		"DATABASE_URL=" + e.dbURL,
		"HERALD_ENV=dev",
		"HERALD_ADDR=" + e.addr,
		"HERALD_DATA_DIR=" + e.dataDir,
		"HERALD_LOG_LEVEL=warn",
		"HERALD_SANDBOX_DELAY=0s",
		// The experiments send at whatever time of day they run.
		"HERALD_QUIET_HOURS=off",
		"HERALD_WEBHOOK_ALLOW_PRIVATE=true",
		"HERALD_META_BASE_URL=" + e.meta.URL(),
		// The plan's 500 WhatsApp and 1000 e-mail messages a month would
		// fail the rest.
		"HERALD_QUOTA_PRO_WHATSAPP=unlimited",
		"HERALD_QUOTA_PRO_EMAIL=unlimited",
		// The topic the SES account claims, through which its
		// configuration set publishes.
		"HERALD_SNS_TOPIC_ARNS=" + sesTopicARN,
		// The shared cluster allows 100 connections in all.
		"HERALD_DB_MAX_CONNS=10",
		"HERALD_PPROF_ADDR=",
		"HERALD_METRICS_ADDR=",
	}, e.extraEnv...)...)
}

// herald runs one herald command to completion and returns its stdout.
func (e *experiment) herald(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.cfg.Binary, args...)
	cmd.Env = e.env()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("herald %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// proc is a long-running herald process.
type proc struct {
	role     string
	cmd      *exec.Cmd
	done     chan struct{}
	stopping atomic.Bool
}

func (e *experiment) startProc(role string) (*proc, error) {
	cmd := exec.Command(e.cfg.Binary, role)
	cmd.Env = e.env()
	logFile, err := os.OpenFile(filepath.Join(e.dataDir, role+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start herald %s: %w", role, err)
	}
	p := &proc{role: role, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		logFile.Close()
		close(p.done)
		if !p.stopping.Load() {
			e.logf("herald %s (pid %d) exited on its own: %v; see %s", role, cmd.Process.Pid, err, filepath.Join(e.dataDir, role+".log"))
		}
	}()
	return p, nil
}

// stop sends sig and waits for the process to end (SIGKILL after a minute).
func (p *proc) stop(sig syscall.Signal) (exitCode int) {
	p.stopping.Store(true)
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return p.cmd.ProcessState.ExitCode()
}

func (e *experiment) webReady() (bool, error) {
	resp, err := e.client.Get("http://" + e.addr + "/healthz")
	if err != nil {
		return false, nil
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}

// waitFor polls cond until it holds, ctx ends, or ten minutes pass without
// it; a cond error (the database restarting) counts as "not yet".
func (e *experiment) waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	return e.waitWithin(ctx, what, 10*time.Minute, cond)
}

// waitWithin is waitFor with another bound, which tells a hang from
// slowness.
func (e *experiment) waitWithin(ctx context.Context, what string, bound time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(bound)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("gave up waiting for %s (last error: %v)", what, last)
			}
			return fmt.Errorf("gave up waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// drained says whether every accepted event has been stored and routed and
// no message is waiting for a final state.
func (e *experiment) drained() (bool, error) {
	if !e.intakeEnd.Load() {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events, unrouted, open, err := pending(ctx, e.pool)
	if err != nil {
		return false, err
	}
	return events >= int(e.acceptedN.Load()) && unrouted == 0 && open == 0 && e.meta.idle() && e.ses.idle(), nil
}

// intake posts the events from cfg.Concurrency clients. A client retries an
// event with the same event_id until the API answers 2xx (a lost answer must
// not make a second event) or a 4xx other than 408/429 (recorded).
func (e *experiment) intake(ctx context.Context) {
	defer e.intakeEnd.Store(true)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range e.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(e.cfg.Messages) || ctx.Err() != nil {
					return
				}
				e.post(ctx, fmt.Sprintf("chaos-%s-%d", e.name, i), int(i))
			}
		}()
	}
	wg.Wait()
}

func (e *experiment) post(ctx context.Context, eventID string, n int) {
	if isWhatsApp(e.name, n) {
		e.postBody(ctx, eventID, whatsAppEvent(eventID, n))
		return
	}
	if isEmail(e.name, n) {
		e.postBody(ctx, eventID, emailEvent(eventID, n))
		return
	}
	e.postBody(ctx, eventID, map[string]any{
		"event_id":             eventID,
		"trigger_event":        "BOOKING_REFUNDED",
		"recipients":           []map[string]any{{"name": "Chaos Passenger", "email": fmt.Sprintf("p%d@chaos.example", n)}},
		"context":              map[string]any{"passenger_name": "Chaos Passenger", "booking_reference": fmt.Sprintf("BK-%d", n), "refund_amount": "12.00 EUR"},
		"conversation_context": map[string]any{"type": "booking", "id": fmt.Sprintf("BK-%d", n)},
		"channels":             []string{"WEBHOOK"},
	})
}

// postBody posts one event until the API answers 2xx or refuses it.
func (e *experiment) postBody(ctx context.Context, eventID string, body map[string]any) {
	backoff := 20 * time.Millisecond
	for ctx.Err() == nil {
		status, raw, err := e.call(ctx, http.MethodPost, "/api/v1/notifications", body, nil)
		switch {
		case err == nil && status >= 200 && status < 300:
			e.mu.Lock()
			e.accepted = append(e.accepted, eventID)
			e.mu.Unlock()
			e.acceptedN.Add(1)
			return
		case err == nil && status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests:
			e.mu.Lock()
			e.rejected = append(e.rejected, fmt.Sprintf("%s: %d %s", eventID, status, bytes.TrimSpace(raw)))
			e.mu.Unlock()
			return
		}
		// Pacing between retries of a failed request, not a wait for a
		// condition: the client cannot know when the server is back.
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 500*time.Millisecond)
	}
}

// targets are n random points in [5%, 85%] of total, ascending.
func (e *experiment) targets(n, total int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(float64(total) * (0.05 + 0.8*e.rng.Float64()))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// sends is how many sends the providers took: webhook, WhatsApp and e-mail.
func (e *experiment) sends() int64 {
	return e.prov.accepted.Load() + e.meta.accepted.Load() + e.ses.accepted.Load()
}

// progress waits until the providers took at least n sends.
func (e *experiment) progress(ctx context.Context, n int64) error {
	return e.waitFor(ctx, fmt.Sprintf("the providers to take %d sends", n), func() (bool, error) {
		return e.sends() >= n, nil
	})
}

// recovered waits until counter passes base (a provider took another
// send), or nothing is left to send, and records how long that took from
// since.
func (e *experiment) recovered(ctx context.Context, since time.Time, base int64, counter func() int64) error {
	err := e.waitFor(ctx, "progress after the fault", func() (bool, error) {
		if counter() > base {
			return true, nil
		}
		return e.drained()
	})
	d := time.Since(since)
	e.row.Recover = append(e.row.Recover, d)
	e.logf("recovered after %s", d.Round(10*time.Millisecond))
	return err
}

// inFlightAfterDeath counts the sends a dead worker left between the
// provider's answer and the commit: taken by the provider, not sent in the
// database. With no other worker running, the count cannot change under us.
// A message still uncommitted from an earlier kill counts again only when
// the provider took it again since: each counted send is one call that a
// restarted worker may legitimately repeat.
func (e *experiment) inFlightAfterDeath(ctx context.Context) int {
	e.prov.waitIdle()
	ids := e.prov.acceptedIDs()
	var open []string
	_ = e.waitFor(ctx, "the in-flight count", func() (bool, error) {
		var err error
		open, err = uncommitted(ctx, e.pool, ids)
		return err == nil, err
	})
	return e.countInFlight(open)
}

// countInFlight counts the webhook sends among open (taken by the provider,
// not committed) that the provider took again since they were last counted.
func (e *experiment) countInFlight(open []string) int {
	if e.counted == nil {
		e.counted = map[string]int{}
	}
	n := 0
	for id, accepts := range e.prov.acceptsOf(open) {
		if accepts > e.counted[id] {
			n++
			e.counted[id] = accepts
		}
	}
	return n
}

// fault runs the experiment's faults while intake goes on.
func (e *experiment) fault(ctx context.Context) error {
	n := e.cfg.Messages
	switch e.name {
	case "a":
		for _, t := range e.targets(e.cfg.Kills, n) {
			if err := e.progress(ctx, t); err != nil {
				return err
			}
			sent, calls, mails := e.sends(), e.meta.active.Load(), e.ses.active.Load()
			e.workers[0].stop(syscall.SIGKILL)
			e.workerKilled = true
			inflight := e.inFlightAfterDeath(ctx)
			e.row.InFlight = append(e.row.InFlight, inflight)
			e.row.WAInFlight = append(e.row.WAInFlight, int(calls))
			e.row.MailInFlight = append(e.row.MailInFlight, int(mails))
			e.dupBound += inflight
			e.logf("worker SIGKILLed after %d provider sends; %d webhook sends in flight, %d WhatsApp calls at Meta, %d e-mail calls at SES", sent, inflight, calls, mails)
			w, err := e.startProc("worker")
			if err != nil {
				return err
			}
			e.workers[0] = w
			if err := e.recovered(ctx, time.Now(), e.sends(), e.sends); err != nil {
				return err
			}
		}
	case "b":
		for _, t := range e.targets(e.cfg.Kills, n) {
			if err := e.waitFor(ctx, fmt.Sprintf("%d accepted events", t), func() (bool, error) { return e.acceptedN.Load() >= t, nil }); err != nil {
				return err
			}
			e.web.stop(syscall.SIGKILL)
			e.logf("web SIGKILLed after %d accepted events", e.acceptedN.Load())
			e.row.InFlight = append(e.row.InFlight, 0)
			w, err := e.startProc("web")
			if err != nil {
				return err
			}
			e.web = w
			base, at := e.acceptedN.Load(), time.Now()
			if err := e.waitFor(ctx, "the API to accept again", func() (bool, error) {
				return e.acceptedN.Load() > base || e.intakeEnd.Load(), nil
			}); err != nil {
				return err
			}
			d := time.Since(at)
			e.row.Recover = append(e.row.Recover, d)
			e.logf("the API accepts again after %s", d.Round(10*time.Millisecond))
		}
	case "c":
		if err := e.progress(ctx, int64(n)*3/10); err != nil {
			return err
		}
		// Sends whose commit the restart may undo: those the provider took
		// but the database did not record as sent just before, and every
		// one it takes until the server is back.
		base := e.prov.accepted.Load()
		open, err := uncommitted(ctx, e.pool, e.prov.acceptedIDs())
		if err != nil {
			return err
		}
		before := len(open)
		e.logf("restarting Postgres after %d provider sends", base)
		if err := e.cluster.restart(ctx); err != nil {
			return err
		}
		inflight := before + int(e.prov.accepted.Load()-base)
		e.row.InFlight = append(e.row.InFlight, inflight)
		e.dupBound += inflight
		e.logf("Postgres is back; %d webhook sends in flight", inflight)
		return e.recovered(ctx, time.Now(), e.sends(), e.sends)
	case "d":
		if err := e.progress(ctx, int64(n)/10); err != nil {
			return err
		}
		e.prov.mode.Store(unavailable)
		e.logf("provider answers 503 for %s", e.cfg.Storm)
		if err := sleepCtx(ctx, e.cfg.Storm); err != nil {
			return err
		}
		e.prov.mode.Store(throttled)
		e.logf("provider answers 429 with Retry-After for %s", e.cfg.Throttle)
		if err := sleepCtx(ctx, e.cfg.Throttle); err != nil {
			return err
		}
		e.prov.mode.Store(healthy)
		e.logf("provider healthy (%d calls so far)", e.prov.total.Load())
		e.row.InFlight = append(e.row.InFlight, 0)
		return e.recovered(ctx, time.Now(), e.prov.accepted.Load(), e.prov.accepted.Load)
	case "f":
		if err := e.progress(ctx, int64(n)*4/10); err != nil {
			return err
		}
		at, calls, mails := time.Now(), e.meta.active.Load(), e.ses.active.Load()
		code := e.workers[0].stop(syscall.SIGTERM)
		inflight := e.inFlightAfterDeath(ctx)
		e.row.InFlight = append(e.row.InFlight, inflight)
		e.row.WAInFlight = append(e.row.WAInFlight, int(calls))
		e.row.MailInFlight = append(e.row.MailInFlight, int(mails))
		unrecorded, err := e.whatsAppUnrecorded(ctx)
		if err != nil {
			return err
		}
		mailUnrecorded, err := e.emailUnrecorded(ctx)
		if err != nil {
			return err
		}
		e.logf("worker SIGTERMed with %d WhatsApp calls at Meta and %d e-mail calls at SES: exited with %d after %s; %d webhook, %d WhatsApp and %d e-mail sends left unrecorded",
			calls, mails, code, time.Since(at).Round(10*time.Millisecond), inflight, unrecorded, mailUnrecorded)
		if code != 0 {
			e.row.Failures = append(e.row.Failures, fmt.Sprintf("the worker exited with %d after SIGTERM", code))
		}
		if inflight > 0 {
			e.row.Failures = append(e.row.Failures, fmt.Sprintf("the worker did not drain: %d sends taken by the provider were not committed", inflight))
		}
		if unrecorded > 0 {
			e.row.Failures = append(e.row.Failures, fmt.Sprintf("the worker did not drain: %d sends Meta accepted are still QUEUED", unrecorded))
		}
		if mailUnrecorded > 0 {
			e.row.Failures = append(e.row.Failures, fmt.Sprintf("the worker did not drain: %d sends SES accepted are still QUEUED", mailUnrecorded))
		}
		w, err := e.startProc("worker")
		if err != nil {
			return err
		}
		e.workers[0] = w
		return e.recovered(ctx, time.Now(), e.sends(), e.sends)
	case "g":
		if err := sleepCtx(ctx, e.cfg.SlowFor); err != nil {
			return err
		}
		// However slowly a busy machine routes the first messages, the
		// spell lasts until Herald has hung up on at least one send Meta
		// and one SES then accepted: that is what g is about.
		if err := e.waitFor(ctx, "Herald to hang up on a slow send to Meta and one to SES", func() (bool, error) {
			return e.meta.cut.Load() > 0 && e.ses.cut.Load() > 0, nil
		}); err != nil {
			return err
		}
		e.meta.setLatency(e.cfg.Latency)
		e.ses.setLatency(e.cfg.Latency)
		e.row.InFlight = append(e.row.InFlight, 0)
		e.logf("Meta and SES take %s again; %d WhatsApp and %d e-mail sends so far accepted after Herald hung up", &e.cfg.Latency, e.meta.cut.Load(), e.ses.cut.Load())
	case "h":
		return e.terminations(ctx)
	case "i":
		return e.lockWaits(ctx)
	}
	return nil
}

// sleepCtx lets a fault last for d: the length of a provider storm is the
// experiment's input, not a guess at how long something takes.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// check counts and compares, and records every broken invariant.
func (e *experiment) check(ctx context.Context) {
	r := e.row
	e.mu.Lock()
	accepted := append([]string(nil), e.accepted...)
	rejected := append([]string(nil), e.rejected...)
	e.mu.Unlock()
	r.Accepted = len(accepted)
	if len(rejected) > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d requests refused, e.g. %s", len(rejected), rejected[0]))
	}
	if r.Accepted < e.cfg.Messages {
		r.Failures = append(r.Failures, fmt.Sprintf("only %d of %d requests were accepted", r.Accepted, e.cfg.Messages))
	}
	var t *tally
	if err := e.waitFor(ctx, "the final counts", func() (bool, error) {
		var err error
		t, err = count(ctx, e.pool, accepted)
		return err == nil, err
	}); err != nil {
		r.Failures = append(r.Failures, err.Error())
		return
	}
	r.Events, r.Messages, r.Sent, r.Failed = t.Events, t.Messages, t.Sent, t.Failed
	r.Lost, r.Missing = t.Lost, t.Missing
	r.DupEvents, r.DupMessages = t.Events-t.DistinctEvents, t.Messages-t.DistinctMessages
	var examples []string
	r.DupCalls, examples = e.prov.duplicates()
	r.HookSameID, r.HookNewID = e.prov.repeats()
	if r.Missing > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d events answered 2xx are missing", r.Missing))
	}
	if r.Lost > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d accepted events have no message in a final state, e.g. %s", r.Lost, strings.Join(t.LostExamples, ", ")))
	}
	if r.DupEvents > 0 || r.DupMessages > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("duplicate rows: %d events, %d messages", r.DupEvents, r.DupMessages))
	}
	// The webhook channel is at least once: a send repeated after a fault
	// is allowed, one per send in flight at the faults, and must carry the
	// webhook-id the receiver deduplicates by.
	if r.DupCalls > e.dupBound {
		r.Failures = append(r.Failures, fmt.Sprintf("%d duplicate webhook calls, more than the %d sends in flight at the faults; messages: %s", r.DupCalls, e.dupBound, strings.Join(examples, ", ")))
	} else if r.DupCalls > 0 {
		e.logf("%d duplicate webhook calls (%d with the same webhook-id), within the %d sends in flight at the faults; messages: %s",
			r.DupCalls, r.HookSameID, e.dupBound, strings.Join(examples, ", "))
	}
	if r.HookNewID > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d webhook repeats carried a new webhook-id, which no receiver can tell from another message", r.HookNewID))
	}
	injected := e.checkWhatsApp(ctx)
	e.checkEmail(ctx)
	e.checkFailed(ctx, injected)
	taken := map[string]bool{}
	for _, id := range e.prov.acceptedIDs() {
		taken[id] = true
	}
	var phantom []string
	for _, id := range t.SentIDs {
		if !taken[id] {
			phantom = append(phantom, id)
		}
	}
	if len(phantom) > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d webhook messages are sent in the database but the receiver never took them, e.g. %s", len(phantom), phantom[0]))
	}
	if len(taken) != len(t.SentIDs) {
		r.Failures = append(r.Failures, fmt.Sprintf("the webhook receiver took %d messages, the database has %d sent", len(taken), len(t.SentIDs)))
	}
	if e.name == "e" {
		e.checkLimits(t, len(taken))
	}
}

// checkLimits holds experiment e to the account's rate and the plan's quota.
// The rate is read over 20-second windows: the bucket may add a second's
// burst on top of the rate, so a window may hold rate*20 + burst calls. The
// 10% margin then covers 2.1 s of delay between a token and its call's
// arrival at the provider, which a busy machine does produce; a shorter
// window would make the check depend on the machine's speed.
func (e *experiment) checkLimits(t *tally, taken int) {
	r := e.row
	const window = 20 * time.Second
	burst := max(e.cfg.Rate, 1)
	limit := e.cfg.Rate*window.Seconds() + burst
	peak := e.prov.maxInWindow(window)
	e.logf("peak %d calls in %s against %.0f allowed (%.0f/s plus a burst of %.0f); quota %d, taken %d, sent %d, failed %d",
		peak, window, limit, e.cfg.Rate, burst, e.cfg.Quota, taken, t.Sent, t.Failed)
	if float64(peak) > 1.1*limit {
		r.Failures = append(r.Failures, fmt.Sprintf("rate: %d calls in %s, more than 10%% above the %.0f the account allows", peak, window, limit))
	}
	if taken > e.cfg.Quota || t.Sent > e.cfg.Quota {
		r.Failures = append(r.Failures, fmt.Sprintf("quota overshoot: the provider took %d messages and %d are sent; the quota is %d", taken, t.Sent, e.cfg.Quota))
	}
}

func (e *experiment) cleanup() {
	if e.web != nil {
		e.web.stop(syscall.SIGTERM)
	}
	for _, w := range e.workers {
		w.stop(syscall.SIGTERM)
	}
	if e.pool != nil {
		e.pool.Close()
	}
	if e.prov != nil {
		e.prov.Close()
	}
	if e.meta != nil {
		e.meta.Close()
	}
	if e.ses != nil {
		e.ses.Close()
	}
	if !e.cfg.Keep {
		if e.cleanupDB != nil {
			e.cleanupDB()
		}
		if e.dataDir != "" {
			_ = os.RemoveAll(e.dataDir)
		}
		e.cluster.remove()
	} else if e.dataDir != "" {
		e.suite.logf("   kept database %s and logs in %s", e.dbName, e.dataDir)
	}
}

// table prints one row per experiment: failed as explained/unexplained;
// hook reps, the webhook channel's repeated sends, as those with the
// message's webhook-id / those with another; in flight, the webhook sends
// a fault may legitimately repeat; whatsapp, the messages Meta accepted
// and how many of its calls Herald had hung up on; wa dup, Meta's sends
// beyond one per message (0 allowed); wa fail, the failed statuses it
// injected; at Meta, the WhatsApp calls it was working on at each fault;
// mail, mail dup and at SES, the same for e-mail through SES.
func (s *suite) table(rows []Row) {
	s.logf("\nHerald chaos (%d messages, seed %d, load average %s)", s.cfg.Messages, s.cfg.Seed, loadAverage())
	s.logf("%-3s %8s %8s %8s %8s %6s %5s %9s %9s %-12s %-12s %6s %6s %-12s %-12s %8s %-12s %-24s %s",
		"exp", "accepted", "events", "messages", "sent", "failed", "lost", "dup rows", "hook reps", "in flight", "whatsapp", "wa dup", "wa fail", "at Meta",
		"mail", "mail dup", "at SES", "recovered after", "result")
	for _, r := range rows {
		if r.Skipped != "" {
			s.logf("%-3s %s", r.Name, "skipped: "+r.Skipped)
			continue
		}
		inflight := make([]string, len(r.InFlight))
		for i, n := range r.InFlight {
			inflight[i] = strconv.Itoa(n)
		}
		rec := make([]string, len(r.Recover))
		for i, d := range r.Recover {
			rec[i] = strconv.FormatFloat(d.Seconds(), 'f', 1, 64)
		}
		result := "ok"
		if r.Broke() {
			result = "FAILED"
		}
		s.logf("%-3s %8d %8d %8d %8d %6s %5d %4d/%-4d %4d/%-4d %-12s %-12s %6d %6s %-12s %-12s %8d %-12s %-24s %s",
			r.Name, r.Accepted, r.Events, r.Messages, r.Sent, fmt.Sprintf("%d/%d", r.Failed-r.Unexplained, r.Unexplained), r.Lost, r.DupEvents, r.DupMessages,
			r.HookSameID, r.HookNewID, dash(strings.Join(inflight, ",")), fmt.Sprintf("%d (%d cut)", r.WhatsApp, r.WACut), r.WADup,
			fmt.Sprintf("%d", r.Injected), dash(joinInts(r.WAInFlight)),
			fmt.Sprintf("%d (%d cut)", r.Mail, r.MailCut), r.MailDup, dash(joinInts(r.MailInFlight)),
			dash(strings.Join(rec, ","))+seconds(len(rec)), result)
	}
	for _, r := range rows {
		for _, f := range r.Failures {
			s.logf("%s: %s", r.Name, f)
		}
	}
}

func joinInts(ns []int) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = strconv.Itoa(n)
	}
	return strings.Join(out, ",")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func seconds(n int) string {
	if n == 0 {
		return ""
	}
	return " s"
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
