package app

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// Receipts reach messages in two steps. A webhook verifies the provider's
// signature, resolves what the receipts came through (Via) and stores them
// in the inbox in one statement (Accept), then answers; the receipt
// applier in the worker processes claims them in batches and applies each
// batch in one transaction (ApplyInbox), with a handful of set-based
// statements for the common moves (sent, delivered, read) and the
// one-receipt rules of Apply for the rest (failures, complaints, messages
// whose tenant listens for status callbacks). A receipt costs the webhook
// a share of one INSERT and the applier a share of one commit.

// DefaultReceiptBatch is how many inbox receipts one transaction applies
// at most.
const DefaultReceiptBatch = 500

// DefaultReceiptGather is how long the applier lets receipts gather after
// a notification before it applies them. Every receipt notifies, so at a
// moderate rate an applier that answered each notification at once would
// apply one receipt per transaction: at 150 messages/s (two receipts
// each) that was a fifth of the worker's CPU. Gathering for this long
// applies a few dozen at a time for a delay no reader of a message's
// status notices; under load, batches that come back full are followed at
// once, without gathering.
const DefaultReceiptGather = 25 * time.Millisecond

// DefaultReceiptPoll is how often the applier looks at the inbox when no
// notification woke it: a safety net for a notification lost while its
// listening connection was being replaced, and the clock of receipts
// waiting after a failed try.
const DefaultReceiptPoll = 5 * time.Second

// ReceiptInboxChannel is the Postgres notification channel every insert
// into the inbox notifies (migration receipt_inbox).
const ReceiptInboxChannel = "herald_receipt_inbox"

// InboxReceipt is a receipt a webhook accepted, with what it came through,
// waiting in the inbox to be applied.
type InboxReceipt struct {
	ID         int64
	Receipt    provider.Receipt
	Via        Via
	ReceivedAt time.Time
	// Attempts counts the tries that failed, when the receipt was tried
	// alone after its batch failed.
	Attempts int
	// Unreadable says why the stored row could not be read back; such a
	// receipt is set aside, with the reason, instead of applied.
	Unreadable error
}

// setAside is when a receipt that cannot be applied is tried again: never
// by itself; the row stays, with its error, for an operator.
var setAside = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// ReceiptInbox stores accepted receipts: one statement, committed on its
// own, for every receipt of one webhook request.
type ReceiptInbox interface {
	AddInboxReceipts(ctx context.Context, rs []InboxReceipt) error
}

// ReceiptKey names one provider message: what receipts are matched and
// serialised by.
type ReceiptKey struct {
	Provider   string
	ExternalID string
}

// StoredReceipt is one row of webhook_receipts a batch writes: a receipt of
// a known message (ReceiptMatched), a foreign one (under its foreign key)
// or a pending one (with what it came through).
type StoredReceipt struct {
	TenantID  *uuid.UUID
	MessageID *uuid.UUID
	// Receipt.ReceiptID is the key it is stored under.
	Receipt provider.Receipt
	Outcome string
	// Via is kept for pending receipts, to apply them later.
	Via        Via
	ReceivedAt time.Time
}

// ReceiptMatched is the stored outcome of a receipt applied to its message.
const ReceiptMatched = "matched"

// ReceiptMove is the change a batch makes to one message: the status it
// ends in (To, equal to From when only a late delivery time changes) and
// the delivery and read times the receipts gave it.
type ReceiptMove struct {
	TenantID    uuid.UUID
	MessageID   uuid.UUID
	From, To    string
	DeliveredAt *time.Time
	ReadAt      *time.Time
	// Moved clears the message's stale mark: a receipt came.
	Moved bool
}

