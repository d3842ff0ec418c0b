package app_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/meta"
	"github.com/heraldhq/herald/db"
)

// metaFailed is Meta's failed status for a message, with an error code, as
// meta.ParseWebhook reads it from the wire.
func metaFailed(t *testing.T, m *app.Message, code int, at time.Time) provider.Receipt {
	t.Helper()
	body := fmt.Sprintf(`{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages","value":{
		"messaging_product":"whatsapp","metadata":{"phone_number_id":%q},"statuses":[{"id":%q,"status":"failed","timestamp":"%d",
		"recipient_id":"4915112345678","errors":[{"code":%d,"title":"Error %d","message":"Error %d","error_data":{"details":"Details of %d"}}]}]}}]}]}`,
		metaPhoneNumberID, *m.ExternalMessageID, at.Unix(), code, code, code, code)
	hook, err := meta.ParseWebhook([]byte(body))
	require.NoError(t, err)
	require.Len(t, hook.Receipts, 1)
	return hook.Receipts[0]
}

// withStatus keeps the timeline entries that moved the message to status.
func withStatus(es []*app.MessageEvent, status string) []*app.MessageEvent {
	var out []*app.MessageEvent
	for _, e := range es {
		if e.ToStatus != nil && *e.ToStatus == status {
			out = append(out, e)
		}
	}
	return out
}

