package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

func TestConsoleTenants_Settings(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	manager := c.signIn(asManager)

	t.Run("Page", func(t *testing.T) {
		doc := manager.page("/t/acme/settings")
		require.Equal(t, "de-DE", doc.Find(`input[name=locale]`).AttrOr("value", ""))
		require.Equal(t, "Europe/Berlin", doc.Find(`input[name=timezone]`).AttrOr("value", ""))
		require.Equal(t, "", doc.Find(`input[name=retention]`).AttrOr("value", "x"))
		require.Contains(t, text(doc.Find(`input[name=retention] ~ .hint`)), "default of 90 days")
		require.Equal(t, "PRO", text(doc.Find("dd.plan")), "managers see the plan")
		require.Equal(t, 0, doc.Find(`[name=plan]`).Length(), "but cannot change it")
		require.Equal(t, 0, doc.Find(`a[href^="/tenants/"]`).Length())

		doc = c.signIn(asOperator).page("/t/acme/settings")
		require.Equal(t, 1, doc.Find(`a[href="/tenants/`+c.Tenant.ID.String()+`"]`).Length(), "operators are pointed to the plan")

		_, resp := c.signIn(asSupport).get("/t/acme/settings")
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		_, resp = c.signIn(asOtherManager).get("/t/acme/settings")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	t.Run("BadInputStoresNothing", func(t *testing.T) {
		for _, tc := range []struct{ field, value, control, want string }{
			{"locale", "", "input[name=locale]", "is not a valid language tag"},
			{"locale", "@@", "input[name=locale]", "is not a valid language tag"},
			{"timezone", "Mars/Base", "input[name=timezone]", "is not a known IANA name"},
			{"timezone", "", "input[name=timezone]", "Time zone is required"},
			{"timezone", "Local", "input[name=timezone]", "Time zone is required"},
			{"retention", "0", "input[name=retention]", "from 1 to 3650 days"},
			{"retention", "3651", "input[name=retention]", "from 1 to 3650 days"},
			{"retention", "1.5", "input[name=retention]", "whole number of days"},
		} {
			form := url.Values{"locale": {"en"}, "timezone": {"America/New_York"}, "retention": {"30"}}
			form.Set(tc.field, tc.value)
			manager.page("/t/acme/settings")
			doc, resp := manager.postPage("/t/acme/settings", form)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s=%q", tc.field, tc.value)
			require.Contains(t, fieldError(doc, tc.control), tc.want, "%s=%q", tc.field, tc.value)
			require.Equal(t, tc.value, doc.Find(`input[name=`+tc.field+`]`).AttrOr("value", "x"), "the form keeps what was typed")
		}
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM tenants WHERE id = $1 AND default_locale = 'de-DE' AND timezone = 'Europe/Berlin' AND retention_days IS NULL`, c.Tenant.ID))
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'tenant.settings'`))
	})

	t.Run("Saves", func(t *testing.T) {
		manager.page("/t/acme/settings")
		resp := manager.post("/t/acme/settings", url.Values{"locale": {"en-gb"}, "timezone": {"America/New_York"}, "retention": {"30"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/t/acme/settings", resp.Header.Get("Location"))
		doc := manager.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "Settings saved")
		require.Equal(t, "en-GB", doc.Find(`input[name=locale]`).AttrOr("value", ""))
		require.Equal(t, "30", doc.Find(`input[name=retention]`).AttrOr("value", ""))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM tenants WHERE id = $1 AND default_locale = 'en-GB' AND timezone = 'America/New_York' AND retention_days = 30`, c.Tenant.ID))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.settings' AND actor_id = $2
			AND metadata->'timezone'->>'from' = 'Europe/Berlin' AND metadata->'timezone'->>'to' = 'America/New_York'`, c.Tenant.ID, c.users[asManager].ID))
		// Times are now shown in the new time zone.
		require.Contains(t, text(manager.page("/t/acme/api-keys").Find("tbody time").First()), "E") // EST or EDT

		// The API reports the new settings.
		var tenant struct {
			RetentionDays int    `json:"retention_days"`
			Timezone      string `json:"timezone"`
		}
		require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/tenant", nil, &tenant))
		require.Equal(t, 30, tenant.RetentionDays)
		require.Equal(t, "America/New_York", tenant.Timezone)

		// Empty retention is the default again.
		manager.page("/t/acme/settings")
		require.Equal(t, http.StatusSeeOther, manager.post("/t/acme/settings", url.Values{"locale": {"en-GB"}, "timezone": {"America/New_York"}, "retention": {""}}).StatusCode)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM tenants WHERE id = $1 AND retention_days IS NULL`, c.Tenant.ID))
	})

	t.Run("WithoutCSRFRefused", func(t *testing.T) {
		manager.page("/t/acme/settings")
		resp := manager.post("/t/acme/settings", url.Values{"csrf": {"forged"}, "locale": {"fr-FR"}, "timezone": {"Europe/Paris"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM tenants WHERE default_locale = 'fr-FR'`))
	})
}

