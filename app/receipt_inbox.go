package app

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// Receipts reach messages in two steps. A webhook verifies the provider's
// signature, resolves what the receipts came through (Via) and stores them
// in the inbox in one statement (Accept), then answers. The receipt
// applier in the worker processes takes the available receipts in rounds
// (ApplyInbox): it reads which message each names, across tenants, then
// applies each tenant's receipts in one transaction of that tenant's,
// through the rulebook (apply). A transaction never holds two tenants'
// receipts, so one tenant's slow or failing batch holds up no other's.
//
// A receipt that names no known message yet (it overtook the commit of its
// send) is parked in the inbox; the statement that records the send wakes
// it, and the next round applies it. Maintenance deletes those still
// parked after the horizon (PrunePending).

// DefaultReceiptBatch is how many inbox receipts one round takes at most.
const DefaultReceiptBatch = 500

// DefaultReceiptGather is how long the applier lets receipts gather after
// a notification before it applies them. Every receipt notifies, so at a
// moderate rate an applier that answered each notification at once would
// apply one receipt per transaction; gathering for this long applies a
// few dozen at a time for a delay no reader of a message's status
// notices. Under load, rounds that come back full are followed at once.
const DefaultReceiptGather = 25 * time.Millisecond

// DefaultReceiptPoll is how often the applier looks at the inbox when no
// notification woke it: a safety net for a notification lost while its
// listening connection was being replaced, and the clock of receipts
// waiting after a failed try or reported ahead of time.
const DefaultReceiptPoll = 5 * time.Second

// ReceiptInboxChannel is the Postgres notification channel every insert
// into the inbox, and every wake of a parked receipt, notifies.
const ReceiptInboxChannel = "herald_receipt_inbox"

// InboxReceipt is a receipt a webhook accepted, with what it came through,
// waiting in the inbox to be applied.
type InboxReceipt struct {
	ID         int64
	Receipt    provider.Receipt
	Via        Via
	ReceivedAt time.Time
	// AvailableAt, when set, is when the receipt may first be applied (the
	// sandbox reports its deliveries ahead of time); zero is at once.
	AvailableAt time.Time
	// Attempts counts the tries that failed, when the receipt was tried
	// alone after its batch failed.
	Attempts int
	// Unreadable says why the stored row could not be read back; such a
	// receipt is set aside, with the reason, instead of applied.
	Unreadable error
	// Target is the message that has the receipt's provider id, as the
	// statement that read the receipt saw it; zero when there is none.
	Target ReceiptTarget
	// Seen: a receipt with its provider and id is stored already (a
	// replay of one applied or found foreign).
	Seen bool
	// Astray, for a foreign receipt, is the account of the message it
	// names when that account hears the route it came through
	// (Via.AccountTopic) but the receipt names other settings (an SES
	// configuration set other than the account's): it is kept as that
	// account's. Nil for every other receipt.
	Astray *ChannelAccount
}

// ReceiptTarget is the message a receipt names: whose it is, and through
// which channel account it was sent.
type ReceiptTarget struct {
	TenantID  uuid.UUID
	MessageID uuid.UUID
	AccountID *uuid.UUID
	// ByRef: the message was found by the id the receipt echoes
	// (provider.Receipt.MessageRef), no message having its provider id.
	ByRef bool
}

// setAside is when a receipt that cannot be applied is tried again: never
// by itself; the row stays, with its error, for an operator.
var setAside = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// ReceiptInbox stores accepted receipts: one statement, committed on its
// own, for every receipt of one webhook request.
type ReceiptInbox interface {
	AddInboxReceipts(ctx context.Context, rs []InboxReceipt) error
}

// ReceiptClaimTx lists the inbox statements of a batch of receipts being
// settled: claiming them, keeping the foreign ones, deleting the settled.
// Each reads receipts with their Target, the message that has their
// provider id (or the id they echo) as the transaction's scope sees it.
type ReceiptClaimTx interface {
	Tx
	// ClaimInboxReceipts locks those of the receipts with these ids that
	// are still available at now, skipping those another applier holds.
	ClaimInboxReceipts(ctx context.Context, ids []int64, now time.Time) ([]*InboxReceipt, error)
	// DeleteInboxReceipts removes settled receipts from the inbox.
	DeleteInboxReceipts(ctx context.Context, ids []int64) error
	// StoreForeignReceipts keeps foreign receipts, each once under its
	// ReceiptID, as tenantID's (uuid.Nil: no tenant's), and returns the
	// ids of those stored now: the others were seen before.
	StoreForeignReceipts(ctx context.Context, tenantID uuid.UUID, rs []ForeignReceipt) (map[string]bool, error)
}

