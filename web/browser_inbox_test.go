package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/web/webtest"
)

// TestBrowser_Inbox walks support staff through the trip inbox: the list
// with the unanswered conversations first, a free-text answer inside
// WhatsApp's window, and a conversation whose window closed, where the page
// offers approved templates and says why.
func TestBrowser_Inbox(t *testing.T) {
	t.Parallel()
	c := serveConsoleWith(t, webtest.Options{})
	h := c.Herald
	bookTrip(t, h, "T-ALPS-0612", []tripPassenger{
		{booking: "BK-A01", name: "Anna Schmidt", phone: "+4915123460001", locale: "en"},
		{booking: "BK-A02", name: "Ben Ode", phone: "+4915123460002", locale: "en"},
		{booking: "BK-A03", name: "Clara Weiss", phone: "+4915123460003", locale: "en"},
	})
	passengerWroteAt(t, h, "+4915123460003", "Is the hotel near the station?", time.Now().Add(-30*time.Hour))
	passengerWrites(t, h, "+4915123460001", "Can I bring my bike on the bus? It is a folding one.")
	passengerWrites(t, h, "+4915123460002", "Thanks, see you on Monday!")

	ctx := newBrowser(t)
	login(t, ctx, c.base, c.users[asSupport].Email, consolePassword)
	visit(t, ctx, c.base+"/t/acme/inbox?trip=T-ALPS-0612")
	names := textsOf(t, ctx, `.inbox-item .inbox-who`)
	require.Equal(t, []string{"Clara Weiss", "Anna Schmidt", "Ben Ode"}, names, "unanswered, the longest waiting first")
	requireNoPageErrors(t, ctx)
	screenshot(t, ctx, "01-trip-inbox")

	follow(t, ctx, chromedp.Click(chromedp.CSS(`.inbox-item:nth-child(2) .inbox-who`)))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`.reply-option[data-channel=WHATSAPP] textarea[name=body]`), "Yes, folding bikes travel free in the luggage hold."),
	))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.reply-option[data-channel=WHATSAPP] button[type=submit]`)))
	thread := strings.Join(textsOf(t, ctx, `.bubble-out`), "\n")
	require.Contains(t, thread, "folding bikes travel free")
	require.Contains(t, strings.Join(textsOf(t, ctx, `.flash`), " "), "on its way")
	requireNoPageErrors(t, ctx)
	screenshot(t, ctx, "02-answered")

	visit(t, ctx, c.base+"/t/acme/inbox")
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.inbox-item:first-child .inbox-who`)))
	why := textsOf(t, ctx, `.reply-option[data-channel=WHATSAPP] [data-why]`)
	require.Len(t, why, 1)
	require.Contains(t, why[0], "not written on WhatsApp in the last 24 hours")
	require.NotEmpty(t, textsOf(t, ctx, `.reply-option[data-channel=WHATSAPP] select[name=template_id] option:not([disabled])`))
	requireNoPageErrors(t, ctx)
	screenshot(t, ctx, "03-window-closed")
}
