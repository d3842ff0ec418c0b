package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/webhook"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

func TestPipeline_Scheduling(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})

	t.Run("ScheduledSendFires", func(t *testing.T) {
		t.Parallel()
		b := webtest.Notification("sched-1", "BK-S1")
		// An hour ahead, so that the checks before it come before it
		// however slow the machine; then the hour passes for River.
		b["send_at"] = time.Now().Add(time.Hour).Format(time.RFC3339Nano)
		id := p.Submit(b)
		e := p.Event(id)
		require.Equal(t, app.EventScheduled, e.Status)
		require.Empty(t, e.Messages, "nothing is sent before send_at")
		const routeJob = `kind = 'route' AND args->>'event_id' = $1 AND state = 'scheduled'`
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM river_job WHERE `+routeJob, id.String()), "the route job waits for send_at")
		p.Exec(`UPDATE river_job SET scheduled_at = now(), state = 'available' WHERE `+routeJob, id.String())
		p.WaitMessages(id, "sent after send_at", func(ms []*app.Message) bool { return len(ms) == 2 })
		require.Equal(t, app.EventRouted, p.Event(id).Status)
	})

	t.Run("RescheduleMakesOldJobANoOp", func(t *testing.T) {
		t.Parallel()
		b := webtest.Notification("sched-2", "BK-S2")
		b["send_at"] = time.Now().Add(time.Hour).Format(time.RFC3339)
		id := p.Submit(b)

		var e struct {
			Version int
			Status  string
		}
		newAt := time.Now().Add(2 * time.Hour)
		require.Equal(t, http.StatusOK, p.Request(http.MethodPatch, "/api/v1/notifications/"+id.String(), map[string]any{"send_at": newAt}, &e))
		require.Equal(t, 2, e.Version)

		// The job scheduled for the first time comes due: it must do nothing.
		require.NoError(t, p.Services.Router.Route(p.Ctx, app.RouteJob{TenantID: p.Tenant.ID, EventID: id, Version: 1}))
		after := p.Event(id)
		require.Equal(t, app.EventScheduled, after.Status)
		require.Empty(t, after.Messages)
		require.Equal(t, 2, p.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, id.String()))

		// The current version's job routes.
		require.NoError(t, p.Services.Router.Route(p.Ctx, app.RouteJob{TenantID: p.Tenant.ID, EventID: id, Version: 2}))
		require.Equal(t, app.EventRouted, p.Event(id).Status)

		var res webtest.APIError
		require.Equal(t, http.StatusConflict, p.Request(http.MethodPatch, "/api/v1/notifications/"+id.String(), map[string]any{"send_at": newAt}, &res),
			"a routed event cannot be rescheduled")
		require.Equal(t, http.StatusUnprocessableEntity, p.Request(http.MethodPatch, "/api/v1/notifications/"+uuid.NewString(), map[string]any{"send_at": time.Now().Add(-time.Hour)}, &res))
		require.Equal(t, "send_at_in_past", res.Error.Code)
	})

	t.Run("Cancel", func(t *testing.T) {
		t.Parallel()
		b := webtest.Notification("sched-3", "BK-S3")
		b["send_at"] = time.Now().Add(time.Hour).Format(time.RFC3339)
		id := p.Submit(b)
		var e struct{ Status string }
		require.Equal(t, http.StatusOK, p.Request(http.MethodDelete, "/api/v1/notifications/"+id.String(), nil, &e))
		require.Equal(t, app.EventCancelled, e.Status)
		require.NoError(t, p.Services.Router.Route(p.Ctx, app.RouteJob{TenantID: p.Tenant.ID, EventID: id, Version: 1}))
		require.Empty(t, p.Event(id).Messages, "a cancelled event's job does nothing")
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM audit_log WHERE action = 'notification.cancel' AND target_id = $1`, id.String()))
	})
}

