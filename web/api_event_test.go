package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/ses"
	"github.com/heraldhq/herald/web/webtest"
)

// seatEvent is a tenant event with one variable of every type.
func seatEvent(name string) map[string]any {
	return map[string]any{
		"trigger_event": name, "description": "A better seat is offered for a fee.",
		"channels": []string{"EMAIL"}, "category": "optional",
		"variables": []map[string]any{
			{"name": "passenger_name", "type": "string"}, {"name": "travel_date", "type": "date"},
			{"name": "offer_ends_at", "type": "time"}, {"name": "fee", "type": "money"},
			{"name": "offer_url", "type": "url"}, {"name": "hotline", "type": "phone"},
			{"name": "reply_to", "type": "email"}, {"name": "seats_left", "type": "integer"},
			{"name": "seat_class", "type": "enum", "values": []string{"comfort", "premium"}},
		},
		"expiry":     map[string]any{"at": "offer_ends_at"},
		"supersedes": []string{"BOOKING_COMPLETED"},
	}
}

func seatContext() map[string]any {
	return map[string]any{"passenger_name": "Anna", "travel_date": "2027-04-12", "offer_ends_at": "2027-04-10T18:00:00+02:00",
		"fee": "25,00 €", "offer_url": "https://example.com/upgrade/1", "hotline": "+49 89 1234567",
		"reply_to": "help@acme.example", "seats_left": 3, "seat_class": "premium"}
}

func TestAPI_TypedVariables(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, http.StatusCreated, b.Request(http.MethodPost, "/api/v1/events", seatEvent("SEAT_UPGRADE_OFFERED"), nil))
	send := func(id string, ctx map[string]any) (int, apiErrorBody) {
		var res apiErrorBody
		status := b.Request(http.MethodPost, "/api/v1/notifications", map[string]any{
			"event_id": id, "trigger_event": "SEAT_UPGRADE_OFFERED", "context": ctx,
			"recipients": []map[string]any{{"name": "Anna", "email": "anna@example.com"}}}, &res)
		return status, res
	}
	t.Run("GoodValuesAccepted", func(t *testing.T) {
		status, res := send("typed-good", seatContext())
		require.Equal(t, http.StatusAccepted, status, "%+v", res)
		ctx := seatContext()
		ctx["seats_left"], ctx["fee"], ctx["travel_date"] = "12", "EUR 25.00", "2027-12-31"
		status, res = send("typed-good-2", ctx)
		require.Equal(t, http.StatusAccepted, status, "digits as text and a leading code are accepted: %+v", res)
	})
	t.Run("BadValuesRefused", func(t *testing.T) {
		before := b.Count(`SELECT count(*) FROM events`)
		for name, tc := range map[string]struct {
			variable string
			value    any
		}{
			"DateFormat": {"travel_date", "12.04.2027"}, "DateImpossible": {"travel_date", "2027-02-30"},
			"TimeNoOffset": {"offer_ends_at", "2027-04-10T18:00:00"}, "MoneyNoCurrency": {"fee", "25.00"},
			"MoneyUnknownCode": {"fee", "25.00 XYZ"}, "MoneyNumber": {"fee", 25}, "URLRelative": {"offer_url", "/upgrade/1"},
			"URLScheme": {"offer_url", "javascript:alert(1)"}, "PhoneNational": {"hotline", "089 1234567"},
			"Email": {"reply_to", "help at acme"}, "IntegerFraction": {"seats_left", 2.5}, "IntegerText": {"seats_left", "three"},
			"EnumOther": {"seat_class", "economy"}, "StringObject": {"passenger_name", map[string]any{"first": "Anna"}},
		} {
			t.Run(name, func(t *testing.T) {
				ctx := seatContext()
				ctx[tc.variable] = tc.value
				status, res := send("typed-bad-"+name, ctx)
				require.Equal(t, http.StatusUnprocessableEntity, status)
				require.Equal(t, "context."+tc.variable, res.Error.Field)
				require.Equal(t, "invalid_variable", res.Error.Code)
				require.NotEmpty(t, res.Error.Message)
			})
		}
		require.Equal(t, before, b.Count(`SELECT count(*) FROM events`), "nothing stored")
	})
	t.Run("BuiltinTypes", func(t *testing.T) {
		def, _ := app.BuiltInEvent("BOOKING_CONFIRMED")
		ctx := map[string]any{}
		for k, v := range def.Sample {
			ctx[k] = v
		}
		ctx["departure_date"] = "next Tuesday"
		var res apiErrorBody
		status := b.Request(http.MethodPost, "/api/v1/notifications", map[string]any{"event_id": "bc-bad-date", "trigger_event": "BOOKING_CONFIRMED",
			"context": ctx, "recipients": []map[string]any{{"name": "Anna", "email": "anna@example.com", "context": map[string]any{"deposit_amount": "lots"}}}}, &res)
		require.Equal(t, http.StatusUnprocessableEntity, status)
		fields := []string{}
		for _, d := range res.Error.Details {
			fields = append(fields, d.Field)
		}
		require.ElementsMatch(t, []string{"context.departure_date", "recipients[0].context.deposit_amount"}, fields)
	})
}