// ReceiptInboxTx lists the statements that apply a batch of inbox
// receipts.
type ReceiptInboxTx interface {
	// ClaimInboxReceipts locks up to limit receipts available at now,
	// oldest first, skipping those another applier holds.
	ClaimInboxReceipts(ctx context.Context, limit int, now time.Time) ([]*InboxReceipt, error)
	// ClaimInboxReceipt is ClaimInboxReceipts for one receipt; nil when
	// another applier has it or it was applied.
	ClaimInboxReceipt(ctx context.Context, id int64) (*InboxReceipt, error)
	// DeleteInboxReceipts removes applied receipts from the inbox.
	DeleteInboxReceipts(ctx context.Context, ids []int64) error
	// DelayInboxReceipt counts a failed try of a receipt and makes it wait.
	DelayInboxReceipt(ctx context.Context, id int64, availableAt time.Time, lastError string) error
	// LockReceiptKeys is LockReceipts for every key, in one fixed order.
	LockReceiptKeys(ctx context.Context, keys []ReceiptKey) error
	// MessagesByExternalIDs is MessageByExternalID for every key: the
	// messages found, locked.
	MessagesByExternalIDs(ctx context.Context, keys []ReceiptKey) ([]*Message, error)
	// StatusCallbackTenants returns which of the tenants have an enabled
	// callback endpoint for a message status event.
	StatusCallbackTenants(ctx context.Context, tenantIDs []uuid.UUID) (map[uuid.UUID]bool, error)
	// StoreReceipts stores each receipt once, as StoreReceipt,
	// StorePendingReceipt and RecordReceipt do, and returns the keys
	// (provider, stored receipt id) of those stored now: the others were
	// seen before.
	StoreReceipts(ctx context.Context, rs []StoredReceipt) (map[ReceiptKey]bool, error)
	// ApplyReceiptMoves updates the messages, each only while it is still
	// in its From status.
	ApplyReceiptMoves(ctx context.Context, moves []ReceiptMove) error
	// InsertMessageEvents writes timeline entries, in order.
	InsertMessageEvents(ctx context.Context, es []*MessageEvent) error
}

// Accept checks receipts a webhook verified and stores them in the inbox
// in one statement, to be applied by the receipt applier. A receipt with
// an unknown status is refused and none is stored.
func (s *Receipts) Accept(ctx context.Context, rs ...InboxReceipt) error {
	if len(rs) == 0 {
		return nil
	}
	now := s.Now()
	for i := range rs {
		r, err := s.normalize(rs[i].Receipt)
		if err != nil {
			return err
		}
		rs[i].Receipt, rs[i].ReceivedAt = r, now
	}
	return s.Inbox.AddInboxReceipts(ctx, rs)
}

// normalize fills a receipt's defaults (its time, its id) and refuses an
// unknown status.
func (s *Receipts) normalize(r provider.Receipt) (provider.Receipt, error) {
	if r.At.IsZero() {
		r.At = s.Now()
	}
	if _, known := receiptStatus[r.Status]; !known && r.Status != provider.StatusInfo {
		return r, Errorf(EINVALID, "Unknown receipt status %q.", r.Status)
	}
	if r.ReceiptID == "" {
		r.ReceiptID = r.ExternalID + ":" + r.Status
	}
	return r, nil
}

// batchResult is what a batch did, reported once it committed.
type batchResult struct {
	outcomes []receiptOutcome
	foreign  []foreignNote
}

type receiptOutcome struct{ provider, outcome string }

type foreignNote struct {
	via Via
	r   provider.Receipt
	m   *Message
}

func (b *batchResult) add(providerName, outcome string) {
	b.outcomes = append(b.outcomes, receiptOutcome{providerName, outcome})
}

// ApplyInbox applies up to limit receipts of the inbox in one transaction
// and returns how many it took. When the batch fails, each of its
// receipts is tried alone, so that one receipt cannot hold up the others;
// one that fails alone waits and is tried again later.
func (s *Receipts) ApplyInbox(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		limit = DefaultReceiptBatch
	}
	var claimed []*InboxReceipt
	var res batchResult
	err := s.Store.InPlatform(ctx, func(tx ReceiptTx) error {
		res = batchResult{}
		var err error
		if claimed, err = tx.ClaimInboxReceipts(ctx, limit, s.Now()); err != nil || len(claimed) == 0 {
			return err
		}
		return s.applyBatch(ctx, tx, claimed, &res)
	})
	if err != nil {
		// An outage or a stop is no fault of the receipts: they stay as
		// they are, for the next try.
		if len(claimed) == 0 || ErrorCode(err) == EUNAVAILABLE || ctx.Err() != nil {
			return len(claimed), err
		}
		if len(claimed) == 1 {
			s.delay(ctx, claimed[0], err)
			return 1, nil
		}
		s.Log.WarnContext(ctx, "a batch of receipts failed; applying them one by one", "count", len(claimed), "err", err)
		for _, in := range claimed {
			s.applyAlone(ctx, in.ID)
		}
		return len(claimed), nil
	}
	s.report(ctx, &res)
	return len(claimed), nil
}

