package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestAPIApproval_SeparationOfDuties: the key that submitted an event
// awaiting approval can never approve or reject it, even with the approve
// scope; another key with the scope can.
func TestAPIApproval_SeparationOfDuties(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	submitter := keyWith(t, h, h.Tenant.ID, app.ScopeSend, app.ScopeRead, app.ScopeApprove)
	approver := keyWith(t, h, h.Tenant.ID, app.ScopeApprove)

	submit := func(t *testing.T, eventID string) uuid.UUID {
		t.Helper()
		var res submitted
		status, raw := call(t, h, submitter, http.MethodPost, "/api/v1/notifications", incidentBroadcast(eventID), &res)
		require.Equal(t, http.StatusAccepted, status, "%s", raw)
		require.Equal(t, app.EventAwaitingApproval, res.Status)
		return res.ID
	}

	for _, action := range []string{"approve", "reject"} {
		t.Run("SubmitterCannot"+action, func(t *testing.T) {
			id := submit(t, "sod-own-"+action)
			var res apiErrorBody
			status, _ := call(t, h, submitter, http.MethodPost, "/api/v1/notifications/"+id.String()+"/"+action,
				map[string]any{"reason": "my own"}, &res)
			require.Equal(t, http.StatusForbidden, status)
			require.Equal(t, "separation_of_duties", res.Error.Code)
			require.Contains(t, res.Error.Message, "another key")
			require.Equal(t, app.EventAwaitingApproval, h.Event(id).Status, "nothing changed")
			require.Zero(t, h.Count(`SELECT count(*) FROM audit_log WHERE action LIKE 'notification.%' AND target_id = $1`, id.String()))
			require.Zero(t, h.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, id.String()))
		})
	}

	t.Run("AnotherKeyCan", func(t *testing.T) {
		id := submit(t, "sod-other")
		var e struct{ Status string }
		status, raw := call(t, h, approver, http.MethodPost, "/api/v1/notifications/"+id.String()+"/approve", nil, &e)
		require.Equal(t, http.StatusOK, status, "%s", raw)
		require.Equal(t, app.EventReceived, e.Status)
		approverID := h.Count(`SELECT count(*) FROM audit_log WHERE action = 'notification.approve' AND target_id = $1 AND actor_type = 'api_key'
			AND actor_id <> (SELECT api_key_id FROM events WHERE id = $2)`, id.String(), id)
		require.Equal(t, 1, approverID, "the approval is audited with the approving key, not the submitter")
	})

	t.Run("ConsoleManagerCan", func(t *testing.T) {
		id := submit(t, "sod-console")
		manager, err := h.Services.Users.Create(h.Ctx, app.CLIActor, app.UserInput{
			Email: "duty@acme.test", Name: "Duty", Password: "correct horse battery", Role: app.RoleManager, TenantSlug: "acme"})
		require.NoError(t, err)
		e, err := h.Services.Console.Schedules.Decide(h.Ctx, manager, h.Tenant.ID, id, true, "")
		require.NoError(t, err, "the console submits no events, so a manager is never the submitter")
		require.Equal(t, app.EventReceived, e.Status)
	})
}

// TestAPIApproval_ConcurrentDecisions sends two decisions on one event at
// the same moment, from two keys: exactly one wins, the other is a 409, and
// the event is routed once.
func TestAPIApproval_ConcurrentDecisions(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	keys := []string{keyWith(t, h, h.Tenant.ID, app.ScopeApprove), keyWith(t, h, h.Tenant.ID, app.ScopeApprove)}

	for name, actions := range map[string][2]string{
		"TwoApprovals":      {"approve", "approve"},
		"ApproveWithReject": {"approve", "reject"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			id := h.Submit(incidentBroadcast("race-" + name))
			type answer struct {
				status int
				body   []byte
				err    error
			}
			answers := make([]answer, 2)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					status, body, err := apiCall(h, keys[i], http.MethodPost, "/api/v1/notifications/"+id.String()+"/"+actions[i],
						map[string]any{"reason": "race"})
					answers[i] = answer{status, body, err}
				}()
			}
			close(start)
			wg.Wait()

			var won, lost int
			for _, a := range answers {
				require.NoError(t, a.err)
				switch a.status {
				case http.StatusOK:
					won++
				case http.StatusConflict:
					lost++
					var res apiErrorBody
					require.NoError(t, json.Unmarshal(a.body, &res))
					require.Equal(t, app.ECONFLICT, res.Error.Code)
				default:
					t.Fatalf("unexpected answer %d: %s", a.status, a.body)
				}
			}
			require.Equal(t, 1, won, "exactly one decision wins")
			require.Equal(t, 1, lost)
			require.Equal(t, 1, h.Count(`SELECT count(*) FROM audit_log WHERE action IN ('notification.approve', 'notification.reject') AND target_id = $1`, id.String()))
			status := h.Event(id).Status
			routeJobs := h.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, id.String())
			if status == app.EventRejected {
				require.Zero(t, routeJobs)
			} else {
				require.Equal(t, app.EventReceived, status)
				require.Equal(t, 1, routeJobs, "an approved event is routed once")
			}
		})
	}
}

