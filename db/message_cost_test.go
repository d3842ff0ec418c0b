package db_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/db"
)

// TestMessageLife_UpdatesInPlace follows a message through the store
// functions production uses and checks which of its row's changes Postgres
// makes in place (HOT, no new index entry): the start of the provider call
// and the read receipt change no indexed column, so they must be; the send
// (a new provider id) and delivered (a new phase) add index entries. The
// counts are the transaction's own, so nothing else running interferes.
func TestMessageLife_UpdatesInPlace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "in-place")
	now := time.Now().UTC()
	m := &app.Message{ID: uuid.New(), TenantID: tn.ID, CorrelationID: "c-1", IdempotencyKey: "k-1", TriggerEvent: "BOOKING_CONFIRMED",
		Channel: app.WhatsApp, ToAddress: "+4915112345678", Body: "Hallo", Status: app.MessageQueued,
		FallbackChain: app.StringList{}, QueuedAt: now, CreatedAt: now, UpdatedAt: now}

	// step runs fn in a transaction of the tenant and returns how many
	// messages rows it updated, and how many of those in place. The
	// counters also hold the session's earlier transactions until Postgres
	// publishes them, so fn's share is the difference within its own.
	step := func(t *testing.T, fn func(tx *db.Tx) error) (updated, inPlace int) {
		t.Helper()
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			counts := func() (u, h int, err error) {
				err = tx.SQL().QueryRowContext(b.ctx, `
					SELECT pg_stat_get_xact_tuples_updated('messages'::regclass), pg_stat_get_xact_tuples_hot_updated('messages'::regclass)`,
				).Scan(&u, &h)
				return u, h, err
			}
			u0, h0, err := counts()
			if err != nil {
				return err
			}
			if err := fn(tx); err != nil {
				return err
			}
			u1, h1, err := counts()
			updated, inPlace = u1-u0, h1-h0
			return err
		}))
		return updated, inPlace
	}
	receipt := func(id, status, from, to string) func(tx *db.Tx) error {
		return func(tx *db.Tx) error {
			rec, err := tx.RecordReceipt(b.ctx, app.ReceiptRecord{TenantID: tn.ID, MessageID: m.ID, From: from, To: to,
				Receipt: provider.Receipt{Provider: "meta", ExternalID: "wamid.1", ReceiptID: id, Status: status, At: time.Now().UTC()}})
			require.True(t, rec.Moved)
			return err
		}
	}

	upd, hot := step(t, func(tx *db.Tx) error {
		_, err := app.InsertMessage(b.ctx, tx, m, &app.MessageEvent{TenantID: tn.ID, MessageID: m.ID, ToStatus: &m.Status, Source: app.SourceRouting, At: now})
		return err
	})
	require.Equal(t, [2]int{0, 0}, [2]int{upd, hot})

	month := app.MonthOf(now)
	upd, hot = step(t, func(tx *db.Tx) error {
		take, err := tx.ReserveQuota(b.ctx, tn.ID, m.ID, app.WhatsApp, month, 10, nil, nil)
		require.True(t, take.OK)
		require.Equal(t, 1, take.Used)
		if err != nil {
			return err
		}
		return tx.MarkSendStarted(b.ctx, tn.ID, m.ID, app.SendMarker{At: now, By: uuid.New(), Attempt: 1, QuotaMonth: &month})
	})
	require.Equal(t, [2]int{1, 1}, [2]int{upd, hot}, "the quota's hold and the start of a provider call are one update in place")
	var held time.Time
	require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(b.ctx, `SELECT quota_month FROM messages WHERE id = $1`, m.ID).Scan(&held)
	}))
	require.True(t, month.Equal(held), "the message holds the month's quota: %s", held)

	upd, hot = step(t, func(tx *db.Tx) error {
		res, err := tx.RecordSent(b.ctx, app.SentRecord{TenantID: tn.ID, MessageID: m.ID, Provider: "meta", ExternalID: "wamid.1",
			Attempt: 1, At: now, Channel: app.WhatsApp, UsageMonth: app.MonthOf(now)})
		require.True(t, res.Moved)
		return err
	})
	require.Equal(t, [2]int{1, 0}, [2]int{upd, hot}, "the send adds the provider id to its index")

	upd, hot = step(t, receipt("r-1", "delivered", app.MessageSent, app.MessageDelivered))
	require.Equal(t, [2]int{1, 0}, [2]int{upd, hot}, "delivered moves the message to another phase")

	upd, hot = step(t, receipt("r-2", "read", app.MessageDelivered, app.MessageRead))
	require.Equal(t, [2]int{1, 1}, [2]int{upd, hot}, "a read receipt is an update in place")

	var status, phase string
	require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(b.ctx, `SELECT status, phase FROM messages WHERE id = $1`, m.ID).Scan(&status, &phase)
	}))
	require.Equal(t, []string{app.MessageRead, app.MessageDelivered}, []string{status, phase})
}

// TestExplorerMessages_StatusSharingAPhase: READ and DELIVERED share their
// index entries (messages.phase); the explorer's status filter still tells
// them apart, and the other statuses each keep their own.
func TestExplorerMessages_StatusSharingAPhase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "phases")
	statuses := []string{app.MessageQueued, app.MessageSent, app.MessageDelivered, app.MessageRead, app.MessageFailed,
		app.MessageCancelled, app.MessageExpired}
	require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
		_, err := tx.SQL().ExecContext(b.ctx, `
			INSERT INTO messages (id, tenant_id, correlation_id, idempotency_key, trigger_event, channel, to_address, status,
				queued_at, created_at, updated_at)
			SELECT gen_random_uuid(), $1, s || g, s || g, 'BOOKING_CONFIRMED', 'EMAIL', 'anna@example.com', s,
				now(), now() - g * interval '1 second', now()
			FROM unnest($2::text[]) s, generate_series(1, 3) g`, tn.ID, statuses)
		return err
	}))
	for _, status := range statuses {
		var got []*app.Message
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
			got, err = tx.ExplorerMessages(b.ctx, tn.ID, console.MessageFilter{Status: status}, console.PageRequest{Limit: 50})
			return err
		}))
		require.Len(t, got, 3, status)
		for _, m := range got {
			require.Equal(t, status, m.Status)
		}
	}
}
