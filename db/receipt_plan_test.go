package db_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/db"
)

// explainGeneric returns the generic plan Postgres makes for a statement
// in a transaction of the tenant's scope, or the platform's for uuid.Nil
// (as Herald's transactions plan theirs), given its parameter types and
// the values to explain it with.
func explainGeneric(t *testing.T, b *testBundle, tenantID uuid.UUID, query, types, values string) string {
	t.Helper()
	in := b.store.InPlatform
	if tenantID != uuid.Nil {
		in = func(ctx context.Context, fn func(*db.Tx) error) error { return b.store.InTenant(ctx, tenantID, fn) }
	}
	var lines []string
	require.NoError(t, in(b.ctx, func(tx *db.Tx) error {
		if _, err := tx.SQL().ExecContext(b.ctx, `PREPARE explained (`+types+`) AS `+query); err != nil {
			return err
		}
		defer tx.SQL().ExecContext(b.ctx, `DEALLOCATE explained`)
		rows, err := tx.SQL().QueryContext(b.ctx, `EXPLAIN EXECUTE explained(`+values+`)`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				return err
			}
			lines = append(lines, l)
		}
		return rows.Err()
	}))
	return strings.Join(lines, "\n")
}

// TestMatchInboxReceipts_PlanUsesTheProviderKey checks the plan of the
// read that finds the message each inbox receipt names, under row-level
// security and made generic on a table never analyzed: each receipt's key
// must be an index condition on the unique (provider, external_message_id)
// index, and messages must never be scanned whole. Read from the receipt's
// JSON, the key could not be (a JSON field access is not leakproof), and
// every round of receipts would scan the table.
func TestMatchInboxReceipts_PlanUsesTheProviderKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	check := func(t *testing.T) {
		p := explainGeneric(t, b, uuid.Nil, db.MatchInboxQuery, "bigint, timestamptz", `500, now()`)
		require.NotContains(t, p, "Seq Scan on messages", p)
		require.Contains(t, p, "Index Cond: ((provider = receipt_inbox.provider) AND (external_message_id = receipt_inbox.external_id))", p)
	}
	t.Run("EmptyTable", check)
	t.Run("GrownWithoutAnalyze", func(t *testing.T) {
		tn := createTenant(t, b, "receipt-plan")
		require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, `
				INSERT INTO messages (id, tenant_id, correlation_id, idempotency_key, trigger_event, channel, to_address, status,
					provider, external_message_id, queued_at, created_at, updated_at)
				SELECT gen_random_uuid(), $1, 'c' || g, 'k' || g, 'BOOKING_CONFIRMED', 'EMAIL', 'anna@example.com', 'SENT',
					'ses', 'ext-' || g, now(), now(), now()
				FROM generate_series(1, 5000) g`, tn.ID)
			if err != nil {
				return err
			}
			_, err = tx.SQL().ExecContext(b.ctx, `
				INSERT INTO receipt_inbox (provider, receipt)
				SELECT 'ses', jsonb_build_object('ExternalID', 'ext-' || g) FROM generate_series(1, 500) g`)
			return err
		}))
		check(t)
	})
}

// TestReceiptInbox_PlannedForTheInboxAsItIs: the inbox is a queue, empty
// most of the time and thousands of receipts deep in a burst. A plan kept
// per connection from an empty inbox scans it whole for every claim and
// delete, so its statements are never kept as prepared statements; planned
// on a deep inbox, the delete and the claim walk the primary key.
func TestReceiptInbox_PlannedForTheInboxAsItIs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
		_, err := tx.SQL().ExecContext(b.ctx, `ANALYZE receipt_inbox`)
		return err
	}))
	var ids []int64
	var first, kept int
	require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
		matched, err := tx.MatchInboxReceipts(b.ctx, 10, time.Now())
		if err != nil {
			return err
		}
		first = len(matched)
		if err := tx.DeleteInboxReceipts(b.ctx, []int64{1, 2}); err != nil {
			return err
		}
		_, err = tx.SQL().ExecContext(b.ctx, `
			INSERT INTO receipt_inbox (provider, receipt) SELECT 'ses', jsonb_build_object('n', g) FROM generate_series(1, 5000) g`)
		if err != nil {
			return err
		}
		matched, err = tx.MatchInboxReceipts(b.ctx, 3, time.Now().Add(time.Minute))
		if err != nil {
			return err
		}
		claimed, err := tx.ClaimInboxReceipts(b.ctx, []int64{matched[0].ID, matched[1].ID, matched[2].ID}, time.Now().Add(time.Minute))
		if err != nil {
			return err
		}
		for _, c := range claimed {
			ids = append(ids, c.ID)
		}
		if err := tx.DeleteInboxReceipts(b.ctx, ids); err != nil {
			return err
		}
		return tx.SQL().QueryRowContext(b.ctx, `
			SELECT count(*) FROM pg_prepared_statements
			WHERE (statement ILIKE '%DELETE FROM receipt_inbox%' OR statement ILIKE '%FROM receipt_inbox WHERE available_at%')
				AND statement NOT ILIKE '%pg_prepared_statements%'`).Scan(&kept)
	}))
	require.Zero(t, first, "the inbox starts empty")
	require.Zero(t, kept, "no plan of the claim or the delete is kept on the connection")
	require.Len(t, ids, 3)
	var left int
	require.NoError(t, b.db.SQL.GetContext(b.ctx, &left, `SELECT count(*) FROM receipt_inbox`))
	require.Equal(t, 5000-3, left)

	p := explainGeneric(t, b, uuid.Nil, db.DeleteInboxReceiptsQuery, "bigint[]", `'{1,2,3}'`)
	require.Contains(t, p, "Index Cond: (id = ANY (", p)
	require.NotContains(t, p, "Seq Scan on receipt_inbox", p)
}
