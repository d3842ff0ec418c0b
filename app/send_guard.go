package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// SendOutcomeHold is how long a provider call whose outcome was never
// recorded keeps every worker from sending the message again: the process
// that made it may still hold the provider's answer and record it once the
// database is back, or the call was cut before its answer was read (the
// provider may have the message). After that the message is sent again (at
// least once).
const SendOutcomeHold = 2 * time.Minute

// SendMarker is a provider call of a message whose outcome is not recorded
// yet: made at At by worker process By, as attempt Attempt.
type SendMarker struct {
	At      time.Time
	By      uuid.UUID
	Attempt int
}

// SendTx lists the statements of a send: its claim before the provider
// call, and the record of the call's outcome.
type SendTx interface {
	// The claim loads and plans the send.
	DispatchPlanTx
	// The record of a send makes its callbacks.
	CallbackEnqueueTx
	// LockSend locks the message and says whether it is still QUEUED (one
	// cancelled since it was loaded, by a superseding event or the console,
	// is not sent); with optOut it also reads, under a share lock of the
	// contact's row, whether the contact opted out of the message's
	// channel, in the same statement.
	LockSend(ctx context.Context, tenantID, id uuid.UUID, optOut bool) (marker *SendMarker, quotaMonth *time.Time, queued, optedOut bool, err error)
	ReserveQuota(ctx context.Context, tenantID, id uuid.UUID, ch Channel, month time.Time, limit int, held *time.Time) (ok bool, used int, err error)
	MarkSendStarted(ctx context.Context, tenantID, id uuid.UUID, m SendMarker) error
	ClearSendStarted(ctx context.Context, tenantID, id uuid.UUID) error
	// RecordSent records the send (see SentResult).
	RecordSent(ctx context.Context, s SentRecord) (SentResult, error)
	CountAttempt(ctx context.Context, tenantID, id uuid.UUID) error
	InsertMessageEvent(ctx context.Context, e *MessageEvent) error
}

// RecordSentRetryFor bounds how long a send the provider accepted keeps
// trying to record that through a database outage before the job gives up
// (and leaves the message marked as possibly sent, see SendOutcomeHold).
const RecordSentRetryFor = 15 * time.Second

// acceptedSend is a provider's acceptance of a message, to be recorded;
// one this process could not record in time is kept, and the next run of
// the message's job records it instead of calling the provider again.
type acceptedSend struct {
	externalID string
	attempt    int
	took       time.Duration
}

// sendGuard is the dispatcher's memory of its own provider calls: who it is
// (the marker's By) and which accepted sends it still has to record.
type sendGuard struct {
	once       sync.Once
	id         uuid.UUID
	unrecorded sync.Map // message id -> acceptedSend
}

func (g *sendGuard) self() uuid.UUID {
	g.once.Do(func() { g.id = uuid.New() })
	return g.id
}

// sendPlan is what the claim of a send decided.
type sendPlan struct {
	// gone: the message left the queue (it was sent or cancelled since
	// its job was queued), or has no account; nothing is sent.
	gone bool
	// expired: the message passed its expiry before it was sent.
	expired bool
	// deferred: the message waits this long for quiet hours to end (a job
	// that ran early, say after a rescue).
	deferred time.Duration
	// refusal: Herald refuses the send itself (account, window, provider).
	refusal *sendRefusal
	// rateWait: the account is over its rate; wait this long.
	rateWait time.Duration
	// provider and secrets make the call.
	provider provider.Provider
	secrets  map[string]string
	// limit is the plan's quota of the channel.
	limit int
	// proceed: call the provider now.
	proceed bool
	// quotaOK is false when the quota refused the send; used is then the
	// month's use.
	quotaOK bool
	used    int
	// wait, without proceed: another process's call of the message may
	// still be recorded; hold off this long.
	wait time.Duration
	// unrecorded: this process holds the provider's acceptance of the
	// message already; record it instead of calling again.
	unrecorded *acceptedSend
	// optedOut: the message is optional and its contact opted out of its
	// channel; it is not sent.
	optedOut bool
}

