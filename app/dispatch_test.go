package app_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
)

// anna is the test passenger's number; the sandbox delivers to it.
const anna = "+49 151 23456789"

func TestDispatcher_Dispatch(t *testing.T) {
	t.Parallel()

	t.Run("SentWithProviderID", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		b.clock.Advance(3 * time.Second)

		c := &completion{}
		out, err := b.dispatch(m, 1, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Equal(t, 1, c.count(), "the job completes in the dispatcher's transaction")
		require.Equal(t, []uuid.UUID{tn.ID}, c.tenants, "that transaction is the message's tenant's")

		sends := b.meta.received()
		require.Len(t, sends, 1)
		require.Equal(t, "/v23.0/"+metaPhoneNumberID+"/messages", sends[0].Path)
		require.Equal(t, "Bearer "+metaAccessToken, sends[0].Authorization)
		require.Equal(t, "template", sends[0].Body["type"], "the default text's Meta template")
		require.Equal(t, "herald_booking_confirmed", sends[0].Body["template"].(map[string]any)["name"])
		require.Equal(t, "+4915123456789", sends[0].Body["to"])

		sent := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageSent, sent.Status)
		require.Equal(t, "meta", *sent.Provider)
		require.Equal(t, fakeWamid(1), *sent.ExternalMessageID)
		require.Equal(t, 1, sent.Attempts)
		require.True(t, sent.SentAt.Equal(b.clock.Now()), "sent at the injected clock's time, got %s", sent.SentAt)
		require.Nil(t, sent.FailedReason)
		require.Nil(t, sent.ErrorCode)

		tl := b.timeline(t, tn.ID, m.ID)
		require.Equal(t, []string{app.MessageQueued, app.MessageSent}, statuses(tl))
		last := tl[len(tl)-1]
		require.Equal(t, app.SourceDispatch, last.Source)
		require.Equal(t, fakeWamid(1), last.Detail["external_id"])
		require.Equal(t, "meta", last.Detail["provider"])

		require.Equal(t, 1, b.usage(t, tn.ID, app.WhatsApp), "the send counts once towards the quota")
		require.Equal(t, 0, b.usage(t, tn.ID, app.Email))
	})

	t.Run("SentThroughSandboxReportsThroughTheInbox", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, func(c *app.Config) { c.SandboxDelay = time.Minute })
		tn := b.tenant(t, "acme")
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "EMAIL"))

		sent := b.sendOK(t, m)
		require.Equal(t, "sandbox", *sent.Provider)
		require.True(t, strings.HasPrefix(*sent.ExternalMessageID, "sbx_"))
		require.Equal(t, 1, b.usage(t, tn.ID, app.Email))

		// The sandbox's receipts are in the inbox before its send returns,
		// as a provider's webhook would post them, each due when the
		// sandbox says: a stop of the process loses none.
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM receipt_inbox WHERE external_id = $1`, *sent.ExternalMessageID))
		require.Empty(t, b.drain(t), "nothing is due yet")
		b.clock.Advance(time.Minute)
		require.Equal(t, []string{app.ReceiptApplied}, resultOutcomes(b.drain(t)))
		require.Equal(t, app.MessageDelivered, b.message(t, tn.ID, m.ID).Status)
		b.clock.Advance(time.Minute)
		require.Equal(t, []string{app.ReceiptApplied}, resultOutcomes(b.drain(t)))
		require.Equal(t, app.MessageRead, b.message(t, tn.ID, m.ID).Status)
	})

	t.Run("SandboxReceiptsSurviveARestart", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, func(c *app.Config) { c.SandboxDelay = time.Minute })
		tn := b.tenant(t, "acme")
		m := b.sendOK(t, b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "SMS")))
		// The process stops before anything is due; another applies.
		b.svc.Close()
		b.svc = b.connect(t)
		b.clock.Advance(2 * time.Minute)
		require.Equal(t, []string{app.ReceiptApplied, app.ReceiptApplied}, resultOutcomes(b.drain(t)))
		require.Equal(t, app.MessageRead, b.message(t, tn.ID, m.ID).Status)
	})

	t.Run("AlreadySentDoesNothing", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		sent := b.sendOK(t, m)
		before := b.timeline(t, tn.ID, m.ID)

		// River runs a job again when a worker dies after the commit.
		c := &completion{}
		out, err := b.dispatch(m, 2, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Zero(t, c.count(), "nothing to complete in a transaction: River finishes the job")
		require.Len(t, b.meta.received(), 1, "nothing is sent twice")
		require.Equal(t, sent, b.message(t, tn.ID, m.ID))
		require.Equal(t, before, b.timeline(t, tn.ID, m.ID))
		require.Equal(t, 1, b.usage(t, tn.ID, app.WhatsApp), "usage is counted once")
	})

	t.Run("CancelledDoesNothing", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		_, err := b.svc.Intake.Cancel(b.ctx, app.CLIActor, tn.ID, *m.EventID)
		require.NoError(t, err)

		c := &completion{}
		out, err := b.dispatch(m, 1, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Zero(t, c.count())
		require.Empty(t, b.meta.received(), "a cancelled message is not sent")
		require.Equal(t, app.MessageCancelled, b.message(t, tn.ID, m.ID).Status)
		require.Equal(t, []string{app.MessageQueued, app.MessageCancelled}, statuses(b.timeline(t, tn.ID, m.ID)))
		require.Zero(t, b.usage(t, tn.ID, app.WhatsApp))
	})

	t.Run("QuotaReached", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, func(c *app.Config) { c.Quotas[app.PlanPro][app.WhatsApp] = 1 })
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		first := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		second := b.routeOne(t, tn, booking("evt-2", "BK-2", anna, "WHATSAPP"))
		b.sendOK(t, first)

		c := &completion{}
		out, err := b.dispatch(second, 1, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out, "a quota failure is final: no retry")
		require.Equal(t, 1, c.count())
		require.Len(t, b.meta.received(), 1, "nothing is sent over the quota")

		failed := b.message(t, tn.ID, second.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonQuotaExceeded, *failed.FailedReason)
		require.Equal(t, "quota_exceeded", *failed.ErrorCode)
		require.Nil(t, failed.ExternalMessageID)
		require.True(t, failed.FailedAt.Equal(b.clock.Now()))
		tl := b.timeline(t, tn.ID, second.ID)
		require.Equal(t, []string{app.MessageQueued, app.MessageFailed}, statuses(tl))
		require.Equal(t, "The PRO plan allows 1 WHATSAPP messages a month; 1 were sent.", tl[len(tl)-1].Detail["error"])
		require.Equal(t, 1, b.usage(t, tn.ID, app.WhatsApp))

		// Quotas are per channel: e-mail still goes out.
		email := b.routeOne(t, tn, booking("evt-3", "BK-2", anna, "EMAIL"))
		b.sendOK(t, email)
	})

	t.Run("QuotaCountsPerMonth", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, func(c *app.Config) { c.Quotas[app.PlanPro][app.WhatsApp] = 1 })
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		first := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		second := b.routeOne(t, tn, booking("evt-2", "BK-2", anna, "WHATSAPP"))
		b.sendOK(t, first)

		b.clock.Advance(20 * 24 * time.Hour) // April
		sent := b.sendOK(t, second)
		require.Equal(t, time.April, sent.SentAt.UTC().Month())
		require.Equal(t, 1, b.usage(t, tn.ID, app.WhatsApp), "April's count starts at zero")
	})

	t.Run("QuotaReachedFallsBack", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, func(c *app.Config) { c.Quotas[app.PlanPro][app.WhatsApp] = 0 })
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		wa := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))
		require.Equal(t, app.StringList{"SMS"}, wa.FallbackChain)

		c := &completion{}
		out, err := b.dispatch(wa, 1, 5, c)
		require.NoError(t, err)
		require.True(t, out.Done)
		require.Equal(t, 1, c.count())
		require.Empty(t, b.meta.received())

		failed := b.message(t, tn.ID, wa.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *failed.FailedReason)
		require.Equal(t, "quota_exceeded", *failed.ErrorCode)
		sms := fallbackOf(t, b, tn, wa)
		require.Equal(t, app.SMS, sms.Channel)
		require.Equal(t, "+4915123456789", sms.ToAddress)
		require.Empty(t, sms.FallbackChain)
		b.sendOK(t, sms)
	})

	t.Run("AccountNotActive", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ status, reason, detail string }{
			{app.AccountSuspended, "Meta restricted the number.", "The channel account is SUSPENDED. Meta restricted the number."},
			{app.AccountDisabled, "", "The channel account is DISABLED."},
			{app.AccountPending, "", "The channel account is PENDING."},
		} {
			t.Run(tc.status, func(t *testing.T) {
				t.Parallel()
				b := setupPipeline(t, nil)
				tn := b.tenant(t, "acme")
				acct := b.useMeta(t, tn, nil)
				m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
				require.NoError(t, b.svc.Accounts.SetStatus(b.ctx, app.CLIActor, tn.ID, acct.ID, tc.status, tc.reason))

				c := &completion{}
				out, err := b.dispatch(m, 1, 5, c)
				require.NoError(t, err)
				require.Equal(t, app.DispatchOutcome{Done: true}, out)
				require.Equal(t, 1, c.count())
				require.Empty(t, b.meta.received(), "an account that is not ACTIVE sends nothing")
				failed := b.message(t, tn.ID, m.ID)
				require.Equal(t, app.MessageFailed, failed.Status)
				require.Equal(t, app.ReasonChannelSuspended, *failed.FailedReason)
				require.Equal(t, "channel_suspended", *failed.ErrorCode)
				tl := b.timeline(t, tn.ID, m.ID)
				require.Equal(t, tc.detail, tl[len(tl)-1].Detail["error"])
			})
		}
	})

	t.Run("PermanentErrorFails", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		b.meta.reply(graphError(t, "131026"))

		c := &completion{}
		out, err := b.dispatch(m, 1, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out, "a permanent error is not retried")
		require.Equal(t, 1, c.count())
		require.Len(t, b.meta.received(), 1)

		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonProviderRejected, *failed.FailedReason)
		require.Equal(t, "131026", *failed.ErrorCode)
		tl := b.timeline(t, tn.ID, m.ID)
		require.Equal(t, []string{app.MessageQueued, app.MessageFailed}, statuses(tl))
		require.Equal(t, "(#131026) Message Undeliverable.", tl[len(tl)-1].Detail["error"])
		require.Len(t, b.messagesOf(t, tn.ID, *m.EventID), 1, "no chain, no other message")
		require.Zero(t, b.usage(t, tn.ID, app.WhatsApp), "a refused send is not counted")
		require.Equal(t, app.AccountActive, b.account(t, tn.ID, acct.ID).Status, "a recipient's problem leaves the account alone")
	})

	t.Run("ChainWithoutTemplateSaysSo", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		// The tenant switched its SMS confirmations off: the chain's SMS
		// has no template, and the chain ends with the WhatsApp message.
		type template struct {
			ID            uuid.UUID
			Subject, Body string
		}
		var smsTemplates []template
		require.NoError(t, b.svc.Store.InPlatform(b.ctx, func(tx *db.Tx) error {
			rows, err := tx.SQL().QueryContext(b.ctx, `SELECT id, subject, body FROM templates
				WHERE tenant_id = $1 AND trigger_event = 'BOOKING_CONFIRMED' AND channel = 'SMS'`, tn.ID)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var tpl template
				if err := rows.Scan(&tpl.ID, &tpl.Subject, &tpl.Body); err != nil {
					return err
				}
				smsTemplates = append(smsTemplates, tpl)
			}
			return rows.Err()
		}))
		require.NotEmpty(t, smsTemplates)
		for _, tpl := range smsTemplates {
			_, _, err := b.svc.Templates.Save(b.ctx, app.CLIActor, tn.ID, tpl.ID, app.TemplateInput{Subject: tpl.Subject, Body: tpl.Body})
			require.NoError(t, err)
		}
		wa := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))
		b.meta.reply(graphError(t, "131026"))

		out, err := b.dispatch(wa, 1, 5, &completion{})
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		failed := b.message(t, tn.ID, wa.ID)
		require.Equal(t, app.ReasonProviderRejected, *failed.FailedReason, "no channel took over")
		last := b.timeline(t, tn.ID, wa.ID)
		detail := last[len(last)-1].Detail
		require.Equal(t, "SMS: "+strings.ReplaceAll(app.ReasonNoTemplates, "_", " "), detail["fallback_skipped"])
		require.Equal(t, "none: every channel left in the chain was passed over", detail["fallback"],
			"the timeline says why the chain ended instead of an empty fallback")
		require.Len(t, b.messagesOf(t, tn.ID, *wa.EventID), 1)
	})

	t.Run("PermanentErrorFallsBack", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		wa := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS", "EMAIL"))
		b.meta.reply(graphError(t, "131026"))

		c := &completion{}
		out, err := b.dispatch(wa, 1, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Equal(t, 1, c.count())

		failed := b.message(t, tn.ID, wa.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *failed.FailedReason)
		require.Equal(t, "131026", *failed.ErrorCode)
		tl := b.timeline(t, tn.ID, wa.ID)
		require.Equal(t, "SMS", tl[len(tl)-1].Detail["fallback"])

		sms := fallbackOf(t, b, tn, wa)
		require.Equal(t, app.StringList{"EMAIL"}, sms.FallbackChain, "the rest of the chain rides on the new message")
		sent := b.sendOK(t, sms)
		require.Equal(t, "sandbox", *sent.Provider)
	})

	t.Run("AccountErrorSuspendsAccount", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		b.meta.reply(graphError(t, "190"))

		c := &completion{}
		out, err := b.dispatch(m, 1, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Equal(t, 1, c.count())

		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonChannelSuspended, *failed.FailedReason)
		require.Equal(t, "190", *failed.ErrorCode)

		a := b.account(t, tn.ID, acct.ID)
		require.Equal(t, app.AccountSuspended, a.Status, "the tenant must fix the account")
		require.NotNil(t, a.SuspendedReason)
		require.Contains(t, *a.SuspendedReason, "(190)")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'channel_account.status'
			AND target_id = $2 AND actor_type = 'system'`, tn.ID, acct.ID.String()))
	})

	t.Run("TransientErrorRetries", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		b.meta.reply(graphError(t, "131000"))

		c := &completion{}
		out, err := b.dispatch(m, 1, 5, c)
		require.NoError(t, err)
		require.False(t, out.Done)
		require.Zero(t, out.Snooze)
		var pe *provider.Error
		require.ErrorAs(t, out.Retry, &pe)
		require.Equal(t, "131000", pe.Code)
		require.Equal(t, provider.Transient, pe.Class)
		require.Zero(t, c.count(), "the job stays with River, which retries it with backoff")

		queued := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageQueued, queued.Status)
		require.Equal(t, 1, queued.Attempts, "the call that failed was an attempt")
		tl := b.timeline(t, tn.ID, m.ID)
		require.Equal(t, []string{app.MessageQueued}, statuses(tl))
		note := tl[len(tl)-1]
		require.Equal(t, true, note.Detail["will_retry"])
		require.Equal(t, "131000", note.Detail["error_code"])
		require.Zero(t, b.usage(t, tn.ID, app.WhatsApp))

		// The retry succeeds.
		out, err = b.dispatch(m, 2, 5, c)
		require.NoError(t, err)
		require.True(t, out.Done)
		sent := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageSent, sent.Status)
		require.Equal(t, 2, sent.Attempts)
		require.Equal(t, fakeWamid(2), *sent.ExternalMessageID)
		require.Equal(t, 1, b.usage(t, tn.ID, app.WhatsApp))
	})

	t.Run("TransientErrorOnLastAttemptFails", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))
		b.meta.reply(graphError(t, "131000"))

		c := &completion{}
		out, err := b.dispatch(m, 5, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Equal(t, 1, c.count())
		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *failed.FailedReason, "exhausted retries fall back too")
		require.Equal(t, "131000", *failed.ErrorCode)
		tl := b.timeline(t, tn.ID, m.ID)
		require.Equal(t, app.ReasonRetriesExhausted, tl[len(tl)-1].Detail["reason"])
		require.Equal(t, app.MessageQueued, fallbackOf(t, b, tn, m).Status)
	})

	t.Run("ProviderRateLimitSnoozes", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		hinted := graphError(t, "130429")
		hinted.retryAfter = "17"
		b.meta.reply(graphError(t, "130429"), hinted)

		// Snoozes are spread by up to half the wait; this jitter takes half of that.
		b.setJitter(func(n time.Duration) time.Duration { return n / 2 })
		c := &completion{}
		out, err := b.dispatch(m, 1, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Snooze: 5*time.Second + 1250*time.Millisecond}, out, "Meta's throughput limit clears within seconds")
		// The account's other sends wait too: its bucket gives no token
		// until the provider's wait is over.
		wait, err := b.svc.Limiter.Wait(b.ctx, nil, acct)
		require.NoError(t, err)
		require.GreaterOrEqual(t, wait, 5*time.Second)
		b.clock.Advance(out.Snooze)
		out, err = b.dispatch(m, 1, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Snooze: 17*time.Second + 4250*time.Millisecond}, out, "Retry-After is followed")
		require.Zero(t, c.count())

		queued := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageQueued, queued.Status)
		require.Zero(t, queued.Attempts, "a snooze uses no attempt")
		notes := fromSource(b.timeline(t, tn.ID, m.ID), app.SourceDispatch)
		require.Len(t, notes, 2)
		require.Equal(t, "130429", notes[1].Detail["rate_limited"])
		require.Equal(t, float64(17), notes[1].Detail["retry_after_seconds"])
		require.Equal(t, 21.25, notes[1].Detail["snooze_seconds"])
		require.Equal(t, app.BreakerClosed, b.svc.Breakers.State(acct.ID), "rate limits do not count against the breaker")
	})

	t.Run("RateLimiterSnoozes", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		// One send per thousand seconds: the second send finds no token
		// however slowly the test runs.
		b.useMeta(t, tn, map[string]string{"rate_per_second": "0.001", "burst": "1"})
		first := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		second := b.routeOne(t, tn, booking("evt-2", "BK-2", anna, "WHATSAPP"))
		b.sendOK(t, first)
		before := b.timeline(t, tn.ID, second.ID)

		c := &completion{}
		out, err := b.dispatch(second, 1, 5, c)
		require.NoError(t, err)
		require.False(t, out.Done)
		require.Nil(t, out.Retry)
		require.Greater(t, out.Snooze, time.Minute, "snoozed until about when a token is there")
		require.Zero(t, c.count())
		require.Len(t, b.meta.received(), 1, "the provider is not called without a token")
		require.Equal(t, app.MessageQueued, b.message(t, tn.ID, second.ID).Status)
		require.Equal(t, before, b.timeline(t, tn.ID, second.ID))
	})

	t.Run("AClaimTakesItsTokenOnItsOwnConnection", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, map[string]string{"rate_per_second": "1000", "burst": "10"})
		first := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		second := b.routeOne(t, tn, booking("evt-2", "BK-2", anna, "WHATSAPP"))
		// A worker whose pool has one connection: a claim that took its
		// token on a second connection would wait for itself. Workers
		// whose claims all held a connection each stalled that way until
		// their jobs timed out.
		b.cfg.DBMaxConns = 1
		svc := b.connect(t)
		ctx, cancel := context.WithTimeout(b.ctx, dbtest.HangGuard)
		defer cancel()
		for _, m := range []*app.Message{first, second} {
			c := &completion{}
			out, err := svc.Dispatcher.Dispatch(ctx, app.DispatchJob{TenantID: m.TenantID, MessageID: m.ID, Channel: m.Channel}, 1, 5, c.complete)
			require.NoError(t, err)
			require.True(t, out.Done, "sent: %+v", out)
			require.Equal(t, app.MessageSent, b.message(t, tn.ID, m.ID).Status)
		}
		require.Len(t, b.meta.received(), 2)
	})

	t.Run("ABucketARoundingErrorShortOfATokenSnoozes", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		// Refills add fractions of a token in floating point, so a bucket
		// can hold 0.9999999999999999 of one: its wait is far below a
		// nanosecond, and it is still no token.
		acct := b.useMeta(t, tn, map[string]string{"rate_per_second": "20", "burst": "20"})
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		wait, err := b.svc.Limiter.Wait(b.ctx, nil, acct)
		require.NoError(t, err)
		require.Zero(t, wait, "a new bucket is full")
		require.NoError(t, b.svc.Store.InPlatform(b.ctx, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, `UPDATE rate_buckets SET tokens = 0.9999999999999999, refilled_at = $2 WHERE key = $1`,
				"rate:"+tn.ID.String()+":"+acct.ID.String(), b.clock.Now())
			return err
		}))

		c := &completion{}
		out, err := b.dispatch(m, 1, 5, c)
		require.NoError(t, err)
		require.Positive(t, out.Snooze, "snoozed: the send takes no token, so it must not happen")
		require.Empty(t, b.meta.received(), "the provider is not called without a whole token")
		require.Zero(t, c.count())
		require.Equal(t, app.MessageQueued, b.message(t, tn.ID, m.ID).Status)
	})

	t.Run("BreakerOpenSnoozes", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, func(c *app.Config) { c.BreakerThreshold = 1 })
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		first := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		second := b.routeOne(t, tn, booking("evt-2", "BK-2", anna, "WHATSAPP"))
		b.meta.reply(graphError(t, "131000"))

		out, err := b.dispatch(first, 1, 5, &completion{})
		require.NoError(t, err)
		require.NotNil(t, out.Retry)
		require.Equal(t, app.BreakerOpen, b.svc.Breakers.State(acct.ID), "one transient failure opens a breaker of threshold 1")

		b.clock.Advance(20 * time.Second)
		c := &completion{}
		out, err = b.dispatch(second, 1, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Snooze: b.cfg.BreakerOpenFor - 20*time.Second}, out, "snoozed until the breaker half-opens")
		require.Zero(t, c.count())
		require.Len(t, b.meta.received(), 1, "an open breaker calls nobody")
		require.Equal(t, app.MessageQueued, b.message(t, tn.ID, second.ID).Status)
		require.Zero(t, b.message(t, tn.ID, second.ID).Attempts)
	})

	t.Run("WhatsApp131047RetriesAsTemplate", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		b.inbound(t, tn, acct, anna, b.clock.Now().Add(-time.Hour))
		wa := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))
		b.meta.reply(graphError(t, "131047"))

		// Herald saw a reply within 24 hours and sent text; Meta, whose
		// view of the window counts, refused it: the approved template
		// goes out instead, in the same attempt.
		sent := b.sendOK(t, wa)
		sends := b.meta.received()
		require.Len(t, sends, 2)
		require.Equal(t, "text", sends[0].Body["type"])
		require.Equal(t, "template", sends[1].Body["type"])
		require.Equal(t, fakeWamid(2), *sent.ExternalMessageID)
		tl := b.timeline(t, tn.ID, wa.ID)
		require.Equal(t, []string{app.MessageQueued, app.MessageSent}, statuses(tl))
		require.Contains(t, tl[len(tl)-2].Detail["retry"], "herald_booking_confirmed")
	})

	t.Run("WhatsApp131047WithoutTemplateFallsBack", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		b.metaStatus(t, tn, acct, "herald_booking_confirmed", "de", app.MetaTemplatePending)
		b.inbound(t, tn, acct, anna, b.clock.Now().Add(-time.Hour))
		wa := b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS"))
		b.meta.reply(graphError(t, "131047"))

		out, err := b.dispatch(wa, 1, 5, &completion{})
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Len(t, b.meta.received(), 1, "no approved template to retry with")
		failed := b.message(t, tn.ID, wa.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, "131047", *failed.ErrorCode)
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *failed.FailedReason)
		b.sendOK(t, fallbackOf(t, b, tn, wa))
	})

	t.Run("WhatsAppApprovedTemplate", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		var tpl *app.Template
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
			tpl, err = tx.FindTemplate(b.ctx, tn.ID, "BOOKING_CONFIRMED", app.WhatsApp, []string{"de-DE"})
			return err
		}))
		_, _, err := b.svc.Templates.Save(b.ctx, app.CLIActor, tn.ID, tpl.ID, app.TemplateInput{
			Body: tpl.Body, IsActive: true,
			WhatsAppTemplate: &app.WhatsAppTemplateSpec{Name: "booking_confirmed", Language: "de",
				Parameters: []string{"passenger_name", "tour_name", "departure_date"}},
		})
		require.NoError(t, err)
		b.metaStatus(t, tn, b.activeAccount(t, tn.ID, app.WhatsApp), "booking_confirmed", "de", app.MetaTemplateApproved)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))

		b.sendOK(t, m)
		body := b.meta.received()[0].Body
		require.Equal(t, "template", body["type"], "an approved template may open a conversation outside the window")
		require.Equal(t, map[string]any{
			"name": "booking_confirmed", "language": map[string]any{"policy": "deterministic", "code": "de"},
			"components": []any{map[string]any{"type": "body", "parameters": []any{
				map[string]any{"type": "text", "text": "Anna Schmidt"},
				map[string]any{"type": "text", "text": "Gardasee"},
				map[string]any{"type": "text", "text": "2027-04-12"},
			}}},
		}, body["template"], "parameters in the template's order, from the event's context")
	})

	t.Run("CompleteFailsRollsBack", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))

		c := &completion{err: errors.New("job row gone")}
		_, err := b.dispatch(m, 1, 5, c)
		require.ErrorIs(t, err, c.err)
		require.Equal(t, 1, c.count())
		// The status and the job's completion commit together or not at
		// all; the job then runs again. The call's outcome was never
		// recorded, so the message waits for Meta's confirmation, which
		// records the send.
		require.Equal(t, app.MessageQueued, b.message(t, tn.ID, m.ID).Status)
		require.Equal(t, []string{app.MessageQueued}, statuses(b.timeline(t, tn.ID, m.ID)))
		require.Zero(t, b.usage(t, tn.ID, app.WhatsApp))
		out, err := b.dispatch(m, 2, 5, &completion{})
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Snooze: app.DefaultConfirmWindow}, out)
		require.Len(t, b.meta.received(), 1)

		outcome, err := b.apply(b.ctx, b.via(t, tn), metaEcho(t, b, 0, "sent", b.clock.Now()))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		sent := b.sendOK(t, m)
		require.Equal(t, fakeWamid(1), *sent.ExternalMessageID)
		require.Len(t, b.meta.received(), 1)
		require.Equal(t, 1, b.usage(t, tn.ID, app.WhatsApp))
	})

	t.Run("ProviderNotConfigured", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		delete(b.svc.Providers, "meta")

		c := &completion{}
		out, err := b.dispatch(m, 1, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Equal(t, 1, c.count())
		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonProviderRejected, *failed.FailedReason)
		require.Equal(t, "provider_unavailable", *failed.ErrorCode)
	})

	t.Run("QuotaHoldsUnderConcurrentSends", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, func(c *app.Config) { c.Quotas[app.PlanPro][app.WhatsApp] = 1 })
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		first := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		second := b.routeOne(t, tn, booking("evt-2", "BK-2", anna, "WHATSAPP"))

		// A second worker dispatches the other message while Meta is still
		// answering the first: the interleaving of two workers, without
		// timing.
		var nested atomic.Bool
		var nestedOut app.DispatchOutcome
		var nestedErr error
		b.meta.mu.Lock()
		b.meta.before = func() {
			if nested.CompareAndSwap(false, true) {
				nestedOut, nestedErr = b.dispatch(second, 1, 5, &completion{})
			}
		}
		b.meta.mu.Unlock()

		out, err := b.dispatch(first, 1, 5, &completion{})
		require.NoError(t, err)
		require.NoError(t, nestedErr)
		require.True(t, out.Done)
		require.True(t, nestedOut.Done)
		require.LessOrEqual(t, len(b.meta.received()), 1, "a PRO tenant may send 1 WhatsApp message this month")
		require.LessOrEqual(t, b.usage(t, tn.ID, app.WhatsApp), 1)
	})
}
