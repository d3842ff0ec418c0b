package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/web/webtest"
)

// routingTestRecipients are two recipients whose routing shows most
// decisions at once: Anna (de-AT, every address) and Ben (French, no
// e-mail address).
func routingTestEvent(eventID, booking string) map[string]any {
	body := webtest.Notification(eventID, booking)
	body["recipients"] = []map[string]any{
		{"name": "Anna Schmidt", "phone": "+4915123456789", "email": "anna@example.com", "locale": "de-AT"},
		{"name": "Ben Martin", "phone": "+33612345678", "locale": "fr"},
	}
	body["channels"] = []string{"EMAIL", "SMS", "WHATSAPP"}
	return body
}

// decisionOf returns the decision of a recipient on a channel.
func decisionOf(t *testing.T, v *console.EventView, recipient int, ch app.Channel) app.RouteDecision {
	t.Helper()
	for _, d := range v.Recipients[recipient].Decisions {
		if d.Channel == ch {
			return d
		}
	}
	t.Fatalf("no decision for recipient %d on %s in %+v", recipient, ch, v.Recipients[recipient].Decisions)
	return app.RouteDecision{}
}

// breakRouting leaves acme without an active SMS account and without
// WhatsApp templates for BOOKING_CONFIRMED.
func (c *consoleBundle) breakRouting() {
	c.Exec(`UPDATE channel_accounts SET status = 'SUSPENDED' WHERE tenant_id = $1 AND channel = 'SMS'`, c.Tenant.ID)
	c.Exec(`UPDATE templates SET is_active = false WHERE tenant_id = $1 AND trigger_event = 'BOOKING_CONFIRMED' AND channel = 'WHATSAPP'`, c.Tenant.ID)
}

