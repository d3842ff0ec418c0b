package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestAPIScheduled_List lists the notifications not sent yet, filtered as
// the console's scheduled page filters them; reschedule and cancel stay
// PATCH and DELETE on the notification.
func TestAPIScheduled_List(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	reader := keyWith(t, h, h.Tenant.ID, app.ScopeRead)
	later := func(eventID, booking string, in time.Duration) uuid.UUID {
		b := webtest.Notification(eventID, booking)
		b["send_at"] = time.Now().Add(in).Format(time.RFC3339)
		return h.Submit(b)
	}
	first := later("sched-a", "BK-A", time.Hour)
	second := later("sched-b", "BK-B", 2*time.Hour)
	h.Submit(webtest.Notification("now", "BK-N"))
	held := h.Submit(incidentBroadcast("held"))

	type row struct {
		ID             uuid.UUID  `json:"id"`
		Status         string     `json:"status"`
		SendAt         *time.Time `json:"send_at"`
		RecipientCount int        `json:"recipient_count"`
		Due            bool       `json:"due"`
	}
	list := func(t *testing.T, key, query string) []row {
		t.Helper()
		var l struct {
			ScheduledNotifications []row `json:"scheduled_notifications"`
		}
		status, raw := call(t, h, key, http.MethodGet, "/api/v1/scheduled-notifications"+query, nil, &l)
		require.Equal(t, http.StatusOK, status, "%s", raw)
		return l.ScheduledNotifications
	}
	ids := func(rows []row) []uuid.UUID {
		out := make([]uuid.UUID, len(rows))
		for i, r := range rows {
			out[i] = r.ID
		}
		return out
	}

	all := list(t, reader, "")
	require.Equal(t, []uuid.UUID{first, second, held}, ids(all), "soonest first, those without a time last; nothing already sent")
	require.Equal(t, app.EventScheduled, all[0].Status)
	require.Equal(t, 1, all[0].RecipientCount)
	require.False(t, all[0].Due)
	require.Equal(t, app.EventAwaitingApproval, all[2].Status)

	require.Equal(t, []uuid.UUID{first, second}, ids(list(t, reader, "?trigger_event=BOOKING_CONFIRMED")))
	require.Equal(t, []uuid.UUID{second}, ids(list(t, reader, "?entity_id=BK-B")))
	require.Equal(t, []uuid.UUID{second}, ids(list(t, reader, "?limit=1&offset=1")))

	t.Run("Rescheduled", func(t *testing.T) {
		manager := keyWith(t, h, h.Tenant.ID, app.ScopeManage)
		status, raw := call(t, h, manager, http.MethodPatch, "/api/v1/notifications/"+first.String(),
			map[string]any{"send_at": time.Now().Add(3 * time.Hour).Format(time.RFC3339)}, nil)
		require.Equal(t, http.StatusOK, status, "%s", raw)
		require.Equal(t, []uuid.UUID{second, first}, ids(list(t, reader, "?trigger_event=BOOKING_CONFIRMED")))
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM audit_log WHERE action = 'notification.reschedule' AND target_id = $1 AND actor_type = 'api_key'`, first.String()))
	})

	t.Run("BadFilters", func(t *testing.T) {
		for query, field := range map[string]string{
			"?trigger_event=NOPE":                    "trigger_event",
			"?entity_id=" + strings.Repeat("x", 201): "entity_id",
			"?limit=201":                             "limit",
		} {
			var res apiErrorBody
			status, _ := call(t, h, reader, http.MethodGet, "/api/v1/scheduled-notifications"+query, nil, &res)
			require.Equal(t, http.StatusUnprocessableEntity, status, query)
			require.Equal(t, field, res.Error.Field, query)
		}
	})

	t.Run("OtherTenant", func(t *testing.T) {
		other, err := h.Services.Tenants.Create(h.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex"})
		require.NoError(t, err)
		require.Empty(t, list(t, keyWith(t, h, other.ID, app.ScopeRead), ""))
	})
}
