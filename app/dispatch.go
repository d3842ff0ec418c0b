package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http/httptrace"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/cenkalti/backoff/v4"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

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
// without using an attempt. RateLimiter implements it.
type Gate interface {
	// Wait takes a token of the account's rate through tokens (the claim's
	// transaction, so that a claim holds no second connection and a claim
	// rolled back gives its token back), or returns how long to wait.
	Wait(ctx context.Context, tokens TokenTaker, account *ChannelAccount) (time.Duration, error)
	// Throttled tells the gate that the provider refused a send of the
	// account for its rate, asking to wait retryAfter: the account's sends
	// slow down, in every worker process.
	Throttled(ctx context.Context, account *ChannelAccount, retryAfter time.Duration) error
}

// CircuitBreaker wraps a provider call of an account: while the account's
// provider keeps failing, it makes no call and returns how long to wait.
// Breakers implements it.
type CircuitBreaker interface {
	Send(ctx context.Context, account *ChannelAccount, send func() (string, error)) (externalID string, wait time.Duration, err error)
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

// CompleteFunc finishes the dispatch job inside the dispatcher's transaction,
// so that the message's new status and the job's completion commit together.
type CompleteFunc func(ctx context.Context, tx Tx) error

// DispatchStores are the transactions the dispatcher runs, one interface
// per step: the send itself (its claim and its record), and settling a
// send that does not go out.
type DispatchStores struct {
	Send   Store[SendTx]
	Settle Store[SettleTx]
}

// DispatchPlanTx lists the statements that load a message for its send and
// plan a WhatsApp message's form (free text or Meta template); the claim
// of a send runs them.
type DispatchPlanTx interface {
	Tx
	WhatsAppTx
	TokenTaker
	MessageForDispatch(ctx context.Context, tenantID, id uuid.UUID) (*DispatchState, error)
	TemplateByID(ctx context.Context, tenantID, id uuid.UUID) (*Template, error)
	EventByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Event, error)
	ContactByID(ctx context.Context, tenantID, id uuid.UUID) (*Contact, error)
	FileTx
}

// DispatcherOptions are the dispatcher's optional parts. The zero value of
// each field is its documented default.
type DispatcherOptions struct {
	// Quotas are the plans' monthly limits per channel; nil: DefaultQuotas.
	Quotas map[string]map[Channel]int
	// Limiter holds sends to the account's rate; nil: no rate limit.
	Limiter Gate
	// Breakers stop calls to a provider that keeps failing; nil: every
	// call is made.
	Breakers CircuitBreaker
	// Callbacks makes the status callbacks of sends and failures; nil:
	// none.
	Callbacks *Callbacks
	// Unsubscribe makes the one-click unsubscribe links of optional
	// e-mails; nil: sent without.
	Unsubscribe *UnsubscribeLinks
	// Acks makes the acknowledgement links of SMS and e-mails that ask
	// for acknowledgement; nil: sent without.
	Acks *AckLinks
	// Backoff is the dispatch jobs' retry schedule, the wait after a failed
	// attempt (1-based): a retry that would come after the message's expiry
	// expires it instead. Nil: retries never expire a message.
	Backoff func(attempt int) time.Duration
	// Metrics counts outcomes; nil: counted nowhere.
	Metrics Metrics
	// Credentials watches the server's own provider credentials: it hears
	// of every send they had refused and of the next one accepted; nil:
	// nobody does.
	Credentials *ServerCredentials
	// Files makes the short links of a message's files, which WhatsApp
	// fetches its document from and which carry the files Meta does not
	// take; nil: no links (such files are not sent, and the timeline
	// says so).
	Files *FileLinks
	// Fetcher fetches the files given by URL; nil: such files cannot be
	// sent (their messages fail attachment_unavailable).
	Fetcher FileFetcher
	// FetchTimeout bounds the fetching of one message's files;
	// zero: DefaultFetchTimeout.
	FetchTimeout time.Duration
	// Now is the clock; nil: time.Now.
	Now Clock
	// Log is where the dispatcher reports; nil: nowhere.
	Log *slog.Logger
	// Jitter returns a random wait in [0, n) that spreads snoozes; nil:
	// math/rand. Tests make it deterministic.
	Jitter func(n time.Duration) time.Duration
	// RecordTimer paces the retries of recording an accepted send; nil:
	// real timers. Tests move an injected clock instead.
	RecordTimer backoff.Timer
	// SendTimeout bounds each provider call on its own (callContext);
	// zero: DefaultSendTimeout.
	SendTimeout time.Duration
	// CallTimer runs f once d has passed, unless the returned stop is
	// called first: it ends a provider call at SendTimeout. Nil:
	// time.AfterFunc. Tests end a call when the fake provider has it.
	CallTimer func(d time.Duration, f func()) (stop func() bool)
}

