package db_test

import (
	"context"
	"strings"
	"testing"

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

// TestMessagesByExternalIDs_PlanUsesTheProviderKey checks the plan of the
// lookup that applies a batch of receipts, under row-level security and
// made generic on a table never analyzed: each receipt's key must be an
// index condition on the unique (provider, external_message_id) index, and
// messages must never be scanned whole. Read from a JSON document, the keys
// could not be (a JSON field access is not leakproof), and every batch of
// receipts scanned the table.
func TestMessagesByExternalIDs_PlanUsesTheProviderKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	check := func(t *testing.T) {
		p := explainGeneric(t, b, uuid.Nil, db.MessagesByExternalIDsQuery, "text[], text[]", `'{meta,ses}', '{wamid.1,0100-1}'`)
		require.NotContains(t, p, "Seq Scan on messages", p)
		require.Contains(t, p, "Index Cond: ((provider = k.p) AND (external_message_id = k.e)", p)
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
			return err
		}))
		check(t)
	})
}
