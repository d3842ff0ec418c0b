package web_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// supersedeAnswer is the answer to a submitted notification with its
// status reason.
type supersedeAnswer struct {
	ID           uuid.UUID
	Status       string
	StatusReason string `json:"status_reason"`
}

// bookingEvent is a request about a booking, for one passenger; trip, when
// set, names the booking's trip in context.trip_id.
func bookingEvent(eventID, trigger, booking, trip string, sendAt *time.Time) map[string]any {
	def, _ := app.BuiltInEvent(trigger)
	ctx := map[string]any{}
	for k, v := range def.Sample {
		ctx[k] = v
	}
	ctx["booking_reference"] = booking
	if trip != "" {
		ctx["trip_id"] = trip
	}
	b := map[string]any{
		"event_id": eventID, "trigger_event": trigger, "context": ctx,
		"recipients":           []map[string]any{{"name": "Anna Schmidt", "email": "anna." + eventID + "@example.com", "locale": "en"}},
		"conversation_context": map[string]any{"type": "booking", "id": booking},
	}
	if sendAt != nil {
		b["send_at"] = sendAt.Format(time.RFC3339)
	}
	return b
}

// submitAnswer posts a notification, which must be accepted (202).
func submitAnswer(t *testing.T, h *webtest.Herald, key string, body map[string]any) supersedeAnswer {
	t.Helper()
	var a supersedeAnswer
	require.Equal(t, http.StatusAccepted, h.RequestWithKey(key, http.MethodPost, "/api/v1/notifications", body, &a))
	return a
}

// eventRow reads an event's status and status reason.
func eventRow(t *testing.T, h *webtest.Herald, id uuid.UUID) (status, reason string) {
	t.Helper()
	var e struct {
		Status       string
		StatusReason string `json:"status_reason"`
	}
	require.Equal(t, http.StatusOK, h.Request(http.MethodGet, "/api/v1/notifications/"+id.String(), nil, &e))
	return e.Status, e.StatusReason
}

