package db_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
)

// retentionBundle is a database with two tenants and what the retention
// tests seed into it.
type retentionBundle struct {
	*testBundle
	now      time.Time
	endpoint map[uuid.UUID]uuid.UUID
}

func setupRetention(t *testing.T) *retentionBundle {
	t.Helper()
	b := &retentionBundle{testBundle: setup(t), now: time.Now(), endpoint: map[uuid.UUID]uuid.UUID{}}
	return b
}

// exec runs one statement in platform scope.
func (b *retentionBundle) exec(t *testing.T, query string, args ...any) {
	t.Helper()
	require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
		_, err := tx.SQL().ExecContext(b.ctx, query, args...)
		return err
	}))
}

// count runs one counting query in platform scope.
func (b *retentionBundle) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(b.ctx, query, args...).Scan(&n)
	}))
	return n
}

// seeded is one message seeded with its event and dependents.
type seeded struct {
	tenant, event, message uuid.UUID
}

// seed writes a message of the given status and age, as routing and
// dispatch would have left it: its event, a contact change the event
// carried, two timeline entries, a receipt and a callback delivery.
func (b *retentionBundle) seed(t *testing.T, tenant *app.Tenant, status string, age time.Duration, stale bool) seeded {
	t.Helper()
	s := seeded{tenant: tenant.ID, event: uuid.New(), message: uuid.New()}
	at := b.now.Add(-age)
	if _, ok := b.endpoint[tenant.ID]; !ok {
		ep := uuid.New()
		b.exec(t, `INSERT INTO callback_endpoints (id, tenant_id, url, event_types, secrets, secrets_key_id, created_by)
			VALUES ($1, $2, 'https://hooks.example/x', '{message.sent}', '\x00', 'k1', 'test')`, ep, tenant.ID)
		b.endpoint[tenant.ID] = ep
	}
	var staleAt *time.Time
	if stale {
		staleAt = &at
	}
	contact := uuid.New()
	b.exec(t, `
		WITH e AS (
			INSERT INTO events (id, tenant_id, source_event_id, trigger_event, recipients, context, status, payload_size, created_at)
			VALUES ($2, $1, $8, 'BOOKING_REFUNDED', '[]', '{}', 'ROUTED', 10, $4) RETURNING id
		), c AS (
			INSERT INTO contacts (id, tenant_id, name, created_at) VALUES ($6, $1, 'P', $4) RETURNING id
		), cc AS (
			INSERT INTO contact_changes (tenant_id, contact_id, field, new_value, source, event_id, actor_type, at)
			SELECT $1, c.id, 'created', 'P', 'event', e.id, 'system', $4 FROM c, e
		)
		INSERT INTO messages (id, tenant_id, event_id, contact_id, correlation_id, idempotency_key, trigger_event, channel, status,
			sent_at, stale_at, created_at, queued_at)
		SELECT $3, $1, e.id, c.id, $8, $9, 'BOOKING_REFUNDED', 'EMAIL', $5, $4, $7, $4, $4 FROM e, c`,
		tenant.ID, s.event, s.message, at, status, contact, staleAt, s.event.String(), s.message.String())
	b.exec(t, `
		INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, at)
		VALUES ($1, $2, NULL, 'QUEUED', 'routing', $3), ($1, $2, 'QUEUED', 'SENT', 'dispatch', $3)`, tenant.ID, s.message, at)
	b.exec(t, `
		INSERT INTO webhook_receipts (tenant_id, provider, receipt_id, message_id, status, outcome, received_at)
		VALUES ($1, 'ses', $4, $2, 'DELIVERED', 'applied', $3)`, tenant.ID, s.message, at, s.message.String())
	b.exec(t, `
		INSERT INTO callback_deliveries (id, tenant_id, endpoint_id, message_id, event_type, payload, status, created_at)
		VALUES ($1, $2, $3, $4, 'message.sent', '{}', 'succeeded', $5)`, uuid.New(), tenant.ID, b.endpoint[tenant.ID], s.message, at)
	return s
}