func TestReceipts_ErrorCodes(t *testing.T) {
	t.Parallel()

	t.Run("RateLimitedAfterAcceptanceIsSentAgain", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")))
		firstID := *m.ExternalMessageID
		r := metaFailed(t, m, 130429, testStart.Add(time.Second))

		outcome, err := b.apply(b.ctx, b.via(t, tn), r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptRequeued, outcome, "a rate limit is not the end of the message")
		got := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageQueued, got.Status)
		require.Nil(t, got.ExternalMessageID)
		require.Nil(t, got.FailedReason)
		require.Len(t, b.messagesOf(t, tn.ID, *m.EventID), 1, "no fallback")
		require.Equal(t, 2, b.dispatchJobs(t, m.ID), "a new dispatch job")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND args->>'message_id' = $1
			AND scheduled_at >= $2`, m.ID.String(), testStart.Add(5*time.Second)), "after Meta's throughput wait")

		// Replayed (its message no longer has that id): nothing more.
		outcome, err = b.apply(b.ctx, b.via(t, tn), r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptDuplicate, outcome)
		require.Equal(t, 2, b.dispatchJobs(t, m.ID))

		// Sent again, under a new id; attempts count both sends.
		again := b.sendOK(t, got)
		require.Equal(t, app.MessageSent, again.Status)
		require.NotEqual(t, firstID, *again.ExternalMessageID)
		require.Equal(t, 2, again.Attempts)
		require.Equal(t, []string{app.MessageQueued, app.MessageSent, app.MessageQueued, app.MessageSent}, statuses(b.timeline(t, tn.ID, m.ID)))
	})

	t.Run("WindowClosedAfterAcceptanceIsSentAgainAsTemplateOnce", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		// Herald saw a reply within 24 hours and sends text; Meta accepts
		// it, then reports the window closed in a failed status.
		b.inbound(t, tn, acct, anna, b.clock.Now().Add(-time.Hour))
		m := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")))
		r := metaFailed(t, m, 131047, testStart.Add(time.Second))

		outcome, err := b.apply(b.ctx, b.via(t, tn), r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptRequeued, outcome)
		got := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageQueued, got.Status)
		require.True(t, got.WhatsAppTemplateOnly)
		require.Nil(t, got.ExternalMessageID)
		require.Len(t, b.messagesOf(t, tn.ID, *m.EventID), 1, "no fallback")
		require.Equal(t, 2, b.dispatchJobs(t, m.ID), "a new dispatch job")
		outcome, err = b.apply(b.ctx, b.via(t, tn), r)
		require.NoError(t, err)
		require.Equal(t, app.ReceiptDuplicate, outcome, "a replay requeues nothing")
		require.Equal(t, 2, b.dispatchJobs(t, m.ID))

		// The window is still open in Herald's view: the send goes as the
		// approved template all the same.
		again := b.sendOK(t, got)
		sends := b.meta.received()
		require.Len(t, sends, 2)
		require.Equal(t, "text", sends[0].Body["type"])
		require.Equal(t, "template", sends[1].Body["type"])
		require.Equal(t, []string{app.MessageQueued, app.MessageSent, app.MessageQueued, app.MessageSent}, statuses(b.timeline(t, tn.ID, m.ID)))
		requeued := withStatus(b.timeline(t, tn.ID, m.ID), app.MessageQueued)[1]
		require.Equal(t, "131047", requeued.Detail["error_code"])
		require.Equal(t, "as Meta template", requeued.Detail["retry"])
		require.Equal(t, *m.ExternalMessageID, requeued.Detail["previous_external_id"])

		// Meta refusing the template too fails the message: no third send.
		outcome, err = b.apply(b.ctx, b.via(t, tn), metaFailed(t, again, 131047, testStart.Add(2*time.Second)))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, "131047", *failed.ErrorCode)
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *failed.FailedReason)
		require.Equal(t, 2, b.dispatchJobs(t, m.ID))
		fallbackOf(t, b, tn, failed)
	})

	t.Run("WindowClosedAfterAcceptanceWithoutTemplateFallsBack", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		b.metaStatus(t, tn, acct, "herald_booking_confirmed", "de", app.MetaTemplatePending)
		b.inbound(t, tn, acct, anna, b.clock.Now().Add(-time.Hour))
		m := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")))

		outcome, err := b.apply(b.ctx, b.via(t, tn), metaFailed(t, m, 131047, testStart.Add(time.Second)))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptRequeued, outcome)
		out, err := b.dispatch(b.message(t, tn.ID, m.ID), 1, 5, &completion{})
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Len(t, b.meta.received(), 1, "no approved template to send again with")
		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *failed.FailedReason)
		refused := withStatus(b.timeline(t, tn.ID, m.ID), app.MessageFailed)[0]
		require.Contains(t, refused.Detail["error"], "(131047) after accepting the text", "the timeline says why no template went")
		b.sendOK(t, fallbackOf(t, b, tn, m))
	})

	t.Run("WindowClosedOnATestMessageFails", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		b.inbound(t, tn, acct, anna, b.clock.Now().Add(-time.Hour))
		m := b.sendOK(t, b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP")))
		// As a manager's test from the console is.
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, `UPDATE messages SET test = true WHERE tenant_id = $1 AND id = $2`, tn.ID, m.ID)
			return err
		}))

		outcome, err := b.apply(b.ctx, b.via(t, tn), metaFailed(t, m, 131047, testStart.Add(time.Second)))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome, "a test message is never sent again")
		require.Equal(t, app.MessageFailed, b.message(t, tn.ID, m.ID).Status)
		require.Equal(t, 1, b.dispatchJobs(t, m.ID))
	})

	t.Run("ConcurrentRateLimitsRequeueOnce", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")))
		via := b.via(t, tn)
		// Different rate-limit statuses of one send, posted together.
		rs := []provider.Receipt{metaFailed(t, m, 130429, testStart.Add(time.Second)), metaFailed(t, m, 131056, testStart.Add(2*time.Second))}
		const n = 6
		posts := make([]provider.Receipt, n)
		for i := range posts {
			posts[i] = rs[i%2]
		}
		counts := b.applyConcurrently(t, via, posts...)
		require.Equal(t, 1, counts[app.ReceiptRequeued], "outcomes %v", counts)
		require.Equal(t, app.MessageQueued, b.message(t, tn.ID, m.ID).Status)
		require.Equal(t, 2, b.dispatchJobs(t, m.ID), "one new job")
		require.Len(t, b.messagesOf(t, tn.ID, *m.EventID), 1)
	})

	t.Run("RateLimitedTooOftenFails", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")))
		for i := 1; ; i++ {
			outcome, err := b.apply(b.ctx, b.via(t, tn), metaFailed(t, m, 131056, testStart.Add(time.Duration(i)*time.Second)))
			require.NoError(t, err)
			if i == app.MaxResends {
				require.Equal(t, app.ReceiptApplied, outcome, "the last attempt's rate limit fails the message")
				break
			}
			require.Equal(t, app.ReceiptRequeued, outcome)
			m = b.sendOK(t, b.message(t, tn.ID, m.ID))
		}
		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.MaxResends, failed.Attempts)
		require.Equal(t, "131056", *failed.ErrorCode)
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *failed.FailedReason)
		fallbackOf(t, b, tn, failed)
	})

	t.Run("AccountErrorSuspendsAndFallsBack", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		m := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")))
		r := metaFailed(t, m, 190, testStart.Add(time.Second))
		for range 2 {
			_, err := b.apply(b.ctx, b.via(t, tn), r)
			require.NoError(t, err)
		}

		a := b.account(t, tn.ID, acct.ID)
		require.Equal(t, app.AccountSuspended, a.Status, "flagged like a 190 at send time")
		require.Contains(t, *a.SuspendedReason, "190")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'channel_account.status'
			AND target_id = $2 AND actor_type = 'system'`, tn.ID, acct.ID.String()), "one audit entry, however often it is posted")
		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *failed.FailedReason)
		fallbackOf(t, b, tn, failed)
	})

	t.Run("FailedReasonIsACode", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			r    provider.Receipt
			want string
		}{
			{provider.Receipt{Provider: "meta", Code: "131026"}, "meta_131026"},
			{provider.Receipt{Provider: "ses", Code: "bounce:Permanent/NoEmail"}, "ses_bounce_permanent"},
			{provider.Receipt{Provider: "ses", Code: "complaint"}, "ses_complaint"},
			{provider.Receipt{Provider: "sns", Code: "sms_failure"}, "sns_sms_failure"},
			{provider.Receipt{Provider: "sandbox", Code: "sandbox_bounce"}, "sandbox_bounce"},
			{provider.Receipt{Provider: "meta"}, "meta_failed"},
		} {
			require.Equal(t, tc.want, app.ReceiptFailedReason(tc.r))
		}
	})

	t.Run("AttemptsCountEveryCall", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		for range 4 {
			b.meta.reply(graphError(t, "131000"))
		}
		b.meta.reply(graphError(t, "131026"))
		for attempt := 1; attempt <= 5; attempt++ {
			_, err := b.dispatch(m, attempt, 5, &completion{})
			require.NoError(t, err)
		}
		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, 5, failed.Attempts, "four retries and the refusal")
	})
}