func TestSupersession(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	tomorrow := time.Now().Add(24 * time.Hour)

	t.Run("CancellationAfterReminders", func(t *testing.T) {
		t.Parallel()
		reminder := submitAnswer(t, h, h.Key, bookingEvent("s1-reminder", "PRE_TRIP_REMINDER", "BK-S1", "", &tomorrow))
		require.Equal(t, app.EventScheduled, reminder.Status)
		dueBody := bookingEvent("s1-due", "FINAL_PAYMENT_DUE", "BK-S1", "", nil)
		dueBody["recipients"] = []map[string]any{{"name": "Anna Schmidt", "email": "anna@example.com", "phone": "+49 151 23456789"}}
		due := submitAnswer(t, h, h.Key, dueBody)
		// Routed now, without sending: its messages wait QUEUED.
		require.NoError(t, h.Services.Router.Route(h.Ctx, app.RouteJob{TenantID: h.Tenant.ID, EventID: due.ID, Version: 1}))
		queued := h.Event(due.ID).Messages
		require.Len(t, queued, 2, "WhatsApp and e-mail")
		// One of them has its send under way: it is left alone.
		h.Exec(`UPDATE messages SET send_started_at = now(), send_started_by = $2, send_attempt = 1 WHERE id = $1`, queued[0].ID, uuid.New())
		other := submitAnswer(t, h, h.Key, bookingEvent("s1-other-booking", "PRE_TRIP_REMINDER", "BK-S1-OTHER", "", &tomorrow))
		refund := submitAnswer(t, h, h.Key, bookingEvent("s1-refund", "BOOKING_REFUNDED", "BK-S1", "", &tomorrow))

		cancel := submitAnswer(t, h, h.Key, bookingEvent("s1-cancel", "BOOKING_CANCELLED", "BK-S1", "", nil))
		require.Equal(t, app.EventReceived, cancel.Status)
		want := "superseded_by:" + cancel.ID.String()

		status, reason := eventRow(t, h, reminder.ID)
		require.Equal(t, app.EventCancelled, status)
		require.Equal(t, want, reason)
		status, _ = eventRow(t, h, other.ID)
		require.Equal(t, app.EventScheduled, status, "another booking's reminder stays")
		status, _ = eventRow(t, h, refund.ID)
		require.Equal(t, app.EventScheduled, status, "a refund is not superseded by the cancellation")

		ms := h.Event(due.ID).Messages
		byID := map[uuid.UUID]*app.Message{}
		for _, m := range ms {
			byID[m.ID] = m
		}
		require.Equal(t, app.MessageQueued, byID[queued[0].ID].Status, "a message being sent is left alone")
		require.Equal(t, app.MessageCancelled, byID[queued[1].ID].Status)
		require.Equal(t, want, *byID[queued[1].ID].FailedReason)
		timeline := h.Timeline(queued[1].ID)
		last := timeline[len(timeline)-1]
		require.Equal(t, app.MessageCancelled, *last.ToStatus)
		require.Equal(t, cancel.ID.String(), last.Detail["superseded_by"])
		require.Equal(t, "BOOKING_CANCELLED", last.Detail["superseding_event"])
		timeline = h.Timeline(queued[0].ID)
		require.Contains(t, timeline[len(timeline)-1].Detail["note"], "its send had started")

		// The cancelled message's dispatch job does nothing.
		out, err := h.Services.Dispatcher.Dispatch(h.Ctx, app.DispatchJob{TenantID: h.Tenant.ID, MessageID: queued[1].ID, Channel: queued[1].Channel}, 1, 5, noComplete)
		require.NoError(t, err)
		require.True(t, out.Done)
		require.Equal(t, app.MessageCancelled, h.Event(due.ID).Messages[1].Status)
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'notification.supersede' AND target_id = $2`,
			h.Tenant.ID, cancel.ID.String()))
	})

	t.Run("RemindersAfterCancellation", func(t *testing.T) {
		t.Parallel()
		cancel := submitAnswer(t, h, h.Key, bookingEvent("s2-cancel", "BOOKING_CANCELLED", "BK-S2", "", nil))
		want := "superseded_by:" + cancel.ID.String()
		for _, trigger := range []string{"PRE_TRIP_REMINDER", "FINAL_PAYMENT_OVERDUE", "SERVICE_LEG_STARTED"} {
			late := submitAnswer(t, h, h.Key, bookingEvent("s2-"+trigger, trigger, "BK-S2", "", &tomorrow))
			require.Equal(t, app.EventCancelled, late.Status, trigger)
			require.Equal(t, want, late.StatusReason, trigger)
			require.Zero(t, h.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, late.ID.String()),
				"a superseded event gets no route job")
		}
		refund := submitAnswer(t, h, h.Key, bookingEvent("s2-refund", "BOOKING_REFUNDED", "BK-S2", "", nil))
		require.Equal(t, app.EventReceived, refund.Status)

		// The same request again is a duplicate that says why.
		var dup supersedeAnswer
		require.Equal(t, http.StatusOK, h.Request(http.MethodPost, "/api/v1/notifications",
			bookingEvent("s2-PRE_TRIP_REMINDER", "PRE_TRIP_REMINDER", "BK-S2", "", &tomorrow), &dup))
		require.Equal(t, want, dup.StatusReason)
	})

	t.Run("OtherTenantsCancellationTouchesNothing", func(t *testing.T) {
		t.Parallel()
		reminder := submitAnswer(t, h, h.Key, bookingEvent("s3-reminder", "PRE_TRIP_REMINDER", "BK-S3", "", &tomorrow))
		otherKey := otherTenantKeyFor(t, h, "globex-s3")
		submitAnswer(t, h, otherKey, bookingEvent("s3-cancel", "BOOKING_CANCELLED", "BK-S3", "", nil))
		status, _ := eventRow(t, h, reminder.ID)
		require.Equal(t, app.EventScheduled, status)
		late := submitAnswer(t, h, h.Key, bookingEvent("s3-late", "FINAL_PAYMENT_DUE", "BK-S3", "", &tomorrow))
		require.Equal(t, app.EventScheduled, late.Status)
	})

	t.Run("TripCancelledReachesItsBookings", func(t *testing.T) {
		t.Parallel()
		// Herald learns that BK-T1 and BK-T2 are on trip T-S4.
		submitAnswer(t, h, h.Key, bookingEvent("s4-confirm-1", "BOOKING_CONFIRMED", "BK-T1", "T-S4", nil))
		submitAnswer(t, h, h.Key, bookingEvent("s4-confirm-2", "BOOKING_CONFIRMED", "BK-T2", "T-S4", nil))
		r1 := submitAnswer(t, h, h.Key, bookingEvent("s4-r1", "PRE_TRIP_REMINDER", "BK-T1", "", &tomorrow))
		r2 := submitAnswer(t, h, h.Key, bookingEvent("s4-r2", "FINAL_PAYMENT_DUE", "BK-T2", "", &tomorrow))
		r3 := submitAnswer(t, h, h.Key, bookingEvent("s4-r3", "PRE_TRIP_REMINDER", "BK-T3", "T-OTHER", &tomorrow))

		body := bookingEvent("s4-trip-cancel", "TRIP_CANCELLED", "", "", nil)
		body["conversation_context"] = map[string]any{"type": "trip", "id": "T-S4"}
		cancel := submitAnswer(t, h, h.Key, body)
		want := "superseded_by:" + cancel.ID.String()
		for _, id := range []uuid.UUID{r1.ID, r2.ID} {
			status, reason := eventRow(t, h, id)
			require.Equal(t, app.EventCancelled, status)
			require.Equal(t, want, reason)
		}
		status, _ := eventRow(t, h, r3.ID)
		require.Equal(t, app.EventScheduled, status, "a booking on another trip")

		late := submitAnswer(t, h, h.Key, bookingEvent("s4-late", "PRE_TRIP_REMINDER", "BK-T2", "", &tomorrow))
		require.Equal(t, want, late.StatusReason, "the trip's supersession reaches a known booking")
		refund := submitAnswer(t, h, h.Key, bookingEvent("s4-refund", "BOOKING_REFUNDED", "BK-T2", "T-S4", nil))
		require.Equal(t, app.EventReceived, refund.Status, "a refund still goes out")
	})

	t.Run("RoutingCancelsWhatSlippedPast", func(t *testing.T) {
		t.Parallel()
		// Stored before Herald knew the booking's trip; the trip is then
		// learnt and cancelled: routing, when the time comes, cancels it.
		r := submitAnswer(t, h, h.Key, bookingEvent("s5-reminder", "PRE_TRIP_REMINDER", "BK-S5", "", nil))
		submitAnswer(t, h, h.Key, bookingEvent("s5-confirm", "BOOKING_CONFIRMED", "BK-S5", "T-S5", &tomorrow))
		body := bookingEvent("s5-trip-cancel", "TRIP_CANCELLED", "", "", nil)
		body["conversation_context"] = map[string]any{"type": "trip", "id": "T-S5"}
		// The reminder is RECEIVED: the trip cancellation cancels it at
		// once. Put it back to see routing do it.
		cancel := submitAnswer(t, h, h.Key, body)
		status, _ := eventRow(t, h, r.ID)
		require.Equal(t, app.EventCancelled, status)
		h.Exec(`UPDATE events SET status = 'RECEIVED', status_reason = NULL WHERE id = $1`, r.ID)
		require.NoError(t, h.Services.Router.Route(h.Ctx, app.RouteJob{TenantID: h.Tenant.ID, EventID: r.ID, Version: 1}))
		status, reason := eventRow(t, h, r.ID)
		require.Equal(t, app.EventCancelled, status)
		require.Equal(t, "superseded_by:"+cancel.ID.String(), reason)
		require.Empty(t, h.Event(r.ID).Messages)
	})
}

// noComplete stands in for the job runner's completion of a dispatch job.
func noComplete(context.Context, app.Tx) error { return nil }

// otherTenantKeyFor creates another tenant and returns an API key of it.
func otherTenantKeyFor(t *testing.T, h *webtest.Herald, slug string) string {
	t.Helper()
	tn, err := h.Services.Tenants.Create(h.Ctx, app.CLIActor, app.TenantInput{Slug: slug, Name: slug})
	require.NoError(t, err)
	_, key, err := h.Services.APIKeys.Create(h.Ctx, app.CLIActor, tn.ID, slug+" system")
	require.NoError(t, err)
	return key
}

// TestSupersession_Race sends a reminder and its booking's cancellation at
// the same moment, many times over: whichever commits first, the reminder
// never goes out.
func TestSupersession_Race(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	tomorrow := time.Now().Add(24 * time.Hour)

	t.Run("Intake", func(t *testing.T) {
		t.Parallel()
		const rounds = 20
		for i := range rounds {
			booking := fmt.Sprintf("BK-RACE-%d", i)
			var reminder, cancel supersedeAnswer
			var wg sync.WaitGroup
			start := make(chan struct{})
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				reminder = submitAnswer(t, h, h.Key, bookingEvent(booking+"-reminder", "PRE_TRIP_REMINDER", booking, "", &tomorrow))
			}()
			go func() {
				defer wg.Done()
				<-start
				cancel = submitAnswer(t, h, h.Key, bookingEvent(booking+"-cancel", "BOOKING_CANCELLED", booking, "", nil))
			}()
			close(start)
			wg.Wait()
			status, reason := eventRow(t, h, reminder.ID)
			require.Equal(t, app.EventCancelled, status, "round %d", i)
			require.Equal(t, "superseded_by:"+cancel.ID.String(), reason, "round %d", i)
		}
	})

	t.Run("Routing", func(t *testing.T) {
		t.Parallel()
		// The reminder is due now and its routing runs while the
		// cancellation arrives: either routing finds it superseded, or
		// the cancellation finds its messages QUEUED and cancels them.
		const rounds = 20
		for i := range rounds {
			booking := fmt.Sprintf("BK-ROUTE-%d", i)
			reminder := submitAnswer(t, h, h.Key, bookingEvent(booking+"-reminder", "PRE_TRIP_REMINDER", booking, "", nil))
			var wg sync.WaitGroup
			start := make(chan struct{})
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				require.NoError(t, h.Services.Router.Route(h.Ctx, app.RouteJob{TenantID: h.Tenant.ID, EventID: reminder.ID, Version: 1}))
			}()
			go func() {
				defer wg.Done()
				<-start
				submitAnswer(t, h, h.Key, bookingEvent(booking+"-cancel", "BOOKING_CANCELLED", booking, "", nil))
			}()
			close(start)
			wg.Wait()
			e := h.Event(reminder.ID)
			for _, m := range e.Messages {
				// Every dispatch job that would run finds nothing to send.
				out, err := h.Services.Dispatcher.Dispatch(h.Ctx, app.DispatchJob{TenantID: h.Tenant.ID, MessageID: m.ID, Channel: m.Channel}, 1, 5, noComplete)
				require.NoError(t, err)
				require.True(t, out.Done)
			}
			e = h.Event(reminder.ID)
			if e.Status == app.EventCancelled {
				require.Empty(t, e.Messages, "round %d", i)
				continue
			}
			require.Equal(t, app.EventRouted, e.Status, "round %d", i)
			require.True(t, webtest.AllStatus(app.MessageCancelled)(e.Messages), "round %d: %s", i, webtest.DescribeMessages(e.Messages))
		}
	})

	t.Run("Dispatch", func(t *testing.T) {
		t.Parallel()
		// A QUEUED message's send starts while the cancellation arrives:
		// it is either sent (its send started first, and the cancellation
		// leaves it) or cancelled and never sent.
		const rounds = 20
		for i := range rounds {
			booking := fmt.Sprintf("BK-SEND-%d", i)
			reminder := submitAnswer(t, h, h.Key, bookingEvent(booking+"-reminder", "PRE_TRIP_REMINDER", booking, "", nil))
			require.NoError(t, h.Services.Router.Route(h.Ctx, app.RouteJob{TenantID: h.Tenant.ID, EventID: reminder.ID, Version: 1}))
			m := webtest.OnlyMessage(t, h.Event(reminder.ID).Messages)
			var wg sync.WaitGroup
			start := make(chan struct{})
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				_, err := h.Services.Dispatcher.Dispatch(h.Ctx, app.DispatchJob{TenantID: h.Tenant.ID, MessageID: m.ID, Channel: m.Channel}, 1, 5, noComplete)
				require.NoError(t, err)
			}()
			go func() {
				defer wg.Done()
				<-start
				submitAnswer(t, h, h.Key, bookingEvent(booking+"-cancel", "BOOKING_CANCELLED", booking, "", nil))
			}()
			close(start)
			wg.Wait()
			got := webtest.OnlyMessage(t, h.Event(reminder.ID).Messages)
			if got.Status == app.MessageCancelled {
				require.Nil(t, got.ExternalMessageID, "round %d: a cancelled message was never sent", i)
				require.Nil(t, got.SentAt, "round %d", i)
				continue
			}
			require.NotNil(t, got.SentAt, "round %d: %s", i, webtest.DescribeMessages([]*app.Message{got}))
		}
	})
}
