package app_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func TestAcknowledgements_BeforeDeparture(t *testing.T) {
	t.Parallel()

	// beforeDeparture sets an ACKNOWLEDGED deadline of BOOKING_CONFIRMED on
	// the channel, counted back from the departure.
	beforeDeparture := func(t *testing.T, b *pipelineBundle, tenantID uuid.UUID, ch app.Channel, mins int) {
		t.Helper()
		require.NoError(t, b.svc.Deadlines.SetRule(b.ctx, app.CLIActor, &app.DeliveryDeadline{TenantID: tenantID, TriggerEvent: "BOOKING_CONFIRMED",
			Channel: ch, Stage: app.StageAcknowledged, BeforeDepartureMinutes: mins}))
	}
	scan := func(t *testing.T, b *pipelineBundle) int {
		t.Helper()
		n, err := b.svc.Maintenance.FallBackOverdue(b.ctx)
		require.NoError(t, err)
		return n
	}

	t.Run("OverdueMovesOnThenCallList", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		beforeDeparture(t, b, tn.ID, app.WhatsApp, 120)
		beforeDeparture(t, b, tn.ID, app.SMS, 120)
		req := withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")
		req["context"].(map[string]any)["departure_at"] = testStart.Add(5 * time.Hour).Format(time.RFC3339)
		wa := b.sendOK(t, b.routeOne(t, tn, req))

		b.clock.Advance(2*time.Hour + 59*time.Minute)
		require.Zero(t, scan(t, b), "more than two hours before the departure")
		b.clock.Advance(2 * time.Minute)
		require.Equal(t, 1, scan(t, b), "not acknowledged two hours before the departure: SMS next")
		orig := b.message(t, tn.ID, wa.ID)
		entries := fromSource(b.timeline(t, tn.ID, wa.ID), app.SourceSystem)
		require.Len(t, entries, 1)
		require.Equal(t, "not_acknowledged_before_departure", entries[0].Detail["reason"])

		sms := b.sendOK(t, fallbackOf(t, b, tn, orig))
		require.Zero(t, scan(t, b), "the SMS is past the same time too, with nothing after it")
		require.NotNil(t, b.message(t, tn.ID, sms.ID).CallListedAt, "Anna is on the call list")
	})

	t.Run("DateAndTimeInTenantZone", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		require.Equal(t, "Europe/Berlin", tn.Timezone)
		b.useMeta(t, tn, nil)
		beforeDeparture(t, b, tn.ID, app.WhatsApp, 120)
		req := withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")
		// 16:00 in Berlin on 15 March (CET) is 15:00 UTC: overdue at 13:00 UTC.
		req["context"].(map[string]any)["departure_date"] = "2027-03-15"
		req["context"].(map[string]any)["boarding_time"] = "16:00"
		b.sendOK(t, b.routeOne(t, tn, req))
		b.clock.Advance(3*time.Hour + 59*time.Minute)
		require.Zero(t, scan(t, b))
		b.clock.Advance(2 * time.Minute)
		require.Equal(t, 1, scan(t, b))
	})

	t.Run("AcknowledgedInTimeStays", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		beforeDeparture(t, b, tn.ID, app.WhatsApp, 120)
		req := withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")
		req["context"].(map[string]any)["departure_at"] = testStart.Add(5 * time.Hour).Format(time.RFC3339)
		m := b.sendOK(t, b.routeOne(t, tn, req))
		b.clock.Advance(time.Hour)
		ok, err := b.svc.Acks.FromButton(b.ctx, tn.ID, button(m, anna, acct.Config["phone_number_id"]))
		require.NoError(t, err)
		require.True(t, ok)
		b.clock.Advance(4 * time.Hour)
		require.Zero(t, scan(t, b))
		require.Nil(t, b.message(t, tn.ID, m.ID).CallListedAt)
		require.Len(t, b.messagesOf(t, tn.ID, *m.EventID), 1, "acknowledged in time: no fallback")
	})

	t.Run("NoDepartureNotMoved", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		beforeDeparture(t, b, tn.ID, app.WhatsApp, 120)
		// A departure date without a time names no departure.
		m := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")))
		b.clock.Advance(20 * time.Hour)
		require.Zero(t, scan(t, b))
		require.Nil(t, b.message(t, tn.ID, m.ID).CallListedAt)
		require.Len(t, b.messagesOf(t, tn.ID, *m.EventID), 1)
	})

	t.Run("BadRuleRefused", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		for name, d := range map[string]app.DeliveryDeadline{
			"Both":        {Stage: app.StageAcknowledged, Minutes: 30, BeforeDepartureMinutes: 120},
			"TooFar":      {Stage: app.StageAcknowledged, BeforeDepartureMinutes: app.MaxBeforeDepartureMinutes + 1},
			"NotAckStage": {Stage: app.StageRead, BeforeDepartureMinutes: 120},
		} {
			d.TenantID, d.TriggerEvent, d.Channel = tn.ID, "BOOKING_CONFIRMED", app.WhatsApp
			err := b.svc.Deadlines.SetRule(b.ctx, app.CLIActor, &d)
			require.Equal(t, app.EINVALID, app.ErrorCode(err), name)
			require.Equal(t, "before_departure_minutes", app.ErrorField(err), name)
		}
		ds, err := b.svc.Deadlines.List(b.ctx, tn.ID)
		require.NoError(t, err)
		require.Empty(t, ds, "nothing stored")
	})
}
