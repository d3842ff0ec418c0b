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

// Receipt outcomes, stored with each receipt and counted in metrics.
const (
	ReceiptApplied   = "applied"   // the message moved forward
	ReceiptRecorded  = "recorded"  // on the timeline only (late, or no change)
	ReceiptDuplicate = "duplicate" // seen before; nothing done
	// ReceiptPending: no message has this provider id yet (the receipt
	// overtook the send's commit); kept, and applied when the send is
	// recorded.
	ReceiptPending = "pending"
	// ReceiptRequeued: the provider reported a rate limit after accepting
	// the message; it is QUEUED again, to be sent after a wait.
	ReceiptRequeued = "requeued"
	// ReceiptForeign: the message it names belongs to another tenant or
	// account than the one the receipt came through; stored, never applied.
	ReceiptForeign = "foreign"
	// ReceiptAccepted: stored in the inbox, to be applied (the webhook's
	// answer; the applier's outcome is one of the above).
	ReceiptAccepted = "accepted"
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
}

// Internal is the Via of receipts Herald makes itself (the sandbox).
var Internal = Via{Trusted: true, Route: "internal"}

// allows reports whether a receipt that came through v may touch m.
func (v Via) allows(m *Message) bool {
	if v.Trusted {
		return true
	}
	if m.ChannelAccountID == nil || (v.TenantID != uuid.Nil && v.TenantID != m.TenantID) {
		return false
	}
	return slices.Contains(v.Accounts, *m.ChannelAccountID)
}

// PendingReceipt is a receipt kept until its message's send is recorded,
// with what it came through.
type PendingReceipt struct {
	Receipt provider.Receipt
	Via     Via
}

