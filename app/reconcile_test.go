package app_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsnotify"
	"github.com/heraldhq/herald/app/provider/meta"
	"github.com/heraldhq/herald/app/provider/ses"
	"github.com/heraldhq/herald/app/provider/sns"
	"github.com/heraldhq/herald/app/wire"
)

// metaEcho is the status Meta posts for the fake's nth send (0-based): its
// wamid, and the biz_opaque_callback_data that send carried, echoed as
// Meta echoes it. It goes through the adapter's own parser.
func metaEcho(t *testing.T, b *pipelineBundle, n int, status string, at time.Time) provider.Receipt {
	t.Helper()
	sends := b.meta.received()
	require.Greater(t, len(sends), n, "the fake has no send %d", n)
	opaque, _ := sends[n].Body["biz_opaque_callback_data"].(string)
	require.NotEmpty(t, opaque, "every send carries the message's id for Meta to echo")
	body := fmt.Sprintf(`{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages","value":{
		"messaging_product":"whatsapp","metadata":{"phone_number_id":%q},"statuses":[{"id":%q,"status":%q,"timestamp":"%d",
		"recipient_id":"4915112345678","biz_opaque_callback_data":%q}]}}]}]}`,
		metaPhoneNumberID, fakeWamid(n+1), status, at.Unix(), opaque)
	hook, err := meta.ParseWebhook([]byte(body))
	require.NoError(t, err)
	require.Len(t, hook.Receipts, 1)
	return hook.Receipts[0]
}

// cutCalls has every provider call of a new worker process's dispatcher
// end at its time budget the moment the fake Graph API has the request,
// however fast or slow the machine is; Meta keeps the request and answers
// once the returned release is called (at the latest when the test ends).
func cutCalls(t *testing.T, b *pipelineBundle) (*app.Dispatcher, func()) {
	t.Helper()
	return cutAt(t, b, &b.meta.mu, &b.meta.before, nil)
}

// cutAt builds a worker process whose provider calls end at their time
// budget when a fake runs its before hook (held under mu), once adjust has
// pointed the process at the fake. The fake then waits for release.
func cutAt(t *testing.T, b *pipelineBundle, mu *sync.Mutex, before *func(), adjust func(*wire.Services)) (*app.Dispatcher, func()) {
	t.Helper()
	var timerMu sync.Mutex
	var timeUp func()
	b.callTimer = func(_ time.Duration, f func()) func() bool {
		timerMu.Lock()
		defer timerMu.Unlock()
		timeUp = f
		return func() bool { return true }
	}
	svc := b.connect(t)
	if adjust != nil {
		adjust(svc)
	}
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	mu.Lock()
	*before = func() {
		timerMu.Lock()
		f := timeUp
		timerMu.Unlock()
		f()
		<-gate
	}
	mu.Unlock()
	return svc.Dispatcher, release
}

// answerCalls has the fake Graph API answer at once again.
func answerCalls(b *pipelineBundle) {
	b.meta.mu.Lock()
	defer b.meta.mu.Unlock()
	b.meta.before = nil
}

// saysResent reports whether a timeline has the entry of a send made again
// for want of a confirmation, saying so.
func saysResent(es []*app.MessageEvent) bool {
	for _, e := range es {
		if note, _ := e.Detail["note"].(string); e.Detail["resent"] == true {
			return strings.Contains(note, "resent: no confirmation of the first attempt")
		}
	}
	return false
}

func jobOf(m *app.Message) app.DispatchJob {
	return app.DispatchJob{TenantID: m.TenantID, MessageID: m.ID, Channel: m.Channel}
}

// departure is an urgent event for one passenger: a departure changed.
func departure(eventID, ref, phone string, channels ...string) map[string]any {
	req := booking(eventID, ref, phone, channels...)
	req["trigger_event"] = "DEPARTURE_CHANGED"
	req["context"] = map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Gardasee",
		"departure_at": "2027-04-12T09:30:00+02:00", "boarding_point_name": "ZOB Berlin", "booking_reference": ref}
	return req
}

