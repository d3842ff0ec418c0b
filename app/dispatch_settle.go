package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// SettleTx lists the statements that settle a send that does not go out:
// a failure (continuing the fallback chain), an expiry, a suspended
// account.
type SettleTx interface {
	FallbackTx
	ReleaseQuota(ctx context.Context, tenantID, id uuid.UUID) error
	ClearSendStarted(ctx context.Context, tenantID, id uuid.UUID) error
	MarkFailed(ctx context.Context, tenantID, id uuid.UUID, from []string, reason, code string, at time.Time) (bool, error)
	// MarkExpired moves a QUEUED message to EXPIRED; false when it was
	// no longer QUEUED.
	MarkExpired(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (bool, error)
	InsertMessageEvent(ctx context.Context, e *MessageEvent) error
	SetAccountStatus(ctx context.Context, tenantID, id uuid.UUID, status, reason string, at time.Time) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// refusal settles a provider call that failed, by the error's class: a
// test reports it once, an account error suspends the account and fails
// over, a rate limit snoozes (slowing the account down), a permanent error
// fails over, a transient one retries until the attempts or the message's
// expiry run out.
func (d *Dispatcher) refusal(ctx context.Context, s *send, sendErr error) (DispatchOutcome, error) {
	m, acct := s.message, s.account
	pe := provider.Classify(sendErr)
	d.opts.Metrics.ProviderError(acct.Provider, pe.Code)
	var unknown *OutcomeUnknown
	switch {
	case m.Test:
		// A test reports what the provider said, once: it is not retried,
		// and an account error does not suspend an account being tried.
		return d.fail(ctx, s, ReasonProviderRejected, pe.Code, pe.Reason)
	case errors.As(sendErr, &unknown) && !idempotent(d.providers[acct.Provider]):
		return d.unknownOutcome(ctx, s, unknown)
	case pe.Account:
		// The account itself is broken (expired token, suspended by the
		// provider): flag it for the tenant, then fail like a suspension.
		d.suspend(ctx, acct, pe)
		return d.fail(ctx, s, ReasonChannelSuspended, pe.Code, pe.Reason)
	case pe.Class == provider.RateLimited:
		return d.rateLimited(ctx, s, pe)
	case pe.Class == provider.Permanent:
		return d.fail(ctx, s, ReasonProviderRejected, pe.Code, pe.Reason)
	case s.attempt >= s.maxAttempts:
		return d.fail(ctx, s, ReasonRetriesExhausted, pe.Code, pe.Reason)
	case d.opts.Backoff != nil && d.expiresBefore(m, d.opts.Backoff(s.attempt)):
		return d.expire(ctx, m, map[string]any{"attempt": s.attempt, "error_code": pe.Code, "error": pe.Reason,
			"note": "the next retry would come after the message's expiry"}, s.complete)
	default:
		d.refused(ctx, m, true, map[string]any{"attempt": s.attempt, "error_code": pe.Code, "error": pe.Reason, "will_retry": true})
		d.opts.Metrics.MessageOutcome(m.Channel, "retry")
		return DispatchOutcome{Retry: pe}, nil
	}
}

// unknownOutcome settles a call whose answer Herald never read: the
// provider may have the message, so it is not sent again at once. The
// call's marker stays, and the message waits for the provider's
// confirmation until the end of its window (none, for a provider that
// echoes nothing), its timeline saying so; its job then comes back, and
// the claim decides (reconcile) unless the confirmation settled the send
// first (Receipts.adopt). The attempt is counted when it is settled.
func (d *Dispatcher) unknownOutcome(ctx context.Context, s *send, u *OutcomeUnknown) (DispatchOutcome, error) {
	m := s.message
	ctx = context.WithoutCancel(ctx)
	now := d.Now()
	var until time.Time
	err := d.stores.Send.InTenant(ctx, m.TenantID, func(tx SendTx) error {
		window, err := d.confirmWindow(ctx, tx, s)
		if err != nil {
			return err
		}
		until = now.Add(window)
		note := fmt.Sprintf("no answer from %s after %s; waiting until %s for its confirmation before deciding",
			u.Provider, u.After, until.UTC().Format(time.RFC3339))
		if window == 0 {
			note = fmt.Sprintf("no answer from %s after %s, which confirms nothing: decided at once", u.Provider, u.After)
		}
		return d.awaitConfirmation(ctx, tx, m, until, map[string]any{"attempt": s.attempt, "error": u.Error(), "note": note})
	})
	if err != nil {
		// The marker stays: the claim finds the call unsettled and gives
		// it its wait (reconcile).
		d.opts.Log.WarnContext(ctx, "unknown outcome of a provider call not recorded", "message_id", m.ID, "err", err)
		until = now.Add(SendRecordGrace)
	}
	return d.snooze(m, "send_outcome_unknown", max(until.Sub(now), time.Second)), nil
}

// unconfirmed fails a message that is not urgent whose earlier send had no
// answer and no confirmation within its window: it may have reached the
// passenger, so it is neither sent again nor continued on its fallback
// chain, and it keeps its quota. The timeline and the failure callback
// say why; support can resend it from the booking panel.
func (d *Dispatcher) unconfirmed(ctx context.Context, s *send, prev *SendMarker) (DispatchOutcome, error) {
	m := s.message
	d.opts.Metrics.MessageOutcome(m.Channel, "failed")
	now := d.Now()
	detail := fmt.Sprintf("No answer from %s to the attempt at %s and no confirmation since: it may have reached the recipient, so it is not sent again by itself. Resend it from the booking panel if the recipient did not get it.",
		s.account.Provider, prev.At.UTC().Format(time.RFC3339))
	err := d.stores.Settle.InTenant(ctx, m.TenantID, func(tx SettleTx) error {
		if err := tx.ClearSendStarted(ctx, m.TenantID, m.ID); err != nil {
			return err
		}
		ok, err := tx.MarkFailed(ctx, m.TenantID, m.ID, []string{MessageQueued}, ReasonOutcomeUnknown, ReasonOutcomeUnknown, now)
		if err != nil || !ok {
			return err
		}
		from, to := MessageQueued, MessageFailed
		if err := tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: m.TenantID, MessageID: m.ID, FromStatus: &from, ToStatus: &to,
			Source: SourceDispatch, At: now, Detail: map[string]any{"reason": ReasonOutcomeUnknown, "previous_attempt": prev.Attempt, "error": detail},
		}); err != nil {
			return err
		}
		if err := d.opts.Callbacks.Notify(ctx, tx, m.TenantID, m.ID, CallbackMessageFailed, CallbackNote{ErrorMessage: detail}); err != nil {
			return err
		}
		return s.complete(ctx, tx)
	})
	if err != nil {
		return DispatchOutcome{}, err
	}
	return DispatchOutcome{Done: true}, nil
}

