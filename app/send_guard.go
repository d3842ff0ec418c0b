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

// A provider call whose answer Herald never read (it cut the call at
// SendTimeout, the connection broke after the request was written, or the
// process stopped mid-call) may have reached the provider: its outcome is
// unknown. Such a send is reconciled before anything is sent again. Herald
// waits for the provider's own confirmation (a receipt that echoes the
// message's id, see provider.Echoing), which settles the send as the
// provider's answer would have: Receipts.adopt. When none comes within the
// confirmation window (at once, for a provider that echoes nothing), the
// registry decides: an urgent event is sent again, the timeline saying
// "resent: no confirmation of the first attempt", and any other message
// fails with ReasonOutcomeUnknown, keeping its quota, for support to resend
// from the booking panel if the passenger did not get it. Never silently
// twice.

// Confirmation windows: how long Herald waits for a provider's
// confirmation of a send whose answer it never read. Meta posts a sent
// status within seconds of accepting a message; the window allows for a
// provider having a bad day. Urgent events (incidents, departure changes)
// wait less: a late notice is worth less than a second one.
const (
	DefaultConfirmWindow       = 5 * time.Minute
	DefaultUrgentConfirmWindow = time.Minute
)

// SendRecordGrace is the least a call found without an outcome by the
// claim (not one this process cut, which it settles itself) is left to
// its maker: that process may hold the provider's answer and still be
// recording it through a database outage (RecordSentRetryFor).
const SendRecordGrace = time.Minute

// ReasonOutcomeUnknown is the failed_reason of a message whose send may or
// may not have reached the provider, with no confirmation either way
// within the window: it is not sent again by itself.
const ReasonOutcomeUnknown = "outcome_unknown"

// SendMarker is a provider call of a message whose outcome is not recorded
// yet: made at At by worker process By, as attempt Attempt. UnknownUntil,
// once the call is known to have had no answer, is the end of the wait
// for the provider's confirmation. QuotaMonth, when set, is the month whose
// quota the call holds (ReserveQuota took it): the marker records the hold
// on the message in the same change.
type SendMarker struct {
	At           time.Time
	By           uuid.UUID
	Attempt      int
	UnknownUntil *time.Time
	QuotaMonth   *time.Time
}

// SendTx lists the statements of a send: its claim before the provider
// call, and the record of the call's outcome.
type SendTx interface {
	// EventReader resolves the tenant's events (LookupEvent).
	EventReader
	// The claim loads and plans the send.
	DispatchPlanTx
	// The record of a send makes its callbacks.
	CallbackEnqueueTx
	// The claim holds templates to the number's messaging limit.
	ReachTx
	// LockSend locks the message and says whether it is still QUEUED (one
	// cancelled since it was loaded, by a superseding event or the console,
	// is not sent); with optOut it also reads, under a share lock of the
	// contact's row, whether the contact opted out of the message's
	// channel, in the same statement.
	LockSend(ctx context.Context, tenantID, id uuid.UUID, optOut bool) (marker *SendMarker, quotaMonth *time.Time, queued, optedOut bool, err error)
	// ReserveQuota takes one of the month's quota (limit, or Unlimited)
	// and the message's cost from the month's budget of its channel, in
	// one conditional statement.
	ReserveQuota(ctx context.Context, tenantID, id uuid.UUID, ch Channel, month time.Time, limit int, cost *Money, held *time.Time) (QuotaTake, error)
	MarkSendStarted(ctx context.Context, tenantID, id uuid.UUID, m SendMarker) error
	ClearSendStarted(ctx context.Context, tenantID, id uuid.UUID) error
	// MarkSendUnknown records that the message's current call had no
	// answer: Herald waits until then for the provider's confirmation.
	MarkSendUnknown(ctx context.Context, tenantID, id uuid.UUID, until time.Time) error
	// ConfirmWindow is the tenant's confirmation window for the event
	// (its own, else the tenant's for every event); ok false when the
	// tenant set none (the defaults apply).
	ConfirmWindow(ctx context.Context, tenantID uuid.UUID, triggerEvent string) (window time.Duration, ok bool, err error)
	// RecordSent records the send (see SentResult).
	RecordSent(ctx context.Context, s SentRecord) (SentResult, error)
	CountAttempt(ctx context.Context, tenantID, id uuid.UUID) error
	InsertMessageEvent(ctx context.Context, e *MessageEvent) error
}

// RecordSentRetryFor bounds how long a send the provider accepted keeps
// trying to record that through a database outage before the job gives up
// (and leaves the message marked as possibly sent, see SendRecordGrace).
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

