package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// allClear is an INCIDENT_ALLCLEAR to a coach of three, each with a
// recipient context, locale or time zone of their own.
func allClear(eventID string) map[string]any {
	return map[string]any{
		"event_id": eventID, "trigger_event": "INCIDENT_ALLCLEAR",
		"recipients": []map[string]any{
			{"name": "Anna Schmidt", "phone": "+4915123456781", "locale": "en"},
			{"name": "Ben Ode", "phone": "+4915123456782", "locale": "en",
				"context": map[string]any{"update_message": "Your connecting bus waits for you at bay 4."}},
			{"name": "Cleo Park", "phone": "+4915123456783", "locale": "de-DE", "timezone": "America/New_York"},
		},
		"context":              map[string]any{"tour_name": "Lake Garda", "update_message": "The road is open again."},
		"conversation_context": map[string]any{"type": "trip", "id": "TR-1"},
	}
}

func TestRecipients_OwnContextAndName(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	ms := c.routeNow(c.Tenant.ID, c.Submit(allClear("evt-clear")))
	require.Len(t, ms, 3, "one WhatsApp message each (the fallback chain's first channel)")

	anna, ben, cleo := messageTo(t, ms, "+4915123456781"), messageTo(t, ms, "+4915123456782"), messageTo(t, ms, "+4915123456783")
	require.Contains(t, anna.Body, "Hello Anna Schmidt,")
	require.Contains(t, anna.Body, "The road is open again.")
	require.Contains(t, ben.Body, "Hello Ben Ode,")
	require.Contains(t, ben.Body, "Your connecting bus waits for you at bay 4.", "the recipient's context wins")
	require.NotContains(t, ben.Body, "The road is open again.")
	require.Contains(t, cleo.Body, "Hallo Cleo Park,", "her locale")
	for _, m := range ms {
		require.Equal(t, app.WhatsApp, m.Channel)
	}
}

func TestRecipients_TimeInOwnZone(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	body := webtest.Notification("evt-tz", "BK-TZ")
	body["channels"] = []string{"EMAIL"}
	body["context"].(map[string]any)["departure_date"] = "2027-04-12T05:15:00Z"
	body["recipients"] = []map[string]any{
		{"name": "Anna", "email": "anna@example.com", "locale": "en", "timezone": "Europe/Berlin"},
		{"name": "Ben", "email": "ben@example.com", "locale": "en", "timezone": "America/New_York"},
		{"name": "Cleo", "email": "cleo@example.com", "locale": "en"},
	}
	ms := c.routeNow(c.Tenant.ID, c.Submit(body))
	require.Contains(t, messageTo(t, ms, "anna@example.com").Body, "2027-04-12 07:15 CEST")
	require.Contains(t, messageTo(t, ms, "ben@example.com").Body, "2027-04-12 01:15 EDT")
	require.Contains(t, messageTo(t, ms, "cleo@example.com").Body, "2027-04-12T05:15:00Z", "without a zone, as the caller wrote it")
}

func TestRecipients_Validation(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	// No refused request stores an event; SecretsRedacted, the one that
	// is accepted, uses its own event id.
	events := func() int { return c.Count(`SELECT count(*) FROM events WHERE source_event_id <> 'evt-secret'`) }

	t.Run("BadTimezone", func(t *testing.T) {
		body := allClear("evt-bad-tz")
		body["recipients"].([]map[string]any)[2]["timezone"] = "Mars/Olympus_Mons"
		var e apiError
		require.Equal(t, http.StatusUnprocessableEntity, c.Request(http.MethodPost, "/api/v1/notifications", body, &e))
		require.Equal(t, "invalid_timezone", e.Error.Code)
		require.Equal(t, "recipients[2].timezone", e.Error.Field)
		require.Zero(t, events())
	})

	t.Run("LocalIsNoZone", func(t *testing.T) {
		body := allClear("evt-local-tz")
		body["recipients"].([]map[string]any)[0]["timezone"] = "Local"
		var e apiError
		require.Equal(t, http.StatusUnprocessableEntity, c.Request(http.MethodPost, "/api/v1/notifications", body, &e))
		require.Equal(t, "recipients[0].timezone", e.Error.Field)
	})

	t.Run("VariableMissingForOneRecipient", func(t *testing.T) {
		body := allClear("evt-missing")
		delete(body["context"].(map[string]any), "update_message")
		rs := body["recipients"].([]map[string]any)
		rs[0]["context"] = map[string]any{"update_message": "a"}
		rs[1]["context"] = map[string]any{"seat": "12A"}
		rs[2]["context"] = map[string]any{"update_message": "c"}
		body["recipients"] = append(rs, map[string]any{"name": "Dora", "phone": "+4915123456784", "context": map[string]any{"update_message": "d"}})
		var e apiError
		require.Equal(t, http.StatusUnprocessableEntity, c.Request(http.MethodPost, "/api/v1/notifications", body, &e))
		require.Equal(t, "missing_variable", e.Error.Code)
		require.Len(t, e.Error.Details, 0+1, "only Ben lacks it")
		require.Equal(t, "recipients[1].context.update_message", e.Error.Details[0].Field)
		require.Zero(t, events())
	})

	t.Run("VariableMissingForAll", func(t *testing.T) {
		body := allClear("evt-missing-all")
		delete(body["context"].(map[string]any), "update_message")
		delete(body["recipients"].([]map[string]any)[1], "context")
		var e apiError
		require.Equal(t, http.StatusUnprocessableEntity, c.Request(http.MethodPost, "/api/v1/notifications", body, &e))
		require.Len(t, e.Error.Details, 1)
		require.Equal(t, "context.update_message", e.Error.Details[0].Field)
	})

	t.Run("ContextNotAnObject", func(t *testing.T) {
		body := allClear("evt-ctx-string")
		body["recipients"].([]map[string]any)[0]["context"] = "nope"
		var e apiError
		require.Equal(t, http.StatusBadRequest, c.Request(http.MethodPost, "/api/v1/notifications", body, &e))
		require.Equal(t, "malformed_json", e.Error.Code)
		require.Zero(t, events())
	})

	t.Run("SecretsRedacted", func(t *testing.T) {
		body := allClear("evt-secret")
		body["recipients"].([]map[string]any)[0]["context"] = map[string]any{"access_token": "s3cr3t"}
		id := c.Submit(body)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM events WHERE id = $1 AND recipients->0->'context'->>'access_token' = '<redacted>'`, id))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'notification.redacted' AND target_id = $1
			AND metadata->'paths' ? 'recipients[0].context.access_token'`, id.String()))
	})
}

