package app_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

// TestConfirmWindows: the windows a tenant sets are the waits the
// dispatcher gives a send whose answer it never read, the event's own
// before every event's before the defaults; bad input changes nothing.
func TestConfirmWindows(t *testing.T) {
	t.Parallel()

	// cutWait is how long the dispatcher waits for Meta's confirmation of
	// the request's send, cut before its answer was read.
	cutWait := func(t *testing.T, b *pipelineBundle, tn *app.Tenant, req map[string]any) time.Duration {
		t.Helper()
		m := b.routeOne(t, tn, req)
		worker, release := cutCalls(t, b)
		defer release()
		out, err := worker.Dispatch(b.ctx, jobOf(m), 1, 5, (&completion{}).complete)
		require.NoError(t, err)
		return out.Snooze
	}

	t.Run("EventWindowWins", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		require.NoError(t, b.svc.ConfirmWindows.Set(b.ctx, app.CLIActor, tn.ID, app.AnyEvent, 600))
		require.NoError(t, b.svc.ConfirmWindows.Set(b.ctx, app.CLIActor, tn.ID, "DEPARTURE_CHANGED", 20))
		require.Equal(t, 20*time.Second, cutWait(t, b, tn, departure("evt-1", "BK-1", anna, "WHATSAPP")))
	})

	t.Run("EveryEventsWindowCoversUrgentEvents", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		require.NoError(t, b.svc.ConfirmWindows.Set(b.ctx, app.CLIActor, tn.ID, app.AnyEvent, 600))
		require.Equal(t, 10*time.Minute, cutWait(t, b, tn, departure("evt-1", "BK-1", anna, "WHATSAPP")),
			"the tenant's * window, not the urgent default")
	})

	t.Run("RemovedWindowLeavesTheDefault", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		other := b.tenant(t, "globex")
		b.useMeta(t, tn, nil)
		require.NoError(t, b.svc.ConfirmWindows.Set(b.ctx, app.CLIActor, tn.ID, "BOOKING_CONFIRMED", 0))
		require.NoError(t, b.svc.ConfirmWindows.Set(b.ctx, app.CLIActor, other.ID, app.AnyEvent, 60))
		ws, err := b.svc.ConfirmWindows.List(b.ctx, tn.ID)
		require.NoError(t, err)
		require.Len(t, ws, 1, "the other tenant's window is its own")
		require.Equal(t, 0, ws[0].Seconds, "0 is a window, not a removal")

		require.NoError(t, b.svc.ConfirmWindows.Remove(b.ctx, app.CLIActor, tn.ID, "BOOKING_CONFIRMED"))
		require.NoError(t, b.svc.ConfirmWindows.Remove(b.ctx, app.CLIActor, tn.ID, "BOOKING_CONFIRMED"), "removing none is no error")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'confirmation_window.set'
			AND target_id = 'BOOKING_CONFIRMED' AND metadata->>'seconds' = '0'`, tn.ID))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'confirmation_window.remove'
			AND metadata->>'seconds' = '0'`, tn.ID), "one removal audited, with what was removed; the repeat changed nothing")
		require.Equal(t, app.DefaultConfirmWindow, cutWait(t, b, tn, booking("evt-1", "BK-1", anna, "WHATSAPP")))
	})

	t.Run("BadInputChangesNothing", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		for _, bad := range []struct {
			event   string
			seconds int
			field   string
		}{
			{"NO_SUCH_EVENT", 60, "trigger_event"},
			{"", 60, "trigger_event"},
			{app.AnyEvent, -1, "seconds"},
			{app.AnyEvent, app.MaxConfirmWindowSeconds + 1, "seconds"},
		} {
			err := b.svc.ConfirmWindows.Set(b.ctx, app.CLIActor, tn.ID, bad.event, bad.seconds)
			require.Equal(t, app.EINVALID, app.ErrorCode(err), "%+v", bad)
			require.Equal(t, bad.field, app.ErrorField(err), "%+v", bad)
		}
		err := b.svc.ConfirmWindows.Remove(b.ctx, app.CLIActor, tn.ID, "NO_SUCH_EVENT")
		require.Equal(t, "trigger_event", app.ErrorField(err))
		require.NoError(t, b.svc.ConfirmWindows.Set(b.ctx, app.CLIActor, tn.ID, app.AnyEvent, app.MaxConfirmWindowSeconds), "a day is allowed")
		require.Zero(t, b.count(t, `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action LIKE 'confirmation_window.%' AND target_id <> '*'`, tn.ID))
	})
}