// ForeignReceipt is a receipt kept, never applied, because it names a
// message of another tenant or account than it came through.
type ForeignReceipt struct {
	Receipt provider.Receipt
	// AccountID is the account it is kept as (see InboxReceipt.Astray),
	// or nil.
	AccountID  *uuid.UUID
	ReceivedAt time.Time
}

// ReceiptInboxTx lists the statements on the inbox itself, across
// tenants: the applier's rounds.
type ReceiptInboxTx interface {
	ReceiptClaimTx
	// MatchInboxReceipts reads up to limit receipts available at now,
	// oldest first, without locking them.
	MatchInboxReceipts(ctx context.Context, limit int, now time.Time) ([]*InboxReceipt, error)
	// DelayInboxReceipt counts a failed try of a receipt and makes it wait.
	DelayInboxReceipt(ctx context.Context, id int64, availableAt time.Time, lastError string) error
	// ParkInboxReceipts keeps receipts of unknown messages until the
	// recording of a send that names them wakes them, and returns the ids
	// it parked: a receipt whose message it finds (recorded since the
	// claim) stays due.
	ParkInboxReceipts(ctx context.Context, ids []int64) ([]int64, error)
	// AccountsByID returns the channel accounts with these ids, of every
	// tenant.
	AccountsByID(ctx context.Context, ids []uuid.UUID) ([]*ChannelAccount, error)
}

// Accept checks receipts a webhook verified and stores them in the inbox
// in one statement, to be applied by the receipt applier. A receipt with
// an unknown status is refused and none is stored. Each receipt's ID and
// time are filled in rs.
func (s *Receipts) Accept(ctx context.Context, rs ...InboxReceipt) error {
	return s.acceptInto(ctx, s.Inbox, rs)
}

// acceptInto is Accept into inbox: the inbox itself (a statement committed
// on its own), or a transaction that stores the receipts together with
// what they were read with (the delivery-log reader's cursor).
func (s *Receipts) acceptInto(ctx context.Context, inbox ReceiptInbox, rs []InboxReceipt) error {
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
		if rs[i].AvailableAt.Before(now) {
			rs[i].AvailableAt = now
		}
	}
	return inbox.AddInboxReceipts(ctx, rs)
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

// ReceiptResult is what became of one receipt.
type ReceiptResult struct {
	Provider, ReceiptID, ExternalID string
	Outcome                         string
}

// InboxRound is what one round of the applier did.
type InboxRound struct {
	// Taken is how many available receipts the round found; a round that
	// took its limit leaves more.
	Taken int
	// Results says what became of each receipt the round settled or
	// parked. A receipt another applier took meanwhile is not in it.
	Results []ReceiptResult
}

// inboxGroups is a round's receipts by what is done with them.
type inboxGroups struct {
	// owned are the receipts to apply, by the tenant of their message.
	owned map[uuid.UUID][]*InboxReceipt
	// foreign are the receipts naming a message they may not touch, by the
	// tenant of their route.
	foreign map[uuid.UUID][]*InboxReceipt
	// tenants lists the owned and foreign keys in the order first seen.
	tenants, foreignTenants []uuid.UUID
	unmatched, unreadable   []*InboxReceipt
}

