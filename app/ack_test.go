package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
)

// bodyRecorder records the bodies a provider is given, and sends through
// it.
type bodyRecorder struct {
	provider.Provider
	mu     sync.Mutex
	bodies map[uuid.UUID]string
}

func (r *bodyRecorder) Send(ctx context.Context, m provider.Outbound) (string, error) {
	r.mu.Lock()
	r.bodies[m.MessageID] = m.Body
	r.mu.Unlock()
	return r.Provider.Send(ctx, m)
}

func (r *bodyRecorder) body(id uuid.UUID) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bodies[id]
}

// recordBodies wraps the bundle's provider of the name in a bodyRecorder.
func (b *pipelineBundle) recordBodies(name string) *bodyRecorder {
	r := &bodyRecorder{Provider: b.svc.Providers[name], bodies: map[uuid.UUID]string{}}
	b.svc.Providers[name] = r
	return r
}

// button is Anna's tap on the quick-reply button of message m, as the
// tenant's Meta webhook reports it.
func button(m *app.Message, from, phoneNumberID string) app.ButtonReply {
	return app.ButtonReply{ReplyID: "wamid.REPLY-" + m.ID.String(), ContextID: *m.ExternalMessageID, From: from,
		PhoneNumberID: phoneNumberID, Text: "Verstanden"}
}

func TestAcknowledgements_Escalation(t *testing.T) {
	t.Parallel()

	t.Run("NotReadMovesOnNotAcknowledgedCallsList", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		sandbox := b.recordBodies("sandbox")
		// WhatsApp must be read within 10 minutes; the SMS that follows
		// acknowledged within 60, else Anna goes on the call list.
		require.NoError(t, b.svc.Deadlines.SetStage(b.ctx, app.CLIActor, tn.ID, "BOOKING_CONFIRMED", app.WhatsApp, app.StageRead, 10))
		require.NoError(t, b.svc.Deadlines.SetStage(b.ctx, app.CLIActor, tn.ID, "BOOKING_CONFIRMED", app.SMS, app.StageAcknowledged, 60))
		wa := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")))
		_, err := b.apply(b.ctx, b.via(t, tn), receipt(wa, provider.StatusDelivered, testStart.Add(time.Minute)))
		require.NoError(t, err)

		b.clock.Advance(9 * time.Minute)
		n, err := b.svc.Maintenance.FallBackOverdue(b.ctx)
		require.NoError(t, err)
		require.Zero(t, n, "not yet")
		b.clock.Advance(2 * time.Minute)
		n, err = b.svc.Maintenance.FallBackOverdue(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n, "delivered but not read in 10 minutes: SMS next")
		orig := b.message(t, tn.ID, wa.ID)
		require.Equal(t, app.MessageDelivered, orig.Status, "the status stays")
		entries := fromSource(b.timeline(t, tn.ID, wa.ID), app.SourceSystem)
		require.Len(t, entries, 1)
		require.Equal(t, "not_read_within", entries[0].Detail["reason"])

		sms := b.sendOK(t, fallbackOf(t, b, tn, orig))
		require.Contains(t, sandbox.body(sms.ID), "/ack/", "the tenant's ACKNOWLEDGED deadline marks the event: the SMS carries the link")
		b.clock.Advance(59 * time.Minute)
		_, err = b.svc.Maintenance.FallBackOverdue(b.ctx)
		require.NoError(t, err)
		require.Nil(t, b.message(t, tn.ID, sms.ID).CallListedAt, "not yet")
		b.clock.Advance(2 * time.Minute)
		n, err = b.svc.Maintenance.FallBackOverdue(b.ctx)
		require.NoError(t, err)
		require.Zero(t, n, "nothing left to fall back to")
		listed := b.message(t, tn.ID, sms.ID)
		require.NotNil(t, listed.CallListedAt, "no channel left: Anna is on the call list")
		entries = fromSource(b.timeline(t, tn.ID, sms.ID), app.SourceSystem)
		require.Len(t, entries, 1)
		require.Equal(t, "not_acknowledged_within", entries[0].Detail["reason"])
		require.Equal(t, true, entries[0].Detail["call_list"])

		// Once: the next scan leaves it alone.
		_, err = b.svc.Maintenance.FallBackOverdue(b.ctx)
		require.NoError(t, err)
		require.Len(t, fromSource(b.timeline(t, tn.ID, sms.ID), app.SourceSystem), 1)
	})

	t.Run("AcknowledgedInTimeStays", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		require.NoError(t, b.svc.Deadlines.SetStage(b.ctx, app.CLIActor, tn.ID, "BOOKING_CONFIRMED", app.WhatsApp, app.StageAcknowledged, 30))
		m := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")))
		b.clock.Advance(5 * time.Minute)
		ok, err := b.svc.Acks.FromButton(b.ctx, tn.ID, button(m, anna, acct.Config["phone_number_id"]))
		require.NoError(t, err)
		require.True(t, ok)
		b.clock.Advance(30 * time.Minute)
		n, err := b.svc.Maintenance.FallBackOverdue(b.ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		got := b.message(t, tn.ID, m.ID)
		require.Nil(t, got.CallListedAt)
		require.Len(t, b.messagesOf(t, tn.ID, *m.EventID), 1, "acknowledged in time: no fallback")
	})

	t.Run("BadStageRefused", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		err := b.svc.Deadlines.SetStage(b.ctx, app.CLIActor, tn.ID, "BOOKING_CONFIRMED", app.WhatsApp, "SEEN", 30)
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
		require.Equal(t, "stage", app.ErrorField(err))
	})
}

func TestAcknowledgements_FromButton(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	acme, other := b.tenant(t, "acme"), b.tenant(t, "other")
	acct := b.useMeta(t, acme, nil)
	b.useMeta(t, other, app.Attrs{"phone_number_id": "999000999"})
	m := b.sendOK(t, b.routeOne(t, acme, booking("evt-1", "BK-1", anna, "WHATSAPP")))
	number := acct.Config["phone_number_id"]

	for name, r := range map[string]struct {
		tenant *app.Tenant
		reply  app.ButtonReply
	}{
		"OtherTenantsWebhook":   {other, button(m, anna, "999000999")},
		"ReceivedOnOtherNumber": {acme, button(m, anna, "999000999")},
		"FromAnotherPerson":     {acme, button(m, "+4915199999999", number)},
		"UnknownWamid":          {acme, app.ButtonReply{ContextID: "wamid.NOPE", From: anna, PhoneNumberID: number, Text: "Got it"}},
	} {
		ok, err := b.svc.Acks.FromButton(b.ctx, r.tenant.ID, r.reply)
		require.NoError(t, err, name)
		require.False(t, ok, name)
	}
	require.Nil(t, b.message(t, acme.ID, m.ID).AcknowledgedAt)

	ok, err := b.svc.Acks.FromButton(b.ctx, acme.ID, button(m, anna, number))
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = b.svc.Acks.FromButton(b.ctx, acme.ID, button(m, anna, number))
	require.NoError(t, err)
	require.False(t, ok, "a replay acknowledges nothing again")
	got := b.message(t, acme.ID, m.ID)
	require.NotNil(t, got.AcknowledgedAt)
	require.Equal(t, app.AckViaWhatsAppButton, *got.AckVia)
	require.Equal(t, app.MessageSent, got.Status, "not a status")
	acks := 0
	for _, e := range b.timeline(t, acme.ID, m.ID) {
		if e.Detail["acknowledged"] == true {
			acks++
			require.Equal(t, "Verstanden", e.Detail["button"])
		}
	}
	require.Equal(t, 1, acks)
}
