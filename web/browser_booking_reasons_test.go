package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestBrowser_BookingPanelReasons shows a manager one booking whose
// messages were not sent, each for its own reason: one waits for the quiet
// hours to end, one expired while it would have waited, one was for a
// channel the passenger opted out of, and a reminder was superseded by the
// booking's cancellation. The panel says why for each.
func TestBrowser_BookingPanelReasons(t *testing.T) {
	t.Parallel()
	// 23:30 in Berlin: inside the default quiet hours (21:00-08:00).
	night := time.Date(2026, time.November, 24, 22, 30, 0, 0, time.UTC)
	clock := &timeClock{now: night}
	c := serveConsoleWith(t, webtest.Options{NoWorkers: true, Config: defaultQuietHours,
		Dispatcher: func(o *app.DispatcherOptions) { o.Now = clock.Now }})
	h := c.Herald
	s := h.Services
	s.Intake.Now, s.Router.Now, s.Maintenance.Now, s.Messages.Now = clock.Now, clock.Now, clock.Now, clock.Now
	const booking = "BK-NIGHT"
	anna := []map[string]any{{"name": "Anna Schmidt", "email": "anna.night@example.com", "timezone": "Europe/Berlin", "locale": "en"}}
	ben := []map[string]any{{"name": "Ben Ode", "email": "ben.night@example.com", "timezone": "Europe/Berlin", "locale": "en"}}

	paid := bookingEvent("night-paid-anna", "BOOKING_FULLY_PAID", booking, "", nil)
	paid["recipients"] = anna
	routeNow(t, h, submitAnswer(t, h, h.Key, paid).ID)

	// Ben's expires at midnight: the quiet hours would hold it past that.
	paidBen := bookingEvent("night-paid-ben", "BOOKING_FULLY_PAID", booking, "", nil)
	paidBen["recipients"] = ben
	paidBen["expires_at"] = night.Add(90 * time.Minute).Format(time.RFC3339)
	routeNow(t, h, submitAnswer(t, h, h.Key, paidBen).ID)

	// Anna opted out of e-mail: an optional reminder by e-mail is not sent.
	h.Exec(`UPDATE contacts SET opted_out = '{EMAIL}' WHERE tenant_id = $1 AND email = 'anna.night@example.com'`, h.Tenant.ID)
	optional := bookingEvent("night-reminder-anna", "PRE_TRIP_REMINDER", booking, "", nil)
	optional["recipients"], optional["channels"] = anna, []string{"EMAIL"}
	routeNow(t, h, submitAnswer(t, h, h.Key, optional).ID)

	// Ben's reminder is due tomorrow evening; the booking is cancelled now.
	tomorrow := night.Add(20 * time.Hour)
	later := bookingEvent("night-reminder-ben", "PRE_TRIP_REMINDER", booking, "", &tomorrow)
	later["recipients"] = ben
	submitAnswer(t, h, h.Key, later)
	cancel := bookingEvent("night-cancel", "BOOKING_CANCELLED", booking, "", nil)
	cancel["recipients"] = anna
	routeNow(t, h, submitAnswer(t, h, h.Key, cancel).ID)

	ctx := newBrowser(t)
	login(t, ctx, c.base, c.users[asManager].Email, consolePassword)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.base+"/t/acme/bookings/booking/"+booking),
		chromedp.WaitVisible(chromedp.CSS(`.superseded`))))
	require.Equal(t, []string{"Cancelled: superseded by BOOKING_CANCELLED"}, textsOf(t, ctx, `.superseded`), "Ben's reminder")
	require.ElementsMatch(t, []string{"The recipient opted out: opted_out", "It expired before it could be sent: expired"},
		textsOf(t, ctx, `.failed-reason`), "Anna's optional e-mail and Ben's confirmation")
	body := textsOf(t, ctx, `main`)
	require.Len(t, body, 1)
	// Anna's payment confirmation and her cancellation wait for 08:00.
	require.Contains(t, body[0], "waiting for quiet hours to end at 08:00 Europe/Berlin")
	require.Contains(t, body[0], "expired at 25 Nov 2026 01:00 CET, never sent", "Ben's confirmation expired")
	requireNoPageErrors(t, ctx)
	screenshot(t, ctx, "booking-reasons")
}
