package web_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// The time rules run on the real pipeline (HTTP intake, River's route and
// dispatch workers, Postgres) with an injected clock: a test moves the clock
// and then makes the River job due, instead of waiting.

// timeClock is the services' injected clock.
type timeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *timeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *timeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// timeHerald is Herald with workers, its services on a clock set to start.
// defaultQuietHours gives new tenants the product's default quiet hours,
// 21:00-08:00 (HERALD_QUIET_HOURS); the tests' Herald starts them with none,
// so that the other tests send at any time of day they run.
func defaultQuietHours(c *app.Config) {
	c.QuietHours = app.QuietHours{Start: app.DefaultQuietStart, End: app.DefaultQuietEnd}
}

func timeHerald(t *testing.T, start time.Time) (*webtest.Herald, *timeClock) {
	t.Helper()
	clock := &timeClock{now: start}
	h := webtest.New(t, webtest.Options{Config: defaultQuietHours, Dispatcher: func(o *app.DispatcherOptions) { o.Now = clock.Now }})
	s := h.Services
	s.Intake.Now, s.Router.Now, s.Maintenance.Now, s.Messages.Now = clock.Now, clock.Now, clock.Now, clock.Now
	return h, clock
}

// fullEvent is an event as the API shows it, with its time fields.
type fullEvent struct {
	ID         uuid.UUID
	Status     string
	Version    int
	SendAt     *time.Time     `json:"send_at"`
	ExpiresAt  *time.Time     `json:"expires_at"`
	SendAtRule map[string]any `json:"send_at_rule"`
	Context    map[string]any
	Error      string
	Messages   []*app.Message
}

func getEvent(t *testing.T, h *webtest.Herald, id uuid.UUID) fullEvent {
	t.Helper()
	var e fullEvent
	require.Equal(t, http.StatusOK, h.Request(http.MethodGet, "/api/v1/notifications/"+id.String(), nil, &e))
	return e
}

// dueNow makes the River jobs of kind about id due now (River's own clock).
func dueNow(h *webtest.Herald, kind, arg string, id uuid.UUID) {
	h.Exec(`UPDATE river_job SET scheduled_at = now(), state = 'available'
		WHERE kind = $1 AND args->>$2 = $3 AND state = 'scheduled'`, kind, arg, id.String())
}

// emailTo is a BOOKING_CONFIRMED request by e-mail only to one recipient.
func emailTo(eventID, booking, email, timezone string) map[string]any {
	rc := map[string]any{"name": "Anna Schmidt", "email": email}
	if timezone != "" {
		rc["timezone"] = timezone
	}
	return webtest.WithRecipient(eventID, booking, rc, "EMAIL")
}

// reminder is a PRE_TRIP_REMINDER by e-mail with a departure time.
func reminder(eventID, booking, departure string) map[string]any {
	return map[string]any{
		"event_id": eventID, "trigger_event": "PRE_TRIP_REMINDER", "channels": []string{"EMAIL"},
		"recipients": []map[string]any{{"name": "Anna Schmidt", "email": "anna@example.com"}},
		"context": map[string]any{
			"passenger_name": "Anna Schmidt", "tour_name": "Gardasee", "departure_date": departure[:10],
			"boarding_point_name": "München ZOB", "boarding_time": "07:15", "passenger_instructions": "Ausweis mitbringen",
			"departure_at": departure,
		},
		"conversation_context": map[string]any{"type": "booking", "id": booking},
	}
}