// applyAlone applies one inbox receipt in a transaction of its own.
func (s *Receipts) applyAlone(ctx context.Context, id int64) {
	var res batchResult
	var in *InboxReceipt
	err := s.Store.InPlatform(ctx, func(tx ReceiptTx) error {
		res = batchResult{}
		var err error
		if in, err = tx.ClaimInboxReceipt(ctx, id); err != nil || in == nil {
			return err
		}
		return s.applyBatch(ctx, tx, []*InboxReceipt{in}, &res)
	})
	if err != nil {
		if in != nil {
			s.delay(ctx, in, err)
		}
		return
	}
	s.report(ctx, &res)
}

// delay makes a receipt that failed alone wait before its next try, longer
// after each failure (from 2 s to about an hour).
func (s *Receipts) delay(ctx context.Context, in *InboxReceipt, cause error) {
	wait := 2 * time.Second << min(in.Attempts, 11)
	s.Log.ErrorContext(ctx, "receipt not applied; it is tried again later", "provider", in.Receipt.Provider,
		"external_id", in.Receipt.ExternalID, "receipt_id", in.Receipt.ReceiptID, "retry_in", wait.String(), "err", cause)
	err := s.Store.InPlatform(ctx, func(tx ReceiptTx) error {
		return tx.DelayInboxReceipt(ctx, in.ID, s.Now().Add(wait), cause.Error())
	})
	if err != nil {
		s.Log.ErrorContext(ctx, "receipt's failed try not recorded", "id", in.ID, "err", err)
	}
}

// report counts a committed batch's outcomes and logs its foreign receipts.
func (s *Receipts) report(ctx context.Context, res *batchResult) {
	for _, o := range res.outcomes {
		s.Metrics.Receipt(o.provider, o.outcome)
	}
	for _, f := range res.foreign {
		s.logForeign(ctx, f.via, f.r, f.m)
	}
}

