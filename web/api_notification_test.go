package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// apiErrorBody is the JSON error answer with its details.
type apiErrorBody struct {
	Error struct {
		Code, Message, Field string
		Details              []struct{ Code, Message, Field string }
	}
}

// submitted is the answer to POST /api/v1/notifications.
type submitted struct {
	ID        uuid.UUID
	Status    string
	Duplicate bool
}

// requireNothingStored checks that no event with the source id exists.
func requireNothingStored(t *testing.T, b *testBundle, eventID string) {
	t.Helper()
	require.Zero(t, b.Count(`SELECT count(*) FROM events WHERE tenant_id = $1 AND source_event_id = $2`, b.Tenant.ID, eventID),
		"nothing is stored for %s", eventID)
}

// queryString runs a query returning one text value in the platform scope.
func queryString(t *testing.T, b *testBundle, query string, args ...any) string {
	t.Helper()
	var s string
	require.NoError(t, b.Services.Store.InPlatform(b.Ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(b.Ctx, query, args...).Scan(&s)
	}))
	return s
}

// otherTenantKey creates another tenant and returns an API key of it.
func otherTenantKey(t *testing.T, b *testBundle, slug string) string {
	t.Helper()
	tn, err := b.Services.Tenants.Create(b.Ctx, app.CLIActor, app.TenantInput{Slug: slug, Name: slug})
	require.NoError(t, err)
	_, key, err := b.Services.APIKeys.Create(b.Ctx, app.CLIActor, tn.ID, slug+" system")
	require.NoError(t, err)
	return key
}