func TestTime_QuietHours(t *testing.T) {
	t.Parallel()
	// 23:30 in Berlin on the night summer time starts (02:00 becomes
	// 03:00): the window ends at 08:00 CEST, 06:00 UTC, not 07:00.
	start := time.Date(2027, time.March, 27, 22, 30, 0, 0, time.UTC)
	h, clock := timeHerald(t, start)

	berlin := h.Submit(emailTo("night-berlin", "BK-Q1", "anna@example.com", "Europe/Berlin"))
	tenantZone := h.Submit(emailTo("night-tenant", "BK-Q2", "ben@example.com", ""))
	newYork := h.Submit(emailTo("evening-ny", "BK-Q3", "cleo@example.com", "America/New_York"))

	// New York is at 18:30: outside its quiet hours, sent at once.
	h.WaitMessages(newYork, "the New York message sent", allSent)

	wantUntil := time.Date(2027, time.March, 28, 6, 0, 0, 0, time.UTC)
	for _, id := range []uuid.UUID{berlin, tenantZone} {
		m := webtest.OnlyMessage(t, h.WaitMessages(id, "a deferred message", webtest.AllStatus(app.MessageQueued)))
		require.NotNil(t, m.DeferredUntil)
		require.True(t, m.DeferredUntil.Equal(wantUntil), "ends at 08:00 CEST: %s", m.DeferredUntil)
		require.Equal(t, "Europe/Berlin", *m.DeferredZone, "the tenant's zone when the recipient has none")
		tl := h.Timeline(m.ID)
		require.Equal(t, "waiting for quiet hours to end at 08:00 Europe/Berlin", tl[0].Detail["note"])
	}

	t.Run("EarlyJobSnoozes", func(t *testing.T) {
		m := webtest.OnlyMessage(t, getEvent(t, h, berlin).Messages)
		dueNow(h, "dispatch", "message_id", m.ID)
		h.WaitUntil("the early job snoozed", func() bool {
			return h.Count(`SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND args->>'message_id' = $1
				AND state = 'scheduled' AND attempted_at IS NOT NULL`, m.ID.String()) == 1
		})
		require.Equal(t, app.MessageQueued, webtest.OnlyMessage(t, getEvent(t, h, berlin).Messages).Status)
	})

	t.Run("ReleasedAtWindowEnd", func(t *testing.T) {
		clock.Set(wantUntil.Add(time.Second))
		for _, id := range []uuid.UUID{berlin, tenantZone} {
			m := webtest.OnlyMessage(t, getEvent(t, h, id).Messages)
			dueNow(h, "dispatch", "message_id", m.ID)
			h.WaitMessages(id, "sent once quiet hours ended", allSent)
		}
	})

	t.Run("UrgentIgnoresThem", func(t *testing.T) {
		clock.Set(start)
		id := h.Submit(map[string]any{
			"event_id": "allclear-night", "trigger_event": "INCIDENT_ALLCLEAR", "fallback_chain": []string{"EMAIL"},
			"recipients": []map[string]any{{"name": "Anna Schmidt", "email": "dora@example.com", "timezone": "Europe/Berlin"}},
			"context":    map[string]any{"tour_name": "Gardasee", "update_message": "Die Straße ist wieder frei."},
		})
		m := webtest.OnlyMessage(t, h.WaitMessages(id, "the urgent message sent", allSent))
		require.Nil(t, m.DeferredUntil)
	})
}

func TestTime_QuietHoursSettings(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true, Config: defaultQuietHours})
	var tn struct {
		QuietHours struct{ Start, End string } `json:"quiet_hours"`
	}
	require.Equal(t, http.StatusOK, h.Request(http.MethodGet, "/api/v1/tenant", nil, &tn))
	require.Equal(t, "21:00", tn.QuietHours.Start, "the default")
	require.Equal(t, "08:00", tn.QuietHours.End)

	status := h.Request(http.MethodPatch, "/api/v1/tenant", map[string]any{"quiet_hours": map[string]any{"start": "22:30", "end": "07:00"}}, &tn)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "22:30", tn.QuietHours.Start)
	require.Equal(t, 1, h.Count(`SELECT count(*) FROM tenants WHERE id = $1 AND quiet_hours_start = 1350 AND quiet_hours_end = 420`, h.Tenant.ID))

	for name, tc := range map[string]struct {
		body  any
		field string
	}{
		"BadStart":  {map[string]any{"quiet_hours": map[string]any{"start": "25:00", "end": "07:00"}}, "quiet_hours.start"},
		"BadEnd":    {map[string]any{"quiet_hours": map[string]any{"start": "22:00", "end": "7"}}, "quiet_hours.end"},
		"Missing":   {map[string]any{}, "quiet_hours"},
		"Unknown":   {map[string]any{"quiet": true}, "quiet"},
		"WrongType": {map[string]any{"quiet_hours": "22-07"}, "quiet_hours"},
	} {
		t.Run(name, func(t *testing.T) {
			var e struct{ Error struct{ Code, Field string } }
			status := h.Request(http.MethodPatch, "/api/v1/tenant", tc.body, &e)
			require.Contains(t, []int{http.StatusBadRequest, http.StatusUnprocessableEntity}, status)
			require.Equal(t, tc.field, e.Error.Field)
			require.Equal(t, 1, h.Count(`SELECT count(*) FROM tenants WHERE id = $1 AND quiet_hours_start = 1350`, h.Tenant.ID), "nothing stored")
		})
	}
}

