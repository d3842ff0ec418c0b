package app

import (
	"context"
	"sync"
	"time"
)

// Inline dispatch: the route job sends each new message's first attempt
// itself, right after the transaction that stored the message commits,
// instead of handing it to a dispatch job through the queue. That saves the
// dispatch job's fetch, the read of the message back and the transaction
// that claims the send: the route transaction already has the message, its
// tenant and its account in hand, reserves the quota and marks the call as
// started.
//
// Nothing is lost that way: the dispatch job is still inserted in the route
// transaction, scheduled Lease ahead. A send that finishes completes that
// job in the transaction recording the outcome; a worker that dies mid-way
// leaves the job, which runs when the lease ends, exactly as River runs a
// crashed worker's job again once it counts as stuck. The lease outlasts
// the longest run of a send (the job timeout) plus the time a provider's
// acceptance is retried into the database, so the job never runs while the
// inline send may still be in flight.

// InlineOptions turn inline dispatch on for RouteAndSend.
type InlineOptions struct {
	// Lease is how far ahead the dispatch job of an inline send is
	// scheduled; zero turns inline dispatch off.
	Lease time.Duration
	// MaxAttempts is the dispatch job's attempts in all (the inline send is
	// the first).
	MaxAttempts int
	// Backoff is the wait after a failed attempt (1-based) before the next,
	// the dispatch jobs' own retry schedule.
	Backoff func(attempt int) time.Duration
}

// InlineJobTx lists the statements that settle the dispatch job of an
// inline send: it is finished with the send's outcome, or moved to when
// the next attempt is due.
type InlineJobTx interface {
	// FinishPlannedJob completes the job unless a worker has started it.
	FinishPlannedJob(ctx context.Context, jobID int64) error
	// ReschedulePlannedJob makes the job due at at, with attempt attempts
	// counted, unless a worker has started it.
	ReschedulePlannedJob(ctx context.Context, jobID int64, at time.Time, attempt int) error
}

// inlineSend is a message stored by the route transaction whose first
// attempt the route job makes itself.
type inlineSend struct {
	message *Message
	tenant  *Tenant
	account *ChannelAccount
	jobID   int64
}

// inlineParallel bounds the concurrent sends of one route job (an event for
// many recipients).
const inlineParallel = 8

// RouteAndSend routes the event like Route and then, with opts.Lease set,
// sends the first attempt of each new message itself. A send that cannot
// be made now (rate limit, open breaker, retry) goes back to its dispatch
// job, due when the next attempt is.
func (r *Router) RouteAndSend(ctx context.Context, job RouteJob, d *Dispatcher, opts InlineOptions) error {
	if d == nil || opts.Lease <= 0 {
		return r.Route(ctx, job)
	}
	sends, err := r.route(ctx, job, d, opts.Lease)
	if err != nil || len(sends) == 0 {
		return err
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, inlineParallel)
	for _, s := range sends {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			d.sendInline(ctx, s, opts)
		}()
	}
	wg.Wait()
	return nil
}

// claimInline prepares a message the route transaction is about to store
// for an inline send: the call is marked as started by this process.
func (d *Dispatcher) claimInline(m *Message, at time.Time) {
	m.Claim = &SendMarker{At: at, By: d.guard.self(), Attempt: 1}
}

// reserveInline takes the quota of an inline send in the route transaction,
// once the message is stored. When the quota refuses, the claim is undone
// and the dispatch job (due now) fails the message as every send does.
func (d *Dispatcher) reserveInline(ctx context.Context, tx RouteTx, tenant *Tenant, m *Message, at time.Time) (bool, error) {
	limit := d.quota(tenant.Plan, m.Channel)
	if limit == Unlimited {
		return true, nil
	}
	ok, _, err := tx.ReserveQuota(ctx, m.TenantID, m.ID, m.Channel, MonthOf(at), limit, nil)
	if err != nil || ok {
		return ok, err
	}
	m.Claim = nil
	return false, tx.ClearSendStarted(ctx, m.TenantID, m.ID)
}

// inlineable tells whether a message's first attempt may be sent inline:
// WhatsApp through Meta plans its template (and the 24-hour window) in the
// dispatch job's own transaction, so it goes through the queue, as does a
// message that waits for quiet hours to end.
func inlineable(m *Message, acct *ChannelAccount) bool {
	return m.Status == MessageQueued && m.DeferredUntil == nil && acct != nil && acct.Status == AccountActive &&
		!(m.Channel == WhatsApp && acct.Provider == "meta") &&
		// An optional message is sent by its dispatch job, whose claim
		// reads the contact's opt-outs under a row lock (see beginSend).
		!OptionalEvent(m.TriggerEvent)
}

// sendInline makes the first attempt of a claimed message and settles its
// dispatch job with the outcome.
func (d *Dispatcher) sendInline(ctx context.Context, s inlineSend, opts InlineOptions) {
	jobID := s.jobID
	complete := func(ctx context.Context, tx Tx) error {
		return tx.(InlineJobTx).FinishPlannedJob(ctx, jobID)
	}
	out, err := d.deliver(ctx, delivery{message: s.message, account: s.account, tenant: s.tenant,
		attempt: 1, maxAttempts: opts.MaxAttempts, claimed: true, inlineJob: jobID}, complete)
	var at time.Time
	attempt := 0
	switch {
	case err != nil:
		// The job stays scheduled at the end of its lease and tries again
		// then (a database outage, most likely).
		d.Log.WarnContext(ctx, "inline send failed; its dispatch job will try again", "message_id", s.message.ID, "err", err)
		return
	case out.Done:
		return
	case out.Snooze > 0:
		at = time.Now().Add(out.Snooze)
	default:
		attempt = 1
		at = time.Now().Add(opts.Backoff(1))
	}
	err = d.Store.InTenant(context.WithoutCancel(ctx), s.message.TenantID, func(tx DispatchTx) error {
		// No call of the message is in flight any more.
		if err := tx.ClearSendStarted(ctx, s.message.TenantID, s.message.ID); err != nil {
			return err
		}
		return tx.ReschedulePlannedJob(ctx, jobID, at, attempt)
	})
	if err != nil {
		d.Log.WarnContext(ctx, "inline send's next attempt not scheduled; its dispatch job will try at the end of its lease",
			"message_id", s.message.ID, "err", err)
	}
}