// TestReconcile_WhatsApp: a send whose answer Herald never read is settled
// by Meta's own status, which echoes the message's id; without one, the
// registry decides, and a late echo is on the record.
func TestReconcile_WhatsApp(t *testing.T) {
	t.Parallel()

	t.Run("EverySendCarriesTheMessagesID", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.sendOK(t, b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP")))
		require.Equal(t, "herald:"+m.ID.String(), b.meta.received()[0].Body["biz_opaque_callback_data"])
	})

	t.Run("MetasStatusSettlesACutCall", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		worker, release := cutCalls(t, b)
		out, err := worker.Dispatch(b.ctx, jobOf(m), 1, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Snooze: app.DefaultConfirmWindow}, out)
		release()

		// Meta took the request after all, and says so.
		outcome, err := b.apply(b.ctx, b.via(t, tn), metaEcho(t, b, 0, "sent", b.clock.Now()))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		sent := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageSent, sent.Status)
		require.Equal(t, fakeWamid(1), *sent.ExternalMessageID)
		require.Equal(t, 1, sent.Attempts)
		require.Nil(t, sent.SendUnknownUntil)
		require.Equal(t, 1, b.usage(t, tn.ID, app.WhatsApp))
		adopted := withStatus(b.timeline(t, tn.ID, m.ID), app.MessageSent)
		require.Len(t, adopted, 1)
		require.Contains(t, adopted[0].Detail["note"], "confirmed the send by its sent receipt")

		// The job comes back at the end of the window: nothing to do.
		b.clock.Advance(app.DefaultConfirmWindow)
		out, err = b.svc.Dispatcher.Dispatch(b.ctx, jobOf(m), 2, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Len(t, b.meta.received(), 1, "never sent twice")

		// Later statuses of the wamid apply as usual.
		outcome, err = b.apply(b.ctx, b.via(t, tn), metaEcho(t, b, 0, "delivered", b.clock.Now()))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		require.Equal(t, app.MessageDelivered, b.message(t, tn.ID, m.ID).Status)
	})

	t.Run("ConcurrentStatusesAdoptOnce", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		worker, release := cutCalls(t, b)
		_, err := worker.Dispatch(b.ctx, jobOf(m), 1, 5, (&completion{}).complete)
		require.NoError(t, err)
		release()

		// Meta posts sent, delivered and read at once, twice each, and
		// three appliers take them together.
		var rs []provider.Receipt
		for range 2 {
			for _, st := range []string{"sent", "delivered", "read"} {
				rs = append(rs, metaEcho(t, b, 0, st, b.clock.Now()))
			}
		}
		counts := b.applyConcurrently(t, b.via(t, tn), rs...)
		require.Equal(t, 3, counts[app.ReceiptDuplicate], "each replay once: %v", counts)
		got := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageRead, got.Status)
		require.Equal(t, fakeWamid(1), *got.ExternalMessageID)
		require.Len(t, withStatus(b.timeline(t, tn.ID, m.ID), app.MessageSent), 1, "adopted once")
		require.Equal(t, 1, b.usage(t, tn.ID, app.WhatsApp), "counted once")
	})

	t.Run("NothingElseIsDecidedWhileWaiting", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))
		worker, release := cutCalls(t, b)
		_, err := worker.Dispatch(b.ctx, jobOf(m), 1, 5, (&completion{}).complete)
		require.NoError(t, err)
		release()

		// The tenant disables the account while Herald waits: the message
		// neither fails nor falls back to SMS, which would reach the
		// passenger a second time if Meta has it.
		require.NoError(t, b.svc.Accounts.SetStatus(b.ctx, app.CLIActor, tn.ID, acct.ID, app.AccountDisabled, ""))
		b.clock.Advance(time.Minute)
		out, err := worker.Dispatch(b.ctx, jobOf(m), 2, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Snooze: app.DefaultConfirmWindow - time.Minute}, out)
		require.Equal(t, app.MessageQueued, b.message(t, tn.ID, m.ID).Status)
		require.Len(t, b.messagesOf(t, tn.ID, *m.EventID), 1, "no fallback while waiting")

		outcome, err := b.apply(b.ctx, b.via(t, tn), metaEcho(t, b, 0, "delivered", b.clock.Now()))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		require.Equal(t, app.MessageDelivered, b.message(t, tn.ID, m.ID).Status)
	})

	t.Run("StatusWhileTheCallIsInFlight", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		// Meta posts its sent status before it answers the send.
		var applied string
		var applyErr error
		b.meta.mu.Lock()
		b.meta.before = func() {
			applied, applyErr = b.apply(context.Background(), b.via(t, tn), metaEcho(t, b, 0, "sent", b.clock.Now()))
		}
		b.meta.mu.Unlock()
		sent := b.sendOK(t, m)
		require.NoError(t, applyErr)
		require.Equal(t, app.ReceiptApplied, applied)
		require.Equal(t, fakeWamid(1), *sent.ExternalMessageID)
		require.Len(t, withStatus(b.timeline(t, tn.ID, m.ID), app.MessageSent), 1, "recorded once")
		require.Equal(t, 1, b.usage(t, tn.ID, app.WhatsApp))
		for _, e := range b.timeline(t, tn.ID, m.ID) {
			require.Nil(t, e.Detail["duplicate_send_detected"], "the same send, recorded twice, is no duplicate")
		}
	})

	t.Run("NotUrgentFailsOutcomeUnknownAndALateEchoIsRecorded", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))
		worker, release := cutCalls(t, b)
		_, err := worker.Dispatch(b.ctx, jobOf(m), 1, 5, (&completion{}).complete)
		require.NoError(t, err)
		release()

		b.clock.Advance(app.DefaultConfirmWindow)
		out, err := worker.Dispatch(b.ctx, jobOf(m), 2, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Len(t, b.meta.received(), 1, "not sent again")
		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonOutcomeUnknown, *failed.FailedReason)
		require.Equal(t, 1, failed.Attempts)
		require.Len(t, b.messagesOf(t, tn.ID, *m.EventID), 1, "no fallback: the passenger may have the message")
		require.Equal(t, 1, b.count(t, `SELECT used FROM quota_usage WHERE tenant_id = $1 AND channel = 'WHATSAPP'`, tn.ID),
			"the quota stays taken: the message may have gone")
		last := withStatus(b.timeline(t, tn.ID, m.ID), app.MessageFailed)
		require.Len(t, last, 1)
		require.Contains(t, last[0].Detail["error"], "Resend it from the booking panel")

		// Meta's sent status comes late: on the record, and the message
		// takes the wamid, so its later statuses land on its timeline.
		outcome, err := b.apply(b.ctx, b.via(t, tn), metaEcho(t, b, 0, "sent", b.clock.Now()))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptRecorded, outcome)
		late := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, late.Status)
		require.Equal(t, fakeWamid(1), *late.ExternalMessageID)
		es := b.timeline(t, tn.ID, m.ID)
		require.Equal(t, true, es[len(es)-1].Detail["confirmed_late"])
		outcome, err = b.apply(b.ctx, b.via(t, tn), metaEcho(t, b, 0, "read", b.clock.Now()))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptRecorded, outcome)
	})

	t.Run("UrgentIsResentAndALateEchoIsFlaggedDuplicate", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, departure("evt-1", "BK-1", anna, "WHATSAPP"))
		worker, release := cutCalls(t, b)
		out, err := worker.Dispatch(b.ctx, jobOf(m), 1, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Snooze: app.DefaultUrgentConfirmWindow}, out, "urgent: a shorter wait")
		release()
		answerCalls(b)

		b.clock.Advance(app.DefaultUrgentConfirmWindow)
		out, err = worker.Dispatch(b.ctx, jobOf(m), 2, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Len(t, b.meta.received(), 2, "urgent: sent again")
		sent := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageSent, sent.Status)
		require.Equal(t, fakeWamid(2), *sent.ExternalMessageID)
		require.Equal(t, 2, sent.Attempts)
		require.True(t, saysResent(b.timeline(t, tn.ID, m.ID)), "the timeline says why it went twice")

		// The first attempt's status arrives after all.
		outcome, err := b.apply(b.ctx, b.via(t, tn), metaEcho(t, b, 0, "delivered", b.clock.Now()))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptDuplicateSend, outcome)
		es := b.timeline(t, tn.ID, m.ID)
		require.Equal(t, true, es[len(es)-1].Detail["duplicate_send_detected"])
		require.Equal(t, fakeWamid(2), *b.message(t, tn.ID, m.ID).ExternalMessageID, "the message keeps its own send")
		require.Equal(t, app.MessageSent, b.message(t, tn.ID, m.ID).Status, "another send's status moves nothing")
	})

	t.Run("AStatusOfAnEarlierRefusedAttemptIsNoConfirmation", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.sendOK(t, b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP")))
		// Meta rate-limits the accepted message: it is QUEUED again.
		outcome, err := b.apply(b.ctx, b.via(t, tn), metaFailed(t, m, 130429, b.clock.Now()))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptRequeued, outcome)
		// Out of order, Meta's sent status of that first wamid comes now.
		outcome, err = b.apply(b.ctx, b.via(t, tn), metaEcho(t, b, 0, "sent", b.clock.Now()))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptRecorded, outcome)
		queued := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageQueued, queued.Status, "still to be sent again")
		require.Nil(t, queued.ExternalMessageID)
	})

	t.Run("AnotherTenantsStatusCannotSettleIt", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		other := b.tenant(t, "globex")
		b.useMeta(t, tn, nil)
		b.useMeta(t, other, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		worker, release := cutCalls(t, b)
		_, err := worker.Dispatch(b.ctx, jobOf(m), 1, 5, (&completion{}).complete)
		require.NoError(t, err)
		release()

		// globex's webhook posts a status naming acme's message.
		outcome, err := b.apply(b.ctx, b.via(t, other), metaEcho(t, b, 0, "sent", b.clock.Now()))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptForeign, outcome)
		queued := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageQueued, queued.Status)
		require.Nil(t, queued.ExternalMessageID)
	})

	t.Run("AForgedCallbackNamesNoMessage", func(t *testing.T) {
		t.Parallel()
		for _, forged := range []string{"", "herald:", "herald:" + anna, "other:00000000-0000-0000-0000-000000000001",
			"herald:{6f1c2ad4-1c5e-4c7b-9d0e-3a5b8e2f9a10}", "herald:6F1C2AD4-1C5E-4C7B-9D0E-3A5B8E2F9A10",
			"herald:00000000-0000-0000-0000-000000000000", "herald:6f1c2ad41c5e4c7b9d0e3a5b8e2f9a10"} {
			_, ok := meta.ParseCallbackData(forged)
			require.False(t, ok, forged)
		}
		id, ok := meta.ParseCallbackData("herald:6f1c2ad4-1c5e-4c7b-9d0e-3a5b8e2f9a10")
		require.True(t, ok)
		require.Equal(t, "6f1c2ad4-1c5e-4c7b-9d0e-3a5b8e2f9a10", id.String())
	})

	t.Run("ABrokenConnectionAfterTheRequestIsUnknown", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		// Meta reads the whole request, then the connection breaks.
		b.meta.mu.Lock()
		b.meta.hangUp = true
		b.meta.mu.Unlock()
		out, err := b.dispatch(m, 1, 5, &completion{})
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Snooze: app.DefaultConfirmWindow}, out, "not retried: Meta may have it")
		require.Len(t, b.meta.received(), 1)
		require.NotNil(t, b.message(t, tn.ID, m.ID).SendUnknownUntil)
	})

	t.Run("ARefusedConnectionIsAnOrdinaryRetry", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		// Nothing listens where Meta should be: no request was written.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, ln.Close())
		b.svc.Providers["meta"] = &meta.Provider{BaseURL: "http://" + ln.Addr().String(), HTTPClient: &http.Client{}}
		out, err := b.dispatch(m, 1, 5, &completion{})
		require.NoError(t, err)
		require.Error(t, out.Retry, "Meta has nothing: retried as usual")
		queued := b.message(t, tn.ID, m.ID)
		require.Nil(t, queued.SendUnknownUntil)
		require.Nil(t, queued.SendStartedAt)
	})
}