func TestTime_Expiry(t *testing.T) {
	t.Parallel()
	// Noon in Berlin: no quiet hours in the way.
	start := time.Date(2027, time.April, 10, 10, 0, 0, 0, time.UTC)
	h, clock := timeHerald(t, start)

	t.Run("ScheduledEventExpires", func(t *testing.T) {
		b := emailTo("expiring-scheduled", "BK-E1", "anna@example.com", "")
		b["send_at"] = start.Add(time.Hour).Format(time.RFC3339)
		b["expires_at"] = start.Add(2 * time.Hour).Format(time.RFC3339)
		id := h.Submit(b)
		// The route job runs late, after the expiry (an outage, say).
		clock.Set(start.Add(3 * time.Hour))
		dueNow(h, "route", "event_id", id)
		h.WaitUntil("the event expired", func() bool { return getEvent(t, h, id).Status == app.EventExpired })
		e := getEvent(t, h, id)
		require.Empty(t, e.Messages, "never sent")
		require.Contains(t, e.Error, "expired")
		clock.Set(start)
	})

	t.Run("DefaultExpiryAtDeparture", func(t *testing.T) {
		id := h.Submit(reminder("reminder-default-expiry", "BK-E2", "2027-04-11T07:15:00+02:00"))
		e := getEvent(t, h, id)
		require.NotNil(t, e.ExpiresAt)
		require.True(t, e.ExpiresAt.Equal(time.Date(2027, time.April, 11, 5, 15, 0, 0, time.UTC)), "expires at departure: %s", e.ExpiresAt)
	})

	t.Run("ExpiresWhileDeferred", func(t *testing.T) {
		// 23:00 in Berlin; the bus leaves at 07:00, before quiet hours end.
		clock.Set(time.Date(2027, time.April, 10, 21, 0, 0, 0, time.UTC))
		defer clock.Set(start)
		id := h.Submit(reminder("reminder-night", "BK-E3", "2027-04-11T07:00:00+02:00"))
		m := webtest.OnlyMessage(t, h.WaitMessages(id, "an expired message", webtest.AllStatus(app.MessageExpired)))
		require.Equal(t, app.ReasonExpired, *m.FailedReason)
		require.Equal(t, 0, h.Count(`SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND args->>'message_id' = $1`, m.ID.String()))
	})

	t.Run("DeferredMessageExpiresInTheSweep", func(t *testing.T) {
		night := time.Date(2027, time.April, 10, 21, 0, 0, 0, time.UTC)
		clock.Set(night)
		defer clock.Set(start)
		b := reminder("reminder-sweep", "BK-E4", "2027-04-11T10:00:00+02:00")
		b["expires_at"] = night.Add(2 * time.Hour).Format(time.RFC3339) // before 08:00
		id := h.Submit(b)
		m := webtest.OnlyMessage(t, h.WaitMessages(id, "an expired message", webtest.AllStatus(app.MessageExpired)))
		require.Equal(t, app.ReasonExpired, *m.FailedReason)

		b = reminder("reminder-sweep-2", "BK-E5", "2027-04-11T10:00:00+02:00")
		id = h.Submit(b)
		m = webtest.OnlyMessage(t, h.WaitMessages(id, "a deferred message", webtest.AllStatus(app.MessageQueued)))
		require.NotNil(t, m.DeferredUntil)
		clock.Set(time.Date(2027, time.April, 11, 8, 0, 1, 0, time.UTC)) // past the departure, the job not run yet
		_, expired, err := h.Services.Maintenance.ExpireOverdue(h.Ctx)
		require.NoError(t, err)
		require.GreaterOrEqual(t, expired, 1)
		m = webtest.OnlyMessage(t, getEvent(t, h, id).Messages)
		require.Equal(t, app.MessageExpired, m.Status)
		tl := h.Timeline(m.ID)
		require.Equal(t, app.MessageExpired, *tl[len(tl)-1].ToStatus)
		require.Equal(t, "past its expiry before it was sent", tl[len(tl)-1].Detail["note"])
		// Its job, once due, sends nothing.
		dueNow(h, "dispatch", "message_id", m.ID)
		h.WaitUntil("the job finished", func() bool {
			return h.Count(`SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND args->>'message_id' = $1 AND state = 'completed'`, m.ID.String()) == 1
		})
		require.Equal(t, app.MessageExpired, webtest.OnlyMessage(t, getEvent(t, h, id).Messages).Status)
	})

	t.Run("RetryAfterExpiryExpires", func(t *testing.T) {
		// The tests' retries wait 20 ms; the message expires in 10 ms.
		b := emailTo("retry-expiry", "BK-E6", "down@example.com", "")
		b["expires_at"] = start.Add(10 * time.Millisecond).Format(time.RFC3339Nano)
		id := h.Submit(b)
		m := webtest.OnlyMessage(t, h.WaitMessages(id, "the message expired instead of retrying", webtest.AllStatus(app.MessageExpired)))
		require.Nil(t, m.SentAt)
		tl := h.Timeline(m.ID)
		require.Equal(t, "the next retry would come after the message's expiry", tl[len(tl)-1].Detail["note"])
	})

	t.Run("BadInputs", func(t *testing.T) {
		for name, tc := range map[string]struct {
			mutate func(b map[string]any)
			code   string
			field  string
		}{
			"ExpiresInPast": {func(b map[string]any) { b["expires_at"] = start.Add(-time.Minute).Format(time.RFC3339) }, "expires_at_in_past", "expires_at"},
			"ExpiresBeforeSendAt": {func(b map[string]any) {
				b["send_at"] = start.Add(2 * time.Hour).Format(time.RFC3339)
				b["expires_at"] = start.Add(time.Hour).Format(time.RFC3339)
			}, "expires_before_send_at", "expires_at"},
			"ExpiresNotATime": {func(b map[string]any) { b["expires_at"] = "tomorrow" }, "invalid_expires_at", "expires_at"},
			"DepartureGone": {func(b map[string]any) {
				b["context"].(map[string]any)["departure_at"] = "2027-04-09T07:00:00+02:00"
			}, "expires_before_send_at", "context.departure_at"},
		} {
			t.Run(name, func(t *testing.T) {
				b := reminder("bad-expiry-"+name, "BK-BAD", "2027-04-12T07:15:00+02:00")
				tc.mutate(b)
				requireRefused(t, h, b, tc.code, tc.field)
			})
		}
	})
}