// holds reports whether this process has the provider's acceptance of the
// message still to record.
func (g *sendGuard) holds(id uuid.UUID) bool {
	_, ok := g.unrecorded.Load(id)
	return ok
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
	// budget is set when the month's budget refused the send.
	budget *QuotaTake
	// wait, without proceed: the outcome of an earlier call of the
	// message is unknown; hold off this long for its confirmation.
	wait time.Duration
	// unconfirmed: the earlier call's confirmation did not come in time,
	// and the message is not urgent: it fails ReasonOutcomeUnknown.
	unconfirmed *SendMarker
	// unrecorded: this process holds the provider's acceptance of the
	// message already; record it instead of calling again.
	unrecorded *acceptedSend
	// optedOut: the message is optional and its contact opted out of its
	// channel; it is not sent.
	optedOut bool
	// reachWait: the number's messaging limit holds the message this
	// long, for the reason reachDetail (reachCheck).
	reachWait   time.Duration
	reachDetail string
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
	s.message, s.tenant, s.account, s.credentialsRefused = m, st.Tenant, st.Account, st.CredentialsRefused
	if s.def, err = messageDef(ctx, tx, m); err != nil {
		return sendPlan{}, err
	}
	s.maxSMSParts = orDefault(st.MaxSMSParts, DefaultMaxSMSParts)
	if st.Branding != nil {
		s.branding = *st.Branding
	}
	s.askAck = !m.Test && (SafetyEvent(m.TriggerEvent) || st.AckMarked)
	now := d.Now()
	switch {
	case m.Status != MessageQueued || s.account == nil:
		return sendPlan{gone: true}, nil
	case m.SendUnknownUntil != nil && now.Before(*m.SendUnknownUntil) && !d.guard.holds(m.ID):
		// Waiting for the provider's confirmation of a send: nothing else
		// is decided meanwhile (no rate token, no expiry, no failure),
		// unless this process holds the answer to record.
		return sendPlan{wait: m.SendUnknownUntil.Sub(now), quotaOK: true}, nil
	case m.Expired(now):
		return sendPlan{expired: true}, nil
	case m.Deferred(now):
		return sendPlan{deferred: m.DeferredUntil.Sub(now)}, nil
	}
	if s.files, err = tx.MessageFiles(ctx, m.TenantID, m.ID, true); err != nil {
		return sendPlan{}, err
	}
	if r := filesRefusal(s.files); r != nil {
		return sendPlan{refusal: r}, nil
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
	prev, held, queued, optedOut, err := tx.LockSend(ctx, m.TenantID, m.ID, s.def.Optional())
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
		if held, err := d.reconcile(ctx, tx, s, plan, prev, now); err != nil || held {
			return err
		}
	}
	plan.quotaOK = true
	marker := SendMarker{At: now, By: d.guard.self(), Attempt: s.attempt}
	if plan.limit != Unlimited || m.EstimatedCost != nil {
		month := MonthOf(now)
		take, err := tx.ReserveQuota(ctx, m.TenantID, m.ID, m.Channel, month, plan.limit, m.EstimatedCost, held)
		if err != nil {
			return err
		}
		if plan.quotaOK, plan.used = take.OK, take.Used; !take.OK {
			if take.BudgetRefused {
				plan.budget = &take
			}
			return nil
		}
		marker.QuotaMonth = &month
	}
	if ok, err := d.reachCheck(ctx, tx, s, plan, now); err != nil || !ok {
		return err
	}
	plan.proceed = true
	return tx.MarkSendStarted(ctx, m.TenantID, m.ID, marker)
}

// reconcile decides about an earlier call of the message whose outcome is
// unknown (prev), in the claim's transaction. A call that nobody settled
// (its process stopped mid-call, or could not record the answer) gets its
// wait first: the confirmation window from when it was made, at least
// SendRecordGrace, said on the timeline. Until the wait ends the message
// is held (held true, plan.wait). Then the registry decides: a message
// that is not urgent fails (plan.unconfirmed); an urgent one is sent again
// now (held false), its timeline saying so and the unconfirmed attempt
// counted.
func (d *Dispatcher) reconcile(ctx context.Context, tx SendTx, s *send, plan *sendPlan, prev *SendMarker, now time.Time) (bool, error) {
	m := s.message
	plan.quotaOK = true
	until := prev.UnknownUntil
	if until == nil {
		window, err := d.confirmWindow(ctx, tx, s)
		if err != nil {
			return false, err
		}
		u := prev.At.Add(max(window, SendRecordGrace))
		until = &u
		if err := d.awaitConfirmation(ctx, tx, m, u, map[string]any{"previous_attempt": prev.Attempt,
			"note": fmt.Sprintf("the call to %s at %s left no outcome (the process that made it stopped, or could not record the answer); %s",
				s.account.Provider, prev.At.UTC().Format(time.RFC3339), waitingFor(s, window, u))}); err != nil {
			return false, err
		}
	}
	if now.Before(*until) {
		plan.wait = until.Sub(now)
		return true, nil
	}
	if !urgent(s) {
		plan.unconfirmed = prev
		return true, nil
	}
	if err := tx.CountAttempt(ctx, m.TenantID, m.ID); err != nil {
		return false, err
	}
	return false, tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: m.TenantID, MessageID: m.ID, Source: SourceDispatch, At: now,
		Detail: map[string]any{"outcome": "unknown", "previous_attempt": prev.Attempt, "resent": true,
			"note": fmt.Sprintf("resent: no confirmation of the first attempt (%s confirmed nothing by %s); %s is urgent",
				s.account.Provider, until.UTC().Format(time.RFC3339), m.TriggerEvent)}})
}