// cutAWS is cutCalls for the SES or SNS fake.
func cutAWS(t *testing.T, b *pipelineBundle, api *awsAPI) (*app.Dispatcher, func()) {
	t.Helper()
	return cutAt(t, b, &api.mu, &api.before, func(svc *wire.Services) {
		svc.Providers["ses"].(*ses.Provider).Endpoint = api.srv.URL
		svc.Providers["sns"].(*sns.Provider).Endpoint = api.srv.URL
	})
}

// sesEvent is the SES event SES publishes through a configuration set for
// a mail Herald sent as message m: its tags name the message.
func sesEvent(t *testing.T, m *app.Message, kind, set string) provider.Receipt {
	t.Helper()
	msg := fmt.Sprintf(`{"eventType":%q,"mail":{"timestamp":"2027-01-04T10:00:00.000Z","messageId":"0107018d-ses-%s",
		"tags":{"ses:configuration-set":[%q],"tenant_id":[%q],"message_id":[%q]}},
		"delivery":{"timestamp":"2027-01-04T10:00:01.000Z","smtpResponse":"250 ok"}}`, kind, m.ID, set, m.TenantID, m.ID)
	r, err := awsnotify.SESReceipt(msg, "sns-"+kind+"-"+m.ID.String())
	require.NoError(t, err)
	return r
}