func (b *retentionBundle) maintenance(store app.Store[app.MaintenanceTx]) *app.Maintenance {
	return &app.Maintenance{Store: store, Now: func() time.Time { return b.now }, Log: quietLog(),
		PruneBatchSize: 3, SleepFunc: func(context.Context, time.Duration) error { return nil }}
}

func (b *retentionBundle) exists(t *testing.T, table string, id uuid.UUID) bool {
	t.Helper()
	return b.count(t, `SELECT count(*) FROM `+table+` WHERE id = $1`, id) == 1
}

// orphans counts rows anywhere that point at a message or event that is gone.
func (b *retentionBundle) orphans(t *testing.T) int {
	t.Helper()
	return b.count(t, `SELECT
		(SELECT count(*) FROM message_events x WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = x.message_id))
		+ (SELECT count(*) FROM webhook_receipts x WHERE x.message_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = x.message_id))
		+ (SELECT count(*) FROM callback_deliveries x WHERE x.message_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = x.message_id))
		+ (SELECT count(*) FROM contact_changes x WHERE x.event_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = x.event_id))
		+ (SELECT count(*) FROM messages x WHERE x.fallback_of IS NOT NULL AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = x.fallback_of))
		+ (SELECT count(*) FROM messages x WHERE x.event_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = x.event_id))`)
}

// countingStore records, per transaction, how many messages PruneMessages
// deleted in it.
type countingStore struct {
	app.Store[app.MaintenanceTx]
	mu      sync.Mutex
	batches []int
}

type countingTx struct {
	app.MaintenanceTx
	s *countingStore
}

func (s *countingStore) InTenant(ctx context.Context, tenantID uuid.UUID, fn func(app.MaintenanceTx) error) error {
	return s.Store.InTenant(ctx, tenantID, func(tx app.MaintenanceTx) error { return fn(countingTx{tx, s}) })
}

func (tx countingTx) PruneMessages(ctx context.Context, tenantID uuid.UUID, before, now time.Time, limit int) (app.MessagePrune, error) {
	res, err := tx.MaintenanceTx.PruneMessages(ctx, tenantID, before, now, limit)
	tx.s.mu.Lock()
	tx.s.batches = append(tx.s.batches, res.Messages)
	tx.s.mu.Unlock()
	return res, err
}