func TestAPI_TenantEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const path = "/api/v1/events"
	t.Run("CreateVersionsAudit", func(t *testing.T) {
		var v1 map[string]any
		require.Equal(t, http.StatusCreated, b.Request(http.MethodPost, path, seatEvent("SEAT_OFFER"), &v1))
		require.EqualValues(t, 1, v1["version"])
		changed := seatEvent("SEAT_OFFER")
		changed["description"], changed["urgent"] = "Changed.", true
		var v2 map[string]any
		require.Equal(t, http.StatusOK, b.Request(http.MethodPut, path+"/SEAT_OFFER", changed, &v2))
		require.EqualValues(t, 2, v2["version"])
		var vs struct{ Versions []map[string]any }
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, path+"/SEAT_OFFER/versions", nil, &vs))
		require.Len(t, vs.Versions, 2)
		var old map[string]any
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, path+"/SEAT_OFFER/versions/1", nil, &old))
		require.Equal(t, "A better seat is offered for a fee.", old["description"], "the old version is kept")
		var got map[string]any
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, path+"/SEAT_OFFER", nil, &got))
		require.Equal(t, true, got["urgent"])
		require.Equal(t, false, got["builtin"])
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'event.create' AND target_id = 'SEAT_OFFER'`, b.Tenant.ID))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'event.update' AND target_id = 'SEAT_OFFER'`, b.Tenant.ID))
		require.Equal(t, http.StatusNoContent, b.Request(http.MethodDelete, path+"/SEAT_OFFER", nil, nil))
		require.Equal(t, http.StatusNotFound, b.Request(http.MethodGet, path+"/SEAT_OFFER", nil, nil))
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, path+"/SEAT_OFFER/versions/2", nil, nil), "versions stay readable")
	})
	t.Run("BuiltinsReadOnly", func(t *testing.T) {
		var res apiErrorBody
		require.Equal(t, http.StatusForbidden, b.Request(http.MethodPut, path+"/BOOKING_CONFIRMED", seatEvent("BOOKING_CONFIRMED"), &res))
		require.Equal(t, http.StatusForbidden, b.Request(http.MethodDelete, path+"/BOOKING_CONFIRMED", nil, &res))
		require.Equal(t, http.StatusUnprocessableEntity, b.Request(http.MethodPost, path, seatEvent("BOOKING_CONFIRMED"), &res))
		require.Equal(t, "trigger_event", res.Error.Field)
	})
	t.Run("OtherTenantCannotSee", func(t *testing.T) {
		require.Equal(t, http.StatusCreated, b.Request(http.MethodPost, path, seatEvent("ACME_ONLY"), nil))
		other, err := b.Services.Tenants.Create(b.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex", Plan: app.PlanPro})
		require.NoError(t, err)
		_, key, err := b.Services.APIKeys.Create(b.Ctx, app.CLIActor, other.ID, "globex", app.Scopes...)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, b.RequestWithKey(key, http.MethodGet, path+"/ACME_ONLY", nil, nil))
		require.Equal(t, http.StatusNotFound, b.RequestWithKey(key, http.MethodPut, path+"/ACME_ONLY", seatEvent("ACME_ONLY"), nil))
		var list struct{ Events []map[string]any }
		require.Equal(t, http.StatusOK, b.RequestWithKey(key, http.MethodGet, path, nil, &list))
		for _, e := range list.Events {
			require.NotEqual(t, "ACME_ONLY", e["trigger_event"])
		}
		var res apiErrorBody
		require.Equal(t, http.StatusUnprocessableEntity, b.RequestWithKey(key, http.MethodPost, "/api/v1/notifications", map[string]any{
			"event_id": "x", "trigger_event": "ACME_ONLY", "context": seatContext(),
			"recipients": []map[string]any{{"name": "A", "email": "a@example.com"}}}, &res))
		require.Equal(t, "trigger_event", res.Error.Field)
	})
	t.Run("BadInputs", func(t *testing.T) {
		before := b.Count(`SELECT count(*) FROM tenant_events`)
		for name, tc := range map[string]struct {
			change func(map[string]any)
			field  string
		}{
			"LowerName":      {func(m map[string]any) { m["trigger_event"] = "seat_offer" }, "trigger_event"},
			"NoDescription":  {func(m map[string]any) { m["description"] = " " }, "description"},
			"NoChannels":     {func(m map[string]any) { m["channels"] = []string{} }, "channels"},
			"BadChannel":     {func(m map[string]any) { m["channels"] = []string{"PIGEON"} }, "channels[0]"},
			"BadCategory":    {func(m map[string]any) { m["category"] = "marketing" }, "category"},
			"BadType":        {func(m map[string]any) { m["variables"] = []map[string]any{{"name": "x", "type": "decimal"}} }, "variables[0].type"},
			"BadVarName":     {func(m map[string]any) { m["variables"] = []map[string]any{{"name": "Seat Class", "type": "string"}} }, "variables[0].name"},
			"EnumNoValues":   {func(m map[string]any) { m["variables"] = []map[string]any{{"name": "x", "type": "enum"}} }, "variables[0].values"},
			"ExpiryNotTime":  {func(m map[string]any) { m["expiry"] = map[string]any{"at": "fee"} }, "expiry.at"},
			"SupersedesNone": {func(m map[string]any) { m["supersedes"] = []string{"NO_SUCH_EVENT"} }, "supersedes[0]"},
			"SupersedesSelf": {func(m map[string]any) { m["supersedes"] = []string{"BAD_ONE"} }, "supersedes[0]"},
		} {
			t.Run(name, func(t *testing.T) {
				body := seatEvent("BAD_ONE")
				tc.change(body)
				var res apiErrorBody
				require.Equal(t, http.StatusUnprocessableEntity, b.Request(http.MethodPost, path, body, &res))
				require.Equal(t, tc.field, res.Error.Field, "%+v", res)
				require.NotEmpty(t, res.Error.Message)
			})
		}
		require.Equal(t, before, b.Count(`SELECT count(*) FROM tenant_events`), "nothing stored")
	})
}