// requireRefused submits b and requires a 422 with the code and field,
// and nothing stored.
func requireRefused(t *testing.T, h *webtest.Herald, b map[string]any, code, field string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Reason, Field, Message string }
	}
	status := h.Request(http.MethodPost, "/api/v1/notifications", b, &e)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%+v", e)
	require.Equal(t, field, e.Error.Field, e.Error.Message)
	require.NotEmpty(t, e.Error.Message)
	if code != "" {
		require.Equal(t, code, e.Error.Code)
	}
	require.Equal(t, 0, h.Count(`SELECT count(*) FROM events WHERE source_event_id = $1`, b["event_id"]), "nothing stored")
}

func TestTime_RelativeSchedule(t *testing.T) {
	t.Parallel()
	start := time.Date(2027, time.March, 20, 10, 0, 0, 0, time.UTC)
	h, clock := timeHerald(t, start)
	relative := func(eventID, booking, departure string, rule map[string]any) map[string]any {
		b := reminder(eventID, booking, departure)
		b["send_at"] = rule
		return b
	}

	t.Run("CalendarDaysAcrossDST", func(t *testing.T) {
		// Two days before 07:00 on 29 March, across the change to summer
		// time: 07:00 CET on the 27th in Berlin's zone, 06:00 UTC; with the
		// departure's own fixed offset, 05:00 UTC.
		zoned := h.Submit(relative("rel-zoned", "BK-R1", "2027-03-29T07:00:00+02:00",
			map[string]any{"before": "departure_at", "offset": "2d", "zone": "Europe/Berlin"}))
		fixed := h.Submit(relative("rel-fixed", "BK-R2", "2027-03-29T07:00:00+02:00",
			map[string]any{"before": "departure_at", "offset": "2d"}))
		hours := h.Submit(relative("rel-hours", "BK-R3", "2027-03-29T07:00:00+02:00",
			map[string]any{"before": "departure_at", "offset": "48h"}))
		require.True(t, getEvent(t, h, zoned).SendAt.Equal(time.Date(2027, time.March, 27, 6, 0, 0, 0, time.UTC)))
		require.True(t, getEvent(t, h, fixed).SendAt.Equal(time.Date(2027, time.March, 27, 5, 0, 0, 0, time.UTC)))
		require.True(t, getEvent(t, h, hours).SendAt.Equal(time.Date(2027, time.March, 27, 5, 0, 0, 0, time.UTC)))
		require.Equal(t, app.EventScheduled, getEvent(t, h, zoned).Status)
	})

	t.Run("MovedByDepartureChange", func(t *testing.T) {
		id := h.Submit(relative("rel-move", "BK-M1", "2027-04-12T07:15:00+02:00",
			map[string]any{"before": "departure_at", "offset": "1d"}))
		before := getEvent(t, h, id)
		require.True(t, before.SendAt.Equal(time.Date(2027, time.April, 11, 5, 15, 0, 0, time.UTC)))

		change := departureChanged("dep-change-1", "BK-M1", "2027-04-13T09:00:00+02:00")
		h.Submit(change)
		after := getEvent(t, h, id)
		require.Equal(t, 2, after.Version, "a reschedule bumps the version")
		require.True(t, after.SendAt.Equal(time.Date(2027, time.April, 12, 7, 0, 0, 0, time.UTC)), "%s", after.SendAt)
		require.True(t, after.ExpiresAt.Equal(time.Date(2027, time.April, 13, 7, 0, 0, 0, time.UTC)), "the expiry moved with the departure")
		require.Equal(t, "2027-04-13T09:00:00+02:00", after.Context["departure_at"])
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM audit_log WHERE action = 'notification.reschedule' AND target_id = $1`, id.String()))

		// Both route jobs come due: the old one is stale, the new one sends once.
		clock.Set(*after.SendAt)
		dueNow(h, "route", "event_id", id)
		h.WaitMessages(id, "the reminder sent once", allSent)
		h.WaitUntil("both route jobs finished", func() bool {
			return h.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1 AND state = 'completed'`, id.String()) == 2
		})
		require.Len(t, getEvent(t, h, id).Messages, 1)
		clock.Set(start)
	})

	t.Run("RaceWithDueTime", func(t *testing.T) {
		for i := range 6 {
			booking := "BK-RACE-" + string(rune('A'+i))
			clock.Set(start)
			id := h.Submit(relative("race-"+booking, booking, "2027-04-12T07:15:00+02:00",
				map[string]any{"before": "departure_at", "offset": "1d"}))
			// The old due time has come: its route job's work and the
			// departure change run at once.
			oldSendAt := *getEvent(t, h, id).SendAt
			clock.Set(oldSendAt)
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				require.NoError(t, h.Services.Router.Route(h.Ctx, app.RouteJob{TenantID: h.Tenant.ID, EventID: id, Version: 1}))
			}()
			go func() {
				defer wg.Done()
				h.Submit(departureChanged("race-change-"+booking, booking, "2027-04-13T09:00:00+02:00"))
			}()
			wg.Wait()
			e := getEvent(t, h, id)
			if e.Version == 1 {
				require.Equal(t, app.EventRouted, e.Status, "routed first at its old time; the move left it")
				require.Len(t, e.Messages, 1)
			} else {
				require.Equal(t, 2, e.Version)
				require.Empty(t, e.Messages, "moved first: the old time sends nothing")
				clock.Set(*e.SendAt)
			}
			// Every route job of the event comes due: never a second message,
			// never one sent at the old time after the move.
			dueNow(h, "route", "event_id", id)
			h.WaitUntil("the route jobs finished", func() bool {
				return h.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1 AND state NOT IN ('completed', 'cancelled', 'discarded')`, id.String()) == 0
			})
			ms := h.WaitMessages(id, "one message", func(ms []*app.Message) bool { return len(ms) >= 1 })
			require.Len(t, ms, 1, "never sent twice")
			if e.Version == 2 {
				require.False(t, ms[0].CreatedAt.Before(*e.SendAt), "not at the old time")
			}
		}
	})

	t.Run("BadInputs", func(t *testing.T) {
		clock.Set(start)
		dep := "2027-04-12T07:15:00+02:00"
		for name, tc := range map[string]struct {
			rule  any
			ctx   map[string]any
			code  string
			field string
		}{
			"UnknownKey":  {map[string]any{"before": "arrival_at", "offset": "48h"}, nil, "unknown_context_key", "send_at.before"},
			"NotATime":    {map[string]any{"before": "tour_name", "offset": "48h"}, nil, "invalid_context_time", "context.tour_name"},
			"BadOffset":   {map[string]any{"before": "departure_at", "offset": "two days"}, nil, "invalid_offset", "send_at.offset"},
			"BothWays":    {map[string]any{"before": "departure_at", "after": "departure_at", "offset": "1h"}, nil, "invalid_send_at", "send_at"},
			"NoAnchor":    {map[string]any{"offset": "1h"}, nil, "invalid_send_at", "send_at"},
			"UnknownPart": {map[string]any{"before": "departure_at", "offset": "1h", "at": "x"}, nil, "invalid_send_at", "send_at"},
			"BadZone":     {map[string]any{"before": "departure_at", "offset": "1d", "zone": "Mars/Olympus"}, nil, "invalid_timezone", "send_at.zone"},
			"InThePast":   {map[string]any{"before": "departure_at", "offset": "30d"}, nil, "send_at_in_past", "send_at"},
			"AfterExpiry": {map[string]any{"after": "departure_at", "offset": "1h"}, nil, "expires_before_send_at", "context.departure_at"},
		} {
			t.Run(name, func(t *testing.T) {
				b := relative("bad-rel-"+name, "BK-BAD", dep, nil)
				b["send_at"] = tc.rule
				requireRefused(t, h, b, tc.code, tc.field)
			})
		}
		t.Run("DepartureChangeNotATime", func(t *testing.T) {
			b := departureChanged("bad-change", "BK-BAD", "morgen früh")
			// departure_at is typed a time: the registry's type check
			// refuses it, under the same field.
			requireRefused(t, h, b, "invalid_variable", "context.departure_at")
		})
		t.Run("RescheduleAfterExpiry", func(t *testing.T) {
			id := h.Submit(relative("rel-patch", "BK-P1", dep, map[string]any{"before": "departure_at", "offset": "1d"}))
			var e struct{ Error struct{ Code, Field string } }
			status := h.Request(http.MethodPatch, "/api/v1/notifications/"+id.String(),
				map[string]any{"send_at": "2027-04-13T07:15:00+02:00"}, &e)
			require.Equal(t, http.StatusUnprocessableEntity, status)
			require.Equal(t, "send_at", e.Error.Field)
			require.Equal(t, 1, getEvent(t, h, id).Version, "nothing changed")
		})
	})
}

// departureChanged is a DEPARTURE_CHANGED request for the booking.
func departureChanged(eventID, booking, departure string) map[string]any {
	return map[string]any{
		"event_id": eventID, "trigger_event": "DEPARTURE_CHANGED", "channels": []string{"EMAIL"},
		"recipients": []map[string]any{{"name": "Anna Schmidt", "email": "anna@example.com"}},
		"context": map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Gardasee",
			"departure_at": departure, "boarding_point_name": "München ZOB"},
		"conversation_context": map[string]any{"type": "booking", "id": booking},
	}
}

// allSent is a condition for WaitMessages: there are messages, and the
// provider accepted all of them.
func allSent(ms []*app.Message) bool {
	for _, m := range ms {
		if m.SentAt == nil {
			return false
		}
	}
	return len(ms) > 0
}
