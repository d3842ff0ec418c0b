package app

import (
	"context"
	"log/slog"
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
)

// receiptStatus maps provider receipt statuses to message statuses.
var receiptStatus = map[string]string{
	provider.StatusSent:      MessageSent,
	provider.StatusDelivered: MessageDelivered,
	provider.StatusRead:      MessageRead,
	provider.StatusFailed:    MessageFailed,
}

// ReceiptTx lists the statements Receipts runs.
type ReceiptTx interface {
	Tx
	MessageByExternalID(ctx context.Context, provider, externalID string) (*Message, error)
	StoreReceipt(ctx context.Context, tenantID, messageID *uuid.UUID, r provider.Receipt) (bool, error)
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
// a timeline entry either way. A receipt for an unknown message is stored and
// reported as ReceiptUnknown with an ENOTFOUND error; if the same receipt
// comes again once the message is known, it is applied then.
func (s *Receipts) Apply(ctx context.Context, r provider.Receipt) (string, error) {
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
	// The tenant is found from the message, so the lookup is platform-scoped;
	// every write below is for that message's tenant.
	err := s.Store.InPlatform(ctx, func(tx ReceiptTx) error {
		m, err := tx.MessageByExternalID(ctx, r.Provider, r.ExternalID)
		if ErrorCode(err) == ENOTFOUND {
			// Kept, so that it is applied if it comes again once the
			// message is known.
			fresh, err := tx.StoreReceipt(ctx, nil, nil, r)
			if err == nil && !fresh {
				outcome = ReceiptDuplicate
			}
			return err
		} else if err != nil {
			return err
		}

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
		switch {
		case err != nil:
			return err
		case !fresh:
			outcome = ReceiptDuplicate
			return nil
		case moved:
			outcome = ReceiptApplied
		default:
			outcome = ReceiptRecorded
		}
		if complaint {
			return tx.MarkEmailComplained(ctx, m.TenantID, *m.ContactID, r.At)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	s.Metrics.Receipt(r.Provider, outcome)
	if outcome == ReceiptUnknown {
		return outcome, Errorf(ENOTFOUND, "No message from %s has id %s.", r.Provider, r.ExternalID)
	}
	return outcome, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