// TestReconcile_AWS: SES echoes the message's id through a configuration
// set's events, so a cut SendEmail waits for them; SNS echoes nothing, so
// the registry decides at once.
func TestReconcile_AWS(t *testing.T) {
	t.Parallel()

	t.Run("SESEventSettlesACutSend", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct, api := b.useAWSWith(t, tn, app.Email, app.Attrs{"configuration_set": "herald"})
		api.reply(t, "provider/ses/testdata/send_email.http")
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "EMAIL"))
		worker, release := cutAWS(t, b, api)
		out, err := worker.Dispatch(b.ctx, jobOf(m), 1, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Snooze: app.DefaultConfirmWindow}, out, "SES may have the mail: it waits")
		release()

		via := app.Via{Accounts: []uuid.UUID{acct.ID}, Route: "ses:test"}
		outcome, err := b.apply(b.ctx, via, sesEvent(t, m, "Delivery", "herald"))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		delivered := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageDelivered, delivered.Status)
		require.Equal(t, "0107018d-ses-"+m.ID.String(), *delivered.ExternalMessageID)
		out, err = worker.Dispatch(b.ctx, jobOf(m), 2, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Equal(t, 1, api.count(), "never sent twice")
	})

	t.Run("SESWithoutConfigurationSetDecidesAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		_, api := b.useAWS(t, tn, app.Email)
		api.reply(t, "provider/ses/testdata/send_email.http")
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "EMAIL"))
		worker, release := cutAWS(t, b, api)
		out, err := worker.Dispatch(b.ctx, jobOf(m), 1, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Snooze: time.Second}, out, "nothing to wait for")
		release()
		notes := fromSource(b.timeline(t, tn.ID, m.ID), app.SourceDispatch)
		require.Contains(t, notes[len(notes)-1].Detail["note"], "which confirms nothing")

		out, err = worker.Dispatch(b.ctx, jobOf(m), 2, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonOutcomeUnknown, *failed.FailedReason)
		require.Equal(t, 1, api.count())
	})

	t.Run("SNSUrgentIsResentAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		_, api := b.useAWS(t, tn, app.SMS)
		api.reply(t, "provider/sns/testdata/publish.http")
		m := b.routeOne(t, tn, departure("evt-1", "BK-1", anna, "SMS"))
		worker, release := cutAWS(t, b, api)
		_, err := worker.Dispatch(b.ctx, jobOf(m), 1, 5, (&completion{}).complete)
		require.NoError(t, err)
		release()
		api.mu.Lock()
		api.before = nil
		api.mu.Unlock()

		out, err := worker.Dispatch(b.ctx, jobOf(m), 2, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Equal(t, 2, api.count(), "urgent, and SNS confirms nothing: sent again")
		sent := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageSent, sent.Status)
		require.True(t, saysResent(b.timeline(t, tn.ID, m.ID)))
	})
}
