package app

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// Receipts reach messages in two steps (receipt_inbox.go): a webhook
// verifies the provider's signature and stores the receipts in the inbox
// (Accept), and the receipt applier applies them (ApplyInbox), one tenant's
// receipts per transaction. Every receipt, whatever way it arrived, is
// decided by one function, apply: the rulebook of this file.

// Receipt outcomes, counted in metrics and returned by ApplyInbox.
const (
	ReceiptApplied   = "applied"   // the message moved forward
	ReceiptRecorded  = "recorded"  // on the timeline only (late, or no change)
	ReceiptDuplicate = "duplicate" // seen before; nothing done
	// ReceiptPending: no message has this provider id yet (the receipt
	// overtook the send's commit); it waits in the inbox, and the
	// recording of the send wakes it.
	ReceiptPending = "pending"
	// ReceiptRequeued: the provider reported a rate limit after accepting
	// the message; it is QUEUED again, to be sent after a wait.
	ReceiptRequeued = "requeued"
	// ReceiptForeign: the message it names belongs to another tenant or
	// account than the one the receipt came through; stored, never applied.
	ReceiptForeign = "foreign"
	// ReceiptExpired: a pending receipt whose message was never recorded
	// within the horizon; deleted.
	ReceiptExpired = "expired"
	// ReceiptAccepted: stored in the inbox, to be applied (the webhook's
	// answer; the applier's outcome is one of the above).
	ReceiptAccepted = "accepted"
	// ReceiptDuplicateSend: the receipt echoes the message's id but
	// another provider id than the message's: a second attempt of the
	// message reached the provider as well (the recipient may have it
	// twice). On the timeline, flagged duplicate_send_detected.
	ReceiptDuplicateSend = "duplicate_send_detected"
)

// receiptStatus maps provider receipt statuses to message statuses.
var receiptStatus = map[string]string{
	provider.StatusSent:      MessageSent,
	provider.StatusDelivered: MessageDelivered,
	provider.StatusRead:      MessageRead,
	provider.StatusFailed:    MessageFailed,
}

// Via is what a receipt came through, as the webhook that received it
// verified: a receipt may only touch messages of these channel accounts.
type Via struct {
	// TenantID is the tenant whose webhook URL received the receipt (Meta),
	// or uuid.Nil on routes tenants share (SES, SNS). A foreign receipt is
	// stored as this tenant's.
	TenantID uuid.UUID
	// Accounts are the channel accounts whose credentials authenticated the
	// receipt and that the payload names.
	Accounts []uuid.UUID
	// Route names the way in ("meta:<tenant>", "ses:<topic>", ...) for logs
	// and for the stored key of foreign receipts.
	Route string
	// Trusted marks receipts Herald made itself (the sandbox): they name the
	// message they are about and bind to no account.
	Trusted bool
	// AccountTopic, on the SES route, is the topic setting
	// (AccountStatusTopic) of the accounts that hear it: the topic, or ""
	// for a deployment topic that no account claims; nil on other routes.
	// An event naming a message of such an account that is not in
	// Accounts (it names another configuration set than the account's) is
	// foreign, and kept as that account's, for its tenant to see (see
	// ReceiptAstray).
	AccountTopic *string
}

// Internal is the Via of receipts Herald makes itself (the sandbox).
var Internal = Via{Trusted: true, Route: "internal"}

// allows reports whether a receipt that came through v may touch a message
// of the tenant and channel account.
func (v Via) allows(tenantID uuid.UUID, accountID *uuid.UUID) bool {
	if v.Trusted {
		return true
	}
	if accountID == nil || (v.TenantID != uuid.Nil && v.TenantID != tenantID) {
		return false
	}
	return slices.Contains(v.Accounts, *accountID)
}