func TestPipeline_Approval(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})
	incident := func(eventID string) map[string]any {
		return map[string]any{
			"event_id": eventID, "trigger_event": "INCIDENT_BROADCAST",
			"recipients": []map[string]any{{"name": "Anna", "phone": "+4915123456789", "email": "anna@example.com"}},
			"context": map[string]any{"passenger_name": "Anna", "tour_name": "Gardasee",
				"incident_message": "Der Bus hat 90 Minuten Verspätung.", "operator_phone": "+49 89 1234567"},
			"conversation_context": map[string]any{"type": "trip", "id": "TR-9"},
		}
	}

	// The key that submits an incident may not decide it: a second key,
	// with the approve scope, does.
	_, approver, err := p.Services.APIKeys.Create(p.Ctx, app.CLIActor, p.Tenant.ID, "duty manager", app.ScopeApprove)
	require.NoError(t, err)

	t.Run("ApproveSendsFirstChannelOfChain", func(t *testing.T) {
		id := p.Submit(incident("inc-1"))
		require.Equal(t, app.EventAwaitingApproval, p.Event(id).Status)
		require.Zero(t, p.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, id.String()),
			"nothing is queued before a manager approves")

		var e struct{ Status string }
		require.Equal(t, http.StatusOK, p.RequestWithKey(approver, http.MethodPost, "/api/v1/notifications/"+id.String()+"/approve", nil, &e))
		require.Equal(t, app.EventReceived, e.Status)
		m := webtest.OnlyMessage(t, p.WaitMessages(id, "the WhatsApp message read", webtest.AllStatus(app.MessageRead)))
		require.Equal(t, app.WhatsApp, m.Channel, "with a fallback chain only the first usable channel is sent")

		var res webtest.APIError
		require.Equal(t, http.StatusConflict, p.RequestWithKey(approver, http.MethodPost, "/api/v1/notifications/"+id.String()+"/approve", nil, &res))
	})

	t.Run("RejectNeedsReason", func(t *testing.T) {
		id := p.Submit(incident("inc-2"))
		var res webtest.APIError
		require.Equal(t, http.StatusUnprocessableEntity, p.RequestWithKey(approver, http.MethodPost, "/api/v1/notifications/"+id.String()+"/reject", map[string]any{}, &res))
		require.Equal(t, "missing_reason", res.Error.Code)
		var e struct{ Status, DecisionReason string }
		require.Equal(t, http.StatusOK, p.RequestWithKey(approver, http.MethodPost, "/api/v1/notifications/"+id.String()+"/reject", map[string]any{"reason": "false alarm"}, &e))
		require.Equal(t, app.EventRejected, e.Status)
		require.Empty(t, p.Event(id).Messages)
	})
}

func TestPipeline_Routing(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})

	t.Run("LocaleFallbackChain", func(t *testing.T) {
		for _, tc := range []struct{ locale, want string }{
			{"en-GB", "en"},    // the recipient's bare language
			{"fr-FR", "de-DE"}, // no French: the tenant's default
			{"de-DE", "de-DE"},
		} {
			id := p.Submit(webtest.WithRecipient("loc-"+tc.locale, "BK-L-"+tc.locale, map[string]any{
				"name": "A", "email": "a-" + tc.locale + "@example.com", "locale": tc.locale}, "EMAIL"))
			m := webtest.OnlyMessage(t, p.WaitMessages(id, "routed", func(ms []*app.Message) bool { return len(ms) == 1 }))
			require.Equal(t, tc.want, *m.Locale, tc.locale)
		}
	})

	t.Run("NoTemplatesFound", func(t *testing.T) {
		// Deactivate every SMS template of the event, then ask for SMS only.
		require.NoError(t, p.Services.Store.InTenant(p.Ctx, p.Tenant.ID, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(p.Ctx, `UPDATE templates SET is_active = false WHERE tenant_id = $1 AND trigger_event = 'BOOKING_CONFIRMED'`, p.Tenant.ID)
			return err
		}))
		t.Cleanup(func() {
			_ = p.Services.Store.InTenant(p.Ctx, p.Tenant.ID, func(tx *db.Tx) error {
				_, err := tx.SQL().ExecContext(p.Ctx, `UPDATE templates SET is_active = true WHERE tenant_id = $1`, p.Tenant.ID)
				return err
			})
		})
		id := p.Submit(webtest.Notification("notpl-1", "BK-NT"))
		m := webtest.OnlyMessage(t, p.WaitMessages(id, "one FAILED message", webtest.AllStatus(app.MessageFailed)))
		require.Equal(t, app.ReasonNoTemplates, *m.FailedReason)
		require.Zero(t, p.Count(`SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND args->>'message_id' = $1`, m.ID.String()))
	})

	t.Run("NoActiveChannels", func(t *testing.T) {
		other := webtest.New(t, webtest.Options{})
		for _, ch := range []app.Channel{app.Email, app.WhatsApp} {
			acct := other.ActiveAccount(ch)
			require.NoError(t, other.Services.Accounts.SetStatus(other.Ctx, app.CLIActor, other.Tenant.ID, acct.ID, app.AccountDisabled, ""))
		}
		id := other.Submit(webtest.Notification("noch-1", "BK-NC"))
		m := webtest.OnlyMessage(t, other.WaitMessages(id, "one FAILED message", webtest.AllStatus(app.MessageFailed)))
		require.Equal(t, app.ReasonNoActiveChannels, *m.FailedReason)
	})

	t.Run("GroupBookingReachesEveryPassenger", func(t *testing.T) {
		b := webtest.Notification("group-1", "BK-G")
		b["recipients"] = []map[string]any{
			{"name": "Anna", "email": "anna.g@example.com"},
			{"name": "Ben", "email": "ben.g@example.com"},
		}
		b["channels"] = []string{"EMAIL"}
		id := p.Submit(b)
		ms := p.WaitMessages(id, "both delivered", webtest.AllStatus(app.MessageRead))
		require.Len(t, ms, 2)
		require.NotEqual(t, ms[0].ContactID, ms[1].ContactID)
	})
}

