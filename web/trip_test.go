package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// tripPassenger is one passenger a test books on a trip.
type tripPassenger struct {
	booking, name, phone, email, locale string
}

// bookTrip confirms one booking per passenger on the trip (each event
// naming the trip in context.trip_id) and waits until routing has opened
// their conversations: Herald then knows them as the trip's passengers.
func bookTrip(t *testing.T, h *webtest.Herald, trip string, ps []tripPassenger) {
	t.Helper()
	for _, p := range ps {
		body := bookingEvent(trip+"-"+p.booking+"-confirmed", "BOOKING_CONFIRMED", p.booking, trip, nil)
		rc := map[string]any{"name": p.name, "phone": p.phone, "locale": p.locale}
		if p.email != "" {
			rc["email"] = p.email
		}
		body["recipients"] = []map[string]any{rc}
		submitAnswer(t, h, h.Key, body)
	}
	h.WaitUntil("every booking's conversation is open", func() bool {
		return h.Count(`SELECT count(DISTINCT booking_id) FROM conversations c JOIN trip_bookings tb USING (tenant_id, booking_id)
			WHERE tb.tenant_id = $1 AND tb.trip_id = $2`, h.Tenant.ID, trip) == len(ps)
	})
}

// tripIncident is an INCIDENT_BROADCAST to a trip's audience.
func tripIncident(eventID, trip string) map[string]any {
	def, _ := app.BuiltInEvent("INCIDENT_BROADCAST")
	return map[string]any{"event_id": eventID, "trigger_event": "INCIDENT_BROADCAST", "context": def.Sample,
		"audience": map[string]any{"trip_id": trip}}
}

func TestTripAudience(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})
	h := c.Herald
	const trip = "T-LAKE-48"

	// 50 bookings, one passenger each; two are cancelled, so 48 remain.
	// Two of the 48 cannot be reached: the sandbox refuses phones ending
	// in 0000 and the address fail@.
	var ps []tripPassenger
	for i := range 50 {
		p := tripPassenger{booking: fmt.Sprintf("BK-L%02d", i), name: fmt.Sprintf("Passenger %02d", i),
			phone: fmt.Sprintf("+49151234%05d", 20010+i), locale: "en"}
		if i%2 == 1 {
			p.locale = "de-DE"
		}
		if i == 7 || i == 30 {
			p.phone, p.email = fmt.Sprintf("+49151234%d0000", 7+i%2), "fail@example.com"
		}
		ps = append(ps, p)
	}
	bookTrip(t, h, trip, ps)
	for _, i := range []int{3, 4} {
		body := bookingEvent(fmt.Sprintf("cancel-%d", i), "BOOKING_CANCELLED", ps[i].booking, trip, nil)
		submitAnswer(t, h, h.Key, body)
	}

	sent := submitAnswer(t, h, h.Key, tripIncident("incident-1", trip))
	require.Equal(t, app.EventAwaitingApproval, sent.Status)

	// The approval preview lists the expanded audience.
	var preview struct {
		Recipients []struct{ Name string }
		Hidden     int `json:"hidden_recipients"`
	}
	require.Equal(t, http.StatusOK, h.Request(http.MethodGet, "/api/v1/approvals/"+sent.ID.String(), nil, &preview))
	require.Len(t, preview.Recipients, 48)
	var names []string
	for _, r := range preview.Recipients {
		names = append(names, r.Name)
	}
	require.NotContains(t, names, "Passenger 03", "a cancelled booking left the trip")
	require.Contains(t, names, "Passenger 49")

	approver := keyWith(t, h, h.Tenant.ID, app.ScopeApprove)
	require.Equal(t, http.StatusOK, h.RequestWithKey(approver, http.MethodPost, "/api/v1/notifications/"+sent.ID.String()+"/approve", map[string]any{}, nil))

	// One message per passenger (the incident's fallback chain starts on
	// WhatsApp), each greeted by name in their own language; the audience
	// and the expanded recipients are on the event.
	ms := h.WaitMessages(sent.ID, "every passenger settled", func(ms []*app.Message) bool {
		settled := map[int]bool{}
		for _, m := range ms {
			switch m.Status {
			case app.MessageDelivered, app.MessageRead:
				settled[*m.RecipientIndex] = true
			case app.MessageFailed:
				if len(m.FallbackChain) == 0 {
					settled[*m.RecipientIndex] = true
				}
			}
		}
		return len(settled) == 48
	})
	var stored struct {
		Audience   map[string]string
		Recipients []app.Recipient
	}
	require.Equal(t, http.StatusOK, h.Request(http.MethodGet, "/api/v1/notifications/"+sent.ID.String(), nil, &stored))
	require.Equal(t, trip, stored.Audience["trip_id"])
	require.Len(t, stored.Recipients, 48)
	for _, m := range ms {
		if m.Channel != app.WhatsApp {
			continue
		}
		rc := stored.Recipients[*m.RecipientIndex]
		greeting := "Hello " + rc.Name
		if rc.Locale == "de-DE" {
			greeting = "Hallo " + rc.Name
		}
		require.Contains(t, m.Body, greeting)
		require.Equal(t, rc.Phone, m.ToAddress)
	}

	// The trip page: 46 of 48 reached, the two to call listed with their
	// phone numbers.
	doc := c.signIn(asSupport).page("/t/acme/trips/" + trip)
	// INCIDENT_BROADCAST asks for acknowledgement: nobody has yet, and the
	// two unreached are the ones to call.
	require.Equal(t, "0 of 48 acknowledged; call these 2", text(doc.Find("[data-summary]")))
	require.Equal(t, "48", text(doc.Find(`[data-stat="notified"]`)))
	require.Equal(t, "46", text(doc.Find(`[data-stat="delivered"]`)))
	require.Equal(t, "2", text(doc.Find(`[data-stat="failed"]`)))
	rows := doc.Find("table.trip-unreached tbody tr")
	require.Equal(t, 2, rows.Length())
	require.Contains(t, text(rows.First()), "Passenger 07")
	require.Contains(t, text(rows.First()), ps[7].phone)
	require.Contains(t, text(rows.Last()), "Passenger 30")

	// Another tenant's manager sees nothing of the trip.
	other := c.signIn(asOtherManager).page("/t/globex/trips/" + trip)
	require.Contains(t, text(other.Find(".empty")), "Nothing known about trip "+trip)
}