func TestAPINotification_Idempotency(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// routeJobs counts the route jobs of an event.
	routeJobs := func(id uuid.UUID) int {
		return b.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, id.String())
	}

	t.Run("SameBodyIsDuplicate", func(t *testing.T) {
		t.Parallel()
		id := b.Submit(webtest.Notification("idem-same", "BK-IS"))
		// The same request with other key order, whitespace and phone
		// spacing: the same request.
		raw := `{ "context": {"deposit_amount": "150,00 €", "booking_reference": "BK-IS", "departure_date": "2027-04-12",
			"tour_name": "Gardasee", "passenger_name": "Anna Schmidt"},
			"trigger_event": "BOOKING_CONFIRMED", "event_id": "idem-same",
			"conversation_context": {"id": "BK-IS", "type": "booking"},
			"recipients": [{"locale": "de-DE", "email": "anna@example.com", "phone": "+4915123456789", "name": "Anna Schmidt"}] }`
		var res submitted
		require.Equal(t, http.StatusOK, b.Request(http.MethodPost, "/api/v1/notifications", raw, &res))
		require.True(t, res.Duplicate)
		require.Equal(t, id, res.ID)
		require.Equal(t, 1, routeJobs(id))
	})

	conflicts := map[string]struct {
		change func(body map[string]any)
		field  string
	}{
		"Context": {func(body map[string]any) {
			body["context"].(map[string]any)["tour_name"] = "Bodensee"
		}, "context.tour_name"},
		"RecipientPhone": {func(body map[string]any) {
			body["recipients"].([]map[string]any)[0]["phone"] = "+4915199999999"
		}, "recipients[0].phone"},
		"AddedRecipient": {func(body map[string]any) {
			rs := body["recipients"].([]map[string]any)
			body["recipients"] = append(rs, map[string]any{"name": "Ben", "email": "ben@example.com"})
		}, "recipients[1]"},
		"Channels": {func(body map[string]any) {
			body["channels"] = []string{"EMAIL"}
		}, "channels"},
		"NewContextKey": {func(body map[string]any) {
			body["context"].(map[string]any)["bus_number"] = "7"
		}, "context.bus_number"},
	}
	for name, tc := range conflicts {
		t.Run("DifferentBody/"+name, func(t *testing.T) {
			t.Parallel()
			eventID := "idem-diff-" + name
			id := b.Submit(webtest.Notification(eventID, "BK-ID"))
			body := webtest.Notification(eventID, "BK-ID")
			tc.change(body)

			var res apiErrorBody
			require.Equal(t, http.StatusConflict, b.Request(http.MethodPost, "/api/v1/notifications", body, &res))
			require.Equal(t, "idempotency_conflict", res.Error.Code)
			require.Equal(t, tc.field, res.Error.Field)
			require.Contains(t, res.Error.Message, tc.field)
			require.Contains(t, res.Error.Message, eventID)

			// Nothing changed: the first request's event and its one job.
			require.Equal(t, 1, b.Count(`SELECT count(*) FROM events WHERE tenant_id = $1 AND source_event_id = $2`, b.Tenant.ID, eventID))
			require.Equal(t, "Gardasee", queryString(t, b, `SELECT context->>'tour_name' FROM events WHERE tenant_id = $1 AND id = $2`, b.Tenant.ID, id))
			require.Equal(t, "+4915123456789", queryString(t, b, `SELECT recipients->0->>'phone' FROM events WHERE tenant_id = $1 AND id = $2`, b.Tenant.ID, id))
			require.Equal(t, 1, routeJobs(id))

			// The first request again is still a duplicate.
			var dup submitted
			require.Equal(t, http.StatusOK, b.Request(http.MethodPost, "/api/v1/notifications", webtest.Notification(eventID, "BK-ID"), &dup))
			require.True(t, dup.Duplicate)
		})
	}

	t.Run("AfterReschedule", func(t *testing.T) {
		t.Parallel()
		body := webtest.Notification("idem-resched", "BK-RS")
		body["send_at"] = "2099-01-01T10:00:00Z"
		id := b.Submit(body)
		require.Equal(t, http.StatusOK, b.Request(http.MethodPatch, "/api/v1/notifications/"+id.String(), `{"send_at": "2099-02-01T10:00:00Z"}`, nil))

		// The original request, retried, is still the same request.
		var dup submitted
		require.Equal(t, http.StatusOK, b.Request(http.MethodPost, "/api/v1/notifications", body, &dup))
		require.True(t, dup.Duplicate)
		require.Equal(t, id, dup.ID)

		body["context"].(map[string]any)["tour_name"] = "Bodensee"
		var res apiErrorBody
		require.Equal(t, http.StatusConflict, b.Request(http.MethodPost, "/api/v1/notifications", body, &res))
		require.Equal(t, "context.tour_name", res.Error.Field)
	})

	t.Run("SendAt", func(t *testing.T) {
		t.Parallel()
		body := webtest.Notification("idem-sendat", "BK-SA")
		body["send_at"] = "2099-01-01T10:00:00Z"
		b.Submit(body)
		body["send_at"] = "2099-01-01T12:00:00+02:00" // the same instant
		var dup submitted
		require.Equal(t, http.StatusOK, b.Request(http.MethodPost, "/api/v1/notifications", body, &dup))
		require.True(t, dup.Duplicate)
		body["send_at"] = "2099-01-01T10:00:01Z"
		var res apiErrorBody
		require.Equal(t, http.StatusConflict, b.Request(http.MethodPost, "/api/v1/notifications", body, &res))
		require.Equal(t, "send_at", res.Error.Field)
	})

	t.Run("OtherTenantsEventIDIsFree", func(t *testing.T) {
		t.Parallel()
		b.Submit(webtest.Notification("idem-tenant", "BK-IT"))
		other := otherTenantKey(t, b, "idem-other")
		body := webtest.Notification("idem-tenant", "BK-IT")
		body["context"].(map[string]any)["tour_name"] = "Bodensee"
		var res submitted
		require.Equal(t, http.StatusAccepted, b.RequestWithKey(other, http.MethodPost, "/api/v1/notifications", body, &res))
	})

	t.Run("ConcurrentDifferentBodies", func(t *testing.T) {
		t.Parallel()
		// Each round races two different requests under one new id:
		// exactly one is accepted and the other refused, whichever wins.
		for round := range 10 {
			eventID := "idem-race-" + uuid.NewString()
			bodies := []map[string]any{webtest.Notification(eventID, "BK-RA"), webtest.Notification(eventID, "BK-RA")}
			bodies[1]["context"].(map[string]any)["tour_name"] = "Bodensee"
			codes := make([]int, 2)
			errs := make([]apiErrorBody, 2)
			var start, wg sync.WaitGroup
			start.Add(1)
			for i := range bodies {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start.Wait()
					codes[i] = b.Request(http.MethodPost, "/api/v1/notifications", bodies[i], &errs[i])
				}()
			}
			start.Done()
			wg.Wait()
			require.ElementsMatch(t, []int{http.StatusAccepted, http.StatusConflict}, codes, "round %d", round)
			loser := 0
			if codes[1] == http.StatusConflict {
				loser = 1
			}
			require.Equal(t, "idempotency_conflict", errs[loser].Error.Code)
			require.Equal(t, "context.tour_name", errs[loser].Error.Field)
			require.Equal(t, 1, b.Count(`SELECT count(*) FROM events WHERE tenant_id = $1 AND source_event_id = $2`, b.Tenant.ID, eventID))
			winnerTour := map[int]string{0: "Gardasee", 1: "Bodensee"}[1-loser]
			require.Equal(t, winnerTour, queryString(t, b, `SELECT context->>'tour_name' FROM events WHERE tenant_id = $1 AND source_event_id = $2`, b.Tenant.ID, eventID),
				"the stored event is the accepted request")
			require.Equal(t, 1, b.Count(`SELECT count(*) FROM river_job j JOIN events e ON j.args->>'event_id' = e.id::text
				WHERE e.tenant_id = $1 AND e.source_event_id = $2 AND j.kind = 'route'`, b.Tenant.ID, eventID))
		}
	})
}