// TestAPIApproval_List lists events awaiting approval with their preview,
// and one approval by id; another tenant sees none of them.
func TestAPIApproval_List(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	reader := keyWith(t, h, h.Tenant.ID, app.ScopeRead)
	id := h.Submit(incidentBroadcast("list-1"))
	h.Submit(webtest.Notification("not-held", "BK-NH"))

	type approval struct {
		Notification struct {
			ID             uuid.UUID `json:"id"`
			Status         string    `json:"status"`
			TriggerEvent   string    `json:"trigger_event"`
			RecipientCount int       `json:"recipient_count"`
		} `json:"notification"`
		FallbackChain      bool `json:"fallback_chain"`
		Routed             bool `json:"routed"`
		SubmittedByThisKey bool `json:"submitted_by_this_key"`
		Recipients         []struct {
			Name     string `json:"name"`
			Messages []struct {
				Channel, Role, To, Body string
			} `json:"messages"`
		} `json:"recipients"`
	}
	var list struct {
		Approvals []approval `json:"approvals"`
		Page      struct {
			HasMore bool `json:"has_more"`
		} `json:"page"`
	}
	status, raw := call(t, h, reader, http.MethodGet, "/api/v1/approvals", nil, &list)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.Len(t, list.Approvals, 1, "only events awaiting approval")
	a := list.Approvals[0]
	require.Equal(t, id, a.Notification.ID)
	require.Equal(t, app.EventAwaitingApproval, a.Notification.Status)
	require.Equal(t, 1, a.Notification.RecipientCount)
	require.True(t, a.FallbackChain)
	require.False(t, a.Routed)
	require.False(t, a.SubmittedByThisKey, "the reading key did not submit it")
	require.Len(t, a.Recipients, 1)
	require.Equal(t, "Anna", a.Recipients[0].Name)
	var sends []string
	for _, m := range a.Recipients[0].Messages {
		if m.Role == "send" {
			sends = append(sends, m.Channel)
			require.NotEmpty(t, m.Body, "the preview renders the text")
			require.Equal(t, "anna@example.com", m.To)
		}
	}
	require.Equal(t, []string{"EMAIL"}, sends, "Anna has only an e-mail address: the chain's one usable channel")

	var one approval
	status, raw = call(t, h, h.Key, http.MethodGet, "/api/v1/approvals/"+id.String(), nil, &one)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.Equal(t, id, one.Notification.ID)
	require.True(t, one.SubmittedByThisKey, "the submitting key is told it may not decide")

	t.Run("BadPaging", func(t *testing.T) {
		for _, q := range []string{"limit=0", "limit=x", "limit=1000", "offset=-1"} {
			var res apiErrorBody
			status, _ := call(t, h, reader, http.MethodGet, "/api/v1/approvals?"+q, nil, &res)
			require.Equal(t, http.StatusUnprocessableEntity, status, q)
			require.Equal(t, strings.SplitN(q, "=", 2)[0], res.Error.Field)
			require.NotEmpty(t, res.Error.Details)
		}
	})

	t.Run("OtherTenant", func(t *testing.T) {
		other, err := h.Services.Tenants.Create(h.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex"})
		require.NoError(t, err)
		otherKey := keyWith(t, h, other.ID, app.ScopeRead, app.ScopeApprove)
		var l struct{ Approvals []approval }
		status, _ := call(t, h, otherKey, http.MethodGet, "/api/v1/approvals", nil, &l)
		require.Equal(t, http.StatusOK, status)
		require.Empty(t, l.Approvals)
		var res apiErrorBody
		status, _ = call(t, h, otherKey, http.MethodGet, "/api/v1/approvals/"+id.String(), nil, &res)
		require.Equal(t, http.StatusNotFound, status)
		status, _ = call(t, h, otherKey, http.MethodPost, "/api/v1/notifications/"+id.String()+"/approve", nil, &res)
		require.Equal(t, http.StatusNotFound, status)
		require.Equal(t, app.EventAwaitingApproval, h.Event(id).Status)
	})
}