// applyBatch applies claimed receipts in tx, under the rules of Apply: a
// receipt of an unknown message is kept pending, one of a message outside
// what it came through is foreign, a replay is a duplicate, and the others
// move their message forward in the order of their own timestamps.
func (s *Receipts) applyBatch(ctx context.Context, tx ReceiptTx, claimed []*InboxReceipt, res *batchResult) error {
	ids := make([]int64, 0, len(claimed))
	readable := claimed[:0:0]
	for _, in := range claimed {
		if in.Unreadable != nil {
			s.Log.ErrorContext(ctx, "inbox receipt unreadable; set aside", "id", in.ID, "err", in.Unreadable)
			if err := tx.DelayInboxReceipt(ctx, in.ID, setAside, in.Unreadable.Error()); err != nil {
				return err
			}
			continue
		}
		ids = append(ids, in.ID)
		readable = append(readable, in)
	}
	// Applied in this transaction, or not at all.
	if err := tx.DeleteInboxReceipts(ctx, ids); err != nil {
		return err
	}
	claimed = readable
	slices.SortStableFunc(claimed, func(a, b *InboxReceipt) int {
		return cmp.Or(a.Receipt.At.Compare(b.Receipt.At), cmp.Compare(a.ID, b.ID))
	})
	var keys []ReceiptKey
	known := map[ReceiptKey]bool{}
	for _, in := range claimed {
		k := ReceiptKey{in.Receipt.Provider, in.Receipt.ExternalID}
		if !known[k] {
			known[k] = true
			keys = append(keys, k)
		}
	}
	// As in Apply, the locks come before the lookup: a send being recorded
	// either committed (its message is found) or waits for the pending
	// receipts to be kept, and applies them.
	if err := tx.LockReceiptKeys(ctx, keys); err != nil {
		return err
	}
	found, err := tx.MessagesByExternalIDs(ctx, keys)
	if err != nil {
		return err
	}
	messages := map[ReceiptKey]*Message{}
	var tenants []uuid.UUID
	for _, m := range found {
		if m.Provider != nil && m.ExternalMessageID != nil {
			messages[ReceiptKey{*m.Provider, *m.ExternalMessageID}] = m
			if !slices.Contains(tenants, m.TenantID) {
				tenants = append(tenants, m.TenantID)
			}
		}
	}
	// A tenant listening for status callbacks gets one per move, made from
	// the message as that move left it: its messages take the one-by-one
	// path, as do failures and complaints, which have effects beyond the
	// message.
	var listening map[uuid.UUID]bool
	if s.Callbacks != nil && len(tenants) > 0 {
		if listening, err = tx.StatusCallbackTenants(ctx, tenants); err != nil {
			return err
		}
	}

	var rows []StoredReceipt
	seen := map[ReceiptKey]bool{}
	// fresh answers whether a receipt is new within the batch; a replay
	// inside one batch is a duplicate like any other.
	fresh := func(providerName, id string) bool {
		k := ReceiptKey{providerName, id}
		if seen[k] {
			return false
		}
		seen[k] = true
		return true
	}
	type matched struct {
		m  *Message
		rs []provider.Receipt
	}
	var order []*matched
	byMessage := map[uuid.UUID]*matched{}
	oneByOne := map[uuid.UUID]bool{}
	for _, in := range claimed {
		r, via := in.Receipt, in.Via
		to, ok := receiptStatus[r.Status]
		if !ok && r.Status != provider.StatusInfo {
			// Accept refuses these; a row written otherwise is dropped.
			s.Log.WarnContext(ctx, "inbox receipt with an unknown status dropped", "provider", r.Provider, "status", r.Status)
			continue
		}
		m := messages[ReceiptKey{r.Provider, r.ExternalID}]
		switch {
		case m == nil:
			if !fresh(r.Provider, r.ReceiptID) {
				res.add(r.Provider, ReceiptDuplicate)
				continue
			}
			rows = append(rows, StoredReceipt{TenantID: viaTenant(via), Receipt: r, Outcome: ReceiptPending, Via: via, ReceivedAt: in.ReceivedAt})
		case !via.allows(m):
			r.ReceiptID = foreignID(via, r)
			if !fresh(r.Provider, r.ReceiptID) {
				res.add(r.Provider, ReceiptDuplicate)
				continue
			}
			rows = append(rows, StoredReceipt{TenantID: viaTenant(via), Receipt: r, Outcome: ReceiptForeign, ReceivedAt: in.ReceivedAt})
			res.foreign = append(res.foreign, foreignNote{via: via, r: in.Receipt, m: m})
		default:
			if !fresh(r.Provider, r.ReceiptID) {
				res.add(r.Provider, ReceiptDuplicate)
				continue
			}
			mr := byMessage[m.ID]
			if mr == nil {
				mr = &matched{m: m}
				byMessage[m.ID] = mr
				order = append(order, mr)
			}
			mr.rs = append(mr.rs, r)
			if to == MessageFailed || r.Complaint || listening[m.TenantID] {
				oneByOne[m.ID] = true
			}
		}
	}
	for _, mr := range order {
		if oneByOne[mr.m.ID] {
			continue
		}
		for _, r := range mr.rs {
			id := mr.m.ID
			rows = append(rows, StoredReceipt{TenantID: &mr.m.TenantID, MessageID: &id, Receipt: r, Outcome: ReceiptMatched})
		}
	}
	stored, err := tx.StoreReceipts(ctx, rows)
	if err != nil {
		return err
	}
	for _, row := range rows {
		if row.Outcome == ReceiptMatched {
			continue
		}
		outcome := row.Outcome
		if !stored[ReceiptKey{row.Receipt.Provider, row.Receipt.ReceiptID}] {
			outcome = ReceiptDuplicate
		}
		res.add(row.Receipt.Provider, outcome)
	}

	var moves []ReceiptMove
	var entries []*MessageEvent
	for _, mr := range order {
		if oneByOne[mr.m.ID] {
			continue
		}
		move, es := s.plainMoves(mr.m, mr.rs, stored, res)
		entries = append(entries, es...)
		if move != nil {
			moves = append(moves, *move)
		}
	}
	if err := tx.ApplyReceiptMoves(ctx, moves); err != nil {
		return err
	}
	if err := tx.InsertMessageEvents(ctx, entries); err != nil {
		return err
	}
	for _, mr := range order {
		if !oneByOne[mr.m.ID] {
			continue
		}
		for _, r := range mr.rs {
			outcome, err := s.record(ctx, tx, r, receiptStatus[r.Status], mr.m)
			if err != nil {
				return err
			}
			res.add(r.Provider, outcome)
		}
	}
	return nil
}

