package app_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// reminder is an optional event for one passenger: the day-before reminder.
func reminder(eventID, ref string) map[string]any {
	req := booking(eventID, ref, "", "EMAIL")
	req["trigger_event"] = "PRE_TRIP_REMINDER"
	req["context"] = map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Gardasee", "departure_date": "2027-04-12",
		"boarding_point_name": "ZOB Berlin", "boarding_time": "07:15", "passenger_instructions": "Bring your ID card."}
	return req
}

// routeJobPriority returns the priority of an event's route job.
func (b *pipelineBundle) routeJobPriority(t *testing.T, eventID uuid.UUID) int {
	t.Helper()
	return b.count(t, `SELECT priority FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, eventID.String())
}

// routeAsQueued runs an event's route job's work with the priority the job
// was queued with, as the route worker does, and returns the priorities of
// the dispatch jobs it queued, by message, in the order they were queued.
func (b *pipelineBundle) routeAsQueued(t *testing.T, tn *app.Tenant, eventID uuid.UUID) []int {
	t.Helper()
	job := app.RouteJob{TenantID: tn.ID, EventID: eventID, Version: 1, Priority: b.routeJobPriority(t, eventID)}
	require.NoError(t, b.svc.Router.Route(b.ctx, job))
	var ps []int
	require.NoError(t, b.svc.Store.InPlatform(b.ctx, func(tx *db.Tx) error {
		rows, err := tx.SQL().QueryContext(b.ctx, `
			SELECT j.priority FROM river_job j JOIN messages m ON m.id = (j.args->>'message_id')::uuid
			WHERE j.kind = 'dispatch' AND m.event_id = $1 ORDER BY j.id`, eventID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p int
			if err := rows.Scan(&p); err != nil {
				return err
			}
			ps = append(ps, p)
		}
		return rows.Err()
	}))
	return ps
}

// TestPriority: urgent events pass a backlog, confirmations pass optional
// messages, and one tenant's burst or broadcast yields to other tenants'
// everyday messages past its fair share, in the route and the dispatch
// queues alike.
func TestPriority(t *testing.T) {
	t.Parallel()

	t.Run("ByUrgencyAndCategory", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		for _, c := range []struct {
			req  map[string]any
			want int
		}{
			{departure("dep-1", "BK-1", "", "EMAIL"), app.PriorityUrgent},
			{booking("conf-1", "BK-2", "", "EMAIL"), app.PriorityTransactional},
			{reminder("rem-1", "BK-3"), app.PriorityOptional},
		} {
			id := b.submit(t, tn, c.req)
			require.Equal(t, c.want, b.routeJobPriority(t, id), c.req["trigger_event"])
			require.Equal(t, []int{c.want}, b.routeAsQueued(t, tn, id), c.req["trigger_event"])
		}
	})

	t.Run("BurstYieldsToOtherTenants", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		busy, quiet := b.tenant(t, "busy"), b.tenant(t, "quiet")
		// A tenant's share: BurstShare events within BurstWindow (the
		// clock stands still, so all of them are within it).
		for i := range app.BurstShare {
			id := b.submit(t, busy, booking(fmt.Sprintf("burst-%d", i), fmt.Sprintf("BK-B%d", i), "", "EMAIL"))
			require.Equal(t, app.PriorityTransactional, b.routeJobPriority(t, id), "event %d is within the share", i)
		}
		past := b.submit(t, busy, booking("burst-past", "BK-BP", "", "EMAIL"))
		require.Equal(t, app.PriorityOptional, b.routeJobPriority(t, past), "past its share, a confirmation yields to other tenants'")
		require.Equal(t, []int{app.PriorityOptional}, b.routeAsQueued(t, busy, past), "and so does its message")
		urgent := b.submit(t, busy, departure("burst-urgent", "BK-BU", "", "EMAIL"))
		require.Equal(t, app.PriorityUrgent, b.routeJobPriority(t, urgent),
			"a burst of confirmations leaves the share of urgent events alone")
		optional := b.submit(t, busy, reminder("burst-reminder", "BK-BR"))
		require.Equal(t, app.PriorityBulk, b.routeJobPriority(t, optional),
			"the tenant's reminders past its share come after its own confirmations")
		other := b.submit(t, quiet, booking("quiet-1", "BK-Q1", "", "EMAIL"))
		require.Equal(t, app.PriorityTransactional, b.routeJobPriority(t, other), "another tenant's share is its own")
		require.Equal(t, []int{app.PriorityTransactional}, b.routeAsQueued(t, quiet, other))

		// A burst of reminders leaves the tenant's share of confirmations
		// and urgent events as it was.
		b.clock.Advance(app.BurstWindow)
		for i := range app.BurstShare {
			b.submit(t, busy, reminder(fmt.Sprintf("rem-burst-%d", i), fmt.Sprintf("BK-R%d", i)))
		}
		require.Equal(t, app.PriorityBulk, b.routeJobPriority(t, b.submit(t, busy, reminder("rem-past", "BK-RP"))))
		require.Equal(t, app.PriorityUrgent, b.routeJobPriority(t, b.submit(t, busy, departure("rem-urgent", "BK-RU", "", "EMAIL"))))
		require.Equal(t, app.PriorityTransactional, b.routeJobPriority(t, b.submit(t, busy, booking("rem-conf", "BK-RC", "", "EMAIL"))))

		// A burst of urgent events yields too, still ahead of optional
		// messages.
		b.clock.Advance(app.BurstWindow)
		for i := range app.BurstShare {
			b.submit(t, busy, departure(fmt.Sprintf("dep-burst-%d", i), fmt.Sprintf("BK-D%d", i), "", "EMAIL"))
		}
		require.Equal(t, app.PriorityOptional, b.routeJobPriority(t, b.submit(t, busy, departure("dep-past", "BK-DP", "", "EMAIL"))))
		require.Equal(t, app.PriorityOptional, b.routeJobPriority(t, b.submit(t, busy, booking("dep-conf", "BK-DC", "", "EMAIL"))),
			"urgent events count towards the share of confirmations")

		// Once the window has passed, the busy tenant has its share again.
		b.clock.Advance(app.BurstWindow)
		later := b.submit(t, busy, booking("burst-later", "BK-BL", "", "EMAIL"))
		require.Equal(t, app.PriorityTransactional, b.routeJobPriority(t, later))
	})

	t.Run("FanoutBeyondShare", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		recipients := func() []map[string]any {
			rs := make([]map[string]any, app.FanoutShare+2)
			for i := range rs {
				rs[i] = map[string]any{"name": fmt.Sprintf("P%d", i), "email": fmt.Sprintf("p%d@example.com", i)}
			}
			return rs
		}
		for _, c := range []struct {
			req          map[string]any
			first, after int
		}{
			{booking("fan-conf", "BK-F1", "", "EMAIL"), app.PriorityTransactional, app.PriorityOptional},
			{departure("fan-dep", "BK-F2", "", "EMAIL"), app.PriorityUrgent, app.PriorityOptional},
			{reminder("fan-rem", "BK-F3"), app.PriorityOptional, app.PriorityBulk},
		} {
			c.req["recipients"] = recipients()
			ps := b.routeAsQueued(t, tn, b.submit(t, tn, c.req))
			require.Len(t, ps, app.FanoutShare+2)
			for i, p := range ps {
				want := c.first
				if i >= app.FanoutShare {
					want = c.after
				}
				require.Equal(t, want, p, "%s: message %d", c.req["trigger_event"], i)
			}
		}
	})

	t.Run("SendsAgainAtTheirEventsPriority", func(t *testing.T) {
		t.Parallel()
		for trigger, want := range map[string]int{
			"DEPARTURE_CHANGED": app.PriorityUrgent, "BOOKING_CONFIRMED": app.PriorityTransactional,
			"PRE_TRIP_REMINDER": app.PriorityOptional, "NOT_AN_EVENT": app.PriorityTransactional,
		} {
			m := &app.Message{ID: app.NewID(), TriggerEvent: trigger, Channel: app.Email}
			require.Equal(t, want, m.DispatchJob().Priority, trigger)
		}
	})
}