// rateLimited follows a provider's rate limit: its hint is followed, and
// spread, since every message answered 429 at once must not come back at
// once. The account's bucket slows down for every worker, so that the
// sends during the storm stay near the rate the provider takes.
func (d *Dispatcher) rateLimited(ctx context.Context, s *send, pe *provider.Error) (DispatchOutcome, error) {
	m, acct := s.message, s.account
	wait := pe.RetryAfter
	if wait <= 0 {
		wait = DefaultRateLimitWait
	}
	if err := d.opts.Limiter.Throttled(context.WithoutCancel(ctx), acct, wait); err != nil {
		d.opts.Log.WarnContext(ctx, "rate limit not recorded on the account's bucket", "channel_account_id", acct.ID, "err", err)
	}
	snooze := wait + d.jitter(wait/2)
	if d.expiresBefore(m, snooze) {
		return d.expire(ctx, m, map[string]any{"rate_limited": pe.Code, "note": "the provider's wait outlasts the message's expiry"}, s.complete)
	}
	d.refused(ctx, m, false, map[string]any{"rate_limited": pe.Code, "retry_after_seconds": wait.Seconds(), "snooze_seconds": snooze.Seconds()})
	return d.snooze(m, "provider_rate_limited", snooze), nil
}

// fail marks the message FAILED and, when its chain has another channel,
// queues that channel's message, all with the job's completion.
func (d *Dispatcher) fail(ctx context.Context, s *send, reason, code, detail string) (DispatchOutcome, error) {
	m := s.message
	d.opts.Metrics.MessageOutcome(m.Channel, "failed")
	now := d.Now()
	err := d.stores.Settle.InTenant(ctx, m.TenantID, func(tx SettleTx) error {
		chain, err := d.router.fallback(ctx, tx, m)
		if err != nil {
			return err
		}
		finalReason := reason
		if chain.Job != nil {
			finalReason = ReasonFallbackTriggered + chain.Channel
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
			Source: SourceDispatch, At: now, Detail: chain.detail(map[string]any{"reason": reason, "error_code": code, "error": detail}),
		}); err != nil {
			return err
		}
		if err := d.continueChain(ctx, tx, m, detail, chain.Job, chain.Channel); err != nil {
			return err
		}
		return s.complete(ctx, tx)
	})
	if err != nil {
		return DispatchOutcome{}, err
	}
	return DispatchOutcome{Done: true}, nil
}

