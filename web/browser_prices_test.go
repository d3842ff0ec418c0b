package web_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestBrowser_PricesAndEstimate: an operator sets the e-mail price on the
// Prices page (a bad amount first), and a manager's approval page of a
// broadcast shows what it would cost by that price.
func TestBrowser_PricesAndEstimate(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	body := incidentBroadcast("estimate-browser")
	body["recipients"] = []map[string]any{{"name": "Anna", "email": "anna@example.com"}, {"name": "Ben", "email": "ben@example.com"},
		{"name": "Cleo", "email": "cleo@example.com"}}
	require.Equal(t, http.StatusAccepted, sendAs(t, c.Herald, c.Key, http.MethodPost, "/api/v1/notifications", jsonOf(t, body), "estimate", false))

	ops, manager := newBrowser(t), newBrowser(t)
	login(t, ops, c.base, c.users[asOperator].Email, consolePassword)
	clickNav(t, ops, "Prices")
	requireHeading(t, ops, "Prices")
	require.NoError(t, chromedp.Do(ops, chromedp.SetValue(chromedp.CSS(`form.price-form select[name=channel]`), "EMAIL")))
	require.NoError(t, chromedp.Do(ops, chromedp.SendKeys(chromedp.CSS(`form.price-form input[name=unit_price]`), "0.5000001")))
	require.NoError(t, chromedp.Do(ops, chromedp.Click(chromedp.CSS(`form.price-form button[type=submit]`))))
	require.NoError(t, chromedp.Do(ops, chromedp.WaitVisible(chromedp.CSS(`form.price-form .field-error`))))
	// The refused form answers 422, which the browser reports.
	errs := takePageErrors(t, ops)
	require.Len(t, errs, 1, "%q", errs)
	require.Contains(t, errs[0], "422")
	requireText(t, ops, "more than 6 decimals")
	capture(t, ops, "01-price-refused")
	require.NoError(t, chromedp.Do(ops, chromedp.SetValue(chromedp.CSS(`form.price-form input[name=unit_price]`), "0.50")))
	follow(t, ops, chromedp.Click(chromedp.CSS(`form.price-form button[type=submit]`)))
	requireText(t, ops, "Price of e-mail saved: EUR 0.50.")
	require.Equal(t, []string{"0.50 per message"}, textsOf(t, ops, `tr[data-price="EMAIL/*/"] [data-unit-price]`))
	capture(t, ops, "02-prices")

	login(t, manager, c.base, c.users[asManager].Email, consolePassword)
	visit(t, manager, c.base+"/t/acme/approvals")
	follow(t, manager, chromedp.Click(chromedp.CSS(`section.approval h2 a`)))
	requireHeading(t, manager, "Approval: INCIDENT_BROADCAST")
	require.Equal(t, []string{"Cost: about EUR 1.50: 3 e-mail By the operator's price table; WhatsApp at its template's Meta category. What the providers bill may differ."},
		textsOf(t, manager, `[data-estimate]`))
	capture(t, manager, "03-approval-estimate")
}