func groupInbox(found []*InboxReceipt) inboxGroups {
	g := inboxGroups{owned: map[uuid.UUID][]*InboxReceipt{}, foreign: map[uuid.UUID][]*InboxReceipt{}}
	for _, in := range found {
		t := in.Target
		switch {
		case in.Unreadable != nil:
			g.unreadable = append(g.unreadable, in)
		case t.MessageID == uuid.Nil:
			g.unmatched = append(g.unmatched, in)
		case in.Via.allows(t.TenantID, t.AccountID):
			if g.owned[t.TenantID] == nil {
				g.tenants = append(g.tenants, t.TenantID)
			}
			g.owned[t.TenantID] = append(g.owned[t.TenantID], in)
		default:
			// Kept under the route's tenant, or as the account's it went
			// astray from.
			owner := in.Via.TenantID
			if in.Astray != nil {
				owner = in.Astray.TenantID
			}
			if g.foreign[owner] == nil {
				g.foreignTenants = append(g.foreignTenants, owner)
			}
			g.foreign[owner] = append(g.foreign[owner], in)
		}
	}
	return g
}

// ApplyInbox runs one round of the applier over up to limit available
// receipts: each tenant's receipts are applied in one transaction of its
// own, foreign ones stored, those of unknown messages parked. When a
// tenant's batch fails, each of its receipts is tried alone, so that one
// receipt cannot hold up the others; one that fails alone waits and is
// tried again later. An outage or the end of ctx stops the round, and the
// receipts not settled stay as they were.
func (s *Receipts) ApplyInbox(ctx context.Context, limit int) (InboxRound, error) {
	if limit <= 0 {
		limit = DefaultReceiptBatch
	}
	var found []*InboxReceipt
	err := s.InboxStore.InPlatform(ctx, func(tx ReceiptInboxTx) (err error) {
		if found, err = tx.MatchInboxReceipts(ctx, limit, s.Now()); err != nil {
			return err
		}
		return s.findAstray(ctx, tx, found)
	})
	round := InboxRound{Taken: len(found)}
	if err != nil || len(found) == 0 {
		return round, err
	}
	g := groupInbox(found)
	for _, in := range g.unreadable {
		s.Log.ErrorContext(ctx, "inbox receipt unreadable; set aside", "id", in.ID, "err", in.Unreadable)
		s.delayAlone(ctx, in, setAside, in.Unreadable)
	}
	for _, tenantID := range g.tenants {
		if err := s.applyTenant(ctx, tenantID, g.owned[tenantID], &round); err != nil {
			return round, err
		}
	}
	for _, tenantID := range g.foreignTenants {
		if err := s.storeForeign(ctx, tenantID, g.foreign[tenantID], &round); err != nil {
			return round, err
		}
	}
	if err := s.park(ctx, g.unmatched, &round); err != nil {
		return round, err
	}
	return round, ctx.Err()
}

// stops reports whether an error ends the round: an outage or a stop is no
// fault of the receipts, which stay as they are for the next round.
func stops(ctx context.Context, err error) bool {
	return ErrorCode(err) == EUNAVAILABLE || ctx.Err() != nil
}

// applyTenant applies one tenant's receipts in one transaction, and each
// alone when that fails.
func (s *Receipts) applyTenant(ctx context.Context, tenantID uuid.UUID, rs []*InboxReceipt, round *InboxRound) error {
	results, err := s.applyBatch(ctx, tenantID, rs)
	if err == nil {
		s.report(round, results)
		return nil
	}
	if stops(ctx, err) {
		return err
	}
	if len(rs) > 1 {
		s.Log.WarnContext(ctx, "a batch of receipts failed; applying them one by one", "tenant_id", tenantID, "count", len(rs), "err", err)
	}
	for _, in := range rs {
		results, err := s.applyBatch(ctx, tenantID, []*InboxReceipt{in})
		switch {
		case err == nil:
			s.report(round, results)
		case stops(ctx, err):
			return err
		default:
			s.delayAlone(ctx, in, s.Now().Add(retryWait(in.Attempts)), err)
		}
	}
	return nil
}

