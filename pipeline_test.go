package main

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/web/webtest"
)

func TestPipeline_EndToEnd(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})

	id := p.Submit(webtest.Notification("evt-1", "BK-1"))
	ms := p.WaitMessages(id, "READ on both channels", webtest.AllStatus(app.MessageRead))
	require.Len(t, ms, 2, "BOOKING_CONFIRMED goes out on e-mail and WhatsApp")

	byChannel := map[app.Channel]*app.Message{}
	for _, m := range ms {
		byChannel[m.Channel] = m
	}
	email, wa := byChannel[app.Email], byChannel[app.WhatsApp]
	require.NotNil(t, email)
	require.NotNil(t, wa)
	require.Equal(t, "anna@example.com", email.ToAddress)
	require.Equal(t, "+4915123456789", wa.ToAddress, "the phone is stored in E.164")
	require.Contains(t, wa.Body, "Gardasee", "the body is rendered from the context")
	require.Contains(t, email.Body, "150,00 €")
	require.Equal(t, "de-DE", *email.Locale)
	require.NotNil(t, email.SentAt)
	require.NotNil(t, email.DeliveredAt)
	require.NotNil(t, email.ReadAt)
	require.Equal(t, 1, email.Attempts)
	require.True(t, strings.HasPrefix(*email.ExternalMessageID, "sbx_"))
	require.Equal(t, "booking/BK-1:BOOKING_CONFIRMED:EMAIL:"+email.TemplateID.String()+":"+email.ContactID.String(), email.IdempotencyKey)
	require.Equal(t, "ROUTED", p.Event(id).Status)

	var statuses []string
	for _, e := range p.Timeline(email.ID) {
		if e.ToStatus != nil {
			statuses = append(statuses, *e.ToStatus)
		}
	}
	require.Equal(t, []string{"QUEUED", "SENT", "DELIVERED", "READ"}, statuses, "the timeline has every step")

	t.Run("MessagesByBooking", func(t *testing.T) {
		var res struct{ Messages []*app.Message }
		require.Equal(t, http.StatusOK, p.Request(http.MethodGet, "/api/v1/messages?booking_id=BK-1", nil, &res))
		require.Len(t, res.Messages, 2)
	})

	t.Run("UsageCounted", func(t *testing.T) {
		require.Equal(t, 1, p.Count(`SELECT count FROM usage_counters WHERE tenant_id = $1 AND channel = 'EMAIL'`, p.Tenant.ID))
	})

	t.Run("SameBookingConfirmedAgainUnderNewEventID", func(t *testing.T) {
		id2 := p.Submit(webtest.Notification("evt-1-again", "BK-1"))
		require.Eventually(t, func() bool { return p.Event(id2).Status == app.EventRouted }, dbtest.HangGuard, 20*time.Millisecond)
		require.Empty(t, p.Event(id2).Messages, "a booking is confirmed once, whatever the event id")
		require.Equal(t, 2, p.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1`, p.Tenant.ID))
	})

	t.Run("ManualResendCreatesSecondMessage", func(t *testing.T) {
		var res struct{ Messages []*app.Message }
		require.Equal(t, http.StatusAccepted, p.Request(http.MethodPost, "/api/v1/bookings/BK-1/resend", map[string]any{"channel": "EMAIL"}, &res))
		require.Len(t, res.Messages, 1)
		resent := res.Messages[0]
		require.True(t, strings.HasPrefix(resent.IdempotencyKey, "manual:BK-1:EMAIL:"))
		require.NotNil(t, resent.TriggeredBy)
		require.Eventually(t, func() bool {
			var d struct{ Status string }
			p.Request(http.MethodGet, "/api/v1/messages/"+resent.ID.String(), nil, &d)
			return d.Status == app.MessageRead
		}, dbtest.HangGuard, 20*time.Millisecond)

		var list struct{ Messages []*app.Message }
		p.Request(http.MethodGet, "/api/v1/messages?booking_id=BK-1", nil, &list)
		require.Len(t, list.Messages, 3, "original and resend both appear")
		var original *app.Message
		for _, m := range list.Messages {
			if m.ID == email.ID {
				original = m
			}
		}
		require.Equal(t, app.MessageRead, original.Status, "the original is untouched")
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'message.resend'`, p.Tenant.ID))
	})
}

