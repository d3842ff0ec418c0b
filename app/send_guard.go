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
// recorded keeps other worker processes from sending the message again:
// the process that made it may still hold the provider's answer and record
// it once the database is back. After that the call is taken for a
// crashed worker's, and the message is sent again (at least once).
const SendOutcomeHold = 2 * time.Minute

// SendMarker is a provider call of a message whose outcome is not recorded
// yet: made at At by worker process By, as attempt Attempt.
type SendMarker struct {
	At      time.Time
	By      uuid.UUID
	Attempt int
}

// unrecordedSend is a send the provider accepted that this process could
// not record in time; the next run of the message's job records it instead
// of calling the provider again.
type unrecordedSend struct {
	externalID string
	attempt    int
	took       time.Duration
	// finishJob is the dispatch job of an inline send, finished with the
	// record (zero: the running job completes through its CompleteFunc).
	finishJob int64
}

// sendGuard is the dispatcher's memory of its own provider calls: who it is
// (the marker's By) and which accepted sends it still has to record.
type sendGuard struct {
	once       sync.Once
	id         uuid.UUID
	unrecorded sync.Map // message id -> unrecordedSend
}

func (g *sendGuard) self() uuid.UUID {
	g.once.Do(func() { g.id = uuid.New() })
	return g.id
}

// sendPlan is what beginSend decided.
type sendPlan struct {
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
	unrecorded *unrecordedSend
	// optedOut: the message is optional and its contact opted out of its
	// channel; it is not sent.
	optedOut bool
	// gone: the message left the queue (it was cancelled) since it was
	// loaded; nothing is sent.
	gone bool
}

// beginSend runs the last steps before a provider call in one short
// transaction: it locks the message, reads what an earlier call left, takes
// the month's quota (limit Unlimited takes none) and marks the call as
// started.
//
// An optional message's claim also reads its contact's opt-outs, in the
// statement that locks the message, under a share lock of the contact's
// row: an opt-out (which updates that row) either commits before the claim,
// which then sees it and sends nothing, or waits until the claim has
// committed, the send being under way by then. So no optional message is
// claimed after an opt-out of its channel committed, however routing raced
// with it. Transactional messages take no such lock.
func (d *Dispatcher) beginSend(ctx context.Context, m *Message, limit int, p provider.Provider, attempt int) (sendPlan, error) {
	if u, ok := d.guard.unrecorded.Load(m.ID); ok {
		rec := u.(unrecordedSend)
		return sendPlan{unrecorded: &rec, quotaOK: true}, nil
	}
	now := d.Now()
	var plan sendPlan
	err := d.Store.InTenant(ctx, m.TenantID, func(tx DispatchTx) error {
		plan = sendPlan{}
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
		if prev != nil && prev.By != d.guard.self() && !idempotent(p) {
			// Another process called the provider and recorded nothing:
			// it may hold the answer and record it once it can.
			if until := prev.At.Add(SendOutcomeHold); now.Before(until) {
				plan.wait = until.Sub(now)
				plan.quotaOK = true
				return nil
			}
			d.Log.WarnContext(ctx, "a provider call of this message left no outcome; sending again",
				"message_id", m.ID, "previous_attempt", prev.Attempt, "previous_at", prev.At)
		}
		plan.quotaOK = true
		if limit != Unlimited {
			if plan.quotaOK, plan.used, err = tx.ReserveQuota(ctx, m.TenantID, m.ID, m.Channel, MonthOf(now), limit, held); err != nil || !plan.quotaOK {
				return err
			}
		}
		plan.proceed = true
		return tx.MarkSendStarted(ctx, m.TenantID, m.ID, SendMarker{At: now, By: d.guard.self(), Attempt: attempt})
	})
	return plan, err
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
	err := d.Store.InTenant(context.WithoutCancel(ctx), m.TenantID, func(tx DispatchTx) error {
		return tx.ClearSendStarted(ctx, m.TenantID, m.ID)
	})
	if err != nil {
		d.Log.WarnContext(ctx, "send marker not cleared", "message_id", m.ID, "err", err)
	}
}

// recordSent records a send the provider accepted, retrying through a
// short database outage (with backoff, for up to RecordSentRetryFor):
// sending again would give the recipient the message twice. The recording
// is idempotent: a message no longer QUEUED is left as it is. When the
// database stays away, the acceptance is kept in this process, and the
// next run of the job records it without calling the provider.
func (d *Dispatcher) recordSent(ctx context.Context, m *Message, acct *ChannelAccount, rec unrecordedSend, complete CompleteFunc) (DispatchOutcome, error) {
	// The job's own context may end (shutdown, timeout) while the answer
	// is in hand; recording it must not end with it.
	ctx = context.WithoutCancel(ctx)
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 100*time.Millisecond, 2*time.Second, RecordSentRetryFor
	b.Clock = clockFunc(d.Now)
	b.Reset()
	var out DispatchOutcome
	tries := 0
	err := backoff.RetryNotifyWithTimer(func() error {
		tries++
		var err error
		out, err = d.sent(ctx, m, acct, rec, complete)
		if err != nil && ErrorCode(err) != EUNAVAILABLE {
			return backoff.Permanent(err)
		}
		return err
	}, b, func(err error, wait time.Duration) {
		d.Log.WarnContext(ctx, "recording an accepted send failed; trying again", "message_id", m.ID,
			"external_id", rec.externalID, "retry_in", wait, "err", err)
	}, d.RecordTimer)
	if err == nil {
		d.guard.unrecorded.Delete(m.ID)
		return out, nil
	}
	if ErrorCode(err) == EUNAVAILABLE {
		d.guard.unrecorded.Store(m.ID, rec)
		d.Log.ErrorContext(ctx, "the provider accepted a message that could not be recorded; it is not sent again, its job records it later",
			"message_id", m.ID, "external_id", rec.externalID, "tries", tries, "err", err)
	}
	return DispatchOutcome{}, fmt.Errorf("record send of message %s: %w", m.ID, err)
}

// clockFunc is a Clock as backoff's clock.
type clockFunc func() time.Time

func (c clockFunc) Now() time.Time { return c() }