func TestAPINotification_ValidationDetails(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("SixMissingVariables", func(t *testing.T) {
		t.Parallel()
		body := map[string]any{
			"event_id": "details-six", "trigger_event": "BOOKING_FULLY_PAID",
			"recipients": []map[string]any{{"name": "Anna", "email": "anna@example.com"}},
			"context":    map[string]any{},
		}
		var res apiErrorBody
		require.Equal(t, http.StatusUnprocessableEntity, b.Request(http.MethodPost, "/api/v1/notifications", body, &res))
		require.Equal(t, "missing_variable", res.Error.Code, "the first problem stays the error")
		require.Equal(t, "context.passenger_name", res.Error.Field)
		require.Equal(t, "context.passenger_name is required for BOOKING_FULLY_PAID.", res.Error.Message)
		var fields []string
		for _, d := range res.Error.Details {
			require.Equal(t, "missing_variable", d.Code)
			require.Equal(t, "context."+d.Field[len("context."):]+" is required for BOOKING_FULLY_PAID.", d.Message)
			fields = append(fields, d.Field)
		}
		require.Equal(t, []string{"context.passenger_name", "context.tour_name", "context.departure_date",
			"context.booking_reference", "context.total_amount", "context.invoice_url"}, fields)
		requireNothingStored(t, b, "details-six")
	})

	t.Run("MixedProblems", func(t *testing.T) {
		t.Parallel()
		body := webtest.Notification("details-mixed", "BK-DM")
		delete(body["context"].(map[string]any), "tour_name")
		body["recipients"] = []map[string]any{
			{"name": "Anna", "phone": "12345", "email": "not-an-address"},
			{"name": "Ben"},
		}
		body["channels"] = []string{"EMAIL", "PIGEON", "EMAIL"}
		body["conversation_context"] = map[string]any{"type": "cruise", "id": ""}
		var res apiErrorBody
		require.Equal(t, http.StatusUnprocessableEntity, b.Request(http.MethodPost, "/api/v1/notifications", body, &res))
		require.Equal(t, "missing_variable", res.Error.Code)
		require.Equal(t, "context.tour_name", res.Error.Field)
		type entry struct{ Code, Field string }
		var got []entry
		for _, d := range res.Error.Details {
			require.NotEmpty(t, d.Message)
			got = append(got, entry{d.Code, d.Field})
		}
		require.Equal(t, []entry{
			{"missing_variable", "context.tour_name"},
			{"invalid_phone", "recipients[0].phone"},
			{"invalid_email", "recipients[0].email"},
			{"no_address", "recipients[1]"},
			{"unknown_channel", "channels[1]"},
			{"duplicate_channel", "channels[2]"},
			{"invalid_conversation_context", "conversation_context.type"},
			{"invalid_conversation_context", "conversation_context.id"},
		}, got)
		requireNothingStored(t, b, "details-mixed")
	})

	t.Run("OneProblemHasOneDetail", func(t *testing.T) {
		t.Parallel()
		body := webtest.Notification("details-one", "BK-D1")
		body["trigger_event"] = "NOPE"
		var res apiErrorBody
		require.Equal(t, http.StatusUnprocessableEntity, b.Request(http.MethodPost, "/api/v1/notifications", body, &res))
		require.Equal(t, "unknown_event", res.Error.Code)
		require.Len(t, res.Error.Details, 1)
		require.Equal(t, res.Error.Code, res.Error.Details[0].Code)
		require.Equal(t, res.Error.Field, res.Error.Details[0].Field)
		require.Equal(t, res.Error.Message, res.Error.Details[0].Message)
		requireNothingStored(t, b, "details-one")
	})
}

