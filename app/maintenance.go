package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
)

// PruneBatch is the most rows one pruning transaction deletes, so that
// retention never holds locks long enough to block live traffic.
const PruneBatch = 2000

// MaintenanceTx lists the statements Maintenance runs.
type MaintenanceTx interface {
	FallbackTx
	MessageByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Message, error)
	InsertMessageEvent(ctx context.Context, e *MessageEvent) error
	OverdueMessages(ctx context.Context, now time.Time, limit int) ([]OverdueMessage, error)
	ListTenants(ctx context.Context) ([]*Tenant, error)
	StuckMessages(ctx context.Context, queuedBefore time.Time, limit int) ([]DispatchJob, error)
	MarkStale(ctx context.Context, sentBefore, at time.Time, limit int) (int, error)
	PruneMessages(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error)
	PruneEvents(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error)
	PruneReceipts(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error)
	PrunePendingReceipts(ctx context.Context, receivedBefore time.Time, limit int) ([]string, error)
}

// Maintenance is Herald's periodic housekeeping.
type Maintenance struct {
	Store Store[MaintenanceTx]
	Queue Queue
	Now   Clock
	Log   *slog.Logger
	// StuckAfter is how long a QUEUED message may wait without a live job
	// before it is enqueued again; 0 means five minutes.
	StuckAfter time.Duration
	// PendingHorizon is how long a receipt for a message id Herald has not
	// recorded is kept; 0 means DefaultPendingHorizon.
	PendingHorizon time.Duration
	// Metrics counts expired receipts; nil counts nothing.
	Metrics Metrics
	// Router continues the chains of messages past their delivery
	// deadline; nil leaves them.
	Router *Router
	// Callbacks makes the message.fallback callbacks of those chains; nil
	// makes none.
	Callbacks *Callbacks
}

// DefaultPendingHorizon is how long a receipt waits for its send to be
// recorded (HERALD_PENDING_RECEIPT_HORIZON).
const DefaultPendingHorizon = 24 * time.Hour

// ReceiptExpired is the metrics outcome of a pending receipt whose message
// was never recorded within the horizon.
const ReceiptExpired = "expired"

// PrunePending deletes the receipts still pending after PendingHorizon (a
// send never recorded, or an id Herald never sent), counts them per provider
// and logs the total, in batches.
func (m *Maintenance) PrunePending(ctx context.Context) (int, error) {
	horizon := m.PendingHorizon
	if horizon == 0 {
		horizon = DefaultPendingHorizon
	}
	before := m.Now().Add(-horizon)
	perProvider := map[string]int{}
	total := 0
	for {
		var providers []string
		err := m.Store.InPlatform(ctx, func(tx MaintenanceTx) (err error) {
			providers, err = tx.PrunePendingReceipts(ctx, before, PruneBatch)
			return err
		})
		if err != nil {
			return total, err
		}
		for _, p := range providers {
			perProvider[p]++
			if m.Metrics != nil {
				m.Metrics.Receipt(p, ReceiptExpired)
			}
		}
		total += len(providers)
		if len(providers) < PruneBatch {
			break
		}
	}
	if total > 0 {
		m.Log.WarnContext(ctx, "pending receipts expired: their message was never recorded", "count", total,
			"horizon", horizon.String(), "per_provider", perProvider)
	}
	return total, nil
}

// RequeueStuck enqueues a dispatch job again for every QUEUED message older
// than StuckAfter that has no live job (a crash between commit and enqueue
// cannot happen, but an operator deleting jobs or a discarded job can leave
// one behind). It logs the count per tenant and returns the total.
func (m *Maintenance) RequeueStuck(ctx context.Context) (int, error) {
	after := m.StuckAfter
	if after == 0 {
		after = 5 * time.Minute
	}
	var jobs []DispatchJob
	err := m.Store.InPlatform(ctx, func(tx MaintenanceTx) (err error) {
		if jobs, err = tx.StuckMessages(ctx, m.Now().Add(-after), 1000); err != nil || len(jobs) == 0 {
			return err
		}
		return m.Queue.EnqueueDispatch(ctx, tx, jobs...)
	})
	if err != nil {
		return 0, err
	}
	perTenant := map[uuid.UUID]int{}
	for _, j := range jobs {
		perTenant[j.TenantID]++
	}
	for tenant, n := range perTenant {
		m.Log.WarnContext(ctx, "re-enqueued stuck QUEUED messages", "tenant_id", tenant, "count", n)
	}
	return len(jobs), nil
}

// StaleAfter is how long a SENT message may go without any receipt before it
// is flagged stale: the provider accepted it but never said what happened.
const StaleAfter = 24 * time.Hour

// MarkStale flags SENT messages without a receipt for StaleAfter, with a
// timeline entry each, and returns how many it flagged.
func (m *Maintenance) MarkStale(ctx context.Context) (int, error) {
	var n int
	err := m.Store.InPlatform(ctx, func(tx MaintenanceTx) (err error) {
		n, err = tx.MarkStale(ctx, m.Now().Add(-StaleAfter), m.Now(), 5000)
		return err
	})
	if n > 0 {
		m.Log.WarnContext(ctx, "SENT messages without a receipt for 24 h marked stale", "count", n)
	}
	return n, err
}

// PruneResult counts what retention deleted.
type PruneResult struct {
	Messages, Events, Receipts int
}

// Prune deletes, for every tenant, what is older than its retention:
// finished messages (with their timelines), events with no message left,
// and provider receipts. Each batch is its own short transaction.
func (m *Maintenance) Prune(ctx context.Context) (PruneResult, error) {
	var total PruneResult
	var tenants []*Tenant
	err := m.Store.InPlatform(ctx, func(tx MaintenanceTx) (err error) {
		tenants, err = tx.ListTenants(ctx)
		return err
	})
	if err != nil {
		return total, err
	}
	for _, t := range tenants {
		before := m.Now().AddDate(0, 0, -t.Retention())
		var res PruneResult
		steps := []struct {
			count *int
			prune func(MaintenanceTx) (int, error)
		}{
			{&res.Messages, func(tx MaintenanceTx) (int, error) { return tx.PruneMessages(ctx, t.ID, before, PruneBatch) }},
			{&res.Events, func(tx MaintenanceTx) (int, error) { return tx.PruneEvents(ctx, t.ID, before, PruneBatch) }},
			{&res.Receipts, func(tx MaintenanceTx) (int, error) { return tx.PruneReceipts(ctx, t.ID, before, PruneBatch) }},
		}
		for _, step := range steps {
			for {
				var n int
				err := m.Store.InTenant(ctx, t.ID, func(tx MaintenanceTx) (err error) {
					n, err = step.prune(tx)
					return err
				})
				if err != nil {
					return total, err
				}
				*step.count += n
				if n < PruneBatch {
					break
				}
			}
		}
		if res != (PruneResult{}) {
			m.Log.InfoContext(ctx, "retention pruned", "tenant_id", t.ID, "retention_days", t.Retention(),
				"messages", res.Messages, "events", res.Events, "receipts", res.Receipts)
		}
		total.Messages += res.Messages
		total.Events += res.Events
		total.Receipts += res.Receipts
	}
	return total, nil
}
