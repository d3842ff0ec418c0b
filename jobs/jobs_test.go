package jobs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/jobs"
)

// probeArgs is a job kind that exists only in these tests.
type probeArgs struct {
	TenantID uuid.UUID `json:"tenant_id"`
}

func (probeArgs) Kind() string { return "test_probe" }

type probeWorker struct {
	river.WorkerDefaults[probeArgs]
	done chan uuid.UUID
}

func (w *probeWorker) Work(ctx context.Context, job *river.Job[probeArgs]) error {
	w.done <- job.Args.TenantID
	return nil
}

type testBundle struct {
	db    *db.DB
	store *db.Store
	queue *jobs.Queue
	ctx   context.Context
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	d := dbtest.NewDB(t)
	inserter, err := jobs.NewInserter(d.Pool)
	require.NoError(t, err)
	return &testBundle{db: d, store: d.Store(), queue: jobs.NewQueue(inserter), ctx: context.Background()}
}

func newTenant(slug string) *app.Tenant {
	now := time.Now()
	return &app.Tenant{ID: uuid.New(), Slug: slug, Name: slug, Plan: app.PlanFree, DefaultLocale: "de-DE",
		Timezone: "Europe/Berlin", Status: app.TenantActive, CreatedAt: now, UpdatedAt: now}
}

func (b *testBundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(b.ctx, query, args...).Scan(&n)
	}))
	return n
}

func TestQueue_SharesTheTransaction(t *testing.T) {
	t.Parallel()

	t.Run("CommitKeepsRowAndJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tn := newTenant("committed")
		require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
			if err := tx.CreateTenant(b.ctx, tn); err != nil {
				return err
			}
			return b.queue.Insert(b.ctx, tx, probeArgs{TenantID: tn.ID}, &river.InsertOpts{Queue: app.QueueRoute})
		}))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM tenants WHERE id = $1`, tn.ID))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'test_probe' AND args->>'tenant_id' = $1`, tn.ID.String()))
	})

	t.Run("RollbackDropsRowAndJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tn := newTenant("rolled-back")
		boom := errors.New("boom")
		err := b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
			if err := tx.CreateTenant(b.ctx, tn); err != nil {
				return err
			}
			if err := b.queue.Insert(b.ctx, tx, probeArgs{TenantID: tn.ID}, &river.InsertOpts{Queue: app.QueueRoute}); err != nil {
				return err
			}
			return boom
		})
		require.ErrorIs(t, err, boom)
		require.Zero(t, b.count(t, `SELECT count(*) FROM tenants WHERE id = $1`, tn.ID))
		require.Zero(t, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'test_probe'`))
	})

	t.Run("InsertManyInOneTransaction", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
			return b.queue.InsertMany(b.ctx, tx, []river.InsertManyParams{
				{Args: probeArgs{TenantID: uuid.New()}, InsertOpts: &river.InsertOpts{Queue: app.QueueRoute}},
				{Args: probeArgs{TenantID: uuid.New()}, InsertOpts: &river.InsertOpts{Queue: app.QueueRoute}},
			})
		}))
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'test_probe'`))
	})
}

func TestWorkerClient_WorksJobInsertedInTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	workers := river.NewWorkers()
	w := &probeWorker{done: make(chan uuid.UUID, 1)}
	river.AddWorker(workers, w)
	client, err := jobs.NewWorkerClient(b.db.Pool, workers, jobs.Config{
		Workers: map[string]int{app.QueueRoute: 2},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	require.NoError(t, client.Start(b.ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		jobs.Stop(ctx, client, slog.New(slog.NewTextHandler(io.Discard, nil)))
	})

	want := uuid.New()
	require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
		return b.queue.Insert(b.ctx, tx, probeArgs{TenantID: want}, &river.InsertOpts{Queue: app.QueueRoute})
	}))
	select {
	case got := <-w.done:
		require.Equal(t, want, got)
	case <-time.After(dbtest.HangGuard):
		t.Fatal("the worker client did not work the job inserted through the database/sql transaction")
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	var got []time.Duration
	for attempt := 1; attempt <= 5; attempt++ {
		got = append(got, jobs.Backoff(attempt))
	}
	require.Equal(t, []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second}, got)
	require.Equal(t, 5, jobs.MaxAttempts)
}