// ReceiptApplyTx lists the statements the rulebook runs on a message the
// transaction holds, in the message's tenant's scope.
type ReceiptApplyTx interface {
	FallbackTx
	// LockReceiptMessages locks the tenant's messages with these ids, in
	// the order of their ids, and returns them.
	LockReceiptMessages(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) ([]*Message, error)
	RecordReceipt(ctx context.Context, r ReceiptRecord) (RecordedReceipt, error)
	MarkEmailComplained(ctx context.Context, tenantID, contactID uuid.UUID, at time.Time) error
	SetFailedReason(ctx context.Context, tenantID, id uuid.UUID, reason string) error
	InsertMessageEvent(ctx context.Context, e *MessageEvent) error
	RequeueSent(ctx context.Context, tenantID, id uuid.UUID, templateOnly bool, detail map[string]any, at time.Time) (bool, error)
	// RecordSent records a send the provider confirmed (see SentResult),
	// as the dispatcher records one it answered.
	RecordSent(ctx context.Context, s SentRecord) (SentResult, error)
	// SetExternalID gives a message without a provider id the provider's
	// id of a send confirmed after it had failed.
	SetExternalID(ctx context.Context, tenantID, id uuid.UUID, provider, externalID string) error
	SetAccountStatus(ctx context.Context, tenantID, id uuid.UUID, status, reason string, at time.Time) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// ReceiptTx lists the statements of one tenant's batch of receipts: the
// rulebook's and the inbox's.
type ReceiptTx interface {
	ReceiptApplyTx
	ReceiptClaimTx
}

// Receipts applies providers' delivery reports to messages.
type Receipts struct {
	// Store runs one tenant's receipts; InboxStore the inbox's platform
	// work (what each receipt names, pending receipts, failed tries).
	Store      Store[ReceiptTx]
	InboxStore Store[ReceiptInboxTx]
	// Inbox keeps the receipts webhooks accept until the applier applies
	// them (Accept, ApplyInbox).
	Inbox ReceiptInbox
	// Router and Queue continue a failed message's fallback chain; with a
	// nil Router a late failure ends the chain.
	Router *Router
	Queue  Queue
	// Callbacks makes the status callbacks of the receipts' changes; nil
	// makes none.
	Callbacks *Callbacks
	Metrics   Metrics
	Now       Clock
	Log       *slog.Logger
}

func (s *Receipts) logForeign(ctx context.Context, via Via, r provider.Receipt, tenantID uuid.UUID, accountID *uuid.UUID) {
	s.Log.WarnContext(ctx, "receipt names a message of another tenant or account; not applied",
		"provider", r.Provider, "external_id", r.ExternalID, "route", via.Route,
		"message_tenant_id", tenantID, "message_account_id", accountID)
}

// foreignID is the key a foreign receipt is kept under: a forged receipt
// must not take the id of the genuine one it imitates.
func foreignID(via Via, r provider.Receipt) string {
	return ReceiptForeign + ":" + via.Route + ":" + r.ReceiptID
}

// names reports whether r is about m as it stands: its provider and id.
func names(m *Message, r provider.Receipt) bool {
	return m.Provider != nil && *m.Provider == r.Provider && m.ExternalMessageID != nil && *m.ExternalMessageID == r.ExternalID
}

// apply is the rulebook: it applies one receipt to its message, which the
// transaction holds. The receipt is stored once (a replay is a duplicate),
// the status moves when the rules allow, and the timeline has the receipt
// either way; a failure after acceptance continues the fallback chain, a
// rate limit after acceptance sends the message again, an account error
// suspends the account, a complaint retires the e-mail address. m's status
// follows the move.
func (s *Receipts) apply(ctx context.Context, tx ReceiptApplyTx, r provider.Receipt, m *Message) (string, error) {
	if !names(m, r) {
		return s.echo(ctx, tx, r, m)
	}
	to := receiptStatus[r.Status]
	detail := receiptDetail(r, m)
	complaint := r.Complaint && m.ContactID != nil
	rec := ReceiptRecord{Receipt: r, TenantID: m.TenantID, MessageID: m.ID, From: m.Status, Detail: detail,
		FailedReason: ReceiptFailedReason(r)}
	if to == MessageFailed && s.resendable(r, m) {
		return s.requeue(ctx, tx, rec, m)
	}
	if to == MessageFailed && s.outsideWindow(r, m) {
		return s.requeueAsTemplate(ctx, tx, rec, m)
	}
	switch {
	case to == "":
		// Information only: on the timeline, no status change.
	case CanTransition(m.Status, to):
		rec.To, rec.CallbackEvent = to, callbackStatusEvent[to]
	default:
		detail["note"] = "no status change: " + strings.ToLower(m.Status) + " does not move to " + strings.ToLower(to)
	}
	recorded, err := tx.RecordReceipt(ctx, rec)
	if err != nil || !recorded.Fresh {
		return ReceiptDuplicate, err
	}
	moved := recorded.Moved
	outcome := ReceiptRecorded
	if moved {
		outcome, m.Status = ReceiptApplied, to
		if err := s.Callbacks.NotifyEndpoints(ctx, tx, m.TenantID, m.ID, rec.CallbackEvent, CallbackNote{ErrorMessage: r.Reason},
			recorded.Subscribers); err != nil {
			return "", err
		}
	}
	// A failure reported after the provider accepted the message continues
	// its chain as a refusal at send time does; it happens once, with the
	// move to FAILED. A complaint is no failure to deliver: it ends there.
	if moved && to == MessageFailed && r.Error != nil && r.Error.Account && m.ChannelAccountID != nil {
		if err := s.suspend(ctx, tx, m, r); err != nil {
			return "", err
		}
	}
	if moved && to == MessageFailed && !r.Complaint {
		if err := s.fallBack(ctx, tx, m, r); err != nil {
			return "", err
		}
	}
	if complaint {
		return outcome, tx.MarkEmailComplained(ctx, m.TenantID, *m.ContactID, r.At)
	}
	return outcome, nil
}

// echoes reports whether r names m by the id Herald gave its sends
// (provider.Receipt.MessageRef), which the provider echoed.
func echoes(m *Message, r provider.Receipt) bool {
	return r.MessageRef != uuid.Nil && r.MessageRef == m.ID
}

// echo applies a receipt that names its message by the message's own id
// (echoes) and not by the provider id the message has: it is about a send
// whose answer Herald never read, or about another attempt.
//   - An id of an earlier attempt the provider refused after accepting it
//     (the message was sent again since): on the timeline only.
//   - A QUEUED message: the provider confirms a send Herald has no answer
//     to (cut, broken, or still in flight). The send is recorded as the
//     dispatcher records an answered one (adopt), and the receipt applied
//     to it: nothing is sent again.
//   - A message that ended without a recorded send (failed
//     outcome_unknown, expired or cancelled meanwhile): the send did reach
//     the provider after all. It keeps its status (it is final), takes the
//     provider's id, so its later receipts land on its timeline, and says
//     so.
//   - Otherwise another attempt reached the provider too: the recipient
//     may have the message twice (duplicate_send_detected).
func (s *Receipts) echo(ctx context.Context, tx ReceiptApplyTx, r provider.Receipt, m *Message) (string, error) {
	detail := receiptDetail(r, m)
	rec := ReceiptRecord{Receipt: r, TenantID: m.TenantID, MessageID: m.ID, From: m.Status, Detail: detail}
	outcome := ReceiptRecorded
	switch {
	case slices.Contains(m.PreviousExternalIDs, r.ExternalID):
		detail["note"] = "about an earlier attempt (" + r.ExternalID + "), which the provider refused after accepting it; the message was sent again since"
	case m.Status == MessageQueued:
		if adopted, err := s.adopt(ctx, tx, r, m); err != nil || adopted {
			if err != nil {
				return "", err
			}
			// The message moved (to SENT), whatever the status adds.
			outcome, err := s.apply(ctx, tx, r, m)
			if outcome == ReceiptRecorded {
				outcome = ReceiptApplied
			}
			return outcome, err
		}
		detail["note"] = "the message was not adopted"
	case m.ExternalMessageID == nil:
		// No attempt of the message was recorded as sent: this one was,
		// after the message had ended (failed outcome_unknown, expired or
		// cancelled while Herald waited).
		if err := tx.SetExternalID(ctx, m.TenantID, m.ID, r.Provider, r.ExternalID); err != nil {
			return "", err
		}
		m.Provider, m.ExternalMessageID = &r.Provider, &r.ExternalID
		detail["confirmed_late"] = true
		detail["note"] = "confirmed late: the attempt whose answer Herald never read reached " + r.Provider +
			"; the message stays " + strings.ToLower(m.Status) + " and is not sent again"
	default:
		outcome = ReceiptDuplicateSend
		detail["duplicate_send_detected"] = true
		detail["note"] = "another attempt of this message reached " + r.Provider + " too (" + r.ExternalID +
			"): the recipient may have it twice"
		if r.Status == provider.StatusFailed {
			outcome = ReceiptRecorded
			delete(detail, "duplicate_send_detected")
			detail["note"] = "another attempt of this message (" + r.ExternalID + ") failed; this one stands"
		}
	}
	recorded, err := tx.RecordReceipt(ctx, rec)
	if err != nil || !recorded.Fresh {
		return ReceiptDuplicate, err
	}
	if outcome == ReceiptDuplicateSend {
		s.Log.WarnContext(ctx, "a message reached the provider twice", "message_id", m.ID, "provider", r.Provider,
			"external_id", r.ExternalID, "message_external_id", m.ExternalMessageID)
	}
	return outcome, nil
}

// adopt records the send of a QUEUED message that its provider confirmed
// by a receipt (echo), in the receipt's transaction, as the dispatcher
// records a send it has the answer to: SENT with the provider's id, its
// timeline entry, its usage count and its callbacks. The dispatch job of
// the message finds it sent and does nothing more.
func (s *Receipts) adopt(ctx context.Context, tx ReceiptApplyTx, r provider.Receipt, m *Message) (bool, error) {
	now := s.Now()
	res, err := tx.RecordSent(ctx, SentRecord{
		TenantID: m.TenantID, MessageID: m.ID, Provider: r.Provider, ExternalID: r.ExternalID, At: now,
		Channel: m.Channel, UsageMonth: MonthOf(now), CallbackEvent: CallbackMessageSent,
		Detail: map[string]any{"provider": r.Provider, "external_id": r.ExternalID, "confirmed_by": r.ReceiptID,
			"note": r.Provider + " confirmed the send by its " + r.Status + " receipt: Herald never read its answer, and does not send it again"},
	})
	if err != nil || !res.Moved {
		return false, err
	}
	m.Status, m.Provider, m.ExternalMessageID, m.SendStartedAt, m.SendUnknownUntil = MessageSent, &r.Provider, &r.ExternalID, nil, nil
	return true, s.Callbacks.NotifyEndpoints(ctx, tx, m.TenantID, m.ID, CallbackMessageSent, CallbackNote{}, res.Subscribers)
}

// MaxResends bounds how often a message the provider reported rate-limited
// after accepting it is sent again before it fails for good.
const MaxResends = 5

// DefaultResendWait is the wait before a rate-limited message is sent again
// when the provider's code suggests none.
const DefaultResendWait = 30 * time.Second

// resendable reports whether a failure receipt is a rate limit that the
// same message should be sent again for, as at send time: the message is
// still SENT and has attempts left. A test message is never sent again.
func (s *Receipts) resendable(r provider.Receipt, m *Message) bool {
	return !m.Test && r.Error != nil && r.Error.Class == provider.RateLimited && m.Status == MessageSent && m.Attempts < MaxResends && s.Queue != nil
}

// requeue records the rate-limit receipt (once) and puts the message back
// to QUEUED with a dispatch job after the provider's wait, growing with the
// attempts made.
func (s *Receipts) requeue(ctx context.Context, tx ReceiptApplyTx, rec ReceiptRecord, m *Message) (string, error) {
	r := rec.Receipt
	wait := r.Error.RetryAfter
	if wait <= 0 {
		wait = DefaultResendWait
	}
	wait *= time.Duration(1 << max(m.Attempts-1, 0))
	rec.Detail["note"] = "rate limited after it was accepted: sent again in " + wait.String()
	return s.sendAgain(ctx, tx, rec, m, false, wait, map[string]any{"rate_limited": r.Error.Code, "resend_in_seconds": wait.Seconds()})
}

// outsideWindow reports whether a failure receipt is Meta's 131047 (the
// customer-service window is closed) for free-form text it had accepted:
// Meta's view of the window is the one that counts, so the message goes
// again as its approved Meta template, as when Meta answers the send with
// 131047 (retryAsTemplate). Only once: a message already resent as a
// template fails, and a test message is never sent again.
func (s *Receipts) outsideWindow(r provider.Receipt, m *Message) bool {
	return !m.Test && !m.WhatsAppTemplateOnly && m.Channel == WhatsApp && m.Status == MessageSent && s.Queue != nil &&
		r.Error != nil && r.Error.Code == "131047"
}

// requeueAsTemplate records the 131047 receipt (once) and puts the message
// back to QUEUED with a dispatch job now; that dispatch plans its Meta
// template (or fails it, as at send time, when it has no approved one).
func (s *Receipts) requeueAsTemplate(ctx context.Context, tx ReceiptApplyTx, rec ReceiptRecord, m *Message) (string, error) {
	rec.Detail["note"] = "Meta says the 24-hour window is closed: sent again as its approved Meta template"
	return s.sendAgain(ctx, tx, rec, m, true, 0, map[string]any{"error_code": "131047", "retry": "as Meta template"})
}

// sendAgain records a failure receipt of a message the provider had
// accepted (once) and puts the message back to QUEUED with a dispatch job
// after wait, detail on its timeline.
func (s *Receipts) sendAgain(ctx context.Context, tx ReceiptApplyTx, rec ReceiptRecord, m *Message, templateOnly bool, wait time.Duration,
	detail map[string]any) (string, error) {
	r := rec.Receipt
	recorded, err := tx.RecordReceipt(ctx, rec)
	if err != nil || !recorded.Fresh {
		return ReceiptDuplicate, err
	}
	detail["previous_external_id"], detail["receipt_id"] = r.ExternalID, r.ReceiptID
	requeued, err := tx.RequeueSent(ctx, m.TenantID, m.ID, templateOnly, detail, s.Now())
	if err != nil || !requeued {
		return ReceiptRecorded, err
	}
	// The message is sent again under a new id: later receipts of the old
	// one name no message.
	m.Status, m.Provider, m.ExternalMessageID = MessageQueued, nil, nil
	m.WhatsAppTemplateOnly = m.WhatsAppTemplateOnly || templateOnly
	job := m.DispatchJob()
	job.NotBefore = s.Now().Add(wait)
	return ReceiptRequeued, s.Queue.EnqueueDispatch(ctx, tx, job)
}

// suspend flags the channel account of a message the provider reported
// failed for a reason of the account itself (expired token, restricted
// account), as the dispatcher does for the same code at send time.
func (s *Receipts) suspend(ctx context.Context, tx ReceiptApplyTx, m *Message, r provider.Receipt) error {
	reason := "The provider refused the account: " + r.Error.Reason + " (" + r.Error.Code + ")"
	if err := tx.SetAccountStatus(ctx, m.TenantID, *m.ChannelAccountID, AccountSuspended, reason, s.Now()); err != nil {
		return err
	}
	s.Log.WarnContext(ctx, "channel account suspended after a provider account error in a receipt",
		"channel_account_id", *m.ChannelAccountID, "code", r.Error.Code)
	return tx.InsertAudit(ctx, SystemActor.Entry(&m.TenantID, "channel_account.status", "channel_account", m.ChannelAccountID.String(),
		map[string]any{"status": AccountSuspended, "reason": reason, "provider_code": r.Error.Code, "receipt_id": r.ReceiptID}))
}

// ReceiptFailedReason is the failed_reason a failure receipt gives its
// message: the provider and its code, lower case, such as meta_131026,
// ses_bounce_permanent or sns_sms_failure. The provider's text goes on the
// timeline.
func ReceiptFailedReason(r provider.Receipt) string {
	code := strings.ToLower(r.Code)
	// SES bounce codes name type and subtype (bounce:Permanent/NoEmail):
	// the type is the reason, the full code stays in error_code.
	if i := strings.IndexByte(code, '/'); i >= 0 {
		code = code[:i]
	}
	code = strings.Trim(strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			return c
		}
		return '_'
	}, code), "_")
	if code == "" {
		code = "failed"
	}
	if strings.HasPrefix(code, r.Provider+"_") {
		return code
	}
	return r.Provider + "_" + code
}