func TestRouting_Decisions(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	c.breakRouting()
	id := c.Submit(routingTestEvent("route-dec-1", "BK-RD1"))
	c.routeNow(c.Tenant.ID, id)
	v, err := c.Services.Console.MessageConsole.Event(c.Ctx, c.Tenant.ID, id)
	require.NoError(t, err)
	require.Len(t, v.Recipients, 2)

	t.Run("TemplateFallbackPath", func(t *testing.T) {
		d := decisionOf(t, v, 0, app.Email)
		require.Equal(t, app.DecisionQueued, d.Outcome)
		require.NotNil(t, d.Template)
		require.Equal(t, "BOOKING_CONFIRMED/EMAIL/de-DE", d.Template.Name)
		require.Equal(t, "de-DE", d.Template.Locale)
		require.Equal(t, 1, d.Template.Version)
		require.Equal(t, []string{"de-AT", "de", "de-DE"}, d.Template.Tried, "tried de-AT, its base, then the tenant's default")
		require.Equal(t, "Sandbox EMAIL", d.AccountName)
		require.NotNil(t, d.MessageID)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND template_id = $2`, *d.MessageID, *d.Template.ID))
	})

	t.Run("NoAccount", func(t *testing.T) {
		d := decisionOf(t, v, 0, app.SMS)
		require.Equal(t, app.DecisionSkipped, d.Outcome)
		require.Equal(t, app.ReasonNoActiveChannels, d.Reason)
		require.Nil(t, d.Template, "a skip for another reason names no template path")
	})

	t.Run("NoTemplate", func(t *testing.T) {
		d := decisionOf(t, v, 0, app.WhatsApp)
		require.Equal(t, app.DecisionSkipped, d.Outcome)
		require.Equal(t, app.ReasonNoTemplates, d.Reason)
		require.Equal(t, []string{"de-AT", "de", "de-DE"}, d.Template.Tried, "every locale of the chain was tried")
	})

	t.Run("NoAddress", func(t *testing.T) {
		d := decisionOf(t, v, 1, app.Email)
		require.Equal(t, app.DecisionSkipped, d.Outcome)
		require.Equal(t, app.ReasonNoAddress, d.Reason)
	})

	t.Run("AlreadySent", func(t *testing.T) {
		// The same booking confirmed under another event id: the messages
		// exist already (once per entity).
		id3 := c.Submit(routingTestEvent("route-dec-3", "BK-RD1"))
		require.NoError(t, c.Services.Router.Route(c.Ctx, app.RouteJob{TenantID: c.Tenant.ID, EventID: id3, Version: 1}))
		v3, err := c.Services.Console.MessageConsole.Event(c.Ctx, c.Tenant.ID, id3)
		require.NoError(t, err)
		require.Equal(t, app.DecisionExists, decisionOf(t, v3, 0, app.Email).Outcome)
	})
	t.Run("OptedOut", func(t *testing.T) {
		// Last: Anna stays opted out. An opt-out holds for optional events
		// only (a reminder), never for a booking's confirmation.
		c.Exec(`UPDATE contacts SET opted_out = '{EMAIL}' WHERE tenant_id = $1 AND email = 'anna@example.com'`, c.Tenant.ID)
		reminder := webtest.Reminder("route-dec-2", "BK-RD2")
		reminder["recipients"] = routingTestEvent("", "")["recipients"]
		id2 := c.Submit(reminder)
		c.routeNow(c.Tenant.ID, id2)
		v2, err := c.Services.Console.MessageConsole.Event(c.Ctx, c.Tenant.ID, id2)
		require.NoError(t, err)
		d := decisionOf(t, v2, 0, app.Email)
		require.Equal(t, app.DecisionSkipped, d.Outcome)
		require.Equal(t, app.ReasonOptedOut, d.Reason)
	})

}

func TestRouting_FallbackAppends(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	body := webtest.Notification("route-fb", "BK-RFB")
	body["recipients"] = []map[string]any{{"name": "Maria", "phone": mariaPhone, "email": "maria@example.com", "locale": "en"}}
	body["fallback_chain"] = []string{"SMS", "WHATSAPP", "EMAIL"}
	c.Exec(`UPDATE templates SET is_active = false WHERE tenant_id = $1 AND trigger_event = 'BOOKING_CONFIRMED' AND channel = 'WHATSAPP'`, c.Tenant.ID)
	id := c.Submit(body)
	ms := c.routeNow(c.Tenant.ID, id)
	require.Len(t, ms, 1)
	require.Equal(t, app.SMS, ms[0].Channel)
	c.failNow(ms[0])

	v, err := c.Services.Console.MessageConsole.Event(c.Ctx, c.Tenant.ID, id)
	require.NoError(t, err)
	ds := v.Recipients[0].Decisions
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%s:%s:%s:%v", d.Channel, d.Outcome, d.Reason, d.FallbackOf != nil))
	}
	require.Equal(t, []string{
		"SMS:queued::false",
		"WHATSAPP:skipped:" + app.ReasonNoTemplates + ":true",
		"EMAIL:queued::true",
	}, got)
	require.Equal(t, ms[0].ID, *ds[1].FallbackOf)
}

func TestRouting_EventPage(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	c.breakRouting()
	id := c.Submit(routingTestEvent("route-page", "BK-RP"))
	c.routeNow(c.Tenant.ID, id)
	c.Exec(`UPDATE events SET routing = routing || '[{"recipient": 1, "channel": "SMS", "outcome": "skipped", "reason": "quiet_hours"}]'::jsonb WHERE id = $1`, id)

	for _, who := range []string{asManager, asSupport, asOperator} {
		s := c.signIn(who)
		doc := s.page("/t/acme/events/" + id.String())
		text := strings.Join(strings.Fields(doc.Find("main").Text()), " ")
		require.Contains(t, text, "BOOKING_CONFIRMED/EMAIL/de-DE", who)
		require.Contains(t, text, "locales tried: de-AT → de → de-DE", who)
		require.Contains(t, text, "no active channel account for this channel", who)
		require.Contains(t, text, "no active template for this event, channel and locale", who)
		require.Contains(t, text, "the recipient has no address on this channel", who)
		require.Contains(t, text, "quiet hours", who, "an unknown reason reads as words")
		if who == asSupport {
			require.NotContains(t, text, "anna@example.com", "support sees addresses masked")
			require.Zero(t, doc.Find(`a[href*="/templates/"]`).Length(), "support cannot open templates")
		} else {
			require.Contains(t, text, "anna@example.com")
		}
	}
	// Another tenant's event is not found.
	other := c.signIn(asOtherManager)
	_, resp := other.get("/t/globex/events/" + id.String())
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	_, resp = c.signIn(asManager).get("/t/acme/events/" + uuid.NewString())
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}
