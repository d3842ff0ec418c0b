package app_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
)

func TestMaintenance_FallBackOverdue(t *testing.T) {
	t.Parallel()

	t.Run("NotDeliveredInTime", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		require.NoError(t, b.svc.Deadlines.Set(b.ctx, app.CLIActor, tn.ID, "BOOKING_CONFIRMED", app.WhatsApp, 15))
		late := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")))
		onTime := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-2", "BK-2", anna), "WHATSAPP", "SMS")))
		noChain := b.sendOK(t, b.routeOne(t, tn, booking("evt-3", "BK-3", anna, "WHATSAPP")))
		_, err := b.apply(b.ctx, b.via(t, tn), receipt(onTime, provider.StatusDelivered, testStart.Add(time.Minute)))
		require.NoError(t, err)

		b.clock.Advance(14 * time.Minute)
		n, err := b.svc.Maintenance.FallBackOverdue(b.ctx)
		require.NoError(t, err)
		require.Zero(t, n, "not yet")

		b.clock.Advance(2 * time.Minute)
		n, err = b.svc.Maintenance.FallBackOverdue(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		orig := b.message(t, tn.ID, late.ID)
		require.Equal(t, app.MessageSent, orig.Status, "the original stays SENT: a late receipt still counts")
		sms := fallbackOf(t, b, tn, orig)
		require.Equal(t, app.SMS, sms.Channel)
		entries := fromSource(b.timeline(t, tn.ID, late.ID), app.SourceSystem)
		require.Len(t, entries, 1)
		require.Equal(t, "not_delivered_within", entries[0].Detail["reason"])
		require.EqualValues(t, 15, entries[0].Detail["minutes"])
		require.Len(t, b.messagesOf(t, tn.ID, *onTime.EventID), 1, "delivered in time")
		require.Len(t, b.messagesOf(t, tn.ID, *noChain.EventID), 1, "nothing to fall back to")

		// Once only: again, and after a late failure of the original.
		n, err = b.svc.Maintenance.FallBackOverdue(b.ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		failed := receipt(late, provider.StatusFailed, b.clock.Now())
		failed.Code = "131026"
		_, err = b.apply(b.ctx, b.via(t, tn), failed)
		require.NoError(t, err)
		require.Len(t, b.messagesOf(t, tn.ID, *late.EventID), 2)
	})

	t.Run("ConcurrentScansFallBackOnce", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		require.NoError(t, b.svc.Deadlines.Set(b.ctx, app.CLIActor, tn.ID, app.AnyEvent, app.WhatsApp, 5))
		m := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS", "EMAIL")))
		b.clock.Advance(6 * time.Minute)

		const n = 4
		counts, errs := make([]int, n), make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				counts[i], errs[i] = b.svc.Maintenance.FallBackOverdue(b.ctx)
			}()
		}
		close(start)
		wg.Wait()
		total := 0
		for i := range n {
			require.NoError(t, errs[i])
			total += counts[i]
		}
		require.Equal(t, 1, total)
		fallbackOf(t, b, tn, b.message(t, tn.ID, m.ID))
		require.Len(t, b.messagesOf(t, tn.ID, *m.EventID), 2)
	})

	t.Run("EventDeadlineWinsAndZeroRemoves", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		require.NoError(t, b.svc.Deadlines.Set(b.ctx, app.CLIActor, tn.ID, app.AnyEvent, app.WhatsApp, 5))
		require.NoError(t, b.svc.Deadlines.Set(b.ctx, app.CLIActor, tn.ID, "BOOKING_CONFIRMED", app.WhatsApp, 30))
		m := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")))
		b.clock.Advance(10 * time.Minute)
		n, err := b.svc.Maintenance.FallBackOverdue(b.ctx)
		require.NoError(t, err)
		require.Zero(t, n, "the event's own 30 minutes, not the tenant's 5")

		require.NoError(t, b.svc.Deadlines.Set(b.ctx, app.CLIActor, tn.ID, "BOOKING_CONFIRMED", app.WhatsApp, 0))
		ds, err := b.svc.Deadlines.List(b.ctx, tn.ID)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		n, err = b.svc.Maintenance.FallBackOverdue(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n, "now the tenant's 5 minutes apply")
		fallbackOf(t, b, tn, b.message(t, tn.ID, m.ID))

		for _, bad := range []struct {
			event   string
			ch      app.Channel
			minutes int
		}{{"NO_SUCH_EVENT", app.WhatsApp, 5}, {app.AnyEvent, "FAX", 5}, {app.AnyEvent, app.SMS, app.MaxDeadlineMinutes + 1}, {app.AnyEvent, app.SMS, -1}} {
			err := b.svc.Deadlines.Set(b.ctx, app.CLIActor, tn.ID, bad.event, bad.ch, bad.minutes)
			require.Equal(t, app.EINVALID, app.ErrorCode(err), "%+v", bad)
		}
	})
}

// receipt is a Meta status for a message, as meta.ParseWebhook makes it.
func receipt(m *app.Message, status string, at time.Time) provider.Receipt {
	return provider.Receipt{Provider: "meta", ExternalID: *m.ExternalMessageID,
		ReceiptID: *m.ExternalMessageID + ":" + status + ":" + at.Format(time.RFC3339), Status: status, At: at}
}
