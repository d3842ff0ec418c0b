package db_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
)

// TestMessageStatus_EditsByHandAreTraced moves messages' statuses the ways
// Herald does and the ways someone with database access would: Herald's own
// forward moves leave no audit entry (their timeline tells them), every
// legal move made outside Herald, by the runtime role or the owner, and
// every use of the one step back, by Herald or not, leaves one in the
// tenant's audit chain with who and when, and the chain still verifies.
func TestMessageStatus_EditsByHandAreTraced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "status-trace")
	owner := dbtest.OwnerDB(t, b.db)
	now := time.Now().UTC()
	sent := func(t *testing.T) uuid.UUID {
		t.Helper()
		ext := "wamid." + uuid.NewString()
		m := &app.Message{ID: uuid.New(), TenantID: tn.ID, CorrelationID: "c", IdempotencyKey: uuid.NewString(), TriggerEvent: "BOOKING_CONFIRMED",
			Channel: app.WhatsApp, ToAddress: "+4915112345678", Body: "Hallo", Status: app.MessageSent, ExternalMessageID: &ext,
			FallbackChain: app.StringList{}, QueuedAt: now, SentAt: &now, CreatedAt: now, UpdatedAt: now}
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			_, err := app.InsertMessage(b.ctx, tx, m, &app.MessageEvent{TenantID: tn.ID, MessageID: m.ID, ToStatus: &m.Status, Source: app.SourceDispatch, At: now})
			return err
		}))
		return m.ID
	}
	type trace struct {
		Action, Label string
		Meta          map[string]any
	}
	traces := func(t *testing.T, id uuid.UUID) []trace {
		t.Helper()
		var out []trace
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			rows, err := tx.SQL().QueryContext(b.ctx, `
				SELECT action, actor_label, metadata FROM audit_log WHERE tenant_id = $1 AND target_type = 'message' AND target_id = $2 ORDER BY id`,
				tn.ID, id.String())
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var tr trace
				var meta []byte
				if err := rows.Scan(&tr.Action, &tr.Label, &meta); err != nil {
					return err
				}
				require.NoError(t, json.Unmarshal(meta, &tr.Meta))
				out = append(out, tr)
			}
			return rows.Err()
		}))
		return out
	}
	// byHand runs the statements in a transaction scoped as Herald's are,
	// but that does not say it is Herald's: a psql session.
	byHand := func(t *testing.T, conn *sql.DB, stmts ...string) error {
		t.Helper()
		tx, err := conn.BeginTx(context.Background(), nil)
		require.NoError(t, err)
		defer tx.Rollback() //nolint:errcheck
		if _, err := tx.Exec(`SELECT set_config('herald.scope', 'tenant', true), set_config('herald.tenant_id', $1, true)`, tn.ID.String()); err != nil {
			return err
		}
		for _, s := range stmts {
			if _, err := tx.Exec(s); err != nil {
				return err
			}
		}
		return tx.Commit()
	}

	t.Run("Herald's own moves leave their timeline only", func(t *testing.T) {
		id := sent(t)
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, `UPDATE messages SET status = 'DELIVERED' WHERE id = $1`, id)
			return err
		}))
		require.Empty(t, traces(t, id))
	})
	for _, c := range []struct {
		name string
		conn *sql.DB
		role string
	}{{"the runtime role", b.db.SQL.DB, dbtest.RuntimeRole}, {"the owner", owner.SQL.DB, "herald"}} {
		t.Run("a legal edit by hand, as "+c.name, func(t *testing.T) {
			id := sent(t)
			require.NoError(t, byHand(t, c.conn, `UPDATE messages SET status = 'READ' WHERE id = '`+id.String()+`'`))
			got := traces(t, id)
			require.Len(t, got, 1)
			require.Equal(t, "message.status_edited", got[0].Action)
			require.Contains(t, got[0].Label, c.role)
			require.Equal(t, "SENT", got[0].Meta["from"])
			require.Equal(t, "READ", got[0].Meta["to"])
			require.Equal(t, false, got[0].Meta["by_herald"])
			require.NotEmpty(t, got[0].Meta["session_role"])
			require.NotEmpty(t, got[0].Meta["transaction_start"])
		})
	}
	t.Run("an illegal edit by hand is refused and leaves nothing", func(t *testing.T) {
		id := sent(t)
		err := byHand(t, owner.SQL.DB, `UPDATE messages SET status = 'QUEUED' WHERE id = '`+id.String()+`'`)
		require.ErrorContains(t, err, "cannot move from SENT to QUEUED")
		require.NoError(t, byHand(t, owner.SQL.DB, `UPDATE messages SET status = 'FAILED' WHERE id = '`+id.String()+`'`))
		for _, to := range []string{"QUEUED", "SENT", "DELIVERED", "READ", "CANCELLED"} {
			err = byHand(t, owner.SQL.DB, `UPDATE messages SET status = '`+to+`' WHERE id = '`+id.String()+`'`)
			require.ErrorContains(t, err, "cannot move from FAILED to "+to, "FAILED is final")
		}
		require.Len(t, traces(t, id), 1, "only the legal move to FAILED")
	})
	t.Run("the step back by hand, through the escape hatch", func(t *testing.T) {
		id := sent(t)
		require.NoError(t, byHand(t, owner.SQL.DB, `SELECT set_config('herald.requeue_sent', 'on', true)`,
			`UPDATE messages SET status = 'QUEUED' WHERE id = '`+id.String()+`'`))
		got := traces(t, id)
		require.Len(t, got, 1)
		require.Equal(t, "message.status_edited", got[0].Action)
		require.Equal(t, true, got[0].Meta["requeue_sent"])
	})
	t.Run("Herald's own step back is audited too", func(t *testing.T) {
		id := sent(t)
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			ok, err := tx.RequeueSent(b.ctx, tn.ID, id, false, map[string]any{"reason": "rate_limited"}, now)
			require.True(t, ok)
			return err
		}))
		got := traces(t, id)
		require.Len(t, got, 1)
		require.Equal(t, "message.requeued", got[0].Action)
		require.Equal(t, "Herald", got[0].Label)
		require.Equal(t, true, got[0].Meta["by_herald"])
	})
	t.Run("the chain verifies", func(t *testing.T) {
		audit := &app.Audit{Store: db.Scope[app.AuditTx](b.store), Log: quietLog(), Now: time.Now}
		breaks, err := audit.Verify(b.ctx)
		require.NoError(t, err)
		require.Empty(t, breaks)
	})
}