func TestAPINotification_InvalidText(t *testing.T) {
	t.Parallel()
	b := setup(t)

	requireInvalidText := func(t *testing.T, status int, res apiErrorBody, field string) {
		t.Helper()
		require.Equal(t, http.StatusBadRequest, status)
		require.Equal(t, "invalid_text", res.Error.Code)
		require.Equal(t, field, res.Error.Field)
		require.Contains(t, res.Error.Message, "NUL")
	}

	for name, tc := range map[string]struct {
		body  func(eventID string) string
		field string
	}{
		"ContextValue": {func(id string) string {
			return `{"event_id": "` + id + `", "trigger_event": "BOOKING_CONFIRMED", "recipients": [{"name": "Anna", "email": "anna@example.com"}],
				"context": {"passenger_name": "Anna", "tour_name": "Garda\u0000see", "departure_date": "2027-04-12", "booking_reference": "BK-N", "deposit_amount": "1.00 EUR"}}`
		}, "context.tour_name"},
		"RecipientName": {func(id string) string {
			return `{"event_id": "` + id + `", "trigger_event": "BOOKING_CONFIRMED", "recipients": [{"name": "An\u0000na", "email": "anna@example.com"}],
				"context": {"passenger_name": "Anna", "tour_name": "Gardasee", "departure_date": "2027-04-12", "booking_reference": "BK-N", "deposit_amount": "1.00 EUR"}}`
		}, "recipients[0].name"},
		"NestedContextKey": {func(id string) string {
			return `{"event_id": "` + id + `", "trigger_event": "BOOKING_CONFIRMED", "recipients": [{"name": "Anna", "email": "anna@example.com"}],
				"context": {"passenger_name": "Anna", "tour_name": "Gardasee", "departure_date": "2027-04-12", "booking_reference": "BK-N", "deposit_amount": "1.00 EUR",
				"extra": [{"k\u0000ey": 1}]}}`
		}, `context.extra[0].k\u0000ey`},
		"RawByte": {func(id string) string {
			return `{"event_id": "` + id + `", "trigger_event": "BOOKING_CONFIRMED", "recipients": [{"name": "An` + "\x00" + `na", "email": "anna@example.com"}]}`
		}, ""},
	} {
		t.Run("Submit/"+name, func(t *testing.T) {
			t.Parallel()
			eventID := "nul-" + name
			var res apiErrorBody
			status := b.Request(http.MethodPost, "/api/v1/notifications", tc.body(eventID), &res)
			requireInvalidText(t, status, res, tc.field)
			requireNothingStored(t, b, eventID)
		})
	}

	t.Run("EventID", func(t *testing.T) {
		t.Parallel()
		body := `{"event_id": "nul-\u0000-id", "trigger_event": "BOOKING_CONFIRMED", "recipients": [{"name": "Anna", "email": "anna@example.com"}]}`
		var res apiErrorBody
		requireInvalidText(t, b.Request(http.MethodPost, "/api/v1/notifications", body, &res), res, "event_id")
		require.Zero(t, b.Count(`SELECT count(*) FROM events WHERE tenant_id = $1 AND source_event_id LIKE 'nul-%-id'`, b.Tenant.ID), "nothing stored")
	})

	t.Run("QueryParameter", func(t *testing.T) {
		t.Parallel()
		var res apiErrorBody
		requireInvalidText(t, b.Request(http.MethodGet, "/api/v1/messages?booking_id=BK%00-1", nil, &res), res, "booking_id")
	})

	t.Run("RejectReason", func(t *testing.T) {
		t.Parallel()
		id := b.Submit(incidentBroadcast("nul-reject"))
		var res apiErrorBody
		requireInvalidText(t, b.Request(http.MethodPost, "/api/v1/notifications/"+id.String()+"/reject", `{"reason": "no\u0000"}`, &res), res, "reason")
		require.Equal(t, "AWAITING_APPROVAL", b.Event(id).Status, "nothing changed")
	})
}

// incidentBroadcast is a valid INCIDENT_BROADCAST request, which waits for
// approval.
func incidentBroadcast(eventID string) map[string]any {
	def, ok := app.BuiltInEvent("INCIDENT_BROADCAST")
	if !ok {
		panic("INCIDENT_BROADCAST is not in the registry")
	}
	return map[string]any{
		"event_id": eventID, "trigger_event": def.Name, "context": def.Sample,
		"recipients": []map[string]any{{"name": "Anna", "email": "anna@example.com"}},
	}
}

