package app

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Group commit at intake (see groupCommit). Most requests store their event and its route
// job, after settling the event's entity (settleEntity: the booking's lock,
// whether the event is already superseded, the trip learnt), and nothing
// else (batchable). Such requests arriving together share one transaction,
// whatever their tenants: each tenant's part runs in that tenant's scope
// (ScopeTenant), where its events settle their entities and one multi-row
// insert stores them; then one insert stores every route job and one
// commit ends it, instead of one transaction per request. The event and its
// job still commit together, and each caller answers only after the commit
// that holds its event.
//
// Batching across tenants is what makes batches at moderate rates: a
// service with many tenants each sending a little sees requests of
// different tenants one after the other, and batches of one tenant were
// mostly batches of one or two. The price is a shared fate: when a batch
// fails (a booking's lock not granted within batchLockTimeout), its
// requests, other tenants' too, go the one-by-one way.
//
// A request the batch did not store (its event id was used before, also by
// another request of the same batch, or the batch failed) goes the
// one-by-one way, Submit's own transaction, which answers duplicates and
// conflicts as always.

// DefaultIntakeBatch is the most events one intake transaction stores.
const DefaultIntakeBatch = 128

// DefaultIntakeWriters is how many intake batches are written at once.
// Two keep a 2-core machine's intake batching at moderate rates too: with
// four, requests arriving a few at a time each found a writer free and
// committed alone (0.39 commits a request at 3,900 requests/s, the CPU 94%
// busy); with two, 0.30 at 4,300/s with the CPU 89% busy, p99 11 ms
// instead of 13, and the closed loop 8,600 requests/s instead of 7,800.
const DefaultIntakeWriters = 2

// batchLockTimeout is the longest a batch of several events waits for an
// entity lock.
const batchLockTimeout = 100 * time.Millisecond

// RouteBatchQueue enqueues several route jobs with one statement.
type RouteBatchQueue interface {
	EnqueueRoutes(ctx context.Context, tx Tx, jobs ...RouteJob) error
}

// IntakeBatcher writes batchable submissions in shared transactions.
type IntakeBatcher struct {
	Store Store[IntakeTx]
	Queue RouteBatchQueue
	// MaxBatch is the most events in one transaction (DefaultIntakeBatch
	// when 0); Writers the most transactions at once (DefaultIntakeWriters
	// when 0), each holding one database connection.
	MaxBatch, Writers int
	// Observe, when set, is told each batch's size.
	Observe func(size int)
	Log     *slog.Logger

	once  sync.Once
	group groupCommit[*intakeItem]
}

// intakeItem is one request's event waiting for its batch.
type intakeItem struct {
	event *Event
	// settle runs the event's own statements before it is stored; they
	// may change its status (routeJobOf).
	settle func(ctx context.Context, tx IntakeTx) error
	// locks says whether settle locks entities.
	locks  bool
	stored bool
}

// Add stores e and its route job (routeJobOf), after settle (which locks
// entities when locks is true), in a transaction shared with the other
// events submitted meanwhile. It reports
// false when it did not store e: the tenant used e's source event id before
// (err is nil), or the batch failed (err says why); the caller then takes
// the one-by-one way.
func (b *IntakeBatcher) Add(ctx context.Context, e *Event, locks bool, settle func(ctx context.Context, tx IntakeTx) error) (bool, error) {
	b.once.Do(func() {
		// One key for all: write scopes each tenant's part.
		b.group.key = func(*intakeItem) uuid.UUID { return uuid.Nil }
		b.group.write = b.write
	})
	it := &intakeItem{event: e, settle: settle, locks: locks}
	if err := b.group.add(ctx, it, cmp.Or(b.MaxBatch, DefaultIntakeBatch), cmp.Or(b.Writers, DefaultIntakeWriters)); err != nil {
		return false, err
	}
	return it.stored, nil
}

// Waiting returns how many events wait for a batch to be written.
func (b *IntakeBatcher) Waiting() int { return b.group.waiting() }