func TestPipeline_Dispatch(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})

	t.Run("FallbackWhatsAppToSMS", func(t *testing.T) {
		t.Parallel()
		b := map[string]any{
			"event_id": "fb-1", "trigger_event": "INCIDENT_ALLCLEAR",
			"recipients":     []map[string]any{{"name": "A", "phone": "+4915123450006"}},
			"context":        map[string]any{"passenger_name": "A", "tour_name": "Gardasee", "update_message": "Alles frei."},
			"fallback_chain": []string{"WHATSAPP", "SMS"},
		}
		id := p.Submit(b)
		ms := p.WaitMessages(id, "WhatsApp failed and SMS read", func(ms []*app.Message) bool {
			return len(ms) == 2 && ms[1].Status == app.MessageRead
		})
		wa, sms := ms[0], ms[1]
		require.Equal(t, app.WhatsApp, wa.Channel)
		require.Equal(t, app.MessageFailed, wa.Status)
		require.Equal(t, "fallback_triggered:SMS", *wa.FailedReason)
		require.Equal(t, "sandbox_not_on_whatsapp", *wa.ErrorCode)
		require.Equal(t, app.SMS, sms.Channel)
		require.Equal(t, wa.ID, *sms.FallbackOf)
		require.Equal(t, wa.CorrelationID, sms.CorrelationID, "fallback messages share the correlation id")
	})

	t.Run("TransientThenSuccess", func(t *testing.T) {
		t.Parallel()
		id := p.Submit(webtest.WithRecipient("tr-1", "BK-T", map[string]any{"name": "A", "email": "flaky@example.com"}, "EMAIL"))
		m := webtest.OnlyMessage(t, p.WaitMessages(id, "read after a retry", webtest.AllStatus(app.MessageRead)))
		require.Equal(t, 2, m.Attempts)
		var retried bool
		for _, e := range p.Timeline(m.ID) {
			if e.Detail["will_retry"] == true {
				retried = true
			}
		}
		require.True(t, retried, "the transient failure is on the timeline")
	})

	t.Run("RetriesExhausted", func(t *testing.T) {
		t.Parallel()
		id := p.Submit(webtest.WithRecipient("ex-1", "BK-E", map[string]any{"name": "A", "email": "down@example.com"}, "EMAIL"))
		m := webtest.OnlyMessage(t, p.WaitMessages(id, "failed after five attempts", webtest.AllStatus(app.MessageFailed)))
		require.Equal(t, app.ReasonRetriesExhausted, *m.FailedReason)
		require.Equal(t, "sandbox_unavailable", *m.ErrorCode, "the last provider code is kept")
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND args->>'message_id' = $1 AND attempt = 5 AND state = 'completed'`, m.ID.String()))
	})

	t.Run("PermanentFailureWithoutChain", func(t *testing.T) {
		t.Parallel()
		id := p.Submit(webtest.WithRecipient("perm-1", "BK-P", map[string]any{"name": "A", "email": "fail@example.com"}, "EMAIL"))
		m := webtest.OnlyMessage(t, p.WaitMessages(id, "failed at once", webtest.AllStatus(app.MessageFailed)))
		require.Equal(t, app.ReasonProviderRejected, *m.FailedReason)
		require.Equal(t, 1, m.Attempts, "a permanent failure is not retried")
	})

	t.Run("RateLimitedSnoozes", func(t *testing.T) {
		t.Parallel()
		id := p.Submit(webtest.WithRecipient("rl-1", "BK-RL", map[string]any{"name": "A", "email": "throttle@example.com"}, "EMAIL"))
		m := webtest.OnlyMessage(t, p.WaitMessages(id, "read after the snooze", webtest.AllStatus(app.MessageRead)))
		require.Equal(t, 1, m.Attempts, "a snooze does not use an attempt")
		var snoozed bool
		for _, e := range p.Timeline(m.ID) {
			snoozed = snoozed || e.Detail["rate_limited"] == "sandbox_throttled"
		}
		require.True(t, snoozed, "the snooze is on the timeline")
	})
}

// TestDispatcher_SuspendedAccount drives routing and dispatch directly, so
// the account can be suspended between them.
func TestDispatcher_SuspendedAccount(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{NoWorkers: true})
	id := p.Submit(webtest.WithRecipient("susp-1", "BK-SU", map[string]any{"name": "A", "email": "a@example.com"}, "EMAIL"))
	require.NoError(t, p.Services.Router.Route(p.Ctx, app.RouteJob{TenantID: p.Tenant.ID, EventID: id, Version: 1}))
	m := webtest.OnlyMessage(t, p.Event(id).Messages)
	require.Equal(t, app.MessageQueued, m.Status)

	acct := p.ActiveAccount(app.Email)
	err := p.Services.Accounts.SetStatus(p.Ctx, app.CLIActor, p.Tenant.ID, acct.ID, app.AccountSuspended, "")
	require.Equal(t, "reason", app.ErrorField(err), "suspending needs a reason")
	require.NoError(t, p.Services.Accounts.SetStatus(p.Ctx, app.CLIActor, p.Tenant.ID, acct.ID, app.AccountSuspended, "Billing problem at the provider"))

	completed := false
	out, err := p.Services.Dispatcher.Dispatch(p.Ctx, app.DispatchJob{TenantID: p.Tenant.ID, MessageID: m.ID, Channel: app.Email}, 1, 5,
		func(context.Context, app.Tx) error { completed = true; return nil })
	require.NoError(t, err)
	require.True(t, out.Done)
	require.True(t, completed, "the job completes in the dispatcher's transaction")
	m = webtest.OnlyMessage(t, p.Event(id).Messages)
	require.Equal(t, app.MessageFailed, m.Status)
	require.Equal(t, app.ReasonChannelSuspended, *m.FailedReason)
}

func TestReceipts(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})
	// A silent address: the sandbox sends but never reports, so the test
	// delivers the receipts itself.
	id := p.Submit(webtest.WithRecipient("rc-1", "BK-RC", map[string]any{"name": "A", "email": "silent@example.com"}, "EMAIL"))
	m := webtest.OnlyMessage(t, p.WaitMessages(id, "sent", webtest.AllStatus(app.MessageSent)))
	ext := *m.ExternalMessageID
	// Each receipt goes through the inbox and the workers' applier, as a
	// provider's webhook post does.
	receive := func(receiptID, status string) {
		p.Receive(app.Internal, provider.Receipt{Provider: "sandbox", ExternalID: ext, ReceiptID: receiptID, Status: status})
	}
	status := func() string { return webtest.OnlyMessage(t, p.Event(id).Messages).Status }
	onTimeline := func() int {
		n := 0
		for _, e := range p.Timeline(m.ID) {
			if e.Source == app.SourceWebhook {
				n++
			}
		}
		return n
	}

	receive("r-read", provider.StatusRead)
	require.Equal(t, app.MessageRead, status(), "read may arrive before delivered")
	receive("r-delivered", provider.StatusDelivered)
	require.Equal(t, app.MessageRead, status(), "a late delivered is recorded only")
	require.Equal(t, 2, onTimeline())
	receive("r-read", provider.StatusRead)
	require.Equal(t, 2, onTimeline(), "a replay is a no-op")
	receive("r-failed", provider.StatusFailed)
	require.Equal(t, app.MessageRead, status(), "FAILED does not follow READ")
	require.Equal(t, 3, onTimeline(), "every new receipt is on the timeline, replays are not")

	require.NoError(t, p.Services.Receipts.Accept(p.Ctx, app.InboxReceipt{Via: app.Internal,
		Receipt: provider.Receipt{Provider: "sandbox", ExternalID: "sbx_nobody", Status: provider.StatusDelivered}}))
	p.WaitUntil("the receipt of an unknown id to wait for its send", func() bool {
		return p.Count(`SELECT count(*) FROM receipt_inbox WHERE external_id = 'sbx_nobody' AND available_at = 'infinity'`) == 1
	})

	t.Run("BounceAfterSent", func(t *testing.T) {
		id := p.Submit(webtest.WithRecipient("rc-2", "BK-RC2", map[string]any{"name": "A", "email": "bounce@example.com"}, "EMAIL"))
		m := webtest.OnlyMessage(t, p.WaitMessages(id, "bounced", webtest.AllStatus(app.MessageFailed)))
		require.NotNil(t, m.SentAt)
		require.Equal(t, "sandbox_bounce", *m.ErrorCode)
	})
}

func TestMaintenance(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{NoWorkers: true})
	exec := func(q string, args ...any) {
		t.Helper()
		require.NoError(t, p.Services.Store.InPlatform(p.Ctx, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(p.Ctx, q, args...)
			return err
		}))
	}

	t.Run("RequeueStuck", func(t *testing.T) {
		id := p.Submit(webtest.WithRecipient("st-1", "BK-ST", map[string]any{"name": "A", "email": "a@example.com"}, "EMAIL"))
		require.NoError(t, p.Services.Router.Route(p.Ctx, app.RouteJob{TenantID: p.Tenant.ID, EventID: id, Version: 1}))
		m := webtest.OnlyMessage(t, p.Event(id).Messages)
		// The job is lost (an operator deleted it) and the message has waited.
		exec(`DELETE FROM river_job WHERE kind = 'dispatch'`)
		n, err := p.Services.Maintenance.RequeueStuck(p.Ctx)
		require.NoError(t, err)
		require.Zero(t, n, "a message queued a moment ago is not stuck yet")
		exec(`UPDATE messages SET queued_at = now() - interval '10 minutes' WHERE id = $1`, m.ID)
		n, err = p.Services.Maintenance.RequeueStuck(p.Ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND args->>'message_id' = $1`, m.ID.String()))
		n, err = p.Services.Maintenance.RequeueStuck(p.Ctx)
		require.NoError(t, err)
		require.Zero(t, n, "a message with a live job is left alone")
	})

	t.Run("RetentionPrunesOnlyOldAndFinished", func(t *testing.T) {
		exec(`UPDATE tenants SET retention_days = 30 WHERE id = $1`, p.Tenant.ID)
		ids := map[string]uuid.UUID{}
		for _, name := range []string{"old-done", "old-queued", "new-done"} {
			id := p.Submit(webtest.WithRecipient("ret-"+name, "BK-"+name, map[string]any{"name": "A", "email": name + "@example.com"}, "EMAIL"))
			require.NoError(t, p.Services.Router.Route(p.Ctx, app.RouteJob{TenantID: p.Tenant.ID, EventID: id, Version: 1}))
			ids[name] = id
		}
		exec(`UPDATE messages SET status = 'DELIVERED' WHERE event_id IN ($1, $2)`, ids["old-done"], ids["new-done"])
		exec(`UPDATE messages SET created_at = now() - interval '40 days' WHERE event_id IN ($1, $2)`, ids["old-done"], ids["old-queued"])
		exec(`UPDATE events SET created_at = now() - interval '40 days' WHERE id IN ($1, $2)`, ids["old-done"], ids["old-queued"])

		res, err := p.Services.Maintenance.Prune(p.Ctx)
		require.NoError(t, err)
		require.Equal(t, 1, res.Messages)
		require.Equal(t, 1, res.Events)
		require.Zero(t, p.Count(`SELECT count(*) FROM messages WHERE event_id = $1`, ids["old-done"]))
		require.Zero(t, p.Count(`SELECT count(*) FROM events WHERE id = $1`, ids["old-done"]))
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM messages WHERE event_id = $1`, ids["old-queued"]), "unfinished work is kept")
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM messages WHERE event_id = $1`, ids["new-done"]), "recent work is kept")
	})
}