func TestMaintenance_Prune(t *testing.T) {
	t.Parallel()

	t.Run("EachTenantByItsRetention", func(t *testing.T) {
		t.Parallel()
		b := setupRetention(t)
		short := createTenant(t, b.testBundle, "short")
		long := createTenant(t, b.testBundle, "long") // retention_days NULL: 90
		b.exec(t, `UPDATE tenants SET retention_days = 30 WHERE id = $1`, short.ID)
		day := 24 * time.Hour

		var gone, kept []seeded
		for _, tn := range []*app.Tenant{short, long} {
			for range 4 {
				gone = append(gone, b.seed(t, tn, app.MessageDelivered, 120*day, false))
			}
			gone = append(gone, b.seed(t, tn, app.MessageFailed, 120*day, false))
			gone = append(gone, b.seed(t, tn, app.MessageSent, 120*day, true)) // stale: finished
			kept = append(kept, b.seed(t, tn, app.MessageDelivered, 10*day, false))
			// In flight, however old: kept with their events.
			kept = append(kept, b.seed(t, tn, app.MessageQueued, 120*day, false))
			kept = append(kept, b.seed(t, tn, app.MessageSent, 120*day, false))
		}
		// 60 days: past the short retention, within the default one.
		for range 2 {
			gone = append(gone, b.seed(t, short, app.MessageRead, 60*day, false))
			kept = append(kept, b.seed(t, long, app.MessageRead, 60*day, false))
		}
		// A fallback sent recently for an old message outlives it.
		fallback := b.seed(t, short, app.MessageDelivered, day, false)
		b.exec(t, `UPDATE messages SET fallback_of = $1 WHERE id = $2`, gone[0].message, fallback.message)
		kept = append(kept, fallback)
		// A foreign receipt (no message) past retention, and a recent one.
		b.exec(t, `INSERT INTO webhook_receipts (tenant_id, provider, receipt_id, outcome, received_at)
			VALUES ($1, 'ses', 'old-foreign', 'foreign', $2), ($1, 'ses', 'new-foreign', 'foreign', $3)`,
			short.ID, b.now.Add(-40*day), b.now.Add(-day))

		cs := &countingStore{Store: db.Scope[app.MaintenanceTx](b.store)}
		var pauses atomic.Int64
		m := b.maintenance(cs)
		m.SleepFunc = func(context.Context, time.Duration) error { pauses.Add(1); return nil }
		res, err := m.Prune(b.ctx)
		require.NoError(t, err)
		require.False(t, res.More)
		require.Equal(t, len(gone), res.Messages)
		require.Equal(t, len(gone), res.Events)
		require.Equal(t, 2*len(gone), res.Timeline)
		require.Equal(t, len(gone)+1, res.Receipts, "the receipts of the messages, and the old foreign one")
		require.Equal(t, len(gone), res.Callbacks)

		for _, s := range gone {
			require.Equal(t, 1, b.count(t, `SELECT count(*) FROM messages WHERE id = $1 AND abs(extract(epoch FROM redacted_at - $2)) < 0.001 AND redaction = 'retention'
				AND event_id IS NULL`, s.message, b.now), "message %s keeps its facts without its personal data", s.message)
			require.False(t, b.exists(t, "events", s.event))
		}
		for _, s := range kept {
			require.True(t, b.exists(t, "messages", s.message), "message %s is kept", s.message)
			require.True(t, b.exists(t, "events", s.event))
			require.Equal(t, 2, b.count(t, `SELECT count(*) FROM message_events WHERE message_id = $1`, s.message))
			require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE message_id = $1`, s.message))
			require.Equal(t, 1, b.count(t, `SELECT count(*) FROM callback_deliveries WHERE message_id = $1`, s.message))
		}
		require.Zero(t, b.orphans(t))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM messages WHERE id = $1 AND fallback_of = $2`, fallback.message, gone[0].message),
			"the original's facts stay, so the fallback still names it")
		require.Equal(t, len(gone), b.count(t, `SELECT count(*) FROM contact_changes WHERE event_id IS NULL`),
			"a contact's history stays, without the deleted event")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE receipt_id = 'new-foreign'`))

		// Bounded batches, each its own transaction, a pause before each.
		sum := 0
		for _, n := range cs.batches {
			require.LessOrEqual(t, n, 3)
			sum += n
		}
		require.Equal(t, len(gone), sum)
		require.GreaterOrEqual(t, len(cs.batches), (len(gone)+2)/3)
		require.Positive(t, pauses.Load())

		// Nothing is left for a second run.
		res, err = m.Prune(b.ctx)
		require.NoError(t, err)
		require.Equal(t, app.PruneResult{}, res)
	})

	t.Run("BudgetStopsAndResumes", func(t *testing.T) {
		t.Parallel()
		b := setupRetention(t)
		tn := createTenant(t, b.testBundle, "budget")
		for range 10 {
			b.seed(t, tn, app.MessageDelivered, 200*24*time.Hour, false)
		}
		// Every reading of the clock is a second later: a budget of 5 s
		// covers a couple of batches.
		var clock atomic.Int64
		m := b.maintenance(db.Scope[app.MaintenanceTx](b.store))
		m.Now = func() time.Time { return b.now.Add(time.Duration(clock.Add(1)) * time.Second) }
		m.PruneBudget = 5 * time.Second
		var pauses []time.Duration
		m.SleepFunc = func(_ context.Context, d time.Duration) error { pauses = append(pauses, d); return nil }

		first, err := m.Prune(b.ctx)
		require.NoError(t, err)
		require.True(t, first.More)
		require.Less(t, first.Messages, 10)
		for _, p := range pauses {
			require.GreaterOrEqual(t, p, 3*time.Second, "by default a batch takes a quarter of the time: a batch of 1 s, a pause of 3 s")
		}
		total := first.Messages
		for range 10 {
			clock.Store(0)
			res, err := m.Prune(b.ctx)
			require.NoError(t, err)
			total += res.Messages
			if !res.More {
				break
			}
		}
		require.Equal(t, 10, total)
		require.Zero(t, b.count(t, `SELECT count(*) FROM messages WHERE redacted_at IS NULL`))
		require.Equal(t, 10, b.count(t, `SELECT count(*) FROM messages`), "their facts stay")
	})

	t.Run("CancelledDuringPause", func(t *testing.T) {
		t.Parallel()
		b := setupRetention(t)
		tn := createTenant(t, b.testBundle, "cancel")
		for range 5 {
			b.seed(t, tn, app.MessageDelivered, 200*24*time.Hour, false)
		}
		m := b.maintenance(db.Scope[app.MaintenanceTx](b.store))
		m.SleepFunc = func(context.Context, time.Duration) error { return context.Canceled }
		res, err := m.Prune(b.ctx)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 3, res.Messages, "the first batch committed, the run stopped at the pause")
		require.Zero(t, b.orphans(t))
	})
}

// TestMaintenance_PruneConcurrent runs two pruners side by side while new
// messages are written and moved along as intake and dispatch do: every old
// message is deleted exactly once, no new one is touched, and nobody
// deadlocks.
func TestMaintenance_PruneConcurrent(t *testing.T) {
	t.Parallel()
	b := setupRetention(t)
	tn := createTenant(t, b.testBundle, "concurrent")
	const old = 60
	for range old {
		b.seed(t, tn, app.MessageDelivered, 200*24*time.Hour, false)
	}

	results := make([]app.PruneResult, 2)
	errs := make([]error, 3)
	done := make(chan struct{})
	// Intake and dispatch: new messages with their timeline, then SENT.
	var written atomic.Int64
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			id := uuid.New()
			err := b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
				if _, err := tx.SQL().ExecContext(b.ctx, `
					INSERT INTO messages (id, tenant_id, correlation_id, idempotency_key, trigger_event, channel, status)
					VALUES ($1, $2, $3, $3, 'BOOKING_REFUNDED', 'EMAIL', 'QUEUED')`, id, tn.ID, id.String()); err != nil {
					return err
				}
				_, err := tx.SQL().ExecContext(b.ctx, `INSERT INTO message_events (tenant_id, message_id, to_status, source)
					VALUES ($1, $2, 'QUEUED', 'routing')`, tn.ID, id)
				return err
			})
			if err == nil {
				err = b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
					if _, err := tx.SQL().ExecContext(b.ctx, `UPDATE messages SET status = 'SENT', sent_at = now() WHERE tenant_id = $1 AND id = $2`, tn.ID, id); err != nil {
						return err
					}
					_, err := tx.SQL().ExecContext(b.ctx, `INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source)
						VALUES ($1, $2, 'QUEUED', 'SENT', 'dispatch')`, tn.ID, id)
					return err
				})
			}
			if err != nil {
				errs[2] = fmt.Errorf("intake: %w", err)
				return
			}
			written.Add(1)
		}
	}()
	// The pruners start once the writer is under way.
	deadline := time.NewTimer(dbtest.HangGuard)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for written.Load() < 5 && errs[2] == nil {
		select {
		case <-deadline.C:
			t.Fatal("the writer made no progress")
		case <-tick.C:
		}
	}
	var pruners sync.WaitGroup
	for i := range 2 {
		pruners.Add(1)
		go func() {
			defer pruners.Done()
			m := b.maintenance(db.Scope[app.MaintenanceTx](b.store))
			m.PruneBatchSize = 4
			results[i], errs[i] = m.Prune(b.ctx)
		}()
	}
	pruners.Wait()
	close(done)
	writer.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, old, results[0].Messages+results[1].Messages, "each old message redacted once")
	require.Equal(t, 2*old, results[0].Timeline+results[1].Timeline)
	// An event goes once no message of it is left: one pruner may look
	// while the other still holds the event's message, leaving the event to
	// the next run. The next run takes what is left, and nothing twice.
	next, err := b.maintenance(db.Scope[app.MaintenanceTx](b.store)).Prune(b.ctx)
	require.NoError(t, err)
	require.Zero(t, next.Messages)
	require.Equal(t, old, results[0].Events+results[1].Events+next.Events)
	require.Equal(t, int(written.Load()), b.count(t, `SELECT count(*) FROM messages WHERE redacted_at IS NULL`), "no new message touched")
	require.Equal(t, old, b.count(t, `SELECT count(*) FROM messages WHERE redacted_at IS NOT NULL`))
	require.Equal(t, 2*int(written.Load()), b.count(t, `SELECT count(*) FROM message_events`))
	require.Zero(t, b.orphans(t))
}

// TestPruneMessages_PlanUsesIndexes checks that a retention batch finds
// its messages through the (tenant_id, created_at) index and their
// timelines through the message id index, planned as the pruner plans them:
// generically, in the tenant's scope.
func TestPruneMessages_PlanUsesIndexes(t *testing.T) {
	t.Parallel()
	b := setupRetention(t)
	tn := createTenant(t, b.testBundle, "explained")
	batch := explainGeneric(t, b.testBundle, tn.ID, db.PruneMessagesBatchQuery, "uuid, timestamptz, int",
		fmt.Sprintf(`'%s', '%s', %d`, tn.ID, b.now.AddDate(0, 0, -90).UTC().Format(time.RFC3339Nano), app.PruneBatch))
	require.Contains(t, batch, "messages_unredacted_created_idx", batch)
	timeline := explainGeneric(t, b.testBundle, tn.ID, db.PruneMessagesTimelineQuery, "uuid, uuid[]",
		fmt.Sprintf(`'%s', ARRAY['%s']::uuid[]`, tn.ID, uuid.New()))
	require.Contains(t, timeline, "message_events_message_id_idx", timeline)
}

// TestMaintenance_PrunePublicBuckets: retention deletes the public links'
// buckets idle for PublicBucketIdle (full again long before) and leaves
// busy ones and every other bucket alone.
func TestMaintenance_PrunePublicBuckets(t *testing.T) {
	t.Parallel()
	b := setupRetention(t)
	idle, busy := b.now.Add(-app.PublicBucketIdle-time.Minute), b.now.Add(-time.Minute)
	for _, bucket := range []struct {
		key string
		at  time.Time
	}{
		{app.PublicBucketPrefix + "client:203.0.113.7", idle},
		{app.PublicBucketPrefix + "file:a:b", idle},
		{app.PublicBucketPrefix + "client:198.51.100.1", busy},
		{"intake:key-1", idle},
	} {
		wait, err := b.store.TakeIntakeToken(b.ctx, bucket.key, 20, 5, bucket.at)
		require.NoError(t, err)
		require.Zero(t, wait)
	}
	_, err := b.maintenance(db.Scope[app.MaintenanceTx](b.store)).Prune(b.ctx)
	require.NoError(t, err)
	var left []string
	require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
		rows, err := tx.SQL().QueryContext(b.ctx, `SELECT key FROM rate_buckets ORDER BY key`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			left = append(left, k)
		}
		return rows.Err()
	}))
	require.Equal(t, []string{"intake:key-1", app.PublicBucketPrefix + "client:198.51.100.1"}, left)
}