// claim runs every step before a provider call in one transaction: it
// loads the message with its tenant and account and plans a WhatsApp
// message's form, checks the message's time (expiry, quiet hours), its
// account and its rate, then locks the message, reads what an earlier call
// left, takes the month's quota (limit Unlimited takes none) and marks the
// call as started. What it found is acted on once it has committed
// (followPlan): a failure or an expiry is settled in a transaction of its
// own.
//
// An optional message's claim also reads its contact's opt-outs, in the
// statement that locks the message, under a share lock of the contact's
// row: an opt-out (which updates that row) either commits before the claim,
// which then sees it and sends nothing, or waits until the claim has
// committed, the send being under way by then. So no optional message is
// claimed after an opt-out of its channel committed, however routing raced
// with it. Transactional messages take no such lock.
func (d *Dispatcher) claim(ctx context.Context, tx SendTx, job DispatchJob, s *send) (sendPlan, error) {
	st, err := tx.MessageForDispatch(ctx, job.TenantID, job.MessageID)
	if err != nil {
		return sendPlan{}, err
	}
	m := st.Message
	s.message, s.tenant, s.account = m, st.Tenant, st.Account
	now := d.Now()
	switch {
	case m.Status != MessageQueued || s.account == nil:
		return sendPlan{gone: true}, nil
	case m.Expired(now):
		return sendPlan{expired: true}, nil
	case m.Deferred(now):
		return sendPlan{deferred: m.DeferredUntil.Sub(now)}, nil
	}
	if m.Channel == WhatsApp && s.account.Provider == "meta" {
		if s.waTemplate, s.waRefusal, err = d.whatsAppPlan(ctx, tx, m, s.account); err != nil {
			return sendPlan{}, err
		}
	}
	refusal, wait, err := d.gate(ctx, tx, s)
	switch {
	case err != nil:
		return sendPlan{}, err
	case refusal != nil:
		return sendPlan{refusal: refusal}, nil
	case wait > 0:
		return sendPlan{rateWait: wait}, nil
	}
	plan := sendPlan{provider: d.providers[s.account.Provider], limit: Quota(d.opts.Quotas, s.tenant.Plan, m.Channel)}
	if plan.secrets, err = d.accounts.Open(s.account); err != nil {
		return sendPlan{}, fmt.Errorf("message %s: %w", m.ID, err)
	}
	if u, ok := d.guard.unrecorded.Load(m.ID); ok {
		rec := u.(acceptedSend)
		plan.unrecorded, plan.quotaOK = &rec, true
		return plan, nil
	}
	return plan, d.reserve(ctx, tx, s, &plan, now)
}

// reserve locks the message for its call, takes its quota and marks the
// call started, unless the message left the queue, its contact opted out,
// or another process's call of it may still be recorded.
func (d *Dispatcher) reserve(ctx context.Context, tx SendTx, s *send, plan *sendPlan, now time.Time) error {
	m := s.message
	prev, held, queued, optedOut, err := tx.LockSend(ctx, m.TenantID, m.ID, OptionalEvent(m.TriggerEvent))
	if err != nil {
		return err
	}
	if !queued {
		plan.gone = true
		return nil
	}
	if optedOut {
		plan.optedOut, plan.quotaOK = true, true
		return nil
	}
	if prev != nil && !idempotent(plan.provider) {
		// A call of the message recorded no outcome: the process that made
		// it may hold the answer and record it once it can, or the call was
		// cut before its answer was read (unknownOutcome).
		if until := prev.At.Add(SendOutcomeHold); now.Before(until) {
			plan.wait = until.Sub(now)
			plan.quotaOK = true
			return nil
		}
		d.opts.Log.WarnContext(ctx, "a provider call of this message left no outcome; sending again",
			"message_id", m.ID, "previous_attempt", prev.Attempt, "previous_at", prev.At)
	}
	plan.quotaOK = true
	if plan.limit != Unlimited {
		if plan.quotaOK, plan.used, err = tx.ReserveQuota(ctx, m.TenantID, m.ID, m.Channel, MonthOf(now), plan.limit, held); err != nil || !plan.quotaOK {
			return err
		}
	}
	plan.proceed = true
	return tx.MarkSendStarted(ctx, m.TenantID, m.ID, SendMarker{At: now, By: d.guard.self(), Attempt: s.attempt})
}