// awaitConfirmation records that the outcome of the message's current call
// is unknown and that Herald waits until then for the provider's
// confirmation, with its timeline entry (detail, and what it waits for).
func (d *Dispatcher) awaitConfirmation(ctx context.Context, tx SendTx, m *Message, until time.Time, detail map[string]any) error {
	if err := tx.MarkSendUnknown(ctx, m.TenantID, m.ID, until); err != nil {
		return err
	}
	detail["outcome"], detail["awaiting_confirmation_until"] = "unknown", until
	return tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: m.TenantID, MessageID: m.ID, Source: SourceDispatch, At: d.Now(), Detail: detail})
}

// waitingFor says what a message with an unknown send waits for until u.
func waitingFor(s *send, window time.Duration, u time.Time) string {
	if window == 0 {
		return fmt.Sprintf("%s confirms nothing, so the decision waits until %s only for the process that made it", s.account.Provider,
			u.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("waiting until %s for %s's confirmation before deciding", u.UTC().Format(time.RFC3339), s.account.Provider)
}

// confirmWindow is how long the message waits for its provider's
// confirmation of a send whose answer was never read: zero when the
// provider echoes nothing for the account, else the tenant's window for
// the event, else the default (shorter for urgent events).
func (d *Dispatcher) confirmWindow(ctx context.Context, tx SendTx, s *send) (time.Duration, error) {
	e, ok := d.providers[s.account.Provider].(provider.Echoing)
	if !ok || !e.Echoes(provider.Account{ID: s.account.ID, TenantID: s.account.TenantID, Provider: s.account.Provider, Config: s.account.Config}) {
		return 0, nil
	}
	window, set, err := tx.ConfirmWindow(ctx, s.message.TenantID, s.message.TriggerEvent)
	switch {
	case err != nil || set:
		return window, err
	case urgent(s):
		return DefaultUrgentConfirmWindow, nil
	}
	return DefaultConfirmWindow, nil
}

// urgent reports whether the message's event is urgent in its tenant's
// registry: an urgent message whose send is unconfirmed is sent again.
func urgent(s *send) bool { return s.def != nil && s.def.Urgent }

// messageDef is the registry entry of the message's event, nil for a
// message of no event in it (a console test, a STOP confirmation).
func messageDef(ctx context.Context, tx EventReader, m *Message) (*EventDef, error) {
	def, err := LookupEvent(ctx, tx, m.TenantID, m.TriggerEvent)
	if ErrorCode(err) == ENOTFOUND {
		return nil, nil
	}
	return def, err
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
			Detail:        sentDetail(s, rec),
			CallbackEvent: CallbackMessageSent,
		})
		if err != nil {
			return err
		}
		if !res.Moved {
			return d.sentTwice(ctx, tx, s, rec, res.Current)
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

// sentTwice notes an accepted send of a message that another attempt's
// record (a receipt confirming a send whose answer was never read) had
// moved on already: the recipient may have the message twice
// (duplicate_send_detected). A message cancelled meanwhile, or recorded
// with this very id, needs no note.
func (d *Dispatcher) sentTwice(ctx context.Context, tx SendTx, s *send, rec acceptedSend, current string) error {
	if current == "" || current == rec.externalID {
		return nil
	}
	m := s.message
	d.opts.Log.WarnContext(ctx, "a message reached the provider twice", "message_id", m.ID, "external_id", rec.externalID, "message_external_id", current)
	return tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: m.TenantID, MessageID: m.ID, Source: SourceDispatch, At: d.Now(),
		Detail: map[string]any{"provider": s.account.Provider, "external_id": rec.externalID, "attempt": rec.attempt, "duplicate_send_detected": true,
			"note": fmt.Sprintf("%s accepted this attempt (%s) after an earlier one (%s) was confirmed: the recipient may have the message twice",
				s.account.Provider, rec.externalID, current)}})
}

// clockFunc is a Clock as backoff's clock.
type clockFunc func() time.Time

func (c clockFunc) Now() time.Time { return c() }
