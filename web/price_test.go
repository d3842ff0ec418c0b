package web_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"

	"github.com/heraldhq/herald/web/webtest"
)

func TestConsolePrices(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	ops := c.signIn(asOperator)

	t.Run("AddChangeRemoveAudited", func(t *testing.T) {
		doc := ops.page("/prices")
		require.Contains(t, text(doc.Find(".empty")), "No prices yet")

		resp := ops.post("/prices", url.Values{"channel": {"WHATSAPP"}, "country": {"de"}, "category": {"UTILITY"}, "unit_price": {"0.0456"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc = ops.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "WhatsApp utility to Germany (DE) saved: EUR 0.0456")
		require.Equal(t, "0.0456 per message", text(doc.Find(`tr[data-price="WHATSAPP/DE/UTILITY"] [data-unit-price]`)))

		resp = ops.post("/prices", url.Values{"channel": {"WHATSAPP"}, "country": {"DE"}, "category": {"UTILITY"}, "unit_price": {"0.05"}})
		doc = ops.follow(resp)
		require.Equal(t, "0.05 per message", text(doc.Find(`tr[data-price="WHATSAPP/DE/UTILITY"] [data-unit-price]`)), "the row gets the new price")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM prices`))
		require.Equal(t, 2, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id IS NULL AND action = 'price.set' AND target_id = 'WHATSAPP/DE/UTILITY'
			AND actor_id = $1`, c.users[asOperator].ID))

		resp = ops.post("/prices/delete", url.Values{"channel": {"WHATSAPP"}, "country": {"DE"}, "category": {"UTILITY"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM prices`))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'price.delete'`))
		_, resp = ops.postPage("/prices/delete", url.Values{"channel": {"WHATSAPP"}, "country": {"DE"}, "category": {"UTILITY"}})
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	t.Run("BadInput", func(t *testing.T) {
		for field, form := range map[string]url.Values{
			"unit_price": {"channel": {"SMS"}, "country": {"DE"}, "unit_price": {"0.0000001"}},
			"country":    {"channel": {"SMS"}, "country": {"ZZ"}, "unit_price": {"0.07"}},
			"category":   {"channel": {"WHATSAPP"}, "country": {"DE"}, "unit_price": {"0.07"}},
			"channel":    {"channel": {"WEBHOOK"}, "unit_price": {"0.07"}},
		} {
			doc, resp := ops.postPage("/prices", form)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, field)
			require.NotEmpty(t, fieldError(doc, "[name="+field+"]"), field)
		}
		doc, _ := ops.postPage("/prices", url.Values{"channel": {"SMS"}, "country": {"DE"}, "unit_price": {"-1"}})
		require.Contains(t, fieldError(doc, "input[name=unit_price]"), "cannot be negative")
		require.Equal(t, "-1", doc.Find(`input[name=unit_price]`).AttrOr("value", ""), "the form keeps what was typed")
		doc, _ = ops.postPage("/prices", url.Values{"channel": {"SMS"}, "country": {"DE"}, "unit_price": {"abc"}})
		require.Contains(t, fieldError(doc, "input[name=unit_price]"), "is not an amount")
		require.Zero(t, c.Count(`SELECT count(*) FROM prices`), "nothing stored")
	})

	t.Run("CSRFAndOperatorsOnly", func(t *testing.T) {
		resp := ops.post("/prices", url.Values{"csrf": {"forged"}, "channel": {"SMS"}, "unit_price": {"0.07"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		manager := c.signIn(asManager)
		_, resp = manager.get("/prices")
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Equal(t, http.StatusForbidden, manager.post("/prices", url.Values{"channel": {"SMS"}, "unit_price": {"0.07"}}).StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM prices`))
	})
}

func TestConsoleBudgets(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true, DefaultLimits: true})
	ops := c.signIn(asOperator)
	path := "/tenants/" + c.Tenant.ID.String()

	doc := ops.page(path)
	require.Equal(t, "0.00 EUR spent, no budget", text(doc.Find(`#limits [data-budget=whatsapp]`)))

	doc, resp := ops.postPage(path+"/limits", url.Values{"budget_whatsapp": {"12.1234567"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, fieldError(doc, "input[name=budget_whatsapp]"), "more than 6 decimals")
	require.Zero(t, c.Count(`SELECT count(*) FROM tenant_limits WHERE tenant_id = $1`, c.Tenant.ID), "nothing stored")

	resp = ops.post(path+"/limits", url.Values{"budget_whatsapp": {"250"}, "budget_sms": {"1,000.50"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	doc = ops.follow(resp)
	require.Equal(t, "0.00 of 250.00 EUR spent", text(doc.Find(`#limits [data-budget=whatsapp]`)))
	require.Equal(t, "1000.50", doc.Find(`input[name=budget_sms]`).AttrOr("value", ""))
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM tenant_limits WHERE tenant_id = $1 AND budget_whatsapp = 250000000 AND budget_email IS NULL`, c.Tenant.ID))
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.limits' AND metadata->>'budget_whatsapp' = '250.00'`, c.Tenant.ID))
}

// TestConsoleDashboard_Costs: the dashboard shows the month's cost per
// channel so far, the tenant's own only, against its budget.
func TestConsoleDashboard_Costs(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	month := time.Now().UTC()
	month = time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC)
	c.Exec(`INSERT INTO quota_usage (tenant_id, channel, month, used, spent) VALUES ($1, 'WHATSAPP', $2, 3, 150000), ($1, 'SMS', $2, 1, 75000),
		($1, 'EMAIL', $3, 9, 900000), ($4, 'EMAIL', $2, 9, 900000)`, c.Tenant.ID, month, month.AddDate(0, -1, 0), c.other.ID)
	require.NoError(t, c.Services.Limits.Set(c.Ctx, app.CLIActor, c.Tenant.ID, app.LimitInput{BudgetWhatsApp: "0.15"}))
	c.dashMessage(c.Tenant.ID, app.Email, app.MessageDelivered, time.Now().Add(-time.Minute), false)

	doc := c.signIn(asManager).page("/t/acme/")
	require.Contains(t, text(doc.Find("#cost-heading")), month.Format("2006-01"))
	whatsApp := doc.Find(`table.costs tr[data-cost=whatsapp] td`)
	require.Equal(t, "0.15 of 0.15 EUR spent", text(whatsApp))
	require.True(t, whatsApp.HasClass("quota-warn"), "a spent budget warns")
	require.Equal(t, "0.075 EUR spent, no budget", text(doc.Find(`table.costs tr[data-cost=sms] td`)))
	require.Equal(t, "0.00 EUR spent, no budget", text(doc.Find(`table.costs tr[data-cost=email] td`)), "last month's and another tenant's do not count")
}

// TestMessage_EstimatedCost: a message priced by the operator's table
// shows its estimate in the API and on its console page; one no price row
// priced shows none.
func TestMessage_EstimatedCost(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})
	_, err := c.Services.Prices.Put(c.Ctx, app.CLIActor, app.PriceInput{Channel: "EMAIL", UnitPrice: "0.0125"})
	require.NoError(t, err)
	id := c.Submit(webtest.WithRecipient("cost-1", "BK-COST", map[string]any{"name": "Anna", "email": "anna@example.com"}, "EMAIL"))
	m := webtest.OnlyMessage(t, c.WaitMessages(id, "the e-mail planned", func(ms []*app.Message) bool { return len(ms) > 0 }))
	require.NotNil(t, m.EstimatedCost, "the notification's answer carries the estimate")
	require.Equal(t, "0.0125", m.EstimatedCost.String())

	var raw map[string]any
	require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &raw))
	require.Equal(t, "0.0125", raw["estimated_cost"], "a decimal string, exact")

	doc := c.signIn(asSupport).page("/t/acme/messages/" + m.ID.String())
	require.Equal(t, "EUR 0.0125 by the price table when it was stored", text(doc.Find("[data-estimated-cost]")))

	c.Exec(`UPDATE messages SET estimated_cost = NULL WHERE id = $1`, m.ID)
	raw = nil
	require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &raw))
	require.NotContains(t, raw, "estimated_cost", "unpriced: no estimate rather than zero")
	require.Zero(t, c.signIn(asSupport).page("/t/acme/messages/"+m.ID.String()).Find("[data-estimated-cost]").Length())
}