// plainMoves works out, for receipts that only move a message along
// sent, delivered and read, what record would have done one receipt at a
// time: the message's final status and times, and a timeline entry per
// receipt stored now.
func (s *Receipts) plainMoves(m *Message, rs []provider.Receipt, stored map[ReceiptKey]bool, res *batchResult) (*ReceiptMove, []*MessageEvent) {
	status, delivered, read := m.Status, m.DeliveredAt, m.ReadAt
	changed, moved := false, false
	var entries []*MessageEvent
	for _, r := range rs {
		if !stored[ReceiptKey{r.Provider, r.ReceiptID}] {
			res.add(r.Provider, ReceiptDuplicate)
			continue
		}
		to := receiptStatus[r.Status]
		detail := receiptDetail(r, m)
		from := status
		var toStatus *string
		outcome := ReceiptRecorded
		switch {
		case to == "":
			// Information only: on the timeline, no status change.
		case CanTransition(status, to):
			at := r.At
			status, toStatus, changed, moved, outcome = to, &to, true, true, ReceiptApplied
			if delivered == nil && (to == MessageDelivered || to == MessageRead) {
				delivered = &at
			}
			if to == MessageRead {
				read = &at
			}
		default:
			detail["note"] = "no status change: " + strings.ToLower(status) + " does not move to " + strings.ToLower(to)
			// A delivered that comes after the read keeps its own time:
			// the read only stood in for it.
			if status == MessageRead && r.Status == provider.StatusDelivered && (delivered == nil || delivered.After(r.At)) {
				at := r.At
				delivered, changed = &at, true
			}
		}
		entries = append(entries, &MessageEvent{TenantID: m.TenantID, MessageID: m.ID, FromStatus: &from, ToStatus: toStatus,
			Source: SourceWebhook, Detail: detail, At: r.At})
		res.add(r.Provider, outcome)
	}
	if !changed {
		return nil, entries
	}
	return &ReceiptMove{TenantID: m.TenantID, MessageID: m.ID, From: m.Status, To: status,
		DeliveredAt: delivered, ReadAt: read, Moved: moved}, entries
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

// viaTenant is the tenant a receipt that came through via is kept under
// when it names no message of it: the route's, none on shared routes.
func viaTenant(via Via) *uuid.UUID {
	if via.TenantID == uuid.Nil {
		return nil
	}
	id := via.TenantID
	return &id
}

// ReceiptApplier applies the inbox in the worker processes: woken by the
// inbox's notifications (and, as a safety net, by a slow poll), it lets
// receipts gather for a moment (Gather), then applies batch after batch
// until the inbox is empty. Under load a batch also holds what arrived
// while the previous one was applied, so batches grow with the load and
// the wait stays about one batch; idle, it costs one short query per poll.
// Appliers in several processes share the inbox: a row is claimed by one
// of them.
type ReceiptApplier struct {
	Receipts *Receipts
	// Wake signals that receipts may be waiting.
	Wake <-chan struct{}
	// Poll is the safety poll's interval (DefaultReceiptPoll when 0).
	Poll time.Duration
	// Batch is the most receipts one transaction applies
	// (DefaultReceiptBatch when 0).
	Batch int
	// Gather is how long receipts gather after a notification
	// (DefaultReceiptGather when 0).
	Gather time.Duration
	// After starts the gathering's wait (time.After when nil; tests hold
	// the wait open and end it themselves).
	After func(time.Duration) <-chan time.Time
	Log   *slog.Logger
}

// Run applies the inbox until ctx ends.
func (a *ReceiptApplier) Run(ctx context.Context) {
	poll, batch := cmp.Or(a.Poll, DefaultReceiptPoll), cmp.Or(a.Batch, DefaultReceiptBatch)
	gather, after := cmp.Or(a.Gather, DefaultReceiptGather), a.After
	if after == nil {
		after = time.After
	}
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		for ctx.Err() == nil {
			n, err := a.Receipts.ApplyInbox(ctx, batch)
			if err != nil {
				if ctx.Err() == nil {
					a.Log.ErrorContext(ctx, "applying receipts failed; trying again at the next poll", "err", err)
				}
				break
			}
			if n < batch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-a.Wake:
			// The receipt that notified is rarely alone for long: let the
			// others of the moment join its batch.
			select {
			case <-ctx.Done():
				return
			case <-after(gather):
			}
		case <-ticker.C:
		}
	}
}