func TestPipeline_CancelRoutedCancelsQueuedMessages(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{NoWorkers: true})
	id := p.Submit(webtest.Notification("cq-1", "BK-CQ"))
	require.NoError(t, p.Services.Router.Route(p.Ctx, app.RouteJob{TenantID: p.Tenant.ID, EventID: id, Version: 1}))
	require.Len(t, p.Event(id).Messages, 2)

	var e struct{ Status string }
	require.Equal(t, http.StatusOK, p.Request(http.MethodDelete, "/api/v1/notifications/"+id.String(), nil, &e))
	require.Equal(t, app.EventCancelled, e.Status)
	for _, m := range p.Event(id).Messages {
		require.Equal(t, app.MessageCancelled, m.Status)
		tl := p.Timeline(m.ID)
		require.Equal(t, app.MessageCancelled, *tl[len(tl)-1].ToStatus)
	}
	// A dispatch job that runs afterwards finds nothing to send.
	m := p.Event(id).Messages[0]
	out, err := p.Services.Dispatcher.Dispatch(p.Ctx, app.DispatchJob{TenantID: p.Tenant.ID, MessageID: m.ID, Channel: m.Channel}, 1, 5,
		func(context.Context, app.Tx) error { return nil })
	require.NoError(t, err)
	require.True(t, out.Done)
	require.Equal(t, app.MessageCancelled, p.Event(id).Messages[0].Status)
}