func TestAPINotification_SubjectLineBreaks(t *testing.T) {
	t.Parallel()
	b := setup(t)

	body := webtest.Notification("crlf-1", "BK-CR")
	body["context"].(map[string]any)["tour_name"] = "Gardasee\r\nBcc: everyone@example.com\n"
	id := b.Submit(body)
	require.NoError(t, b.Services.Router.Route(b.Ctx, app.RouteJob{TenantID: b.Tenant.ID, EventID: id, Version: 1}))
	var email *app.Message
	for _, m := range b.Event(id).Messages {
		if m.Channel == app.Email {
			email = m
		}
	}
	require.NotNil(t, email, "BOOKING_CONFIRMED goes out by e-mail")
	require.NotContains(t, email.Subject, "\r")
	require.NotContains(t, email.Subject, "\n")
	require.Contains(t, email.Subject, "Gardasee Bcc: everyone@example.com", "the line break becomes a space")
}

func TestAPINotification_MethodsAndSendAt(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("WrongMethodIs405WithAllow", func(t *testing.T) {
		t.Parallel()
		// Its own Herald: the other subtests store events meanwhile.
		b := setup(t)
		for _, tc := range []struct{ method, path, allow string }{
			{http.MethodPut, "/api/v1/notifications", "GET, HEAD, POST"},
			{http.MethodPost, "/api/v1/notifications/" + uuid.NewString(), "GET, HEAD, PATCH, DELETE"},
			{http.MethodGet, "/api/v1/notifications/" + uuid.NewString() + "/approve", "POST"},
			{http.MethodDelete, "/api/v1/delivery-deadlines", "GET, HEAD, PUT"},
			{http.MethodPost, "/api/v1/confirmation-windows", "GET, HEAD, PUT"},
			{http.MethodPatch, "/api/v1/events", "GET, HEAD, POST"},
		} {
			var res apiErrorBody
			req := httptest.NewRequest(tc.method, tc.path, nil)
			req.Header.Set("Authorization", "Bearer "+b.Key)
			resp := b.do(t, req)
			require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, tc.method+" "+tc.path)
			require.ElementsMatch(t, strings.Split(tc.allow, ", "), strings.Split(strings.Join(resp.Header.Values("Allow"), ", "), ", "), tc.method+" "+tc.path)
			require.Equal(t, "application/json", strings.Split(resp.Header.Get("Content-Type"), ";")[0])
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&res))
			require.Equal(t, "method_not_allowed", res.Error.Code)
			require.Contains(t, res.Error.Message, tc.method+" is not allowed on "+tc.path)
		}
		require.Zero(t, b.Count(`SELECT count(*) FROM events WHERE tenant_id = $1`, b.Tenant.ID), "nothing stored")
	})

	t.Run("WrongMethodWithoutKeyIs401", func(t *testing.T) {
		t.Parallel()
		resp := b.do(t, httptest.NewRequest(http.MethodPut, "/api/v1/notifications", nil))
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the key is checked first, so the API's shape is not shown to strangers")
	})

	t.Run("UnknownAPIPathIs404", func(t *testing.T) {
		t.Parallel()
		var res apiErrorBody
		require.Equal(t, http.StatusNotFound, b.Request(http.MethodGet, "/api/v1/nothing-here", nil, &res))
		require.Equal(t, "not_found", res.Error.Code)
	})

	t.Run("BadSendAtOnPatch", func(t *testing.T) {
		t.Parallel()
		body := webtest.Notification("sendat-patch", "BK-SP")
		body["send_at"] = "2099-01-01T10:00:00Z"
		id := b.Submit(body)
		for name, raw := range map[string]string{
			"NoOffset":  `{"send_at": "2099-02-01 10:00"}`,
			"Date":      `{"send_at": "2099-02-01"}`,
			"Garbage":   `{"send_at": "tomorrow"}`,
			"NotString": `{"send_at": 1234567890}`,
		} {
			var res apiErrorBody
			require.Equal(t, http.StatusUnprocessableEntity, b.Request(http.MethodPatch, "/api/v1/notifications/"+id.String(), raw, &res), name)
			require.Equal(t, "invalid_send_at", res.Error.Code, name)
			require.Equal(t, "send_at", res.Error.Field, name)
			require.Contains(t, res.Error.Message, "2027-04-12T07:15:00+02:00", name)
			require.NotContains(t, res.Error.Message, "2006", "no Go time layout")
			require.NotContains(t, res.Error.Message, "parsing time")
		}
		e := b.Event(id)
		require.Equal(t, 1, e.Version, "nothing changed")
		require.Equal(t, "2099-01-01T10:00:00Z", queryString(t, b, `SELECT to_char(send_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') FROM events WHERE tenant_id = $1 AND id = $2`, b.Tenant.ID, id))
	})

	t.Run("BadSendAtOnSubmit", func(t *testing.T) {
		t.Parallel()
		body := webtest.Notification("sendat-submit", "BK-SS")
		body["send_at"] = "next tuesday"
		var res apiErrorBody
		require.Equal(t, http.StatusUnprocessableEntity, b.Request(http.MethodPost, "/api/v1/notifications", body, &res))
		require.Equal(t, "invalid_send_at", res.Error.Code)
		require.Equal(t, "send_at", res.Error.Field)
		requireNothingStored(t, b, "sendat-submit")
	})

	t.Run("UnknownFieldIs422", func(t *testing.T) {
		t.Parallel()
		body := webtest.Notification("unknown-field", "BK-UF")
		body["tenant_id"] = uuid.NewString()
		var res apiErrorBody
		require.Equal(t, http.StatusUnprocessableEntity, b.Request(http.MethodPost, "/api/v1/notifications", body, &res))
		require.Equal(t, "unknown_field", res.Error.Code)
		require.Equal(t, "tenant_id", res.Error.Field)
		require.Contains(t, res.Error.Message, "the tenant comes from the API key")
		require.Len(t, res.Error.Details, 1, "an input error is its own one detail")
		require.Equal(t, "unknown_field", res.Error.Details[0].Code)
		require.Equal(t, "tenant_id", res.Error.Details[0].Field)
		requireNothingStored(t, b, "unknown-field")

		id := b.Submit(webtest.Notification("unknown-field-patch", "BK-UF"))
		require.Equal(t, http.StatusUnprocessableEntity, b.Request(http.MethodPatch, "/api/v1/notifications/"+id.String(), `{"send_at": "2099-01-01T10:00:00Z", "sendAt": "x"}`, &res))
		require.Equal(t, "unknown_field", res.Error.Code)
		require.Equal(t, "sendAt", res.Error.Field)
		require.Equal(t, 1, b.Event(id).Version, "nothing changed")
	})
}