func TestRecipients_Idempotency(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	first := c.Submit(allClear("evt-idem"))

	var dup struct {
		ID        uuid.UUID
		Duplicate bool
	}
	require.Equal(t, http.StatusOK, c.Request(http.MethodPost, "/api/v1/notifications", allClear("evt-idem"), &dup))
	require.True(t, dup.Duplicate)
	require.Equal(t, first, dup.ID)

	for field, change := range map[string]func(rs []map[string]any){
		"recipients[1].context.update_message": func(rs []map[string]any) {
			rs[1]["context"] = map[string]any{"update_message": "Another bay."}
		},
		"recipients[2].timezone": func(rs []map[string]any) { rs[2]["timezone"] = "Europe/Berlin" },
		"recipients[0].context":  func(rs []map[string]any) { rs[0]["context"] = map[string]any{"seat": "12A"} },
	} {
		body := allClear("evt-idem")
		change(body["recipients"].([]map[string]any))
		var e apiError
		require.Equal(t, http.StatusConflict, c.Request(http.MethodPost, "/api/v1/notifications", body, &e), field)
		require.Equal(t, field, e.Error.Field)
	}
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM events`))
}

func TestRecipients_ApprovalPreview(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	body := allClear("evt-preview")
	body["trigger_event"] = "INCIDENT_BROADCAST"
	ctx := body["context"].(map[string]any)
	delete(ctx, "update_message")
	ctx["incident_message"], ctx["operator_phone"] = "The coach is delayed.", "+49 89 1234567"
	body["recipients"].([]map[string]any)[1]["context"] = map[string]any{"incident_message": "Your coach leaves from bay 4."}
	id := c.Submit(body)

	doc := c.signIn(asManager).page("/t/acme/approvals/" + id.String())
	plans := doc.Find(".recipient-plan")
	require.Equal(t, 3, plans.Length())
	for i, want := range []string{"Hello Anna Schmidt,", "Hello Ben Ode,", "Hallo Cleo Park,"} {
		plan := plans.Eq(i)
		wa := plan.Find(`.planned[data-channel="WHATSAPP"] .preview`)
		require.Contains(t, text(wa), strings.TrimSuffix(want, ","), "recipient %d", i)
	}
	require.Contains(t, text(plans.Eq(1)), "Your coach leaves from bay 4.")
	require.NotContains(t, text(plans.Eq(0)), "bay 4")

	// The API's approval preview renders the same per recipient.
	var res struct {
		Recipients []struct {
			Name     string
			Messages []struct{ Channel, Body string }
		}
		HiddenRecipients int `json:"hidden_recipients"`
	}
	require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/approvals/"+id.String(), nil, &res))
	require.Len(t, res.Recipients, 3)
	require.Zero(t, res.HiddenRecipients)
	for i, want := range []string{"Hello Anna Schmidt,", "Hello Ben Ode,", "Hallo Cleo Park,"} {
		require.Equal(t, "WHATSAPP", res.Recipients[i].Messages[0].Channel)
		require.Contains(t, res.Recipients[i].Messages[0].Body, want)
	}
	require.Contains(t, res.Recipients[1].Messages[0].Body, "Your coach leaves from bay 4.")
}