// withDefaults fills every unset option with its default.
func (o DispatcherOptions) withDefaults() DispatcherOptions {
	if o.Quotas == nil {
		o.Quotas = DefaultQuotas
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = DefaultSendTimeout
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.CallTimer == nil {
		o.CallTimer = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	if o.Limiter == nil {
		o.Limiter = noLimit{}
	}
	if o.Breakers == nil {
		o.Breakers = noBreaker{}
	}
	if o.Metrics == nil {
		o.Metrics = nopMetrics{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Jitter == nil {
		o.Jitter = func(n time.Duration) time.Duration { return rand.N(n) }
	}
	return o
}

// Dispatcher sends one queued message through its channel account's
// provider: the dispatch job's work (dispatch jobs are the one way a
// message is sent).
type Dispatcher struct {
	stores    DispatchStores
	queue     Queue
	router    *Router
	accounts  *Accounts
	providers provider.Set
	opts      DispatcherOptions
	guard     sendGuard
}

// NewDispatcher returns a dispatcher that sends through providers with the
// accounts' secrets, continues fallback chains with router and queue, and
// has opts's optional parts.
func NewDispatcher(stores DispatchStores, queue Queue, router *Router, accounts *Accounts, providers provider.Set, opts DispatcherOptions) *Dispatcher {
	return &Dispatcher{stores: stores, queue: queue, router: router, accounts: accounts, providers: providers, opts: opts.withDefaults()}
}

// Now is the dispatcher's clock.
func (d *Dispatcher) Now() time.Time { return d.opts.Now() }

// send is one attempt at sending a message, with what it needs.
type send struct {
	message    *Message
	account    *ChannelAccount
	tenant     *Tenant
	waTemplate *provider.WhatsAppTemplate
	waRefusal  string
	// files are the message's files, with their bytes.
	files []*Attachment
	// notSent are the files the call could not carry (fitFiles).
	notSent []notSentFile
	attempt int
	// maxAttempts is the job's attempts in all: the last one fails the
	// message instead of retrying.
	maxAttempts int
	complete    CompleteFunc
	// credentialsRefused: the account's sends were refused for the
	// server's own credentials, as the claim read; an accepted send ends
	// that.
	credentialsRefused bool
	// maxSMSParts is the tenant's limit of an SMS's parts.
	maxSMSParts int
	// branding is the tenant's e-mail branding (empty: the neutral
	// layout).
	branding Branding
	// askAck: the message asks its passenger to acknowledge it.
	askAck bool
	// def is the registry entry of the message's event, nil for none.
	def *EventDef
}

// Dispatch runs the dispatch steps in order: the claim (one transaction
// that loads and plans the send, checks its time, its account and its
// rate, takes its quota and marks the call started), the provider call
// behind the breaker, and the recording of its outcome.
func (d *Dispatcher) Dispatch(ctx context.Context, job DispatchJob, attempt, maxAttempts int, complete CompleteFunc) (DispatchOutcome, error) {
	s := &send{attempt: attempt, maxAttempts: maxAttempts, complete: complete}
	if out, fetched, err := d.fetchFiles(ctx, job, attempt, maxAttempts); fetched || err != nil {
		return out, err
	}
	var plan sendPlan
	err := d.stores.Send.InTenant(ctx, job.TenantID, func(tx SendTx) (err error) {
		plan, err = d.claim(ctx, tx, job, s)
		return err
	})
	if err != nil {
		return DispatchOutcome{}, err
	}
	if out, stop, err := d.followPlan(ctx, s, plan); stop {
		return out, err
	}
	m := s.message
	start := d.Now()
	externalID, wait, sendErr := d.call(ctx, s, plan.provider, plan.secrets)
	if wait > 0 {
		d.endSend(ctx, m)
		return d.snooze(m, "breaker_open", wait), nil
	}
	if sendErr != nil {
		return d.refusal(ctx, s, sendErr)
	}
	d.opts.Metrics.DispatchLatency(m.Channel, d.Now().Sub(m.QueuedAt))
	d.opts.Metrics.MessageOutcome(m.Channel, "sent")
	return d.recordSent(ctx, s, acceptedSend{externalID: externalID, attempt: s.attempt, took: d.Now().Sub(start)})
}

// gate tells why a loaded message may not be sent now, if anything does:
// an account that is not ACTIVE, or a WhatsApp text Meta would refuse (a
// failure: reason, code and detail), or an account over its rate (wait).
func (d *Dispatcher) gate(ctx context.Context, tx DispatchPlanTx, s *send) (refusal *sendRefusal, wait time.Duration, err error) {
	m, acct := s.message, s.account
	// A test may try a PENDING account: nothing else is routed to it.
	if acct.Status != AccountActive && !(m.Test && acct.Status == AccountPending) {
		reason := "The channel account is " + acct.Status + "."
		if acct.SuspendedReason != nil {
			reason += " " + *acct.SuspendedReason
		}
		return &sendRefusal{ReasonChannelSuspended, "channel_suspended", reason}, 0, nil
	}
	if s.waRefusal != "" {
		// Meta would refuse free-form text outside the window (131047):
		// fail over now instead of spending a request on it.
		return &sendRefusal{ReasonWhatsAppTemplateRequired, ReasonWhatsAppTemplateRequired, s.waRefusal}, 0, nil
	}
	if m.Channel == SMS && m.SMSParts != nil && *m.SMSParts > s.maxSMSParts {
		// The text rendered longer than the template's sample (a long
		// name, a long list): it is not sent at a cost nobody agreed to.
		c := SMSCount{Parts: *m.SMSParts, Encoding: deref(m.SMSEncoding), Characters: utf8.RuneCountInString(m.Body)}
		return &sendRefusal{ReasonSMSTooLong, ReasonSMSTooLong, fmt.Sprintf(
			"The SMS text is %s long (%s, %s); this tenant's limit is %s, so it is not sent.",
			plural(c.Parts, "part"), plural(c.Characters, "character"), EncodingLabel(c.Encoding), plural(s.maxSMSParts, "part"))}, 0, nil
	}
	if _, ok := d.providers[acct.Provider]; !ok {
		return &sendRefusal{ReasonProviderRejected, "provider_unavailable", "Provider " + acct.Provider + " is not configured on this server."}, 0, nil
	}
	wait, err = d.opts.Limiter.Wait(ctx, tx, acct)
	return nil, wait, err
}

// sendRefusal is a send Herald refuses itself: the message fails with
// the reason and code, detail on its timeline.
type sendRefusal struct{ reason, code, detail string }

// followPlan acts on what the claim found, unless the call is to be made
// (stop false).
func (d *Dispatcher) followPlan(ctx context.Context, s *send, plan sendPlan) (DispatchOutcome, bool, error) {
	m := s.message
	var out DispatchOutcome
	var err error
	switch {
	case plan.gone:
		out = DispatchOutcome{Done: true}
	case plan.expired:
		out, err = d.expire(ctx, m, map[string]any{"note": "past its expiry before it was sent"}, s.complete)
	case plan.refusal != nil:
		out, err = d.fail(ctx, s, plan.refusal.reason, plan.refusal.code, plan.refusal.detail)
	case plan.deferred > 0:
		out = DispatchOutcome{Snooze: plan.deferred}
	case plan.rateWait > 0:
		out = d.snooze(m, "rate_limit", plan.rateWait)
	case plan.unrecorded != nil:
		// This process has the provider's acceptance from an earlier run
		// that could not record it: record it, do not send again.
		out, err = d.recordSent(ctx, s, *plan.unrecorded)
	case plan.optedOut:
		out, err = d.fail(ctx, s, ReasonOptedOut, ReasonOptedOut,
			fmt.Sprintf("The contact opted out of %s after the message was queued; %s is optional, so it is not sent.", m.Channel, m.TriggerEvent))
	case plan.budget != nil:
		out, err = d.fail(ctx, s, ReasonBudgetExceeded, ReasonBudgetExceeded,
			fmt.Sprintf("This %s message costs about %s; the tenant's monthly %s budget is %s and %s of it is spent.", m.Channel,
				costText(m.EstimatedCost), m.Channel, plan.budget.Budget.String(), plan.budget.Spent.String()))
	case !plan.quotaOK:
		out, err = d.fail(ctx, s, ReasonQuotaExceeded, "quota_exceeded",
			fmt.Sprintf("The %s plan allows %d %s messages a month; %d were sent.", s.tenant.Plan, plan.limit, m.Channel, plan.used))
	case plan.unconfirmed != nil:
		out, err = d.unconfirmed(ctx, s, plan.unconfirmed)
	case plan.reachWait > 0:
		out, err = d.awaitReach(ctx, s, plan)
	case !plan.proceed:
		out = d.snooze(m, "send_outcome_unknown", plan.wait)
	default:
		return DispatchOutcome{}, false, nil
	}
	return out, true, err
}

// call makes the provider call through the account's breaker: the message
// as the plan made it (free text, or its Meta template), sent again as the
// template when Meta says the window closed. A positive wait means the
// breaker made no call.
func (d *Dispatcher) call(ctx context.Context, s *send, p provider.Provider, secrets map[string]string) (string, time.Duration, error) {
	m, acct := s.message, s.account
	out := provider.Outbound{
		MessageID: m.ID, TenantID: m.TenantID, Channel: string(m.Channel), To: m.ToAddress,
		Subject: m.Subject, Body: m.Body, Attempt: s.attempt, Template: s.waTemplate,
		Account:     provider.Account{ID: acct.ID, TenantID: acct.TenantID, Provider: acct.Provider, Config: acct.Config, Secrets: secrets},
		Attachments: d.outboundFiles(s.files),
	}
	s.notSent = d.fitFiles(m, acct, &out)
	if m.Channel == Email && m.ContactID != nil && d.opts.Unsubscribe != nil && s.def.Optional() {
		out.UnsubscribeURL = d.opts.Unsubscribe.URL(UnsubscribeTarget{TenantID: m.TenantID, ContactID: *m.ContactID, MessageID: m.ID})
	}
	body := d.withAckLink(s, &out)
	if m.Channel == Email {
		// Every e-mail leaves in the tenant's layout, wrapped here at the
		// send so that the stored body stays the content (which the console
		// shows and a resend renders again) and the unsubscribe link can be
		// in the footer.
		f := EmailFrame{Branding: s.branding, TenantName: s.tenant.Name, UnsubscribeURL: out.UnsubscribeURL}
		if m.Locale != nil {
			f.Locale = *m.Locale
		}
		out.Body, out.SenderName = EmailLayout(f, m.Subject, body), s.branding.SenderName
	}
	// Every call the breaker lets through is watched, its probes
	// included, whose failures never reach refusal.
	externalID, wait, err := d.opts.Breakers.Send(ctx, acct, func() (string, error) {
		id, err := d.send(ctx, p, out)
		d.watchCredentials(ctx, s, err)
		return id, err
	})
	if wait > 0 {
		return "", wait, nil
	}
	externalID, err = d.retryAsTemplate(ctx, p, out, s, externalID, err)
	return externalID, 0, err
}

// send makes one provider call in a context of its own (callContext). A
// call that failed after its request was written and before an answer was
// read (Herald cut it, or the connection broke) has an unknown outcome:
// the provider may have the message. So has a call Herald cut that made
// no HTTP request it could see. A failure before the request was written
// is an ordinary one: the provider has nothing.
func (d *Dispatcher) send(job context.Context, p provider.Provider, out provider.Outbound) (string, error) {
	ctx, cancel := d.callContext(job)
	defer cancel()
	var w wire
	start := d.Now()
	id, err := p.Send(httptrace.WithClientTrace(ctx, w.trace()), out)
	if err != nil && w.unknown(ctx.Err() != nil) {
		return id, &OutcomeUnknown{Provider: out.Account.Provider, After: d.Now().Sub(start).Round(time.Millisecond), Err: err}
	}
	return id, err
}

// wire is what a provider call's HTTP requests got to, as net/http traced
// them.
type wire struct {
	traced, wrote, answered atomic.Bool
}

func (w *wire) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GetConn:              func(string) { w.traced.Store(true) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { w.wrote.Store(true) },
		GotFirstResponseByte: func() { w.answered.Store(true) },
	}
}

// unknown reports whether a call that failed may have reached the
// provider: a request was written and no answer was read (or its reading
// was cut), or Herald cut a call it saw no request of.
func (w *wire) unknown(cut bool) bool {
	if !w.traced.Load() {
		return cut
	}
	return w.wrote.Load() && (!w.answered.Load() || cut)
}

// callContext is the context of one provider call: SendTimeout of its own,
// whatever the job spent before it (the claim, locks, database waits), so
// that no call starts with only a sliver of time left. The job's deadline
// does not shorten it (the job's run time covers its calls, see
// DispatchTimeout); a hard stop of the worker (the job's context cancelled
// for another cause) still ends it.
func (d *Dispatcher) callContext(job context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(job))
	stopTimer := d.opts.CallTimer(d.opts.SendTimeout, func() { cancel(context.DeadlineExceeded) })
	stop := context.AfterFunc(job, func() {
		if cause := context.Cause(job); !errors.Is(cause, context.DeadlineExceeded) {
			cancel(cause)
		}
	})
	return ctx, func() { stop(); stopTimer(); cancel(nil) }
}

// OutcomeUnknown is a provider call that Herald cut before it read the
// answer: the request may have reached the provider.
type OutcomeUnknown struct {
	Provider string
	After    time.Duration
	Err      error
}

func (u *OutcomeUnknown) Error() string {
	return fmt.Sprintf("no answer from %s after %s: %v", u.Provider, u.After, u.Err)
}

func (u *OutcomeUnknown) Unwrap() error { return u.Err }

// snooze puts the job back for wait without using an attempt.
func (d *Dispatcher) snooze(m *Message, reason string, wait time.Duration) DispatchOutcome {
	d.opts.Metrics.Snooze(reason)
	d.opts.Metrics.MessageOutcome(m.Channel, "snoozed")
	return DispatchOutcome{Snooze: wait}
}

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

// QuotaTake is what ReserveQuota did: whether the message holds the
// month's quota and budget now, the month's use, and, when the budget
// refused it, the budget and what is spent of it.
type QuotaTake struct {
	OK   bool
	Used int
	// BudgetRefused: the quota had room, the budget did not.
	BudgetRefused bool
	Budget, Spent Money
}

// costText is an estimated cost as a refusal states it.
func costText(c *Money) string {
	if c == nil {
		return "nothing"
	}
	return c.String()
}

// MonthOf is the first instant of t's calendar month in UTC: quotas count
// per UTC month.
func MonthOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// jitter returns a random wait in [0, spread).
func (d *Dispatcher) jitter(spread time.Duration) time.Duration {
	if spread <= 0 {
		return 0
	}
	return d.opts.Jitter(spread)
}

// noLimit is the Gate of a dispatcher without a rate limit.
type noLimit struct{}

func (noLimit) Wait(context.Context, TokenTaker, *ChannelAccount) (time.Duration, error) {
	return 0, nil
}
func (noLimit) Throttled(context.Context, *ChannelAccount, time.Duration) error { return nil }
func (noBreaker) Send(_ context.Context, _ *ChannelAccount, send func() (string, error)) (string, time.Duration, error) {
	id, err := send()
	return id, 0, err
}

// noBreaker is the CircuitBreaker of a dispatcher without breakers.
type noBreaker struct{}
