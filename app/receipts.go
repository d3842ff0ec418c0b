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
	ReceiptUnknown   = "unknown"   // no message has this provider id
	// ReceiptForeign: the message it names belongs to another tenant or
	// account than the one the receipt came through; stored, never applied.
	ReceiptForeign = "foreign"
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

// ReceiptTx lists the statements Receipts runs.
type ReceiptTx interface {
	Tx
	MessageByExternalID(ctx context.Context, provider, externalID string) (*Message, error)
	StoreReceipt(ctx context.Context, tenantID, messageID *uuid.UUID, r provider.Receipt, outcome string) (bool, error)
	RecordReceipt(ctx context.Context, r ReceiptRecord) (fresh, moved bool, err error)
	MarkEmailComplained(ctx context.Context, tenantID, contactID uuid.UUID, at time.Time) error
}

// Receipts applies providers' delivery reports to messages.
type Receipts struct {
	Store   Store[ReceiptTx]
	Metrics Metrics
	Now     Clock
	Log     *slog.Logger
}

// Apply stores the receipt once (a replay is a no-op), finds the message by
// provider and external id, moves it forward if the rules allow, and writes
// a timeline entry either way. via bounds what the receipt may touch: a
// receipt naming a message of another tenant or account is stored as
// ReceiptForeign and changes nothing. A receipt for an unknown message is
// stored and reported as ReceiptUnknown with an ENOTFOUND error; if the same
// receipt comes again once the message is known, it is applied then.
func (s *Receipts) Apply(ctx context.Context, via Via, r provider.Receipt) (string, error) {
	if r.At.IsZero() {
		r.At = s.Now()
	}
	to, known := receiptStatus[r.Status]
	if !known && r.Status != provider.StatusInfo {
		return "", Errorf(EINVALID, "Unknown receipt status %q.", r.Status)
	}
	if r.ReceiptID == "" {
		r.ReceiptID = r.ExternalID + ":" + r.Status
	}
	outcome := ReceiptUnknown
	var foreign *Message
	// The message is looked up across tenants, so that a receipt naming
	// another tenant's message is recognised as foreign; every write below
	// is for the message's tenant, and only when via allows it.
	err := s.Store.InPlatform(ctx, func(tx ReceiptTx) error {
		m, err := tx.MessageByExternalID(ctx, r.Provider, r.ExternalID)
		if ErrorCode(err) == ENOTFOUND {
			// Kept, so that it is applied if it comes again once the
			// message is known.
			fresh, err := tx.StoreReceipt(ctx, nil, nil, r, ReceiptUnknown)
			if err == nil && !fresh {
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
		s.Log.WarnContext(ctx, "receipt names a message of another tenant or account; not applied",
			"provider", r.Provider, "external_id", r.ExternalID, "route", via.Route,
			"message_tenant_id", foreign.TenantID, "message_account_id", foreign.ChannelAccountID)
	}
	if outcome == ReceiptUnknown {
		return outcome, Errorf(ENOTFOUND, "No message from %s has id %s.", r.Provider, r.ExternalID)
	}
	return outcome, nil
}

// storeForeign keeps a foreign receipt, for the record, under its route's
// tenant (none on shared routes) and a key of its own: a forged receipt must
// not take the id of the genuine one it imitates.
func (s *Receipts) storeForeign(ctx context.Context, tx ReceiptTx, via Via, r provider.Receipt) (string, error) {
	var tenantID *uuid.UUID
	if via.TenantID != uuid.Nil {
		tenantID = &via.TenantID
	}
	r.ReceiptID = ReceiptForeign + ":" + via.Route + ":" + r.ReceiptID
	fresh, err := tx.StoreReceipt(ctx, tenantID, nil, r, ReceiptForeign)
	if err != nil || !fresh {
		return ReceiptDuplicate, err
	}
	return ReceiptForeign, nil
}

// record applies a receipt to its message, which the transaction holds:
// the receipt is stored once, the status moves when the rules allow, and
// the timeline has the receipt either way.
func (s *Receipts) record(ctx context.Context, tx ReceiptTx, r provider.Receipt, to string, m *Message) (string, error) {
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
	complaint := r.Complaint && m.ContactID != nil
	if complaint {
		detail["complaint"] = "the contact's e-mail address will not be used again"
	}
	rec := ReceiptRecord{Receipt: r, TenantID: m.TenantID, MessageID: m.ID, From: m.Status, Detail: detail}
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
		outcome = ReceiptApplied
	}
	if complaint {
		return outcome, tx.MarkEmailComplained(ctx, m.TenantID, *m.ContactID, r.At)
	}
	return outcome, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
