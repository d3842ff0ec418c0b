package web_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// TestMessageStatusGuard edits message statuses by hand, as someone with
// SQL access would: the database refuses every move the forward-only rules
// (app.CanTransition) forbid and allows every move they allow, so history
// cannot be rewritten past Herald. The one step back Herald takes itself,
// SENT to QUEUED after a provider's rate-limit report, needs the
// transaction to say so.
func TestMessageStatusGuard(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	original := c.routeNow(c.Tenant.ID, c.Submit(webtest.Notification("guard", "BK-G")))[0]
	require.Equal(t, app.MessageQueued, original.Status)

	// copyAt makes a fresh copy of the routed message and walks it forward
	// to status along allowed moves.
	pathTo := map[string][]string{
		app.MessageQueued: nil, app.MessageSent: {app.MessageSent},
		app.MessageDelivered: {app.MessageSent, app.MessageDelivered}, app.MessageRead: {app.MessageSent, app.MessageDelivered, app.MessageRead},
		app.MessageFailed: {app.MessageFailed}, app.MessageCancelled: {app.MessageCancelled},
	}
	cols := c.MessageColumns("")
	copyAt := func(status string) uuid.UUID {
		t.Helper()
		var id uuid.UUID
		require.NoError(t, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(c.Ctx, `
				INSERT INTO messages (`+cols+`)
				SELECT `+c.MessageColumns("r")+`
				FROM messages m, jsonb_populate_record(m, jsonb_build_object('id', gen_random_uuid(), 'idempotency_key', m.idempotency_key || ':' || gen_random_uuid())) r
				WHERE m.id = $1 RETURNING id`, original.ID).Scan(&id)
		}))
		for _, st := range pathTo[status] {
			c.Exec(`UPDATE messages SET status = $2 WHERE id = $1`, id, st)
		}
		return id
	}
	update := func(id uuid.UUID, to string, requeue bool) error {
		return c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
			if requeue {
				if _, err := tx.SQL().ExecContext(c.Ctx, `SELECT set_config('herald.requeue_sent', 'on', true)`); err != nil {
					return err
				}
			}
			_, err := tx.SQL().ExecContext(c.Ctx, `UPDATE messages SET status = $2 WHERE id = $1`, id, to)
			return err
		})
	}
	statuses := []string{app.MessageQueued, app.MessageSent, app.MessageDelivered, app.MessageRead, app.MessageFailed, app.MessageCancelled}
	for _, from := range statuses {
		for _, to := range statuses {
			if from == to {
				continue
			}
			t.Run(fmt.Sprintf("%s_to_%s", from, to), func(t *testing.T) {
				id := copyAt(from)
				err := update(id, to, false)
				if app.CanTransition(from, to) {
					require.NoError(t, err)
					return
				}
				require.ErrorContains(t, err, fmt.Sprintf("cannot move from %s to %s", from, to))
				require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = $2`, id, from), "nothing changed")
			})
		}
	}
	t.Run("RequeueAfterRateLimitReport", func(t *testing.T) {
		id := copyAt(app.MessageSent)
		require.NoError(t, update(id, app.MessageQueued, true))
		for _, from := range []string{app.MessageDelivered, app.MessageRead, app.MessageFailed} {
			require.Error(t, update(copyAt(from), app.MessageQueued, true), "only SENT goes back, from %s not", from)
		}
	})
}