// idempotent reports whether the provider's far end recognises a message
// sent again, so that a call with an unknown outcome may just be repeated.
func idempotent(p provider.Provider) bool {
	i, ok := p.(provider.Idempotent)
	return ok && i.Idempotent()
}

// endSend clears the marker of a provider call whose outcome is known
// without a status change (refused for a retry or a rate limit, or never
// made because the breaker is open), so that no one waits for it.
func (d *Dispatcher) endSend(ctx context.Context, m *Message) {
	err := d.stores.Send.InTenant(context.WithoutCancel(ctx), m.TenantID, func(tx SendTx) error {
		return tx.ClearSendStarted(ctx, m.TenantID, m.ID)
	})
	if err != nil {
		d.opts.Log.WarnContext(ctx, "send marker not cleared", "message_id", m.ID, "err", err)
	}
}

// recordSent records a send the provider accepted: the message SENT with
// the provider's id, its timeline entry, the usage count, the job's
// completion and the callbacks, in one transaction. It retries through a
// short database outage (with backoff, for up to RecordSentRetryFor):
// sending again would give the recipient the message twice. The recording
// is idempotent: a message no longer QUEUED (cancelled meanwhile) is left
// as it is, its job done either way. When the database stays away, the
// acceptance is kept in this process, and the next run of the job records
// it without calling the provider.
func (d *Dispatcher) recordSent(ctx context.Context, s *send, rec acceptedSend) (DispatchOutcome, error) {
	m := s.message
	// The job's own context may end (shutdown, timeout) while the answer
	// is in hand; recording it must not end with it.
	ctx = context.WithoutCancel(ctx)
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 100*time.Millisecond, 2*time.Second, RecordSentRetryFor
	b.Clock = clockFunc(d.opts.Now)
	b.Reset()
	record := func(tx SendTx) error {
		// The job is completed first so that the usage counter row, which
		// concurrent sends of the tenant share, stays locked for as short
		// a time as possible.
		if err := s.complete(ctx, tx); err != nil {
			return err
		}
		now := d.Now()
		res, err := tx.RecordSent(ctx, SentRecord{
			TenantID: m.TenantID, MessageID: m.ID, Provider: s.account.Provider, ExternalID: rec.externalID,
			Attempt: rec.attempt, At: now, Channel: m.Channel, UsageMonth: MonthOf(now),
			Detail: map[string]any{
				"provider": s.account.Provider, "external_id": rec.externalID, "attempt": rec.attempt, "provider_ms": rec.took.Milliseconds(),
			},
			CallbackEvent: CallbackMessageSent,
		})
		if err != nil || !res.Moved {
			return err
		}
		return d.opts.Callbacks.NotifyEndpoints(ctx, tx, m.TenantID, m.ID, CallbackMessageSent, CallbackNote{}, res.Subscribers)
	}
	tries := 0
	err := backoff.RetryNotifyWithTimer(func() error {
		tries++
		err := d.stores.Send.InTenant(ctx, m.TenantID, record)
		if err != nil && ErrorCode(err) != EUNAVAILABLE {
			return backoff.Permanent(err)
		}
		return err
	}, b, func(err error, wait time.Duration) {
		d.opts.Log.WarnContext(ctx, "recording an accepted send failed; trying again", "message_id", m.ID,
			"external_id", rec.externalID, "retry_in", wait, "err", err)
	}, d.opts.RecordTimer)
	if err == nil {
		d.guard.unrecorded.Delete(m.ID)
		return DispatchOutcome{Done: true}, nil
	}
	if ErrorCode(err) == EUNAVAILABLE {
		d.guard.unrecorded.Store(m.ID, rec)
		d.opts.Log.ErrorContext(ctx, "the provider accepted a message that could not be recorded; it is not sent again, its job records it later",
			"message_id", m.ID, "external_id", rec.externalID, "tries", tries, "err", err)
	}
	return DispatchOutcome{}, fmt.Errorf("record send of message %s: %w", m.ID, err)
}

// clockFunc is a Clock as backoff's clock.
type clockFunc func() time.Time

func (c clockFunc) Now() time.Time { return c() }
