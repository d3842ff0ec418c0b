package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestBrowser_WhyNothingSent walks the two answers to "why was nothing
// sent?" as a manager and as support: the Requests page with the refused
// requests (filtered, and one opened with its redacted body and answer),
// and an event's page with its routing decision per recipient and channel.
func TestBrowser_WhyNothingSent(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	c.breakRouting()

	// An event routed with a template found over the locale path, a
	// suspended SMS account, no WhatsApp template and a recipient without
	// an e-mail address.
	event := c.Submit(routingTestEvent("BK-WHY-confirmed", "BK-WHY"))
	c.WaitMessages(event, "the event routed", func(ms []*app.Message) bool { return len(ms) >= 2 })

	// Refused requests: a validation error, the same event id again, a key
	// with a wrong secret.
	bad := webtest.Notification("BK-WHY-paid", "BK-WHY")
	bad["trigger_event"] = "BOOKING_PAID_TWICE"
	require.Equal(t, http.StatusUnprocessableEntity, sendAs(t, c.Herald, c.Key, http.MethodPost, "/api/v1/notifications", jsonOf(t, bad), "why-invalid", false))
	require.Equal(t, http.StatusOK, sendAs(t, c.Herald, c.Key, http.MethodPost, "/api/v1/notifications", jsonOf(t, routingTestEvent("BK-WHY-confirmed", "BK-WHY")), "why-dup", false))
	wrong := c.Key[:11] + strings.Repeat("W", len(c.Key)-11)
	require.Equal(t, http.StatusUnauthorized, sendAs(t, c.Herald, wrong, http.MethodGet, "/api/v1/tenant", "", "why-key", false))

	for _, who := range []string{asManager, asSupport, asOperator} {
		t.Run(who, func(t *testing.T) {
			ctx := newBrowser(t)
			login(t, ctx, c.base, c.users[who].Email, consolePassword)
			if who == asOperator {
				// An operator works inside the tenant it opens.
				visit(t, ctx, c.base+"/t/acme/")
			}

			clickNav(t, ctx, "Requests")
			requireHeading(t, ctx, "Requests")
			rows := textsOf(t, ctx, `table.req-table tbody tr`)
			require.Len(t, rows, 3, "%q", rows)
			require.True(t, containsAll(rows, "401", "unauthorized"), "%q", rows)
			require.True(t, containsAll(rows, "200 duplicate", "BK-WHY-confirmed"), "%q", rows)
			require.True(t, containsAll(rows, "422", "BK-WHY-paid"), "%q", rows)
			capture(t, ctx, "01-requests")

			// Filter by status through the form.
			require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`form.filters select[name=status]`), "422")))
			follow(t, ctx, chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
			rows = textsOf(t, ctx, `table.req-table tbody tr`)
			require.Len(t, rows, 1, "%q", rows)
			capture(t, ctx, "02-requests-422")

			follow(t, ctx, chromedp.Click(chromedp.CSS(`table.req-table tbody tr td:first-child a`)))
			requireAt(t, ctx, "/t/acme/requests/")
			requireText(t, ctx, `"trigger_event": "BOOKING_PAID_TWICE"`)
			requireText(t, ctx, `"email": "a•••@example.com"`)
			body := evalString(t, ctx, `document.body.innerHTML`)
			for _, secret := range []string{"Anna", "anna@example.com", "23456789"} {
				require.NotContains(t, body, secret)
			}
			capture(t, ctx, "03-request-detail")

			// The event's page, from the booking panel.
			visit(t, ctx, c.base+"/t/acme/bookings/booking/BK-WHY")
			follow(t, ctx, chromedp.Click(chromedp.CSS(`tr[id^="event-"] a[href*="/events/"]`)))
			requireAt(t, ctx, "/t/acme/events/")
			requireHeading(t, ctx, "BOOKING_CONFIRMED")
			requireText(t, ctx, "BOOKING_CONFIRMED/EMAIL/de-DE")
			requireText(t, ctx, "locales tried: de-AT → de → de-DE")
			requireText(t, ctx, "no active channel account for this channel")
			requireText(t, ctx, "no active template for this event, channel and locale")
			requireText(t, ctx, "the recipient has no address on this channel")
			if who == asSupport {
				require.NotContains(t, evalString(t, ctx, `document.body.innerHTML`), "anna@example.com")
			}
			capture(t, ctx, "04-event-routing")
		})
	}
}
