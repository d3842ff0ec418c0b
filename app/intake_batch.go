package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Group commit at intake. Most requests store their event and its route
// job, after settling the event's entity (settleEntity: the booking's lock,
// whether the event is already superseded, the trip learnt), and nothing
// else (batchable). Such requests arriving together share one transaction
// per tenant: each settles its entity in it, then one multi-row insert
// stores the events, one insert their route jobs, and one commit ends it,
// instead of one transaction per request. A batch is
// written as soon as a writer is free, never after a timer: a lone request
// goes at once, and only requests that arrive while the writers are busy
// wait for the next batch, which is then the larger. The event and its job
// still commit together, and each caller answers only after the commit that
// holds its event.
//
// A request the batch did not store (its event id was used before, also by
// another request of the same batch, or the batch failed) goes the
// one-by-one way, Submit's own transaction, which answers duplicates and
// conflicts as always.

// DefaultIntakeBatch is the most events one intake transaction stores.
const DefaultIntakeBatch = 128

// DefaultIntakeWriters is how many intake batches are written at once.
const DefaultIntakeWriters = 4

// intakeBatchTimeout bounds a batch's transaction. The batch is several
// callers' at once, so no caller's own deadline cuts it short.
const intakeBatchTimeout = 10 * time.Second

// batchLockTimeout is the longest a batch of several events waits for an
// entity lock.
const batchLockTimeout = 100 * time.Millisecond

// RouteBatchQueue enqueues several route jobs with one statement.
type RouteBatchQueue interface {
	EnqueueRoutes(ctx context.Context, tx Tx, jobs ...RouteJob) error
}

// IntakeBatcher writes plain submissions in shared transactions.
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

	mu      sync.Mutex
	pending []*intakeItem
	writing int
}

// intakeItem is one request's event waiting for its batch.
type intakeItem struct {
	event *Event
	// settle runs the event's own statements before it is stored; they
	// may change its status (routeJobOf).
	settle func(ctx context.Context, tx IntakeTx) error
	stored bool
	err    error
	done   chan struct{}
}

// Add stores e and its route job (routeJobOf), after settle, in a
// transaction shared with the other events submitted meanwhile. It reports
// false when it did not store e: the tenant used e's source event id before
// (err is nil), or the batch failed (err says why); the caller then takes
// the one-by-one way.
func (b *IntakeBatcher) Add(ctx context.Context, e *Event, settle func(ctx context.Context, tx IntakeTx) error) (bool, error) {
	it := &intakeItem{event: e, settle: settle, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, it)
	start := b.writing < b.writers()
	if start {
		b.writing++
	}
	b.mu.Unlock()
	if start {
		go b.write()
	}
	select {
	case <-it.done:
		return it.stored, it.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// Waiting returns how many events wait for a batch to be written.
func (b *IntakeBatcher) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

func (b *IntakeBatcher) writers() int {
	if b.Writers > 0 {
		return b.Writers
	}
	return DefaultIntakeWriters
}

// write writes batches until none is waiting.
func (b *IntakeBatcher) write() {
	for {
		b.mu.Lock()
		batch := b.take()
		if len(batch) == 0 {
			b.writing--
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.commit(batch)
	}
}

// take removes the next batch from pending: the oldest waiting event's
// tenant, and that tenant's other waiting events in arrival order, up to
// MaxBatch. The caller holds mu.
func (b *IntakeBatcher) take() []*intakeItem {
	if len(b.pending) == 0 {
		return nil
	}
	limit := b.MaxBatch
	if limit <= 0 {
		limit = DefaultIntakeBatch
	}
	tenant := b.pending[0].event.TenantID
	var batch []*intakeItem
	rest := b.pending[:0]
	for _, it := range b.pending {
		if it.event.TenantID == tenant && len(batch) < limit {
			batch = append(batch, it)
		} else {
			rest = append(rest, it)
		}
	}
	clear(b.pending[len(rest):])
	b.pending = rest
	return batch
}

// commit stores one tenant's batch and tells each caller how it went.
func (b *IntakeBatcher) commit(batch []*intakeItem) {
	ctx, cancel := context.WithTimeout(context.Background(), intakeBatchTimeout)
	defer cancel()
	tenant := batch[0].event.TenantID
	events := make([]*Event, len(batch))
	for i, it := range batch {
		events[i] = it.event
	}
	var stored map[uuid.UUID]bool
	err := b.Store.InTenant(ctx, tenant, func(tx IntakeTx) (err error) {
		if len(batch) > 1 {
			// Several events' entity locks, taken one event after the
			// other, could close a cycle with a cancellation's exclusive
			// locks. The batch gives way instead of waiting: it fails,
			// and its requests go one by one.
			if err := tx.SetLockTimeout(ctx, batchLockTimeout); err != nil {
				return err
			}
		}
		for _, it := range batch {
			if it.settle != nil {
				if err := it.settle(ctx, tx); err != nil {
					return err
				}
			}
		}
		if stored, err = tx.InsertEvents(ctx, events); err != nil {
			return err
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
	if err != nil && b.Log != nil {
		b.Log.WarnContext(ctx, "intake batch failed; its requests are stored one by one", "tenant_id", tenant,
			"events", len(batch), "error", err)
	}
	if b.Observe != nil {
		b.Observe(len(batch))
	}
	for _, it := range batch {
		it.stored, it.err = err == nil && stored[it.event.ID], err
		close(it.done)
	}
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