// write stores one batch: each tenant's events in that tenant's scope, then
// every route job. The parts whose events lock entities go first, one
// statement after the other; the others then go together in one round
// trip.
func (b *IntakeBatcher) write(ctx context.Context, _ uuid.UUID, batch []*intakeItem) error {
	if b.Observe != nil {
		b.Observe(len(batch))
	}
	parts := tenantParts(batch)
	first := parts[0][0].event.TenantID
	stored := map[uuid.UUID]bool{}
	err := b.Store.InTenant(ctx, first, func(tx IntakeTx) (err error) {
		if len(batch) > 1 && locking(batch) {
			// Several events' entity locks, taken one event after the
			// other, could close a cycle with a cancellation's exclusive
			// locks. The batch gives way instead of waiting: it fails,
			// and its requests go one by one.
			if err := tx.SetLockTimeout(ctx, batchLockTimeout); err != nil {
				return err
			}
		}
		// A tenant's part whose events lock entities settles them in its
		// tenant's scope and stores them; the other parts' events run no
		// statement to settle (settleEntity returns before its first
		// when there is nothing to lock), and are stored together.
		var plain [][]*Event
		for _, part := range parts {
			if !locking(part) {
				events, err := settlePart(ctx, tx, part)
				if err != nil {
					return err
				}
				plain = append(plain, events)
				continue
			}
			if err := tx.ScopeTenant(ctx, part[0].event.TenantID); err != nil {
				return err
			}
			events, err := settlePart(ctx, tx, part)
			if err != nil {
				return err
			}
			ids, err := tx.InsertEvents(ctx, events)
			if err != nil {
				return err
			}
			maps.Copy(stored, ids)
		}
		if len(plain) > 0 {
			ids, err := tx.InsertTenantsEvents(ctx, plain)
			if err != nil {
				return err
			}
			maps.Copy(stored, ids)
		}
		jobs := make([]RouteJob, 0, len(batch))
		for _, it := range batch {
			if job, ok := routeJobOf(it.event); ok && stored[it.event.ID] {
				jobs = append(jobs, job)
			}
		}
		if len(jobs) == 0 {
			return nil
		}
		return b.Queue.EnqueueRoutes(ctx, tx, jobs...)
	})
	if err != nil {
		if b.Log != nil {
			b.Log.WarnContext(ctx, "intake batch failed; its requests are stored one by one",
				"tenants", len(parts), "events", len(batch), "error", err)
		}
		return err
	}
	for _, it := range batch {
		it.stored = stored[it.event.ID]
	}
	return nil
}

// locking reports whether an item of items locks entities.
func locking(items []*intakeItem) bool {
	return slices.ContainsFunc(items, func(it *intakeItem) bool { return it.locks })
}

// settlePart settles one tenant's events and returns them. When they lock
// entities, the transaction must be in that tenant's scope.
func settlePart(ctx context.Context, tx IntakeTx, part []*intakeItem) ([]*Event, error) {
	events := make([]*Event, len(part))
	for i, it := range part {
		if it.settle != nil {
			if err := it.settle(ctx, tx); err != nil {
				return nil, err
			}
		}
		events[i] = it.event
	}
	return events, nil
}

// tenantParts splits a batch by tenant, in the order of each tenant's
// first item, each part in arrival order.
func tenantParts(batch []*intakeItem) [][]*intakeItem {
	var parts [][]*intakeItem
	at := map[uuid.UUID]int{}
	for _, it := range batch {
		i, ok := at[it.event.TenantID]
		if !ok {
			i = len(parts)
			at[it.event.TenantID] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], it)
	}
	return parts
}

// batchable reports whether a submission's transaction is what
// IntakeBatcher runs: the entity settled, the event and its route job
// stored, and nothing more. Not so for an event about an entity that
// supersedes others (supersede) or moves relative schedules
// (moveRelativeSchedules), one with redacted context (an audit entry), and
// an audience, whose size settleEntity checks with an error of its own to
// answer. TestBatchable holds this and Submit together.
func batchable(def *EventDef, e *Event, redacted []string) bool {
	if len(redacted) > 0 || e.TripAudience() != "" {
		return false
	}
	return e.EntityType == nil || len(def.Moves) == 0 && len(def.Supersedes) == 0
}
