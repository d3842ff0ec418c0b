package web_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// routeNow routes an accepted event at once, as its route job would.
func routeNow(t *testing.T, h *webtest.Herald, id uuid.UUID) {
	t.Helper()
	require.NoError(t, h.Services.Router.Route(h.Ctx, app.RouteJob{TenantID: h.Tenant.ID, EventID: id, Version: 1}))
}

// TestBrowser_TripAndSupersession shows a support user the trip page after
// an incident reached all but two passengers, and the booking panel of a
// cancelled booking whose reminder was superseded.
func TestBrowser_TripAndSupersession(t *testing.T) {
	t.Parallel()
	// Workers start once the booking's messages wait QUEUED: the
	// cancellation finds them there.
	c := serveConsoleWith(t, webtest.Options{NoWorkers: true})
	h := c.Herald
	const trip = "T-GARDA-0412"
	var ps []tripPassenger
	for i := range 12 {
		p := tripPassenger{booking: fmt.Sprintf("BK-G%02d", i), name: []string{"Anna Schmidt", "Ben Ode", "Clara Weiss", "David Roth",
			"Eva Lang", "Felix Braun", "Greta Vogel", "Hans Keller", "Ida Sommer", "Jonas Weber", "Karla Fuchs", "Lena Hoffmann"}[i],
			phone: fmt.Sprintf("+49151234%05d", 20010+i), locale: "de-DE"}
		if i == 4 || i == 9 {
			p.phone, p.email = fmt.Sprintf("+49151234%d0000", 7+i%2), "fail@example.com"
		}
		ps = append(ps, p)
		body := bookingEvent(trip+"-"+p.booking+"-confirmed", "BOOKING_CONFIRMED", p.booking, trip, nil)
		rc := map[string]any{"name": p.name, "phone": p.phone, "locale": p.locale}
		if p.email != "" {
			rc["email"] = p.email
		}
		body["recipients"] = []map[string]any{rc}
		routeNow(t, h, submitAnswer(t, h, h.Key, body).ID)
	}

	// A payment reminder waits QUEUED and a pre-trip reminder is due
	// tomorrow when the booking is cancelled.
	tomorrow := time.Now().Add(24 * time.Hour)
	ben := []map[string]any{{"name": "Ben Ode", "phone": ps[1].phone, "locale": "de-DE"}}
	due := bookingEvent("garda-due-1", "FINAL_PAYMENT_DUE", "BK-G01", trip, nil)
	due["recipients"] = ben
	routeNow(t, h, submitAnswer(t, h, h.Key, due).ID)
	reminder := bookingEvent("garda-reminder-1", "PRE_TRIP_REMINDER", "BK-G01", trip, &tomorrow)
	reminder["recipients"] = ben
	submitAnswer(t, h, h.Key, reminder)
	submitAnswer(t, h, h.Key, bookingEvent("garda-cancel-1", "BOOKING_CANCELLED", "BK-G01", trip, nil))
	h.StartWorkers()

	sent := submitAnswer(t, h, h.Key, tripIncident("garda-incident", trip))
	approver := keyWith(t, h, h.Tenant.ID, app.ScopeApprove)
	require.Equal(t, http.StatusOK, h.RequestWithKey(approver, http.MethodPost, "/api/v1/notifications/"+sent.ID.String()+"/approve", map[string]any{}, nil))
	h.WaitUntil("the incident settled", func() bool {
		return h.Count(`SELECT count(DISTINCT recipient_index) FROM messages WHERE event_id = $1
			AND (status IN ('DELIVERED', 'READ') OR (status = 'FAILED' AND fallback_chain = '{}'))`, sent.ID) == 11
	})

	ctx := newBrowser(t)
	login(t, ctx, c.base, c.users[asSupport].Email, consolePassword)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.base+"/t/acme/trips/"+trip),
		chromedp.WaitVisible(chromedp.CSS(`[data-summary]`))))
	// The incident asks for acknowledgement; nobody gave it yet.
	require.Equal(t, []string{"0 of 11 acknowledged; call these 2"}, textsOf(t, ctx, `[data-summary]`))
	require.Len(t, textsOf(t, ctx, `table.trip-unreached tbody tr`), 2)
	requireNoPageErrors(t, ctx)
	screenshot(t, ctx, "01-trip-reach")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.base+"/t/acme/bookings/booking/BK-G01"),
		chromedp.WaitVisible(chromedp.CSS(`.superseded`))))
	notes := textsOf(t, ctx, `.superseded`)
	// The pre-trip reminder (an event not routed yet), the payment
	// reminder's and the confirmation's QUEUED WhatsApp messages.
	require.Len(t, notes, 3, "%q", notes)
	for _, n := range notes {
		require.Equal(t, "Cancelled: superseded by BOOKING_CANCELLED", n)
	}
	requireNoPageErrors(t, ctx)
	screenshot(t, ctx, "02-booking-superseded")
}
