package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// RecordSentRetryFor bounds how long a send the provider accepted keeps
// trying to record that through a database outage before the job gives up
// (and leaves the message marked as possibly sent, see Dispatcher).
const RecordSentRetryFor = 15 * time.Second

// Unlimited marks a quota without a limit.
const Unlimited = -1

// DefaultQuotas are the messages a plan may send per channel and calendar
// month. The webhook channel is not metered.
var DefaultQuotas = map[string]map[Channel]int{
	PlanFree:       {Email: 100, WhatsApp: 50, SMS: 50, Webhook: Unlimited},
	PlanPro:        {Email: 1000, WhatsApp: 500, SMS: 500, Webhook: Unlimited},
	PlanEnterprise: {Email: Unlimited, WhatsApp: 5000, SMS: 5000, Webhook: Unlimited},
}

// Gate decides whether a send may start now; a positive wait snoozes the job
// without using an attempt. RateLimiter implements it. (Breakers are not a
// Gate: they wrap the provider call itself, see Breakers.Send.)
type Gate interface {
	Wait(ctx context.Context, account *ChannelAccount) (time.Duration, error)
	// Throttled tells the gate that the provider refused a send of the
	// account for its rate, asking to wait retryAfter: the account's sends
	// slow down, in every worker process.
	Throttled(ctx context.Context, account *ChannelAccount, retryAfter time.Duration) error
}

// DefaultRateLimitWait is the snooze after a provider's rate limit that
// came without a hint.
const DefaultRateLimitWait = 5 * time.Second

// DispatchOutcome tells the job runner what to do with the job.
type DispatchOutcome struct {
	// Done: the job is finished (completed in the dispatcher's transaction,
	// or there was nothing to do).
	Done bool
	// Snooze: run again after this long, without using an attempt.
	Snooze time.Duration
	// Retry: run again with backoff; the error is the provider's.
	Retry error
}