// TestAPI_TenantEventSends: a tenant's own event, with a template made for
// it through the API, is sent and dispatched to SES like a built-in one.
func TestAPI_TenantEventSends(t *testing.T) {
	t.Parallel()
	rec := newSESRecorder(t)
	p := webtest.New(t, webtest.Options{Providers: provider.Set{"ses": &ses.Provider{Endpoint: rec.URL}}})
	useProvider(t, p, app.Email, "ses")
	require.Equal(t, http.StatusCreated, p.Request(http.MethodPost, "/api/v1/events", seatEvent("SEAT_UPGRADE_OFFERED"), nil))
	var tpl map[string]any
	require.Equal(t, http.StatusCreated, p.Request(http.MethodPost, "/api/v1/templates", map[string]any{
		"trigger_event": "SEAT_UPGRADE_OFFERED", "channel": "EMAIL", "locale": "en", "subject": "Upgrade for {{passenger_name}}",
		"body": "<p>A {{seat_class}} seat for {{fee}} on {{travel_date}}.</p>"}, &tpl))
	m := webtest.OnlyMessage(t, p.WaitMessages(p.Submit(map[string]any{"event_id": "seat-1", "trigger_event": "SEAT_UPGRADE_OFFERED",
		"context": seatContext(), "locale": "en",
		"recipients": []map[string]any{{"name": "Anna", "email": "anna@example.com"}}}),
		"sent through ses", webtest.AllStatus(app.MessageSent)))
	require.Equal(t, "SEAT_UPGRADE_OFFERED", m.TriggerEvent)
	html := rec.htmlTo(t, "anna@example.com")
	require.True(t, strings.Contains(html, "A premium seat for 25,00 € on 2027-04-12."), html)
}