func TestConsoleSettings_Deadlines(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	manager := c.signIn(asManager)
	const path = "/t/acme/settings/deadlines"
	rules := func(tenantID uuid.UUID) []*app.DeliveryDeadline {
		t.Helper()
		ds, err := c.Services.Deadlines.List(c.Ctx, tenantID)
		require.NoError(t, err)
		return ds
	}

	t.Run("SetShowAndRemove", func(t *testing.T) {
		doc := manager.page("/t/acme/settings")
		require.Contains(t, text(doc.Find("#deadlines")), "No deadlines")
		require.Equal(t, 1, doc.Find(`#deadlines select[name=trigger_event] option[value="*"]`).Length(), "every event can be chosen")

		resp := manager.post(path, url.Values{"trigger_event": {"BOOKING_CONFIRMED"}, "channel": {"WHATSAPP"}, "minutes": {"15"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		resp = manager.post(path, url.Values{"trigger_event": {"*"}, "channel": {"email"}, "minutes": {"60"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		got := rules(c.Tenant.ID)
		require.Len(t, got, 2)
		require.Empty(t, rules(c.other.ID), "the other tenant has none")

		doc = manager.page("/t/acme/settings")
		rows := rowTexts(doc.Find("#deadlines tbody tr"))
		require.Len(t, rows, 2)
		require.True(t, containsAll(rows, "BOOKING_CONFIRMED", "WHATSAPP", "15 min"), "rows: %v", rows)
		require.True(t, containsAll(rows, "Every event", "EMAIL", "60 min"), "rows: %v", rows)
		require.Equal(t, 2, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'delivery_deadline.set'`, c.Tenant.ID))

		// Each row's remove button posts 0 minutes.
		resp = manager.post(path, url.Values{"trigger_event": {"BOOKING_CONFIRMED"}, "channel": {"WHATSAPP"}, "minutes": {"0"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		got = rules(c.Tenant.ID)
		require.Len(t, got, 1)
		require.Equal(t, app.AnyEvent, got[0].TriggerEvent)
	})

	t.Run("Stages", func(t *testing.T) {
		doc := manager.page("/t/acme/settings")
		require.Equal(t, 3, doc.Find(`.deadline-form select[name=stage] option`).Length(), "delivered, read and acknowledged")
		for _, st := range []string{"DELIVERED", "READ", "ACKNOWLEDGED"} {
			resp := manager.post(path, url.Values{"trigger_event": {"BOOKING_CANCELLED"}, "channel": {"SMS"}, "stage": {st}, "minutes": {"30"}})
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		}
		rows := rowTexts(manager.page("/t/acme/settings").Find("#deadlines tbody tr"))
		for _, name := range []string{"Delivered", "Read", "Acknowledged"} {
			require.True(t, containsAll(rows, "BOOKING_CANCELLED", "SMS", name, "30 min"), "rows: %v", rows)
		}

		// The READ row's remove button removes that stage only.
		doc = manager.page("/t/acme/settings")
		var removeRead url.Values
		doc.Find("#deadlines tbody tr form").Each(func(_ int, f *goquery.Selection) {
			if f.Find(`input[name=stage]`).AttrOr("value", "") == "READ" && f.Find(`input[name=trigger_event]`).AttrOr("value", "") == "BOOKING_CANCELLED" {
				removeRead = url.Values{}
				f.Find("input[type=hidden]").Each(func(_ int, in *goquery.Selection) {
					if n := in.AttrOr("name", ""); n != "csrf" {
						removeRead.Set(n, in.AttrOr("value", ""))
					}
				})
			}
		})
		require.NotNil(t, removeRead, "the READ row has a remove button")
		require.Equal(t, http.StatusSeeOther, manager.post(path, removeRead).StatusCode)
		var stages []string
		for _, r := range rules(c.Tenant.ID) {
			if r.TriggerEvent == "BOOKING_CANCELLED" {
				stages = append(stages, r.Stage)
			}
		}
		require.Equal(t, []string{"DELIVERED", "ACKNOWLEDGED"}, stages)
		for _, st := range []string{"DELIVERED", "ACKNOWLEDGED"} {
			require.Equal(t, http.StatusSeeOther, manager.post(path, url.Values{"trigger_event": {"BOOKING_CANCELLED"}, "channel": {"SMS"},
				"stage": {st}, "minutes": {"0"}}).StatusCode)
		}
	})

	t.Run("BeforeDeparture", func(t *testing.T) {
		form := func(stage, mins, before string) url.Values {
			return url.Values{"trigger_event": {"BOOKING_CANCELLED"}, "channel": {"EMAIL"}, "stage": {stage}, "minutes": {mins}, "before_departure": {before}}
		}
		before := len(rules(c.Tenant.ID))
		for name, tc := range map[string]struct {
			form url.Values
			want string
		}{
			"Both":        {form("ACKNOWLEDGED", "30", "120"), "not both"},
			"NotAckStage": {form("READ", "", "120"), "Only an ACKNOWLEDGED"},
			"TooFar":      {form("ACKNOWLEDGED", "", "20000"), "1 to 10080"},
			"NotANumber":  {form("ACKNOWLEDGED", "", "two hours"), "whole minutes"},
		} {
			manager.page("/t/acme/settings")
			doc, resp := manager.postPage(path, tc.form)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, name)
			require.Contains(t, fieldError(doc, ".deadline-form input[name=before_departure]"), tc.want, name)
		}
		require.Len(t, rules(c.Tenant.ID), before, "nothing stored")

		require.Equal(t, http.StatusSeeOther, manager.post(path, form("ACKNOWLEDGED", "", "120")).StatusCode)
		rows := rowTexts(manager.page("/t/acme/settings").Find("#deadlines tbody tr"))
		require.True(t, containsAll(rows, "BOOKING_CANCELLED", "EMAIL", "Acknowledged", "120 min before departure"), "rows: %v", rows)
		// The row's remove button posts 0 minutes.
		require.Equal(t, http.StatusSeeOther, manager.post(path, url.Values{"trigger_event": {"BOOKING_CANCELLED"}, "channel": {"EMAIL"},
			"stage": {"ACKNOWLEDGED"}, "minutes": {"0"}}).StatusCode)
		require.Len(t, rules(c.Tenant.ID), before)
	})

	t.Run("BadStageStoresNothing", func(t *testing.T) {
		before := len(rules(c.Tenant.ID))
		manager.page("/t/acme/settings")
		doc, resp := manager.postPage(path, url.Values{"trigger_event": {"*"}, "channel": {"SMS"}, "stage": {"OPENED"}, "minutes": {"10"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, fieldError(doc, ".deadline-form select[name=stage]"), "Choose the stage")
		require.Len(t, rules(c.Tenant.ID), before, "nothing stored")
	})

	t.Run("BadInputStoresNothing", func(t *testing.T) {
		before := len(rules(c.Tenant.ID))
		for _, tc := range []struct {
			name                 string
			event, channel, mins string
			control, want        string
		}{
			{"NoEvent", "", "SMS", "10", "select[name=trigger_event]", "Choose the event"},
			{"UnknownEvent", "BOOKING_EXPLODED", "SMS", "10", "select[name=trigger_event]", "not a trigger event"},
			{"UnknownChannel", "*", "FAX", "10", "select[name=channel]", "Choose the channel"},
			{"NotANumber", "*", "SMS", "soon", "input[name=minutes]", "whole minutes"},
			{"TooLong", "*", "SMS", "1441", "input[name=minutes]", "1 to 1440"},
			{"Negative", "*", "SMS", "-5", "input[name=minutes]", "1 to 1440"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				manager.page("/t/acme/settings")
				doc, resp := manager.postPage(path, url.Values{"trigger_event": {tc.event}, "channel": {tc.channel}, "minutes": {tc.mins}})
				require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
				require.Contains(t, fieldError(doc, ".deadline-form "+tc.control), tc.want)
				require.Equal(t, tc.mins, doc.Find(`.deadline-form input[name=minutes]`).AttrOr("value", "x"), "the form keeps what was typed")
			})
		}
		require.Len(t, rules(c.Tenant.ID), before, "nothing stored")
	})

	t.Run("OthersCannot", func(t *testing.T) {
		form := func() url.Values { return url.Values{"trigger_event": {"*"}, "channel": {"SMS"}, "minutes": {"5"}} }
		// Each loads a page of its own first, so its CSRF token is valid and
		// the refusal is the permission's.
		support := c.signIn(asSupport)
		support.page("/account/password")
		require.Equal(t, http.StatusForbidden, support.post(path, form()).StatusCode)
		other := c.signIn(asOtherManager)
		other.page("/t/globex/settings")
		require.Equal(t, http.StatusNotFound, other.post(path, form()).StatusCode)
		for _, r := range rules(c.Tenant.ID) {
			require.NotEqual(t, app.SMS, r.Channel, "neither stored a deadline")
		}
	})
}

func TestConsoleSettings_ConfirmationWindows(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	manager := c.signIn(asManager)
	const path = "/t/acme/settings/confirmation-windows"
	windows := func(tenantID uuid.UUID) []*app.ConfirmationWindow {
		t.Helper()
		ws, err := c.Services.ConfirmWindows.List(c.Ctx, tenantID)
		require.NoError(t, err)
		return ws
	}

	t.Run("SetShowAndRemove", func(t *testing.T) {
		doc := manager.page("/t/acme/settings")
		card := doc.Find("#confirmation-windows")
		require.Contains(t, text(card), "No windows of your own")
		require.Contains(t, text(card), "waits 5 min (1 min when the event is urgent)", "the defaults are named")
		require.Equal(t, 1, card.Find(`select[name=trigger_event] option[value="*"]`).Length(), "every event can be chosen")
		require.Equal(t, "DEPARTURE_CHANGED (urgent)", text(card.Find(`option[value=DEPARTURE_CHANGED]`)))

		resp := manager.post(path, url.Values{"trigger_event": {"BOOKING_CONFIRMED"}, "seconds": {"90"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(manager.follow(resp).Find(".flash-success")), "Confirmation window saved")
		require.Equal(t, http.StatusSeeOther, manager.post(path, url.Values{"trigger_event": {"*"}, "seconds": {"0"}}).StatusCode)
		require.Equal(t, http.StatusSeeOther, manager.post(path, url.Values{"trigger_event": {"DEPARTURE_CHANGED"}, "seconds": {"5400"}}).StatusCode)
		require.Len(t, windows(c.Tenant.ID), 3)
		require.Empty(t, windows(c.other.ID), "the other tenant has none")

		var rows [][]string
		manager.page("/t/acme/settings").Find("#confirmation-windows tbody tr").Each(func(_ int, tr *goquery.Selection) {
			rows = append(rows, rowTexts(tr.Find("td")))
		})
		require.Equal(t, [][]string{
			{"Every event", "at once", "Remove"},
			{"BOOKING_CONFIRMED", "1 min 30 s", "Remove"},
			{"DEPARTURE_CHANGED (urgent)", "1 h 30 min", "Remove"},
		}, rows, "every event's first, the waits in words")
		require.Equal(t, 3, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'confirmation_window.set' AND actor_id = $2`,
			c.Tenant.ID, c.users[asManager].ID))

		// Each row's remove button posts its event and remove.
		doc = manager.page("/t/acme/settings")
		form := doc.Find("#confirmation-windows tbody tr").Eq(1).Find("form")
		require.Equal(t, path, form.AttrOr("action", ""))
		require.Equal(t, "BOOKING_CONFIRMED", form.Find(`input[name=trigger_event]`).AttrOr("value", ""))
		resp = manager.post(path, url.Values{"trigger_event": {"BOOKING_CONFIRMED"}, "remove": {form.Find(`input[name=remove]`).AttrOr("value", "")}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(manager.follow(resp).Find(".flash-success")), "Confirmation window removed")
		ws := windows(c.Tenant.ID)
		require.Len(t, ws, 2)
		require.Equal(t, app.AnyEvent, ws[0].TriggerEvent)
		require.Equal(t, 0, ws[0].Seconds, "0 stays a window")
	})

	t.Run("BadInputStoresNothing", func(t *testing.T) {
		before := windows(c.Tenant.ID)
		for _, tc := range []struct {
			name          string
			event, secs   string
			control, want string
		}{
			{"NoEvent", "", "10", "select[name=trigger_event]", "Choose the event"},
			{"UnknownEvent", "BOOKING_EXPLODED", "10", "select[name=trigger_event]", "not a trigger event"},
			{"Empty", "*", "", "input[name=seconds]", "whole seconds"},
			{"NotANumber", "*", "soon", "input[name=seconds]", "whole seconds"},
			{"Minutes", "*", "5m", "input[name=seconds]", "whole seconds"},
			{"TooLong", "*", "86401", "input[name=seconds]", "0 to 86400 seconds"},
			{"Negative", "*", "-5", "input[name=seconds]", "0 to 86400 seconds"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				manager.page("/t/acme/settings")
				doc, resp := manager.postPage(path, url.Values{"trigger_event": {tc.event}, "seconds": {tc.secs}})
				require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
				require.Contains(t, fieldError(doc, ".confirm-window-form "+tc.control), tc.want)
				require.Equal(t, tc.secs, doc.Find(`.confirm-window-form input[name=seconds]`).AttrOr("value", "x"), "the form keeps what was typed")
				require.Equal(t, 0, doc.Find(".deadline-form .field-error").Length(), "the deadline form shows no error")
			})
		}
		require.Equal(t, before, windows(c.Tenant.ID), "nothing stored")
	})

	t.Run("WithoutCSRFRefused", func(t *testing.T) {
		manager.page("/t/acme/settings")
		resp := manager.post(path, url.Values{"csrf": {"forged"}, "trigger_event": {"FINAL_PAYMENT_DUE"}, "seconds": {"30"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		resp = manager.post(path, url.Values{"csrf": {"forged"}, "trigger_event": {"*"}, "remove": {"1"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Len(t, windows(c.Tenant.ID), 2, "nothing set, nothing removed")
	})

	t.Run("OthersCannot", func(t *testing.T) {
		form := func() url.Values { return url.Values{"trigger_event": {"*"}, "seconds": {"45"}} }
		// Each loads a page of its own first, so its CSRF token is valid and
		// the refusal is the permission's.
		support := c.signIn(asSupport)
		support.page("/account/password")
		require.Equal(t, http.StatusForbidden, support.post(path, form()).StatusCode)
		other := c.signIn(asOtherManager)
		other.page("/t/globex/settings")
		require.Equal(t, http.StatusNotFound, other.post(path, form()).StatusCode)
		for _, w := range windows(c.Tenant.ID) {
			require.NotEqual(t, 45, w.Seconds, "neither stored a window")
		}
	})
}
