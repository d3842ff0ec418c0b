package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/wire"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/web/webtest"
)

// logWatch is a process's stderr that tells when a line containing a
// text has been written.
type logWatch struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	want  string
	found chan struct{}
}

func newLogWatch(want string) *logWatch { return &logWatch{want: want, found: make(chan struct{})} }

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if w.want != "" && strings.Contains(w.buf.String(), w.want) {
		w.want = ""
		close(w.found)
	}
	return n, err
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestMain lets a test run this test binary as the herald command itself
// (HERALD_TEST_AS_HERALD=1, arguments in HERALD_TEST_ARGS): main, with its
// signal handling, in a process of its own, without building the binary.
func TestMain(m *testing.M) {
	if os.Getenv("HERALD_TEST_AS_HERALD") == "1" {
		os.Args = append([]string{"herald"}, strings.Fields(os.Getenv("HERALD_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// shutdownBundle is a database with a tenant whose WhatsApp account is
// Meta at a fake Graph API, and messages queued for it: more than the
// worker's dispatch workers, so that some wait.
type shutdownBundle struct {
	*testBundle
	graph             *webtest.Graph
	svc               *wire.Services
	tenant            *app.Tenant
	acct              *app.ChannelAccount
	inFlight, waiting int
}

func setupShutdown(t *testing.T) *shutdownBundle {
	t.Helper()
	s := &shutdownBundle{testBundle: setup(t), graph: webtest.NewGraph(t), inFlight: 6, waiting: 3}
	s.env["HERALD_META_BASE_URL"] = s.graph.URL
	s.env["HERALD_WORKERS_DISPATCH_WHATSAPP"] = strconv.Itoa(s.inFlight)
	s.env["HERALD_DB_MAX_CONNS"] = "10"
	s.env["HERALD_SHUTDOWN_TIMEOUT"] = "2m"
	// The held sends wait for the stop, which on a busy machine comes later
	// than a job's usual time: cancelled, they would fail or be sent again.
	s.env["HERALD_JOB_TIMEOUT"] = "5m"
	s.env["HERALD_SEND_TIMEOUT"] = "2m"
	s.env["HERALD_RESCUE_STUCK_AFTER"] = "10m"
	s.env["HERALD_LOG_LEVEL"] = "info"

	cfg, err := loadConfig(s.getenv)
	require.NoError(t, err)
	ctx := context.Background()
	s.svc, err = wire.Connect(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), "test")
	require.NoError(t, err)
	t.Cleanup(s.svc.Close)
	s.tenant, err = s.svc.Tenants.Create(ctx, app.CLIActor, app.TenantInput{Slug: "acme", Name: "Acme Tours", Plan: app.PlanPro})
	require.NoError(t, err)
	key, _, err := s.svc.APIKeys.Create(ctx, app.CLIActor, s.tenant.ID, "booking system")
	require.NoError(t, err)
	s.acct = webtest.CreateMetaAccount(t, ctx, s.svc, s.tenant, nil)
	for i := range s.inFlight + s.waiting {
		body, err := json.Marshal(whatsAppTo(i))
		require.NoError(t, err)
		_, err = s.svc.Intake.Submit(ctx, key, body)
		require.NoError(t, err)
	}
	// Every dispatch worker will be inside a provider call when the stop
	// comes.
	s.graph.Hold()
	return s
}

func (s *shutdownBundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, s.svc.Store.InPlatform(context.Background(), func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(context.Background(), query, args...).Scan(&n)
	}))
	return n
}

// requireStoppedCleanly checks a worker that was stopped with every
// dispatch worker in a provider call: the calls finished and were
// recorded once, no job started after the stop, and no breaker opened.
func (s *shutdownBundle) requireStoppedCleanly(t *testing.T) {
	t.Helper()
	require.Equal(t, s.inFlight, s.graph.Calls(), "no job started after the stop")
	require.Equal(t, s.inFlight, s.count(t, `SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'SENT'`, s.tenant.ID),
		"every send in flight finished and was recorded")
	require.Equal(t, s.inFlight, s.count(t, `SELECT count(DISTINCT external_message_id) FROM messages WHERE tenant_id = $1`, s.tenant.ID))
	require.Equal(t, s.inFlight, s.count(t, `SELECT coalesce(sum(count), 0) FROM usage_counters WHERE tenant_id = $1`, s.tenant.ID), "each counted once")
	require.Equal(t, s.inFlight, s.count(t, `SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND state = 'completed'`))
	require.Equal(t, s.waiting, s.count(t, `SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND state = 'available' AND attempt = 0`),
		"the jobs not started stay for the next worker, no attempt used")
	require.Zero(t, s.count(t, `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'channel_account.breaker'`, s.tenant.ID),
		"the stop opened no circuit breaker")
}

// requireRestartSendsTheRest restarts the worker: it sends what was
// waiting, and nothing twice.
func (s *shutdownBundle) requireRestartSendsTheRest(t *testing.T) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"worker"}, s.getenv, io.Discard, io.Discard) }()
	all := s.inFlight + s.waiting
	require.Eventually(t, func() bool {
		return s.count(t, `SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'SENT'`, s.tenant.ID) == all
	}, dbtest.HangGuard, 20*time.Millisecond)
	stop()
	require.NoError(t, <-done)
	require.Equal(t, all, s.graph.Calls(), "no message was sent again after the restart")
	require.Equal(t, all, s.count(t, `SELECT coalesce(sum(count), 0) FROM usage_counters WHERE tenant_id = $1`, s.tenant.ID))
	require.Equal(t, app.AccountActive, accountStatus(t, s.svc, s.acct))
}