// DispatchTx lists the statements Dispatcher runs, fallbacks included.
type DispatchTx interface {
	FallbackTx
	ReceiptApplyTx
	MessageForDispatch(ctx context.Context, tenantID, id uuid.UUID) (*DispatchState, error)
	// LockReceiptKeys is LockReceipts for every key, in one fixed order.
	LockReceiptKeys(ctx context.Context, keys []ReceiptKey) error
	// RecordSent records the send (see SentResult).
	RecordSent(ctx context.Context, s SentRecord) (SentResult, error)
	MarkFailed(ctx context.Context, tenantID, id uuid.UUID, from []string, reason, code string, at time.Time) (bool, error)
	// MarkExpired moves a QUEUED message to EXPIRED; false when it was
	// no longer QUEUED.
	MarkExpired(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (bool, error)
	InsertMessageEvent(ctx context.Context, e *MessageEvent) error
	CountAttempt(ctx context.Context, tenantID, id uuid.UUID) error
	// Savepoint runs fn so that its failure undoes only its own work:
	// fnErr is fn's error, err a failure of the savepoint itself.
	Savepoint(ctx context.Context, fn func() error) (fnErr, err error)
	SetAccountStatus(ctx context.Context, tenantID, id uuid.UUID, status, reason string, at time.Time) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
	TemplateByID(ctx context.Context, tenantID, id uuid.UUID) (*Template, error)
	WhatsAppTx
	SendGuardTx
	InlineJobTx
}

// SendGuardTx lists the statements around a provider call: the quota
// reservation and the marker of a call in flight.
type SendGuardTx interface {
	// LockSend locks the message and says whether it is still QUEUED (one
	// cancelled since it was loaded, by a superseding event or the console,
	// is not sent); with optOut it also reads, under a share lock of the
	// contact's row, whether the contact opted out of the message's
	// channel, in the same statement.
	LockSend(ctx context.Context, tenantID, id uuid.UUID, optOut bool) (marker *SendMarker, quotaMonth *time.Time, queued, optedOut bool, err error)
	ReserveQuota(ctx context.Context, tenantID, id uuid.UUID, ch Channel, month time.Time, limit int, held *time.Time) (ok bool, used int, err error)
	ReleaseQuota(ctx context.Context, tenantID, id uuid.UUID) error
	MarkSendStarted(ctx context.Context, tenantID, id uuid.UUID, m SendMarker) error
	ClearSendStarted(ctx context.Context, tenantID, id uuid.UUID) error
}

// Dispatcher sends one queued message through its channel account's provider.
type Dispatcher struct {
	Store     Store[DispatchTx]
	Queue     Queue
	Router    *Router
	Accounts  *Accounts
	Providers provider.Set
	Quotas    map[string]map[Channel]int
	// Limiter holds sends to the account's rate; nil sends unlimited.
	Limiter Gate
	// Breakers stop sends to a provider that keeps failing; nil sends always.
	Breakers *Breakers
	Metrics  Metrics
	// Receipts applies the receipts that overtook a send when it is
	// recorded; nil leaves them pending.
	Receipts *Receipts
	// Callbacks makes the status callbacks of sends and failures; nil
	// makes none.
	Callbacks *Callbacks
	Now       Clock
	Log       *slog.Logger
	// JitterFunc returns a random wait in [0, n) that spreads snoozes;
	// nil uses math/rand. Tests make it deterministic.
	JitterFunc func(n time.Duration) time.Duration
	// RecordTimer paces the retries of recording an accepted send; nil
	// uses real timers. Tests move an injected clock instead.
	RecordTimer backoff.Timer
	// Unsubscribe makes the one-click unsubscribe links of optional
	// e-mails; nil sends them without.
	Unsubscribe *UnsubscribeLinks
	// Backoff is the wait after a failed attempt (1-based) before the
	// next, the dispatch jobs' retry schedule: a retry that would come
	// after the message's expiry expires it instead. Nil retries always.
	Backoff func(attempt int) time.Duration
	// SendBatch, when set, records the accepted sends of a tenant that
	// finish together in one transaction (send_batch.go).
	SendBatch *SendBatcher

	guard sendGuard
}

// CompleteFunc finishes the dispatch job inside the dispatcher's transaction,
// so that the message's new status and the job's completion commit together.
type CompleteFunc func(ctx context.Context, tx Tx) error

// Dispatch runs the dispatch steps in order: account gate, quota, rate and
// breaker gates, provider call, and the recording of the result.
func (d *Dispatcher) Dispatch(ctx context.Context, job DispatchJob, attempt, maxAttempts int, complete CompleteFunc) (DispatchOutcome, error) {
	var m *Message
	var acct *ChannelAccount
	var tenant *Tenant
	var waTemplate *provider.WhatsAppTemplate
	var waRefusal string
	err := d.Store.InTenant(ctx, job.TenantID, func(tx DispatchTx) error {
		st, err := tx.MessageForDispatch(ctx, job.TenantID, job.MessageID)
		if err != nil {
			return err
		}
		m = st.Message
		if m.Status != MessageQueued || st.Account == nil {
			return nil
		}
		tenant, acct = st.Tenant, st.Account
		if m.Channel == WhatsApp && acct.Provider == "meta" {
			waTemplate, waRefusal, err = d.whatsAppPlan(ctx, tx, m, acct)
		}
		return err
	})
	if err != nil {
		return DispatchOutcome{}, err
	}
	if m.Status != MessageQueued || acct == nil {
		return DispatchOutcome{Done: true}, nil
	}
	if out, held, err := d.holdForTime(ctx, m, complete); held || err != nil {
		return out, err
	}
	return d.deliver(ctx, delivery{message: m, account: acct, tenant: tenant, waTemplate: waTemplate, waRefusal: waRefusal,
		attempt: attempt, maxAttempts: maxAttempts}, complete)
}

// delivery is one attempt at sending a message, with what it needs.
type delivery struct {
	message    *Message
	account    *ChannelAccount
	tenant     *Tenant
	waTemplate *provider.WhatsAppTemplate
	waRefusal  string
	attempt    int
	// maxAttempts is the job's attempts in all: the last one fails the
	// message instead of retrying.
	maxAttempts int
	// claimed: the transaction that stored the message reserved its quota
	// and marked this call as started (inline dispatch).
	claimed bool
	// inlineJob is the dispatch job an inline send finishes in the
	// statement recording it (zero for a job's own run).
	inlineJob int64
}

// deliver runs the steps of a send after the message is loaded: account
// gate, rate and breaker gates, quota, provider call, and the recording of
// the result.
func (d *Dispatcher) deliver(ctx context.Context, dl delivery, complete CompleteFunc) (DispatchOutcome, error) {
	m, acct, tenant, waTemplate, waRefusal := dl.message, dl.account, dl.tenant, dl.waTemplate, dl.waRefusal
	attempt, maxAttempts := dl.attempt, dl.maxAttempts
	// A test may try a PENDING account: nothing else is routed to it.
	if acct.Status != AccountActive && !(m.Test && acct.Status == AccountPending) {
		reason := "The channel account is " + acct.Status + "."
		if acct.SuspendedReason != nil {
			reason += " " + *acct.SuspendedReason
		}
		return d.fail(ctx, m, ReasonChannelSuspended, "channel_suspended", reason, complete)
	}
	if waRefusal != "" {
		// Meta would refuse free-form text outside the window (131047):
		// fail over now instead of spending a request on it.
		return d.fail(ctx, m, ReasonWhatsAppTemplateRequired, ReasonWhatsAppTemplateRequired, waRefusal, complete)
	}
	if d.Limiter != nil {
		wait, err := d.Limiter.Wait(ctx, acct)
		if err != nil {
			return DispatchOutcome{}, err
		}
		if wait > 0 {
			d.Metrics.Snooze("rate_limit")
			d.Metrics.MessageOutcome(m.Channel, "snoozed")
			return DispatchOutcome{Snooze: wait}, nil
		}
	}

	p, ok := d.Providers[acct.Provider]
	if !ok {
		return d.fail(ctx, m, ReasonProviderRejected, "provider_unavailable", "Provider "+acct.Provider+" is not configured on this server.", complete)
	}
	secrets, err := d.Accounts.Open(acct)
	if err != nil {
		return DispatchOutcome{}, fmt.Errorf("message %s: %w", m.ID, err)
	}
	// The quota is reserved (and the call marked) before the provider is
	// called: counted after it, concurrent sends all read the same use and
	// exceed the quota together.
	limit := d.quota(tenant.Plan, m.Channel)
	plan := sendPlan{proceed: true, quotaOK: true}
	if !dl.claimed {
		plan, err = d.beginSend(ctx, m, limit, p, attempt)
	}
	switch {
	case err != nil:
		return DispatchOutcome{}, err
	case plan.gone:
		d.Log.InfoContext(ctx, "message left the queue before its send; not sent", "message_id", m.ID)
		return DispatchOutcome{Done: true}, nil
	case plan.unrecorded != nil:
		// This process has the provider's acceptance from an earlier run
		// that could not record it: record it, do not send again.
		return d.recordSent(ctx, m, acct, *plan.unrecorded, complete)
	case plan.optedOut:
		return d.fail(ctx, m, ReasonOptedOut, ReasonOptedOut,
			fmt.Sprintf("The contact opted out of %s after the message was queued; %s is optional, so it is not sent.", m.Channel, m.TriggerEvent), complete)
	case !plan.quotaOK:
		return d.fail(ctx, m, ReasonQuotaExceeded, "quota_exceeded",
			fmt.Sprintf("The %s plan allows %d %s messages a month; %d were sent.", tenant.Plan, limit, m.Channel, plan.used), complete)
	case !plan.proceed:
		d.Metrics.Snooze("send_outcome_unknown")
		d.Metrics.MessageOutcome(m.Channel, "snoozed")
		return DispatchOutcome{Snooze: plan.wait}, nil
	}
	out := provider.Outbound{
		MessageID: m.ID, TenantID: m.TenantID, Channel: string(m.Channel), To: m.ToAddress,
		Subject: m.Subject, Body: m.Body, Attempt: attempt, Template: waTemplate,
		Account: provider.Account{ID: acct.ID, TenantID: acct.TenantID, Provider: acct.Provider, Config: acct.Config, Secrets: secrets},
	}
	if m.Channel == Email && m.ContactID != nil && d.Unsubscribe != nil && OptionalEvent(m.TriggerEvent) {
		out.UnsubscribeURL = d.Unsubscribe.URL(UnsubscribeTarget{TenantID: m.TenantID, ContactID: *m.ContactID, MessageID: m.ID})
	}
	start := d.Now()
	var externalID string
	var sendErr error
	if d.Breakers != nil {
		var wait time.Duration
		externalID, wait, sendErr = d.Breakers.Send(ctx, acct, func() (string, error) { return p.Send(ctx, out) })
		if wait > 0 {
			d.endSend(ctx, m)
			d.Metrics.Snooze("breaker_open")
			d.Metrics.MessageOutcome(m.Channel, "snoozed")
			return DispatchOutcome{Snooze: wait}, nil
		}
	} else {
		externalID, sendErr = p.Send(ctx, out)
	}
	externalID, sendErr = d.retryAsTemplate(ctx, p, out, m, acct, externalID, sendErr)
	if sendErr == nil {
		d.Metrics.DispatchLatency(m.Channel, d.Now().Sub(m.QueuedAt))
		d.Metrics.MessageOutcome(m.Channel, "sent")
		out, err := d.recordSent(ctx, m, acct, unrecordedSend{externalID: externalID, attempt: attempt, took: d.Now().Sub(start), finishJob: dl.inlineJob}, complete)
		if c, ok := p.(provider.Committer); ok && err == nil {
			c.Committed(externalID)
		}
		return out, err
	}

	pe := provider.Classify(sendErr)
	d.Metrics.ProviderError(acct.Provider, pe.Code)
	switch {
	case m.Test:
		// A test reports what the provider said, once: it is not retried,
		// and an account error does not suspend an account being tried.
		return d.fail(ctx, m, ReasonProviderRejected, pe.Code, pe.Reason, complete)
	case pe.Account:
		// The account itself is broken (expired token, suspended by the
		// provider): flag it for the tenant, then fail like a suspension.
		d.suspend(ctx, acct, pe)
		return d.fail(ctx, m, ReasonChannelSuspended, pe.Code, pe.Reason, complete)
	case pe.Class == provider.RateLimited:
		// The provider's hint is followed, and spread: every message
		// answered 429 at once must not come back at once. The account's
		// bucket slows down for every worker, so that the sends during
		// the storm stay near the rate the provider takes.
		wait := pe.RetryAfter
		if wait <= 0 {
			wait = DefaultRateLimitWait
		}
		if d.Limiter != nil {
			if err := d.Limiter.Throttled(context.WithoutCancel(ctx), acct, wait); err != nil {
				d.Log.WarnContext(ctx, "rate limit not recorded on the account's bucket", "channel_account_id", acct.ID, "err", err)
			}
		}
		snooze := wait + d.jitter(wait/2)
		if d.expiresBefore(m, snooze) {
			return d.expire(ctx, m, map[string]any{"rate_limited": pe.Code, "note": "the provider's wait outlasts the message's expiry"}, complete)
		}
		d.refused(ctx, m, false, map[string]any{"rate_limited": pe.Code, "retry_after_seconds": wait.Seconds(), "snooze_seconds": snooze.Seconds()})
		d.Metrics.Snooze("provider_rate_limited")
		d.Metrics.MessageOutcome(m.Channel, "snoozed")
		return DispatchOutcome{Snooze: snooze}, nil
	case pe.Class == provider.Permanent:
		return d.fail(ctx, m, ReasonProviderRejected, pe.Code, pe.Reason, complete)
	case attempt >= maxAttempts:
		return d.fail(ctx, m, ReasonRetriesExhausted, pe.Code, pe.Reason, complete)
	case d.Backoff != nil && d.expiresBefore(m, d.Backoff(attempt)):
		return d.expire(ctx, m, map[string]any{"attempt": attempt, "error_code": pe.Code, "error": pe.Reason,
			"note": "the next retry would come after the message's expiry"}, complete)
	default:
		d.refused(ctx, m, true, map[string]any{"attempt": attempt, "error_code": pe.Code, "error": pe.Reason, "will_retry": true})
		d.Metrics.MessageOutcome(m.Channel, "retry")
		return DispatchOutcome{Retry: pe}, nil
	}
}

func (d *Dispatcher) quota(plan string, ch Channel) int { return Quota(d.Quotas, plan, ch) }

// Quota is a plan's monthly limit on a channel under quotas (DefaultQuotas
// when nil), or Unlimited. The dispatcher and the dashboard both ask it, so
// they never disagree about a limit.
func Quota(q map[string]map[Channel]int, plan string, ch Channel) int {
	if q == nil {
		q = DefaultQuotas
	}
	if limit, ok := q[plan][ch]; ok {
		return limit
	}
	return Unlimited
}

// MonthOf is the first instant of t's calendar month in UTC: quotas count
// per UTC month.
func MonthOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// sent records a provider's acceptance: status, external id, timeline,
// usage and the job's completion, in one transaction; with SendBatch, one
// shared with the other sends of the tenant recorded at the same time, and
// alone when that batch fails.
func (d *Dispatcher) sent(ctx context.Context, m *Message, acct *ChannelAccount, rec unrecordedSend, complete CompleteFunc) (DispatchOutcome, error) {
	s := &sentSend{message: m, account: acct, rec: rec, complete: complete, at: d.Now()}
	if d.SendBatch != nil && d.SendBatch.add(ctx, d, s) == nil {
		return DispatchOutcome{Done: true}, nil
	}
	err := d.Store.InTenant(ctx, m.TenantID, func(tx DispatchTx) error {
		// The job is completed first so that the usage counter row,
		// which concurrent sends of the tenant share, stays locked for as
		// short a time as possible. An inline send's job is finished by
		// RecordSent's own statement.
		if err := s.completeJob(ctx, tx); err != nil {
			return err
		}
		// Receipts of this id wait until the send is recorded, and the
		// ones that came before it are applied with it.
		if err := tx.LockReceipts(ctx, acct.Provider, rec.externalID); err != nil {
			return err
		}
		return d.recordSentTx(ctx, tx, s, nil)
	})
	if err != nil {
		return DispatchOutcome{}, err
	}
	return DispatchOutcome{Done: true}, nil
}

// sentSend is a send the provider accepted, to be recorded.
type sentSend struct {
	message  *Message
	account  *ChannelAccount
	rec      unrecordedSend
	complete CompleteFunc
	at       time.Time
}

// completeJob finishes the send's dispatch job in tx, unless RecordSent
// finishes it (an inline send's).
func (s *sentSend) completeJob(ctx context.Context, tx DispatchTx) error {
	if s.rec.finishJob != 0 {
		return nil
	}
	return s.complete(ctx, tx)
}

// recordSentTx records s in tx, which holds the receipt lock of its
// external id, counting it on the usage counter row shard (nil: a random
// one).
func (d *Dispatcher) recordSentTx(ctx context.Context, tx DispatchTx, s *sentSend, shard *int) error {
	m, acct, externalID, attempt, now := s.message, s.account, s.rec.externalID, s.rec.attempt, s.at
	// A message that left QUEUED meanwhile (cancelled) stays as it is;
	// its job is done either way.
	res, err := tx.RecordSent(ctx, SentRecord{
		TenantID: m.TenantID, MessageID: m.ID, Provider: acct.Provider, ExternalID: externalID,
		Attempt: attempt, At: now, Channel: m.Channel, UsageMonth: MonthOf(now), Shard: shard,
		Detail: map[string]any{
			"provider": acct.Provider, "external_id": externalID, "attempt": attempt, "provider_ms": s.rec.took.Milliseconds(),
		},
		CallbackEvent: CallbackMessageSent,
		FinishJobID:   s.rec.finishJob,
	})
	if err != nil || !res.Moved {
		return err
	}
	if err := d.Callbacks.NotifyEndpoints(ctx, tx, m.TenantID, m.ID, CallbackMessageSent, CallbackNote{}, res.Subscribers); err != nil || d.Receipts == nil || !res.PendingReceipts {
		return err
	}
	sent := *m
	sent.Status, sent.Provider, sent.ExternalMessageID, sent.SentAt = MessageSent, &acct.Provider, &externalID, &now
	sent.Attempts = max(m.Attempts+1, attempt)
	// The provider has the message: whatever goes wrong applying the
	// receipts must not undo the record of the send (River would send
	// it again). They stay pending, and expire.
	applyErr, err := tx.Savepoint(ctx, func() error { return d.Receipts.ApplyPending(ctx, tx, &sent) })
	if applyErr != nil {
		d.Log.ErrorContext(ctx, "receipts that came before the send were not applied; they stay pending",
			"message_id", m.ID, "external_id", externalID, "err", applyErr)
	}
	return err
}

// fail marks the message FAILED and, when its chain has another channel,
// queues that channel's message, all with the job's completion.
func (d *Dispatcher) fail(ctx context.Context, m *Message, reason, code, detail string, complete CompleteFunc) (DispatchOutcome, error) {
	d.Metrics.MessageOutcome(m.Channel, "failed")
	now := d.Now()
	err := d.Store.InTenant(ctx, m.TenantID, func(tx DispatchTx) error {
		next, nextChannel, err := d.Router.fallback(ctx, tx, m)
		if err != nil {
			return err
		}
		finalReason := reason
		if next != nil {
			finalReason = ReasonFallbackTriggered + nextChannel
		}
		// The message was not sent: its quota goes back, and no call of it
		// is left in flight.
		if err := tx.ReleaseQuota(ctx, m.TenantID, m.ID); err != nil {
			return err
		}
		if err := tx.ClearSendStarted(ctx, m.TenantID, m.ID); err != nil {
			return err
		}
		ok, err := tx.MarkFailed(ctx, m.TenantID, m.ID, []string{MessageQueued}, finalReason, code, now)
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("message left QUEUED while it was being sent")
		}
		from, to := MessageQueued, MessageFailed
		if err := tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: m.TenantID, MessageID: m.ID, FromStatus: &from, ToStatus: &to,
			Source: SourceDispatch, At: now, Detail: map[string]any{"reason": reason, "error_code": code, "error": detail, "fallback": nextChannel},
		}); err != nil {
			return err
		}
		if err := d.Callbacks.Notify(ctx, tx, m.TenantID, m.ID, CallbackMessageFailed, CallbackNote{ErrorMessage: detail}); err != nil {
			return err
		}
		if next != nil {
			if err := d.Callbacks.Notify(ctx, tx, m.TenantID, m.ID, CallbackMessageFallback,
				CallbackNote{FallbackMessageID: next.MessageID, FallbackChannel: nextChannel}); err != nil {
				return err
			}
			if err := d.Queue.EnqueueDispatch(ctx, tx, *next); err != nil {
				return err
			}
		}
		return complete(ctx, tx)
	})
	if err != nil {
		return DispatchOutcome{}, err
	}
	return DispatchOutcome{Done: true}, nil
}