func TestTripAudience_BadInput(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{})
	bookTrip(t, h, "T-BAD", []tripPassenger{{booking: "BK-BAD-1", name: "Ada", phone: "+4915123420011", locale: "en"}})
	otherKey := otherTenantKeyFor(t, h, "globex-bad")

	cases := map[string]struct {
		key    string
		body   func() map[string]any
		status int
		code   string
		field  string
	}{
		"AudienceAndRecipients": {body: func() map[string]any {
			b := tripIncident("bad-both", "T-BAD")
			b["recipients"] = []map[string]any{{"name": "Ada", "phone": "+4915123420011"}}
			return b
		}, status: 422, code: "audience_with_recipients", field: "audience"},
		"EmptyTrip": {body: func() map[string]any { return tripIncident("bad-empty-id", " ") }, status: 422, code: "invalid_audience", field: "audience.trip_id"},
		"UnknownTrip": {body: func() map[string]any { return tripIncident("bad-unknown", "T-NEVER") }, status: 422, code: "unknown_trip",
			field: "audience.trip_id"},
		"OtherTenantsTrip": {key: otherKey, body: func() map[string]any { return tripIncident("bad-other", "T-BAD") }, status: 422,
			code: "unknown_trip", field: "audience.trip_id"},
		"ConversationContextOfAnotherEntity": {body: func() map[string]any {
			b := tripIncident("bad-context", "T-BAD")
			b["conversation_context"] = map[string]any{"type": "booking", "id": "BK-BAD-1"}
			return b
		}, status: 422, code: "invalid_audience", field: "conversation_context"},
		"TripIDNotAString": {body: func() map[string]any {
			b := bookingEvent("bad-trip-id", "BOOKING_CONFIRMED", "BK-BAD-2", "", nil)
			b["context"].(map[string]any)["trip_id"] = 42
			return b
		}, status: 422, code: "invalid_trip_id", field: "context.trip_id"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			key := tc.key
			if key == "" {
				key = h.Key
			}
			var e apiErrorBody
			require.Equal(t, tc.status, h.RequestWithKey(key, http.MethodPost, "/api/v1/notifications", tc.body(), &e))
			require.Equal(t, tc.code, e.Error.Code, e.Error.Message)
			require.Equal(t, tc.field, e.Error.Field)
			require.NotEmpty(t, e.Error.Message)
			require.Zero(t, h.Count(`SELECT count(*) FROM events WHERE source_event_id = $1`, tc.body()["event_id"]), "nothing stored")
		})
	}

	t.Run("EveryBookingCancelled", func(t *testing.T) {
		t.Parallel()
		bookTrip(t, h, "T-GONE", []tripPassenger{{booking: "BK-GONE-1", name: "Bo", phone: "+4915123420012", locale: "en"}})
		submitAnswer(t, h, h.Key, bookingEvent("gone-cancel", "BOOKING_CANCELLED", "BK-GONE-1", "", nil))
		var e apiErrorBody
		require.Equal(t, 422, h.Request(http.MethodPost, "/api/v1/notifications", tripIncident("gone-incident", "T-GONE"), &e))
		require.Equal(t, "empty_audience", e.Error.Code)
		require.True(t, strings.Contains(e.Error.Message, "T-GONE"))
		// A later event about the cancelled booking does not bring it back.
		submitAnswer(t, h, h.Key, bookingEvent("gone-refund", "BOOKING_REFUNDED", "BK-GONE-1", "T-GONE", nil))
		require.Equal(t, 422, h.Request(http.MethodPost, "/api/v1/notifications", tripIncident("gone-incident-2", "T-GONE"), &e))
	})
}

// TestTripAudience_Idempotency: the same audience request again, after
// routing stored the passengers as its recipients, is a duplicate; another
// trip under the same event id is a conflict.
func TestTripAudience_Idempotency(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{})
	bookTrip(t, h, "T-IDEM", []tripPassenger{{booking: "BK-IDEM-1", name: "Ada", phone: "+4915123420013", locale: "en"}})
	bookTrip(t, h, "T-IDEM-2", []tripPassenger{{booking: "BK-IDEM-2", name: "Bo", phone: "+4915123420014", locale: "en"}})
	body := tripIncident("idem-incident", "T-IDEM")
	body["trigger_event"] = "INCIDENT_ALLCLEAR"
	def, _ := app.BuiltInEvent("INCIDENT_ALLCLEAR")
	body["context"] = def.Sample
	first := submitAnswer(t, h, h.Key, body)
	h.WaitMessages(first.ID, "routed", func(ms []*app.Message) bool { return len(ms) > 0 })

	var dup supersedeAnswer
	require.Equal(t, http.StatusOK, h.Request(http.MethodPost, "/api/v1/notifications", body, &dup))
	require.Equal(t, first.ID, dup.ID)
	body["audience"] = map[string]any{"trip_id": "T-IDEM-2"}
	var e apiErrorBody
	require.Equal(t, http.StatusConflict, h.Request(http.MethodPost, "/api/v1/notifications", body, &e))
	require.Equal(t, "audience.trip_id", e.Error.Field)
}