// TestRun_WorkerShutdownLetsSendsFinish stops `herald worker` the way
// SIGTERM does (main cancels run's context) while every dispatch worker is
// inside a provider call: the calls finish and are recorded once, no job
// starts after the stop, and the restarted worker sends only what was
// never sent.
func TestRun_WorkerShutdownLetsSendsFinish(t *testing.T) {
	t.Parallel()
	s := setupShutdown(t)
	workerCtx, stop := context.WithCancel(context.Background())
	defer stop()
	stderr := newLogWatch("workers stopping")
	done := make(chan error, 1)
	go func() { done <- run(workerCtx, []string{"worker"}, s.getenv, io.Discard, stderr) }()
	s.graph.WaitArrived(t, s.inFlight)

	stop() // what SIGTERM does through main's signal context
	select {
	case <-stderr.found:
	case err := <-done:
		t.Fatalf("the worker exited before it stopped its jobs: %v\n%s", err, stderr)
	case <-time.After(dbtest.HangGuard):
		t.Fatalf("the worker did not begin to stop\n%s", stderr)
	}
	s.graph.Release()
	select {
	case err := <-done:
		require.NoError(t, err, stderr.String())
	case <-time.After(dbtest.HangGuard):
		t.Fatalf("the worker did not stop once its sends finished\n%s", stderr)
	}
	s.requireStoppedCleanly(t)
	s.requireRestartSendsTheRest(t)
}

// TestHerald_SIGTERMLetsSendsFinish is the same through a real SIGTERM to
// a herald process (this test binary running main).
func TestHerald_SIGTERMLetsSendsFinish(t *testing.T) {
	t.Parallel()
	s := setupShutdown(t)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "HERALD_TEST_AS_HERALD=1", "HERALD_TEST_ARGS=worker")
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr := newLogWatch("workers stopping")
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	s.graph.WaitArrived(t, s.inFlight)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-stderr.found:
	case err := <-done:
		t.Fatalf("herald exited before it stopped its jobs: %v\n%s", err, stderr)
	case <-time.After(dbtest.HangGuard):
		t.Fatalf("herald did not begin to stop\n%s", stderr)
	}
	s.graph.Release()
	select {
	case err := <-done:
		require.NoError(t, err, "herald exits 0 after a graceful stop\n%s", stderr)
	case <-time.After(dbtest.HangGuard):
		t.Fatalf("herald did not stop once its sends finished\n%s", stderr)
	}
	s.requireStoppedCleanly(t)
	s.requireRestartSendsTheRest(t)
}

func accountStatus(t *testing.T, svc *wire.Services, a *app.ChannelAccount) string {
	t.Helper()
	var got *app.ChannelAccount
	require.NoError(t, svc.Store.InTenant(context.Background(), a.TenantID, func(tx *db.Tx) (err error) {
		got, err = tx.AccountByID(context.Background(), a.TenantID, a.ID)
		return err
	}))
	return got.Status
}