func TestPipeline_OtherTenantMessages404(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{NoWorkers: true})
	id := p.Submit(webtest.Notification("ot-1", "BK-OT"))
	require.NoError(t, p.Services.Router.Route(p.Ctx, app.RouteJob{TenantID: p.Tenant.ID, EventID: id, Version: 1}))
	m := p.Event(id).Messages[0]

	other, err := p.Services.Tenants.Create(p.Ctx, app.CLIActor, app.TenantInput{Slug: "intruder", Name: "Intruder"})
	require.NoError(t, err)
	_, key, err := p.Services.APIKeys.Create(p.Ctx, app.CLIActor, other.ID, "k")
	require.NoError(t, err)

	var res webtest.APIError
	require.Equal(t, http.StatusNotFound, p.RequestWithKey(key, http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &res))
	require.Equal(t, http.StatusNotFound, p.RequestWithKey(key, http.MethodPost, "/api/v1/bookings/BK-OT/resend", map[string]any{"channel": "EMAIL"}, &res),
		"another tenant's booking has no notifications to resend")
	require.Equal(t, http.StatusNotFound, p.RequestWithKey(key, http.MethodPost, "/api/v1/bookings/BK-OT/resend",
		map[string]any{"channel": "EMAIL", "template_id": *m.TemplateID}, &res), "nor can its templates be named")
	require.Equal(t, 2, p.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1`, p.Tenant.ID), "nothing was created")
}

func TestTemplates_SaveKeepsHistory(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{NoWorkers: true})
	var tmpl *app.Template
	require.NoError(t, p.Services.Store.InTenant(p.Ctx, p.Tenant.ID, func(tx *db.Tx) (err error) {
		tmpl, err = tx.FindTemplate(p.Ctx, p.Tenant.ID, "BOOKING_CONFIRMED", app.Email, []string{"en"})
		return err
	}))
	original := tmpl.Body

	saved, warnings, err := p.Services.Templates.Save(p.Ctx, app.CLIActor, p.Tenant.ID, tmpl.ID, app.TemplateInput{
		Subject: "Booked: {{tour_name}}", Body: "<p>Hi {{passenger_name}}, see {{seat_number}}.</p>", IsActive: true,
	})
	require.NoError(t, err)
	require.Equal(t, 2, saved.Version)
	require.Equal(t, []string{"seat_number"}, warnings, "unknown placeholders are warnings, not errors")
	require.Equal(t, 1, p.Count(`SELECT count(*) FROM template_versions WHERE template_id = $1 AND version = 1 AND body = $2`, tmpl.ID, original))

	_, _, err = p.Services.Templates.Save(p.Ctx, app.CLIActor, p.Tenant.ID, tmpl.ID, app.TemplateInput{Body: "<p>x</p>", IsActive: true})
	require.Equal(t, "subject", app.ErrorField(err), "e-mail templates need a subject")
	require.Equal(t, 1, p.Count(`SELECT count(*) FROM template_versions WHERE template_id = $1`, tmpl.ID), "a refused save stores nothing")

	id := p.Submit(webtest.WithRecipient("tpl-1", "BK-TPL", map[string]any{"name": "A", "email": "a@example.com", "locale": "en"}, "EMAIL"))
	require.NoError(t, p.Services.Router.Route(p.Ctx, app.RouteJob{TenantID: p.Tenant.ID, EventID: id, Version: 1}))
	m := webtest.OnlyMessage(t, p.Event(id).Messages)
	require.Equal(t, "Booked: Gardasee", m.Subject)
	require.Equal(t, "<p>Hi Anna Schmidt, see .</p>", m.Body, "a missing variable renders empty")
	require.Equal(t, 2, *m.TemplateVersion)
}

func TestPipeline_QuotaExceeded(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{Config: func(cfg *app.Config) { cfg.Quotas[app.PlanPro][app.SMS] = 1 }})
	first := p.Submit(webtest.WithRecipient("q-1", "BK-Q1", map[string]any{"name": "A", "phone": "+4915123451111"}, "SMS"))
	p.WaitMessages(first, "first SMS sent", webtest.AllStatus(app.MessageRead))
	second := p.Submit(webtest.WithRecipient("q-2", "BK-Q2", map[string]any{"name": "B", "phone": "+4915123452222", "email": "b@example.com"}, "SMS", "EMAIL"))
	ms := p.WaitMessages(second, "SMS over quota, e-mail read", func(ms []*app.Message) bool {
		done := 0
		for _, m := range ms {
			if m.Status == app.MessageFailed || m.Status == app.MessageRead {
				done++
			}
		}
		return len(ms) == 2 && done == 2
	})
	for _, m := range ms {
		if m.Channel == app.SMS {
			require.Equal(t, app.ReasonQuotaExceeded, *m.FailedReason)
		} else {
			require.Equal(t, app.MessageRead, m.Status, "other channels are unaffected")
		}
	}
}

func TestMaintenance_MarkStale(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})
	id := p.Submit(webtest.WithRecipient("stale-1", "BK-STL", map[string]any{"name": "A", "email": "silent@example.com"}, "EMAIL"))
	m := webtest.OnlyMessage(t, p.WaitMessages(id, "sent", webtest.AllStatus(app.MessageSent)))

	n, err := p.Services.Maintenance.MarkStale(p.Ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a message sent a moment ago is not stale")

	require.NoError(t, p.Services.Store.InPlatform(p.Ctx, func(tx *db.Tx) error {
		_, err := tx.SQL().ExecContext(p.Ctx, `UPDATE messages SET sent_at = now() - interval '25 hours' WHERE id = $1`, m.ID)
		return err
	}))
	n, err = p.Services.Maintenance.MarkStale(p.Ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	var got struct {
		Status  string
		StaleAt *time.Time `json:"stale_at"`
	}
	require.Equal(t, http.StatusOK, p.Request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &got))
	require.Equal(t, app.MessageSent, got.Status)
	require.NotNil(t, got.StaleAt, "staleness is visible through the API")
	tl := p.Timeline(m.ID)
	require.Equal(t, true, tl[len(tl)-1].Detail["stale"])

	n, err = p.Services.Maintenance.MarkStale(p.Ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a stale message is flagged once")

	// A late receipt still counts, and clears the flag.
	p.Receive(app.Internal, provider.Receipt{Provider: "sandbox", ExternalID: *m.ExternalMessageID, Status: provider.StatusDelivered})
	got.StaleAt = nil
	require.Equal(t, http.StatusOK, p.Request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &got))
	require.Equal(t, app.MessageDelivered, got.Status)
	require.Nil(t, got.StaleAt)
}

// TestChannel_Webhook sends on the WEBHOOK channel through the real adapter
// to a tenant receiver, which checks the signature as a tenant would.
func TestChannel_Webhook(t *testing.T) {
	t.Parallel()
	const secret = "whsec_test_secret"
	got := make(chan map[string]any, 4)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !webhook.Verify(secret, r.Header.Get("Herald-Signature"), r.Header.Get("Herald-Timestamp"), body, time.Now(), time.Minute) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var payload map[string]any
		_ = json.Unmarshal(body, &payload)
		got <- payload
	}))
	t.Cleanup(receiver.Close)
	p := webtest.New(t, webtest.Options{Providers: provider.Set{"webhook": &webhook.Provider{AllowHTTP: true, AllowPrivate: true}}})
	_, err := p.Services.Accounts.Create(p.Ctx, app.CLIActor, p.Tenant.ID, app.AccountInput{
		Channel: app.Webhook, Provider: "webhook", Name: "Booking system", Activate: true,
		Config: app.Attrs{"url": receiver.URL + "/herald"}, Secrets: map[string]string{"signing_secret": secret},
	})
	require.NoError(t, err)

	id := p.Submit(webtest.WithRecipient("wh-1", "BK-WH", map[string]any{"name": "A", "email": "a@example.com"}, "WEBHOOK"))
	m := webtest.OnlyMessage(t, p.WaitMessages(id, "delivered to the receiver", webtest.AllStatus(app.MessageSent)))
	select {
	case payload := <-got:
		require.Equal(t, m.ID.String(), payload["id"])
		var event map[string]any
		require.NoError(t, json.Unmarshal([]byte(payload["body"].(string)), &event), "the body is the event as JSON")
		require.Equal(t, "BOOKING_CONFIRMED", event["trigger_event"])
		require.Equal(t, "Gardasee", event["context"].(map[string]any)["tour_name"])
	case <-time.After(time.Minute):
		t.Fatal("the receiver got nothing")
	}
	require.Nil(t, m.TemplateID, "the webhook channel needs no template")
}

// TestMaintenance_SweepsEveryTenant: the sweeps find their work across
// tenants and write it in transactions of each tenant; every tenant's due
// messages are handled, and only those.
func TestMaintenance_SweepsEveryTenant(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{NoWorkers: true})
	id := p.Submit(webtest.WithRecipient("sweep-1", "BK-SW", map[string]any{"name": "A", "email": "a@example.com"}, "EMAIL"))
	require.NoError(t, p.Services.Router.Route(p.Ctx, app.RouteJob{TenantID: p.Tenant.ID, EventID: id, Version: 1}))
	m := webtest.OnlyMessage(t, p.Event(id).Messages)
	other, err := p.Services.Tenants.Create(p.Ctx, app.CLIActor, app.TenantInput{Slug: "second", Name: "Second"})
	require.NoError(t, err)

	// copyAs stores a copy of m for the tenant with the fields in set
	// (SQL expressions) changed, and returns its id.
	copyAs := func(tenantID uuid.UUID, key, set string) uuid.UUID {
		t.Helper()
		copyID := uuid.New()
		p.Exec(`INSERT INTO messages (`+p.MessageColumns("")+`) SELECT `+p.MessageColumns("r")+`
			FROM messages m, jsonb_populate_record(m, to_jsonb(m) || jsonb_build_object('id', $2::uuid, 'tenant_id', $3::uuid,
				'idempotency_key', $4::text, 'conversation_id', NULL) || `+set+`) r
			WHERE m.id = $1`, m.ID, copyID, tenantID, key)
		return copyID
	}
	stuck := `jsonb_build_object('queued_at', now() - interval '10 minutes')`
	stale := `jsonb_build_object('status', 'SENT', 'sent_at', now() - interval '25 hours', 'provider', 'sandbox', 'external_message_id', gen_random_uuid()::text)`
	expired := `jsonb_build_object('expires_at', now() - interval '1 minute')`
	ids := map[string]uuid.UUID{}
	for _, tn := range []struct {
		name string
		id   uuid.UUID
	}{{"first", p.Tenant.ID}, {"second", other.ID}} {
		ids[tn.name+" stuck"] = copyAs(tn.id, tn.name+":stuck", stuck)
		ids[tn.name+" stale"] = copyAs(tn.id, tn.name+":stale", stale)
		ids[tn.name+" expired"] = copyAs(tn.id, tn.name+":expired", expired)
	}
	p.Exec(`DELETE FROM river_job WHERE kind = 'dispatch'`)

	n, err := p.Services.Maintenance.RequeueStuck(p.Ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "one stuck message in each tenant")
	for _, name := range []string{"first stuck", "second stuck"} {
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND args->>'message_id' = $1`, ids[name].String()), name)
	}

	n, err = p.Services.Maintenance.MarkStale(p.Ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "one stale message in each tenant")
	for _, name := range []string{"first stale", "second stale"} {
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM messages WHERE id = $1 AND stale_at IS NOT NULL`, ids[name]), name)
	}

	_, expiredN, err := p.Services.Maintenance.ExpireOverdue(p.Ctx)
	require.NoError(t, err)
	require.Equal(t, 2, expiredN, "one expired message in each tenant")
	for _, name := range []string{"first expired", "second expired"} {
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'EXPIRED'`, ids[name]), name)
	}
	require.Equal(t, 1, p.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'QUEUED' AND stale_at IS NULL`, m.ID),
		"the tenant's message with nothing due is left alone")
}