// note adds a timeline entry without changing the status (a retry, a snooze).
func (d *Dispatcher) note(ctx context.Context, m *Message, detail map[string]any) {
	err := d.Store.InTenant(ctx, m.TenantID, func(tx DispatchTx) error {
		return tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: m.TenantID, MessageID: m.ID, Source: SourceDispatch, Detail: detail, At: d.Now()})
	})
	if err != nil {
		d.Log.WarnContext(ctx, "timeline entry not written", "message_id", m.ID, "err", err)
	}
}

// refused records a provider call that failed without a final outcome:
// its timeline entry, the end of its send marker and, for a call that will
// be retried (countAttempt), the attempt, so that messages.attempts shows
// every call. A snooze for a rate limit uses no attempt.
func (d *Dispatcher) refused(ctx context.Context, m *Message, countAttempt bool, detail map[string]any) {
	ctx = context.WithoutCancel(ctx)
	err := d.Store.InTenant(ctx, m.TenantID, func(tx DispatchTx) error {
		if countAttempt {
			if err := tx.CountAttempt(ctx, m.TenantID, m.ID); err != nil {
				return err
			}
		}
		if err := tx.ClearSendStarted(ctx, m.TenantID, m.ID); err != nil {
			return err
		}
		return tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: m.TenantID, MessageID: m.ID, Source: SourceDispatch, Detail: detail, At: d.Now()})
	})
	if err != nil {
		d.Log.WarnContext(ctx, "failed provider call not recorded", "message_id", m.ID, "err", err)
	}
}

