package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/wire"
	"github.com/heraldhq/herald/db"
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

// TestRun_WorkerShutdownLetsSendsFinish stops `herald worker` the way
// SIGTERM does (main cancels run's context) while every dispatch worker is
// inside a provider call: the calls finish and are recorded once, no job
// starts after the stop, and the restarted worker sends only what was
// never sent.
func TestRun_WorkerShutdownLetsSendsFinish(t *testing.T) {
	t.Parallel()
	const inFlight, waiting = 6, 3
	b := setup(t)
	graph := webtest.NewGraph(t)
	b.env["HERALD_META_BASE_URL"] = graph.URL
	b.env["HERALD_WORKERS_DISPATCH_WHATSAPP"] = strconv.Itoa(inFlight)
	b.env["HERALD_DB_MAX_CONNS"] = "10"
	b.env["HERALD_SHUTDOWN_TIMEOUT"] = "2m"
	b.env["HERALD_LOG_LEVEL"] = "info"

	cfg, err := loadConfig(b.getenv)
	require.NoError(t, err)
	ctx := context.Background()
	svc, err := wire.Connect(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), "test")
	require.NoError(t, err)
	t.Cleanup(svc.Close)
	tn, err := svc.Tenants.Create(ctx, app.CLIActor, app.TenantInput{Slug: "acme", Name: "Acme Tours", Plan: app.PlanPro})
	require.NoError(t, err)
	key, _, err := svc.APIKeys.Create(ctx, app.CLIActor, tn.ID, "booking system")
	require.NoError(t, err)
	acct := webtest.CreateMetaAccount(t, ctx, svc, tn, nil)
	for i := range inFlight + waiting {
		req := webtest.WithRecipient(fmt.Sprintf("evt-%d", i), fmt.Sprintf("BK-%d", i),
			map[string]any{"name": "Anna Schmidt", "phone": "+49 151 23456789", "locale": "de-DE"}, "WHATSAPP")
		body, err := json.Marshal(req)
		require.NoError(t, err)
		_, err = svc.Intake.Submit(ctx, key, body)
		require.NoError(t, err)
	}
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		require.NoError(t, svc.Store.InPlatform(ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(ctx, query, args...).Scan(&n)
		}))
		return n
	}

	// Every dispatch worker is inside a provider call when the stop comes.
	graph.Hold()
	workerCtx, stop := context.WithCancel(ctx)
	defer stop()
	stderr := newLogWatch("workers stopping")
	done := make(chan error, 1)
	go func() { done <- run(workerCtx, []string{"worker"}, b.getenv, io.Discard, stderr) }()
	graph.WaitArrived(t, inFlight)

	stop() // what SIGTERM does through main's signal context
	select {
	case <-stderr.found:
	case err := <-done:
		t.Fatalf("the worker exited before it stopped its jobs: %v\n%s", err, stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("the worker did not begin to stop\n%s", stderr)
	}
	graph.Release()
	select {
	case err := <-done:
		require.NoError(t, err, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("the worker did not stop once its sends finished\n%s", stderr)
	}

	require.Equal(t, inFlight, graph.Calls(), "no job started after the stop")
	require.Equal(t, inFlight, count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'SENT'`, tn.ID),
		"every send in flight finished and was recorded")
	require.Equal(t, inFlight, count(`SELECT count(DISTINCT external_message_id) FROM messages WHERE tenant_id = $1`, tn.ID))
	require.Equal(t, inFlight, count(`SELECT coalesce(sum(count), 0) FROM usage_counters WHERE tenant_id = $1`, tn.ID), "each counted once")
	require.Equal(t, inFlight, count(`SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND state = 'completed'`))
	require.Equal(t, waiting, count(`SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND state = 'available' AND attempt = 0`),
		"the jobs not started stay for the next worker, no attempt used")
	require.Zero(t, count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'channel_account.breaker'`, tn.ID),
		"the stop opened no circuit breaker")

	// The restarted worker sends what was waiting, and nothing twice.
	restartCtx, stopAgain := context.WithCancel(ctx)
	defer stopAgain()
	done = make(chan error, 1)
	go func() { done <- run(restartCtx, []string{"worker"}, b.getenv, io.Discard, io.Discard) }()
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'SENT'`, tn.ID) == inFlight+waiting
	}, 60*time.Second, 20*time.Millisecond)
	stopAgain()
	require.NoError(t, <-done)
	require.Equal(t, inFlight+waiting, graph.Calls(), "no message was sent again after the restart")
	require.Equal(t, inFlight+waiting, count(`SELECT coalesce(sum(count), 0) FROM usage_counters WHERE tenant_id = $1`, tn.ID))
	require.Equal(t, app.AccountActive, accountStatus(t, svc, acct))
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