// continueChain makes the callbacks of a message that failed at send time
// and queues the next channel's message, when there is one.
func (d *Dispatcher) continueChain(ctx context.Context, tx SettleTx, m *Message, detail string, next *DispatchJob, nextChannel string) error {
	if err := d.opts.Callbacks.Notify(ctx, tx, m.TenantID, m.ID, CallbackMessageFailed, CallbackNote{ErrorMessage: detail}); err != nil {
		return err
	}
	if next == nil {
		return nil
	}
	if err := d.opts.Callbacks.Notify(ctx, tx, m.TenantID, m.ID, CallbackMessageFallback,
		CallbackNote{FallbackMessageID: next.MessageID, FallbackChannel: nextChannel}); err != nil {
		return err
	}
	return d.queue.EnqueueDispatch(ctx, tx, *next)
}

// note adds a timeline entry without changing the status (a retry, a snooze).
func (d *Dispatcher) note(ctx context.Context, m *Message, detail map[string]any) {
	err := d.stores.Send.InTenant(ctx, m.TenantID, func(tx SendTx) error {
		return tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: m.TenantID, MessageID: m.ID, Source: SourceDispatch, Detail: detail, At: d.Now()})
	})
	if err != nil {
		d.opts.Log.WarnContext(ctx, "timeline entry not written", "message_id", m.ID, "err", err)
	}
}

// refused records a provider call that failed without a final outcome:
// its timeline entry, the end of its send marker and, for a call that will
// be retried (countAttempt), the attempt, so that messages.attempts shows
// every call. A snooze for a rate limit uses no attempt.
func (d *Dispatcher) refused(ctx context.Context, m *Message, countAttempt bool, detail map[string]any) {
	d.endCall(ctx, m, countAttempt, true, detail)
}

// endCall records the end of a provider call with no final outcome: its
// timeline entry, its attempt (countAttempt) and, unless the provider may
// still have the message (clearMarker false), the end of its send marker.
func (d *Dispatcher) endCall(ctx context.Context, m *Message, countAttempt, clearMarker bool, detail map[string]any) {
	ctx = context.WithoutCancel(ctx)
	err := d.stores.Send.InTenant(ctx, m.TenantID, func(tx SendTx) error {
		if countAttempt {
			if err := tx.CountAttempt(ctx, m.TenantID, m.ID); err != nil {
				return err
			}
		}
		if clearMarker {
			if err := tx.ClearSendStarted(ctx, m.TenantID, m.ID); err != nil {
				return err
			}
		}
		return tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: m.TenantID, MessageID: m.ID, Source: SourceDispatch, Detail: detail, At: d.Now()})
	})
	if err != nil {
		d.opts.Log.WarnContext(ctx, "provider call's end not recorded", "message_id", m.ID, "err", err)
	}
}

// suspend flags a channel account the provider refused to work with, with
// the provider's reason, so the tenant sees what to fix. Routing stops
// choosing it; queued messages fail over to their fallback channel.
func (d *Dispatcher) suspend(ctx context.Context, a *ChannelAccount, pe *provider.Error) {
	reason := "The provider refused the account: " + pe.Reason + " (" + pe.Code + ")"
	err := d.stores.Settle.InTenant(ctx, a.TenantID, func(tx SettleTx) error {
		if err := tx.SetAccountStatus(ctx, a.TenantID, a.ID, AccountSuspended, reason, d.Now()); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, SystemActor.Entry(&a.TenantID, "channel_account.status", "channel_account", a.ID.String(),
			map[string]any{"status": AccountSuspended, "reason": reason, "provider_code": pe.Code}))
	})
	if err != nil {
		d.opts.Log.ErrorContext(ctx, "could not suspend channel account", "channel_account_id", a.ID, "err", err)
		return
	}
	d.opts.Log.WarnContext(ctx, "channel account suspended after a provider account error", "channel_account_id", a.ID, "code", pe.Code)
}