// jitter returns a random wait in [0, spread), from JitterFunc when set.
func (d *Dispatcher) jitter(spread time.Duration) time.Duration {
	if spread <= 0 {
		return 0
	}
	if d.JitterFunc != nil {
		return d.JitterFunc(spread)
	}
	return rand.N(spread)
}

// suspend flags a channel account the provider refused to work with, with
// the provider's reason, so the tenant sees what to fix. Routing stops
// choosing it; queued messages fail over to their fallback channel.
func (d *Dispatcher) suspend(ctx context.Context, a *ChannelAccount, pe *provider.Error) {
	reason := "The provider refused the account: " + pe.Reason + " (" + pe.Code + ")"
	err := d.Store.InTenant(ctx, a.TenantID, func(tx DispatchTx) error {
		if err := tx.SetAccountStatus(ctx, a.TenantID, a.ID, AccountSuspended, reason, d.Now()); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, SystemActor.Entry(&a.TenantID, "channel_account.status", "channel_account", a.ID.String(),
			map[string]any{"status": AccountSuspended, "reason": reason, "provider_code": pe.Code}))
	})
	if err != nil {
		d.Log.ErrorContext(ctx, "could not suspend channel account", "channel_account_id", a.ID, "err", err)
		return
	}
	d.Log.WarnContext(ctx, "channel account suspended after a provider account error", "channel_account_id", a.ID, "code", pe.Code)
}
