package web_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestBrowser_Acknowledgements follows a passenger's acknowledgement link
// on a phone (the page asks; its one button confirms), a tampered link,
// and the support user's trip page with who acknowledged and whom to call.
func TestBrowser_Acknowledgements(t *testing.T) {
	t.Parallel()
	c := serveConsoleWith(t, webtest.Options{})
	h := c.Herald
	const trip = "T-BREN-0715"
	bookTrip(t, h, trip, []tripPassenger{
		{booking: "BK-B1", name: "Anna Schmidt", phone: "+4915123420010", locale: "de-DE"},
		{booking: "BK-B2", name: "Ben Ode", phone: "+4915123420011", locale: "en"},
		{booking: "BK-B3", name: "Clara Weiss", phone: "+4915123420012", locale: "en"},
		{booking: "BK-B4", name: "David Roth", phone: "+4915123470000", email: "fail@example.com", locale: "en"},
	})
	sent := submitAnswer(t, h, h.Key, tripIncident("bren-incident", trip))
	approver := keyWith(t, h, h.Tenant.ID, app.ScopeApprove)
	require.Equal(t, http.StatusOK, h.RequestWithKey(approver, http.MethodPost, "/api/v1/notifications/"+sent.ID.String()+"/approve", map[string]any{}, nil))
	h.WaitUntil("the incident settled", func() bool {
		return h.Count(`SELECT count(DISTINCT recipient_index) FROM messages WHERE event_id = $1
			AND (status IN ('DELIVERED', 'READ') OR (status = 'FAILED' AND fallback_chain = '{}'))`, sent.ID) == 4
	})
	links := map[string]string{}
	for _, m := range h.WaitMessages(sent.ID, "messages", func(ms []*app.Message) bool { return len(ms) >= 4 }) {
		m.TenantID = h.Tenant.ID // the API leaves it out
		links[m.ToAddress] = h.Services.Acks.Links.URL(m, time.Now())
	}
	ctx := newBrowser(t)

	// Anna opens her link: the page asks, her button confirms.
	anna := links["+4915123420010"]
	require.NotEmpty(t, anna)
	annaPath := anna[len(h.Services.Acks.Links.BaseURL):]
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.base+annaPath), chromedp.WaitVisible(chromedp.CSS(`[data-ack-state="ask"] button`))))
	require.Equal(t, []string{"Verstanden"}, textsOf(t, ctx, `[data-ack-state] button`))
	requireNoPageErrors(t, ctx)
	screenshot(t, ctx, "01-ack-ask")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-ack-state] button`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-ack-state="done"]`))))
	requireNoPageErrors(t, ctx)
	screenshot(t, ctx, "02-ack-done")

	login(t, ctx, c.base, c.users[asSupport].Email, consolePassword)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.base+"/t/acme/trips/"+trip), chromedp.WaitVisible(chromedp.CSS(`[data-summary]`))))
	require.Equal(t, []string{"1 of 4 acknowledged; call this one"}, textsOf(t, ctx, `[data-summary]`))
	require.Len(t, textsOf(t, ctx, `table.trip-unreached tbody tr`), 1)
	require.Len(t, textsOf(t, ctx, `table.trip-acks tbody tr`), 4)
	requireNoPageErrors(t, ctx)
	screenshot(t, ctx, "04-trip-acknowledged")

	// Ben's link, one character changed: a clear page (401, which the
	// browser reports, so it comes last).
	ben := links["+4915123420011"][len(h.Services.Acks.Links.BaseURL):]
	bad := ben[:len(ben)-1] + map[bool]string{true: "B", false: "A"}[ben[len(ben)-1] == 'A']
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.base+bad), chromedp.WaitVisible(chromedp.CSS(`[data-ack-state="problem"]`))))
	screenshot(t, ctx, "03-ack-invalid")
	errs := takePageErrors(t, ctx)
	require.Len(t, errs, 1, "%q", errs)
	require.Contains(t, errs[0], "401")

}