// applyBatch applies rs, receipts of tenantID's messages, in one
// transaction of that tenant, in the order of their own timestamps. The
// messages are locked before the receipts are claimed, the order the
// recording of a send takes them in. A receipt whose message changed since
// it was read (another id, another message) stays in the inbox for the
// next round.
func (s *Receipts) applyBatch(ctx context.Context, tenantID uuid.UUID, rs []*InboxReceipt) ([]ReceiptResult, error) {
	var results []ReceiptResult
	err := s.Store.InTenant(ctx, tenantID, func(tx ReceiptTx) error {
		results = nil
		messages, err := tx.LockReceiptMessages(ctx, tenantID, targets(rs))
		if err != nil {
			return err
		}
		claimed, err := tx.ClaimInboxReceipts(ctx, inboxIDs(rs), s.Now())
		if err != nil {
			return err
		}
		slices.SortStableFunc(claimed, func(a, b *InboxReceipt) int {
			return cmp.Or(a.Receipt.At.Compare(b.Receipt.At), cmp.Compare(a.ID, b.ID))
		})
		var settled []int64
		for _, in := range claimed {
			i := slices.IndexFunc(messages, func(m *Message) bool { return m.ID == in.Target.MessageID })
			// A receipt applied before it in this batch may have given the
			// message a new id (a rate limit after acceptance).
			if i < 0 || !(names(messages[i], in.Receipt) || echoes(messages[i], in.Receipt)) ||
				!in.Via.allows(messages[i].TenantID, messages[i].ChannelAccountID) {
				continue
			}
			outcome, err := s.apply(ctx, tx, in.Receipt, messages[i])
			if err != nil {
				return err
			}
			settled = append(settled, in.ID)
			results = append(results, resultOf(in.Receipt, outcome))
		}
		return tx.DeleteInboxReceipts(ctx, settled)
	})
	return results, err
}

// storeForeign keeps receipts that name a message of another tenant or
// account than they came through, for the record, under their route's
// tenant (none on shared routes), or as the account's they went astray
// from, with a key of their own (foreignID).
func (s *Receipts) storeForeign(ctx context.Context, tenantID uuid.UUID, rs []*InboxReceipt, round *InboxRound) error {
	var results []ReceiptResult
	astray := map[int64]*ChannelAccount{}
	for _, in := range rs {
		if in.Astray != nil {
			astray[in.ID] = in.Astray
		}
	}
	run := func(tx ReceiptClaimTx) error {
		results = nil
		claimed, err := tx.ClaimInboxReceipts(ctx, inboxIDs(rs), s.Now())
		if err != nil || len(claimed) == 0 {
			return err
		}
		keyed := make([]ForeignReceipt, len(claimed))
		for i, in := range claimed {
			keyed[i] = ForeignReceipt{Receipt: in.Receipt, ReceivedAt: in.ReceivedAt}
			keyed[i].Receipt.ReceiptID = foreignID(in.Via, in.Receipt)
			if a := astray[in.ID]; a != nil {
				keyed[i].AccountID = &a.ID
			}
		}
		stored, err := tx.StoreForeignReceipts(ctx, tenantID, keyed)
		if err != nil {
			return err
		}
		for i, in := range claimed {
			outcome := ReceiptDuplicate
			if stored[keyed[i].Receipt.ReceiptID] {
				outcome = ReceiptForeign
			}
			results = append(results, resultOf(in.Receipt, outcome))
		}
		return tx.DeleteInboxReceipts(ctx, inboxIDs(claimed))
	}
	var err error
	if tenantID == uuid.Nil {
		err = s.InboxStore.InPlatform(ctx, func(tx ReceiptInboxTx) error { return run(tx) })
	} else {
		err = s.Store.InTenant(ctx, tenantID, func(tx ReceiptTx) error { return run(tx) })
	}
	if err != nil {
		return err
	}
	for _, in := range rs {
		if in.Astray != nil {
			s.logAstray(ctx, in)
			continue
		}
		s.logForeign(ctx, in.Via, in.Receipt, in.Target.TenantID, in.Target.AccountID)
	}
	s.report(round, results)
	return nil
}