// TestWorkers_Timeouts: a send is bounded by the client's JobTimeout
// (HERALD_JOB_TIMEOUT), the sweeps over every tenant by MaintenanceTimeout.
func TestWorkers_Timeouts(t *testing.T) {
	t.Parallel()
	require.Zero(t, (&jobs.DispatchWorker{}).Timeout(nil), "dispatch without its own bound: the client's JobTimeout")
	require.Equal(t, app.DispatchTimeout(0, 0), (&jobs.DispatchWorker{RunTimeout: app.DispatchTimeout(0, 0)}).Timeout(nil))
	require.Equal(t, app.DefaultJobTimeout+2*app.DefaultSendTimeout, app.DispatchTimeout(0, 0),
		"dispatch: its own work and two provider calls of their own time")
	require.Zero(t, (&jobs.RouteWorker{}).Timeout(nil), "route: the client's JobTimeout")
	require.Equal(t, jobs.MaintenanceTimeout, (&jobs.RetentionWorker{}).Timeout(nil))
	require.Equal(t, jobs.MaintenanceTimeout, (&jobs.RequeueStuckWorker{}).Timeout(nil))
	require.Equal(t, jobs.MaintenanceTimeout, (&jobs.AuditVerifyWorker{}).Timeout(nil))
	require.Equal(t, jobs.MaintenanceTimeout, (&jobs.MetaTemplateSyncWorker{}).Timeout(nil))
	require.Less(t, (&jobs.AlertCheckWorker{}).Timeout(nil), time.Minute, "a staff-alert check ends before the next one starts")
	require.Less(t, (&jobs.AlertSendWorker{}).Timeout(nil), app.DefaultRescueStuckAfter, "an alert's delivery ends before River rescues it")
}

func TestRetentionWorker_SnoozesUntilDone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := newTenant("retention")
	require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
		if err := tx.CreateTenant(b.ctx, tn); err != nil {
			return err
		}
		_, err := tx.SQL().ExecContext(b.ctx, `
			INSERT INTO messages (id, tenant_id, correlation_id, idempotency_key, trigger_event, channel, status, created_at)
			SELECT gen_random_uuid(), $1, 'c' || g, 'k' || g, 'BOOKING_REFUNDED', 'EMAIL', 'DELIVERED', now() - interval '200 days'
			FROM generate_series(1, 5) g`, tn.ID)
		return err
	}))
	// Each reading of the clock is a second later and a run may take two
	// seconds: a run prunes a batch or so of one message, then snoozes.
	var clock time.Duration
	now := time.Now()
	m := &app.Maintenance{Store: db.Scope[app.MaintenanceTx](b.store), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:            func() time.Time { clock += time.Second; return now.Add(clock) },
		PruneBatchSize: 1, PruneBudget: 2 * time.Second,
		SleepFunc: func(context.Context, time.Duration) error { return nil }}
	w := &jobs.RetentionWorker{Maintenance: m}
	snoozes := 0
	for range 20 {
		err := w.Work(b.ctx, &river.Job[jobs.RetentionArgs]{})
		if err == nil {
			break
		}
		var snooze *river.JobSnoozeError
		require.ErrorAs(t, err, &snooze)
		require.Equal(t, jobs.RetentionSnooze, snooze.Duration)
		snoozes++
	}
	require.Positive(t, snoozes)
	require.Zero(t, b.count(t, `SELECT count(*) FROM messages WHERE redacted_at IS NULL`))
	require.Equal(t, 5, b.count(t, `SELECT count(*) FROM messages`), "their facts stay")
}