func TestAPINotification_FindByEventID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.Submit(webtest.Notification("find me/1?&", "BK-F"))
	require.NoError(t, b.Services.Router.Route(b.Ctx, app.RouteJob{TenantID: b.Tenant.ID, EventID: id, Version: 1}))

	t.Run("Found", func(t *testing.T) {
		t.Parallel()
		var e struct {
			webtest.EventView
			EventID string `json:"event_id"`
		}
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, "/api/v1/notifications?event_id="+url.QueryEscape("find me/1?&"), nil, &e))
		require.Equal(t, id, e.ID)
		require.Equal(t, "find me/1?&", e.EventID)
		require.Len(t, e.Messages, len(b.Event(id).Messages), "the same answer as GET by Herald's id")
		require.NotEmpty(t, e.Messages)
	})

	t.Run("Unknown", func(t *testing.T) {
		t.Parallel()
		var res apiErrorBody
		require.Equal(t, http.StatusNotFound, b.Request(http.MethodGet, "/api/v1/notifications?event_id=nobody", nil, &res))
		require.Equal(t, "not_found", res.Error.Code)
		require.Contains(t, res.Error.Message, "nobody")
	})

	t.Run("OtherTenantsIDIs404", func(t *testing.T) {
		t.Parallel()
		key := otherTenantKey(t, b, "find-other")
		var res apiErrorBody
		require.Equal(t, http.StatusNotFound, b.RequestWithKey(key, http.MethodGet, "/api/v1/notifications?event_id="+url.QueryEscape("find me/1?&"), nil, &res))
		require.Equal(t, "not_found", res.Error.Code)
	})

	t.Run("MissingEventID", func(t *testing.T) {
		t.Parallel()
		var res apiErrorBody
		require.Equal(t, http.StatusUnprocessableEntity, b.Request(http.MethodGet, "/api/v1/notifications", nil, &res))
		require.Equal(t, "missing_event_id", res.Error.Code)
		require.Equal(t, "event_id", res.Error.Field)
	})
}