func TestPipeline_Intake(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{NoWorkers: true})

	t.Run("DuplicateEventID", func(t *testing.T) {
		id := p.Submit(webtest.Notification("dup-1", "BK-D"))
		var res struct {
			ID        uuid.UUID
			Duplicate bool
		}
		require.Equal(t, http.StatusOK, p.Request(http.MethodPost, "/api/v1/notifications", webtest.Notification("dup-1", "BK-D"), &res))
		require.True(t, res.Duplicate)
		require.Equal(t, id, res.ID)
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM events WHERE source_event_id = 'dup-1'`))
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, id.String()))
	})

	t.Run("DuplicateEventIDConcurrent", func(t *testing.T) {
		const n = 8
		var wg sync.WaitGroup
		ids := make([]string, n)
		codes := make([]int, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var res struct{ ID string }
				codes[i] = p.Request(http.MethodPost, "/api/v1/notifications", webtest.Notification("race-1", "BK-R"), &res)
				ids[i] = res.ID
			}()
		}
		wg.Wait()
		accepted := 0
		for i := range n {
			require.Equal(t, ids[0], ids[i], "every racer gets the same id")
			if codes[i] == http.StatusAccepted {
				accepted++
			}
		}
		require.Equal(t, 1, accepted, "exactly one request created the event")
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM events WHERE source_event_id = 'race-1'`))
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, ids[0]))
	})

	t.Run("Redaction", func(t *testing.T) {
		body := webtest.Notification("redact-1", "BK-S")
		body["context"].(map[string]any)["api_token"] = "tok_live_123"
		body["context"].(map[string]any)["meta"] = map[string]any{"Authorization": "Bearer x", "ok": "keep"}
		id := p.Submit(body)
		var stored string
		require.NoError(t, p.Services.Store.InPlatform(p.Ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(p.Ctx, `SELECT context::text FROM events WHERE id = $1`, id).Scan(&stored)
		}))
		require.NotContains(t, stored, "tok_live_123")
		require.NotContains(t, stored, "Bearer x")
		require.Contains(t, stored, `"keep"`)
		require.Contains(t, stored, "<redacted>")
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM audit_log WHERE action = 'notification.redacted' AND target_id = $1
			AND metadata->'paths' = '["api_token", "meta.Authorization"]'::jsonb`, id.String()))
	})

	before := p.Count(`SELECT count(*) FROM events`)
	for name, tc := range map[string]struct {
		mutate func(map[string]any)
		raw    string
		status int
		code   string
		field  string
	}{
		"UnknownEvent":   {mutate: func(b map[string]any) { b["trigger_event"] = "BOOKING_EXPLODED" }, status: 422, code: "unknown_event", field: "trigger_event"},
		"MissingVar":     {mutate: func(b map[string]any) { delete(b["context"].(map[string]any), "tour_name") }, status: 422, code: "missing_variable", field: "context.tour_name"},
		"NoRecipient":    {mutate: func(b map[string]any) { b["recipients"] = []any{} }, status: 422, code: "no_recipient", field: "recipients"},
		"BadPhone":       {mutate: func(b map[string]any) { b["recipients"] = []any{map[string]any{"name": "A", "phone": "0151 123"}} }, status: 422, code: "invalid_phone", field: "recipients[0].phone"},
		"BadEmail":       {mutate: func(b map[string]any) { b["recipients"] = []any{map[string]any{"name": "A", "email": "anna@"}} }, status: 422, code: "invalid_email", field: "recipients[0].email"},
		"NoAddress":      {mutate: func(b map[string]any) { b["recipients"] = []any{map[string]any{"name": "A"}} }, status: 422, code: "no_address", field: "recipients[0]"},
		"UnknownChannel": {mutate: func(b map[string]any) { b["channels"] = []string{"EMAIL", "PIGEON"} }, status: 422, code: "unknown_channel", field: "channels[1]"},
		"PastSendAt":     {mutate: func(b map[string]any) { b["send_at"] = time.Now().Add(-time.Minute).Format(time.RFC3339) }, status: 422, code: "send_at_in_past", field: "send_at"},
		"TooLarge":       {mutate: func(b map[string]any) { b["context"].(map[string]any)["notes"] = strings.Repeat("x", 17000) }, status: 413, code: "payload_too_large"},
		"TenantInBody":   {mutate: func(b map[string]any) { b["tenant_id"] = uuid.NewString() }, status: 422, code: "unknown_field", field: "tenant_id"},
		"MissingEventID": {mutate: func(b map[string]any) { delete(b, "event_id") }, status: 422, code: "missing_event_id", field: "event_id"},
		"BadContextType": {mutate: func(b map[string]any) { b["conversation_context"] = map[string]any{"type": "cruise", "id": "x"} }, status: 422, code: "invalid_conversation_context", field: "conversation_context.type"},
		"NotJSON":        {raw: `{"event_id": `, status: 400, code: "malformed_json"},
	} {
		t.Run("Invalid/"+name, func(t *testing.T) {
			var body any = tc.raw
			if tc.mutate != nil {
				b := webtest.Notification("bad-"+name, "BK-X")
				tc.mutate(b)
				body = b
			}
			var res webtest.APIError
			require.Equal(t, tc.status, p.Request(http.MethodPost, "/api/v1/notifications", body, &res))
			require.Equal(t, tc.code, res.Error.Code)
			require.Equal(t, tc.field, res.Error.Field)
			require.NotEmpty(t, res.Error.Message)
		})
	}
	t.Run("InvalidStoresNothing", func(t *testing.T) {
		require.Equal(t, before, p.Count(`SELECT count(*) FROM events`))
	})

	t.Run("OtherTenantGets404", func(t *testing.T) {
		id := p.Submit(webtest.Notification("mine-1", "BK-M"))
		other, err := p.Services.Tenants.Create(p.Ctx, app.CLIActor, app.TenantInput{Slug: "other", Name: "Other"})
		require.NoError(t, err)
		_, otherKey, err := p.Services.APIKeys.Create(p.Ctx, app.CLIActor, other.ID, "k", app.Scopes...)
		require.NoError(t, err)
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/api/v1/notifications/" + id.String()},
			{http.MethodPatch, "/api/v1/notifications/" + id.String()},
			{http.MethodDelete, "/api/v1/notifications/" + id.String()},
			{http.MethodPost, "/api/v1/notifications/" + id.String() + "/approve"},
			{http.MethodGet, "/api/v1/notifications/not-a-uuid"},
		} {
			var res webtest.APIError
			body := any(nil)
			if c.method == http.MethodPatch {
				body = map[string]any{"send_at": time.Now().Add(time.Hour)}
			}
			require.Equal(t, http.StatusNotFound, p.RequestWithKey(otherKey, c.method, c.path, body, &res), c.method+" "+c.path)
			require.Equal(t, app.ENOTFOUND, res.Error.Code)
		}
		var list struct{ Messages []any }
		require.Equal(t, http.StatusOK, p.RequestWithKey(otherKey, http.MethodGet, "/api/v1/messages?booking_id=BK-M", nil, &list))
		require.Empty(t, list.Messages)
		require.Equal(t, app.EventReceived, p.Event(id).Status, "the owner's event is untouched")
	})
}

func TestAPI_EventsRegistry(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{NoWorkers: true})
	var res struct {
		Events []struct {
			TriggerEvent     string         `json:"trigger_event"`
			Channels         []string       `json:"channels"`
			FallbackChain    []string       `json:"fallback_chain"`
			Variables        []string       `json:"variables"`
			RequiresApproval bool           `json:"requires_approval"`
			SampleContext    map[string]any `json:"sample_context"`
		}
	}
	require.Equal(t, http.StatusOK, p.Request(http.MethodGet, "/api/v1/events", nil, &res))
	require.Len(t, res.Events, 24, "the source registry's 22, TRIP_CANCELLED and DEPARTURE_CHANGED")
	for _, e := range res.Events {
		require.NotEmpty(t, e.Channels, e.TriggerEvent)
		for _, v := range e.Variables {
			require.Contains(t, e.SampleContext, v, "%s's sample context fills %s", e.TriggerEvent, v)
		}
		if e.TriggerEvent == "INCIDENT_BROADCAST" {
			require.True(t, e.RequiresApproval)
			require.Equal(t, []string{"WHATSAPP", "SMS", "EMAIL"}, e.FallbackChain)
		}
	}
}

// TestWebtest_ConfigMatchesBinary checks that the tests' Herald (webtest)
// runs with what the binary makes of an empty environment, but for what the
// harness sets on purpose: fresh keys, its own database, a smaller pool and
// a faster sandbox. A default changed in the loader shows up here, instead
// of the tests quietly running another configuration than production.
func TestWebtest_ConfigMatchesBinary(t *testing.T) {
	t.Parallel()
	const databaseURL = "postgres://herald:herald@127.0.0.1:54320/herald_test_config?sslmode=disable"
	env := map[string]string{
		"DATABASE_URL":         databaseURL,
		"HERALD_DATA_DIR":      t.TempDir(),
		"HERALD_DB_MAX_CONNS":  "12",
		"HERALD_SANDBOX_DELAY": "20ms",
		// The tests' tenants have no quiet hours, so that they send at any
		// time of day the tests run.
		"HERALD_QUIET_HOURS": "off",
	}
	want, err := loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)

	got := webtest.Config(databaseURL)
	require.Len(t, got.SecretKey, len(want.SecretKey))
	require.Len(t, got.SessionKey, len(want.SessionKey))
	require.NotEqual(t, webtest.Config(databaseURL).SessionKey, got.SessionKey, "every Herald gets keys of its own")
	got.SecretKey, got.SessionKey = want.SecretKey, want.SessionKey
	require.Equal(t, want, got)

	got.Quotas[app.PlanPro][app.SMS] = 1
	require.NotEqual(t, 1, app.DefaultQuotas[app.PlanPro][app.SMS], "a test's quota leaves the defaults alone")
}