// ReceiptApplyTx lists the statements that apply receipts to a message the
// transaction holds. The dispatcher runs them too: it applies the receipts
// that overtook its send in the transaction that records the send.
type ReceiptApplyTx interface {
	FallbackTx
	// LockReceipts serialises, until the transaction ends, everything done
	// for one provider message id: receipts of it, and the recording of
	// its send.
	LockReceipts(ctx context.Context, provider, externalID string) error
	PendingReceipts(ctx context.Context, provider, externalID string) ([]*PendingReceipt, error)
	StoreReceipt(ctx context.Context, tenantID, messageID *uuid.UUID, r provider.Receipt, outcome string) (bool, error)
	MarkReceiptForeign(ctx context.Context, tenantID uuid.UUID, provider, receiptID, foreignID string) error
	RecordReceipt(ctx context.Context, r ReceiptRecord) (fresh, moved bool, err error)
	MarkEmailComplained(ctx context.Context, tenantID, contactID uuid.UUID, at time.Time) error
	SetFailedReason(ctx context.Context, tenantID, id uuid.UUID, reason string) error
	InsertMessageEvent(ctx context.Context, e *MessageEvent) error
	RequeueSent(ctx context.Context, tenantID, id uuid.UUID, detail map[string]any, at time.Time) (bool, error)
	SetAccountStatus(ctx context.Context, tenantID, id uuid.UUID, status, reason string, at time.Time) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// ReceiptTx lists the statements Receipts runs.
type ReceiptTx interface {
	ReceiptApplyTx
	ReceiptInboxTx
	MessageByExternalID(ctx context.Context, provider, externalID string) (*Message, error)
	StorePendingReceipt(ctx context.Context, p *PendingReceipt, receivedAt time.Time) (bool, error)
}

// Receipts applies providers' delivery reports to messages.
type Receipts struct {
	Store Store[ReceiptTx]
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

// Apply stores the receipt once (a replay is a no-op), finds the message by
// provider and external id, moves it forward if the rules allow, and writes
// a timeline entry either way. via bounds what the receipt may touch: a
// receipt naming a message of another tenant or account is stored as
// ReceiptForeign and changes nothing. A receipt for a message not known yet
// is kept as ReceiptPending and applied when the dispatcher records the
// send (see ApplyPending).
func (s *Receipts) Apply(ctx context.Context, via Via, r provider.Receipt) (string, error) {
	r, err := s.normalize(r)
	if err != nil {
		return "", err
	}
	to := receiptStatus[r.Status]
	var outcome string
	var foreign *Message
	// The message is looked up across tenants, so that a receipt naming
	// another tenant's message is recognised as foreign; every write below
	// is for the message's tenant, and only when via allows it.
	err = s.Store.InPlatform(ctx, func(tx ReceiptTx) error {
		// Taken before the lookup: either the send's recording committed
		// first and the message is found, or it waits for this receipt to
		// be kept and then applies it.
		if err := tx.LockReceipts(ctx, r.Provider, r.ExternalID); err != nil {
			return err
		}
		m, err := tx.MessageByExternalID(ctx, r.Provider, r.ExternalID)
		if ErrorCode(err) == ENOTFOUND {
			fresh, err := tx.StorePendingReceipt(ctx, &PendingReceipt{Receipt: r, Via: via}, s.Now())
			outcome = ReceiptPending
			if !fresh {
				outcome = ReceiptDuplicate
			}
			return err
		} else if err != nil {
			return err
		}
		if !via.allows(m) {
			foreign = m
			outcome, err = s.storeForeign(ctx, tx, via, r)
			return err
		}
		outcome, err = s.record(ctx, tx, r, to, m)
		return err
	})
	if err != nil {
		return "", err
	}
	s.Metrics.Receipt(r.Provider, outcome)
	if foreign != nil {
		s.logForeign(ctx, via, r, foreign)
	}
	return outcome, nil
}

// ApplyPending applies, in the transaction that recorded m's send (which
// holds LockReceipts for it), the receipts that arrived before, oldest
// first. m is the message as that transaction left it.
func (s *Receipts) ApplyPending(ctx context.Context, tx ReceiptApplyTx, m *Message) error {
	if m.Provider == nil || m.ExternalMessageID == nil {
		return nil
	}
	pending, err := tx.PendingReceipts(ctx, *m.Provider, *m.ExternalMessageID)
	if err != nil {
		return err
	}
	for _, p := range pending {
		r := p.Receipt
		if !p.Via.allows(m) {
			if err := tx.MarkReceiptForeign(ctx, m.TenantID, r.Provider, r.ReceiptID, foreignID(p.Via, r)); err != nil {
				return err
			}
			s.Metrics.Receipt(r.Provider, ReceiptForeign)
			s.logForeign(ctx, p.Via, r, m)
			continue
		}
		outcome, err := s.record(ctx, tx, r, receiptStatus[r.Status], m)
		if err != nil {
			return err
		}
		s.Metrics.Receipt(r.Provider, outcome)
	}
	return nil
}

func (s *Receipts) logForeign(ctx context.Context, via Via, r provider.Receipt, m *Message) {
	s.Log.WarnContext(ctx, "receipt names a message of another tenant or account; not applied",
		"provider", r.Provider, "external_id", r.ExternalID, "route", via.Route,
		"message_tenant_id", m.TenantID, "message_account_id", m.ChannelAccountID)
}

// foreignID is the key a foreign receipt is kept under: a forged receipt
// must not take the id of the genuine one it imitates.
func foreignID(via Via, r provider.Receipt) string {
	return ReceiptForeign + ":" + via.Route + ":" + r.ReceiptID
}

// storeForeign keeps a foreign receipt, for the record, under its route's
// tenant (none on shared routes) and a key of its own (foreignID).
func (s *Receipts) storeForeign(ctx context.Context, tx ReceiptTx, via Via, r provider.Receipt) (string, error) {
	var tenantID *uuid.UUID
	if via.TenantID != uuid.Nil {
		tenantID = &via.TenantID
	}
	r.ReceiptID = foreignID(via, r)
	fresh, err := tx.StoreReceipt(ctx, tenantID, nil, r, ReceiptForeign)
	if err != nil || !fresh {
		return ReceiptDuplicate, err
	}
	return ReceiptForeign, nil
}

// record applies a receipt to its message, which the transaction holds:
// the receipt is stored once, the status moves when the rules allow, and
// the timeline has the receipt either way. m's status follows the move.
func (s *Receipts) record(ctx context.Context, tx ReceiptApplyTx, r provider.Receipt, to string, m *Message) (string, error) {
	detail := receiptDetail(r, m)
	complaint := r.Complaint && m.ContactID != nil
	rec := ReceiptRecord{Receipt: r, TenantID: m.TenantID, MessageID: m.ID, From: m.Status, Detail: detail,
		FailedReason: ReceiptFailedReason(r)}
	if to == MessageFailed && s.resendable(r, m) {
		return s.requeue(ctx, tx, rec, m)
	}
	switch {
	case to == "":
		// Information only: on the timeline, no status change.
	case CanTransition(m.Status, to):
		rec.To = to
	default:
		detail["note"] = "no status change: " + strings.ToLower(m.Status) + " does not move to " + strings.ToLower(to)
	}
	fresh, moved, err := tx.RecordReceipt(ctx, rec)
	if err != nil || !fresh {
		return ReceiptDuplicate, err
	}
	outcome := ReceiptRecorded
	if moved {
		outcome, m.Status = ReceiptApplied, to
		if err := s.Callbacks.NotifyStatus(ctx, tx, m.TenantID, m.ID, to, CallbackNote{ErrorMessage: r.Reason}); err != nil {
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
	fresh, _, err := tx.RecordReceipt(ctx, rec)
	if err != nil || !fresh {
		return ReceiptDuplicate, err
	}
	requeued, err := tx.RequeueSent(ctx, m.TenantID, m.ID, map[string]any{"rate_limited": r.Error.Code, "resend_in_seconds": wait.Seconds(),
		"previous_external_id": r.ExternalID, "receipt_id": r.ReceiptID}, s.Now())
	if err != nil || !requeued {
		return ReceiptRecorded, err
	}
	m.Status = MessageQueued
	job := DispatchJob{TenantID: m.TenantID, MessageID: m.ID, Channel: m.Channel, NotBefore: s.Now().Add(wait)}
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
	next, channel, err := s.Router.fallback(ctx, tx, m)
	if err != nil || next == nil {
		return err
	}
	if err := tx.SetFailedReason(ctx, m.TenantID, m.ID, ReasonFallbackTriggered+channel); err != nil {
		return err
	}
	if err := tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: m.TenantID, MessageID: m.ID, Source: SourceWebhook, At: r.At,
		Detail: map[string]any{"fallback": channel, "fallback_message_id": next.MessageID.String(), "receipt_id": r.ReceiptID},
	}); err != nil {
		return err
	}
	if err := s.Callbacks.Notify(ctx, tx, m.TenantID, m.ID, CallbackMessageFallback,
		CallbackNote{FallbackMessageID: next.MessageID, FallbackChannel: channel}); err != nil {
		return err
	}
	return s.Queue.EnqueueDispatch(ctx, tx, *next)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
