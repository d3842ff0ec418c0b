package web_test

import (
	"encoding/base64"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

// TestBrowser_BookingPanelFiles shows support the files of a booking's
// messages: each with its name, type, size and the start of its SHA-256,
// the event's invoice on every message and a passenger's ticket on hers.
func TestBrowser_BookingPanelFiles(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	h := c.Herald
	const booking = "BK-FILES"
	req := bookingEvent("files-confirm", "BOOKING_CONFIRMED", booking, "", nil)
	req["channels"] = []string{"SMS", "EMAIL"}
	req["recipients"] = []map[string]any{
		{"name": "Anna Schmidt", "phone": "+49 151 23456789", "email": "anna.files@example.com", "locale": "en"},
		{"name": "Ben Ode", "email": "ben.files@example.com", "locale": "en",
			"attachments": []map[string]any{{"filename": "ticket-ben.pdf", "content_type": "application/pdf",
				"content": base64.StdEncoding.EncodeToString(filePDF)}}},
	}
	req["attachments"] = []map[string]any{{"filename": "Rechnung-1042.pdf", "content_type": "application/pdf",
		"content": base64.StdEncoding.EncodeToString(filePDF)}}
	id := submitAnswer(t, h, h.Key, req).ID
	routeNow(t, h, id)

	ctx := newBrowser(t)
	login(t, ctx, c.base, c.users[asSupport].Email, consolePassword)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.base+"/t/acme/bookings/booking/"+booking),
		chromedp.WaitVisible(chromedp.CSS(`.msg-files`))))
	// Anna's SMS and e-mail carry the invoice; Ben (no phone) has an
	// e-mail with the invoice and his ticket.
	names := textsOf(t, ctx, `.msg-files .msg-file-name`)
	require.ElementsMatch(t, []string{"Rechnung-1042.pdf", "Rechnung-1042.pdf", "Rechnung-1042.pdf", "ticket-ben.pdf"}, names)
	for _, facts := range textsOf(t, ctx, `.msg-files li`) {
		require.Contains(t, facts, "application/pdf")
		require.Contains(t, facts, "sha256 "+app.SHA256Hex(filePDF)[:12])
	}
	// The SMS's text carries the invoice's link.
	var sms *app.Message
	for _, m := range h.WaitMessages(id, "three messages", func(ms []*app.Message) bool { return len(ms) == 3 }) {
		if m.Channel == app.SMS {
			sms = m
		}
	}
	require.NotNil(t, sms)
	require.Contains(t, sms.Body, "/f/")
	requireNoPageErrors(t, ctx)
	screenshot(t, ctx, "booking-files")
}