// park keeps the receipts that name no known message until their send is
// recorded. Each is claimed and looked up again first, and once more as it
// is parked: a send recorded since the round read it is found then, and its
// receipt is left for the next round to apply. A send recorded after that
// waits for the claim to end and then wakes the parked receipt. A replay of a receipt
// stored already (its message has since gone to another id, say after a
// rate limit) is a duplicate, and goes.
func (s *Receipts) park(ctx context.Context, rs []*InboxReceipt, round *InboxRound) error {
	if len(rs) == 0 {
		return nil
	}
	var results []ReceiptResult
	err := s.InboxStore.InPlatform(ctx, func(tx ReceiptInboxTx) error {
		results = nil
		claimed, err := tx.ClaimInboxReceipts(ctx, inboxIDs(rs), s.Now())
		if err != nil {
			return err
		}
		var unknown, replays []int64
		byID := map[int64]*InboxReceipt{}
		for _, in := range claimed {
			switch {
			case in.Target.MessageID != uuid.Nil:
			case in.Seen:
				replays = append(replays, in.ID)
				results = append(results, resultOf(in.Receipt, ReceiptDuplicate))
			default:
				unknown = append(unknown, in.ID)
				byID[in.ID] = in
			}
		}
		if err := tx.DeleteInboxReceipts(ctx, replays); err != nil {
			return err
		}
		parked, err := tx.ParkInboxReceipts(ctx, unknown)
		for _, id := range parked {
			results = append(results, resultOf(byID[id].Receipt, ReceiptPending))
		}
		return err
	})
	if err != nil {
		return err
	}
	s.report(round, results)
	return nil
}

// retryWait is the wait of a receipt that failed alone before its next
// try, longer after each failure (from 2 s to about an hour).
func retryWait(attempts int) time.Duration { return 2 * time.Second << min(attempts, 11) }

// delayAlone makes a receipt wait until at, recording why.
func (s *Receipts) delayAlone(ctx context.Context, in *InboxReceipt, at time.Time, cause error) {
	s.Log.ErrorContext(ctx, "receipt not applied; it is tried again later", "provider", in.Receipt.Provider,
		"external_id", in.Receipt.ExternalID, "receipt_id", in.Receipt.ReceiptID, "retry_at", at, "err", cause)
	err := s.InboxStore.InPlatform(ctx, func(tx ReceiptInboxTx) error {
		return tx.DelayInboxReceipt(ctx, in.ID, at, cause.Error())
	})
	if err != nil {
		s.Log.ErrorContext(ctx, "receipt's failed try not recorded", "id", in.ID, "err", err)
	}
}

// report counts committed results and adds them to the round's.
func (s *Receipts) report(round *InboxRound, results []ReceiptResult) {
	for _, r := range results {
		s.Metrics.Receipt(r.Provider, r.Outcome)
	}
	round.Results = append(round.Results, results...)
}

func resultOf(r provider.Receipt, outcome string) ReceiptResult {
	return ReceiptResult{Provider: r.Provider, ReceiptID: r.ReceiptID, ExternalID: r.ExternalID, Outcome: outcome}
}

func inboxIDs(rs []*InboxReceipt) []int64 {
	ids := make([]int64, len(rs))
	for i, in := range rs {
		ids[i] = in.ID
	}
	return ids
}

// targets lists the messages the receipts name, each once.
func targets(rs []*InboxReceipt) []uuid.UUID {
	var ids []uuid.UUID
	for _, in := range rs {
		if !slices.Contains(ids, in.Target.MessageID) {
			ids = append(ids, in.Target.MessageID)
		}
	}
	return ids
}

// ReceiptApplier applies the inbox in the worker processes: woken by the
// inbox's notifications (and, as a safety net, by a slow poll), it lets
// receipts gather for a moment (Gather), then runs round after round until
// the inbox has nothing available. Under load a round also holds what
// arrived while the previous one was applied, so rounds grow with the load
// and the wait stays about one round; idle, it costs one short query per
// poll. Appliers in several processes share the inbox: a receipt is
// claimed by one of them.
type ReceiptApplier struct {
	Receipts *Receipts
	// Wake signals that receipts may be waiting.
	Wake <-chan struct{}
	// Poll is the safety poll's interval (DefaultReceiptPoll when 0).
	Poll time.Duration
	// Batch is the most receipts one round takes (DefaultReceiptBatch
	// when 0).
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
			round, err := a.Receipts.ApplyInbox(ctx, batch)
			if err != nil {
				if ctx.Err() == nil {
					a.Log.ErrorContext(ctx, "applying receipts failed; trying again at the next poll", "err", err)
				}
				break
			}
			if round.Taken < batch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-a.Wake:
			// The receipt that notified is rarely alone for long: let the
			// others of the moment join its round.
			select {
			case <-ctx.Done():
				return
			case <-after(gather):
			}
		case <-ticker.C:
		}
	}
}