// fallBack queues the next channel of a message that failed after it was
// sent, with its job, in the receipt's transaction: the new message shares
// the correlation id and names the failed one, whose reason becomes
// fallback_triggered:<CHANNEL>.
func (s *Receipts) fallBack(ctx context.Context, tx ReceiptApplyTx, m *Message, r provider.Receipt) error {
	if s.Router == nil {
		return nil
	}
	chain, err := s.Router.fallback(ctx, tx, m)
	if err != nil || (chain.Job == nil && len(chain.Skipped) == 0) {
		return err
	}
	next, channel := chain.Job, chain.Channel
	if next != nil {
		if err := tx.SetFailedReason(ctx, m.TenantID, m.ID, ReasonFallbackTriggered+channel); err != nil {
			return err
		}
	}
	if err := tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: m.TenantID, MessageID: m.ID, Source: SourceWebhook, At: r.At,
		Detail: chain.detail(map[string]any{"receipt_id": r.ReceiptID}),
	}); err != nil || next == nil {
		return err
	}
	if err := s.Callbacks.Notify(ctx, tx, m.TenantID, m.ID, CallbackMessageFallback,
		CallbackNote{FallbackMessageID: next.MessageID, FallbackChannel: channel}); err != nil {
		return err
	}
	return s.Queue.EnqueueDispatch(ctx, tx, *next)
}

// receiptDetail is the timeline detail of a receipt of m.
func receiptDetail(r provider.Receipt, m *Message) map[string]any {
	detail := map[string]any{"provider": r.Provider, "receipt": r.Status, "receipt_id": r.ReceiptID}
	if r.Code != "" {
		detail["code"] = r.Code
	}
	if r.Reason != "" {
		detail["reason"] = r.Reason
	}
	if r.Raw != "" {
		detail["raw"] = truncate(r.Raw, 500)
	}
	if r.Complaint && m.ContactID != nil {
		detail["complaint"] = "the contact's e-mail address will not be used again"
	}
	return detail
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
