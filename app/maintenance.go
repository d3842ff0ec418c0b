package app

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
)

// PruneBatch is the most rows one pruning transaction deletes, so that
// retention never holds locks long enough to block live traffic. A batch of
// messages also deletes their timelines, receipts and callback deliveries,
// a few rows per message, so several thousand rows in all.
const PruneBatch = 1000

// DefaultPrunePause is the least pause between two retention batches; see
// Maintenance.PrunePause.
const DefaultPrunePause = 20 * time.Millisecond

// DefaultPruneShare is the share of its time retention spends in batches;
// see Maintenance.PruneShare. A tenth still prunes several hundred
// messages a second, a million in well under an hour of a daily job,
// while a quarter raised live intake's p99 by a fifth and more on a
// 2-core machine.
const DefaultPruneShare = 0.10

// DefaultPruneBudget bounds one run of retention; see Maintenance.PruneBudget.
const DefaultPruneBudget = 2 * time.Minute

// MaintenanceTx lists the statements Maintenance runs.
type MaintenanceTx interface {
	ExpiryTx
	InsertMessageEvent(ctx context.Context, e *MessageEvent) error
	ListTenants(ctx context.Context) ([]*Tenant, error)
	// SweepTenants lists, in platform scope, the tenants the sweep has
	// work for at the time.
	SweepTenants(ctx context.Context, sweep Sweep, at time.Time) ([]uuid.UUID, error)
	StuckMessages(ctx context.Context, tenantID uuid.UUID, queuedBefore time.Time, limit int) ([]DispatchJob, error)
	MarkStale(ctx context.Context, tenantID uuid.UUID, sentBefore, at time.Time, limit int) (int, error)
	// PruneMessages removes, at the time now, the personal data of up to
	// limit finished messages created before the time and keeps their
	// facts.
	PruneMessages(ctx context.Context, tenantID uuid.UUID, before, now time.Time, limit int) (MessagePrune, error)
	PruneEvents(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error)
	PruneReceipts(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error)
	PruneRejections(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error)
	// PruneRateBuckets deletes up to limit token buckets whose key starts
	// with prefix and that were last taken from before the time.
	PruneRateBuckets(ctx context.Context, prefix string, before time.Time, limit int) (int, error)
	// PruneUploads deletes up to limit rows of uploads that finished (or
	// were never started) before the time, and those uploads once their
	// rows are gone; it returns what it deleted.
	PruneUploads(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error)
	PrunePendingReceipts(ctx context.Context, receivedBefore time.Time, limit int) ([]string, error)
	// PruneInbound deletes up to limit messages passengers sent that were
	// received before the time.
	PruneInbound(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error)
	// PruneConversations removes the personal content of up to limit
	// conversations whose last message is older than before, at the time
	// now.
	PruneConversations(ctx context.Context, tenantID uuid.UUID, before, now time.Time, limit int) (int, error)
	// PruneContacts erases, as EraseContact does, up to limit contacts
	// last active before the time, at the time now, and returns what it
	// erased.
	PruneContacts(ctx context.Context, tenantID uuid.UUID, before, now time.Time, limit int) (ContactErasure, error)
}

// MessagePrune is what one retention batch of messages removed.
type MessagePrune struct {
	// Messages counts the messages whose personal data went (their rows
	// stay, with their facts); the other fields the dependent rows deleted.
	Messages, Timeline, Receipts, Callbacks int
}

// Maintenance is Herald's periodic housekeeping.
type Maintenance struct {
	Store Store[MaintenanceTx]
	// Overdue is where FallBackOverdue continues fallback chains; it is
	// needed only with Router.
	Overdue Store[OverdueTx]
	Queue   Queue
	Now     Clock
	Log     *slog.Logger
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
	// PruneBatchSize is the most messages (or events, or receipts) one
	// retention transaction deletes; 0 means PruneBatch.
	PruneBatchSize int
	// PrunePause is the least pause between two retention batches. 0 means
	// DefaultPrunePause.
	PrunePause time.Duration
	// PruneShare is the share of its time retention spends in batches
	// (0 to 1): each pause is long enough for the batch before it to be
	// that share, so a batch slowed down by live traffic is followed by a
	// longer pause and pruning yields more the busier the database is.
	// 0 means DefaultPruneShare.
	PruneShare float64
	// PruneBudget bounds one run of Prune: past it Prune stops with More
	// set and the retention job snoozes and resumes, so that a backlog of
	// millions of rows never holds a worker slot for longer than a job may
	// run. 0 means DefaultPruneBudget.
	PruneBudget time.Duration
	// SleepFunc waits out a pause between batches and returns early with
	// the context's error; nil waits on a timer.
	SleepFunc func(ctx context.Context, d time.Duration) error
}

// DefaultPendingHorizon is how long a receipt waits for its send to be
// recorded (HERALD_PENDING_RECEIPT_HORIZON).
const DefaultPendingHorizon = 24 * time.Hour

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

// Sweep names what a maintenance sweep looks for across tenants.
type Sweep string

const (
	// SweepStuck: QUEUED messages queued before the time.
	SweepStuck Sweep = "stuck"
	// SweepStale: SENT messages sent before the time and not marked stale.
	SweepStale Sweep = "stale"
	// SweepExpiry: events not routed yet and QUEUED messages whose expiry
	// is at or before the time.
	SweepExpiry Sweep = "expiry"
)

// sweepTenants lists the tenants a sweep has work for at the time in a
// platform read, then runs batch in transactions of one tenant at a time,
// never in one across tenants, again while batch says there is more.
func (m *Maintenance) sweepTenants(ctx context.Context, sweep Sweep, at time.Time,
	batch func(tx MaintenanceTx, tenant uuid.UUID) (more bool, err error)) error {
	var tenants []uuid.UUID
	if err := m.Store.InPlatform(ctx, func(tx MaintenanceTx) (err error) {
		tenants, err = tx.SweepTenants(ctx, sweep, at)
		return err
	}); err != nil {
		return err
	}
	for _, tenant := range tenants {
		for more := true; more; {
			if err := m.Store.InTenant(ctx, tenant, func(tx MaintenanceTx) (err error) {
				more, err = batch(tx, tenant)
				return err
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// StuckBatch is the most stuck messages one tenant's transaction enqueues
// again.
const StuckBatch = 1000

// RequeueStuck enqueues a dispatch job again for every QUEUED message older
// than StuckAfter that has no live job (a crash between commit and enqueue
// cannot happen, but an operator deleting jobs or a discarded job can leave
// one behind), in a transaction of the message's tenant. It logs the count
// per tenant and returns the total.
func (m *Maintenance) RequeueStuck(ctx context.Context) (int, error) {
	after := m.StuckAfter
	if after == 0 {
		after = 5 * time.Minute
	}
	before := m.Now().Add(-after)
	total := 0
	// One batch per tenant and run: a message it enqueues again is no
	// longer stuck for the next.
	err := m.sweepTenants(ctx, SweepStuck, before, func(tx MaintenanceTx, tenant uuid.UUID) (bool, error) {
		jobs, err := tx.StuckMessages(ctx, tenant, before, StuckBatch)
		if err != nil || len(jobs) == 0 {
			return false, err
		}
		if err := m.Queue.EnqueueDispatch(ctx, tx, jobs...); err != nil {
			return false, err
		}
		m.Log.WarnContext(ctx, "re-enqueued stuck QUEUED messages", "tenant_id", tenant, "count", len(jobs))
		total += len(jobs)
		return false, nil
	})
	return total, err
}

// StaleAfter is how long a SENT message may go without any receipt before it
// is flagged stale: the provider accepted it but never said what happened.
const StaleAfter = 24 * time.Hour

// StaleBatch is the most messages one tenant's transaction marks stale.
const StaleBatch = 5000

// MarkStale flags SENT messages without a receipt for StaleAfter, with a
// timeline entry each, in transactions of their tenant, and returns how
// many it flagged.
func (m *Maintenance) MarkStale(ctx context.Context) (int, error) {
	now := m.Now()
	before := now.Add(-StaleAfter)
	total := 0
	err := m.sweepTenants(ctx, SweepStale, before, func(tx MaintenanceTx, tenant uuid.UUID) (bool, error) {
		n, err := tx.MarkStale(ctx, tenant, before, now, StaleBatch)
		total += n
		return n == StaleBatch, err
	})
	if total > 0 {
		m.Log.WarnContext(ctx, "SENT messages without a receipt for 24 h marked stale", "count", total)
	}
	return total, err
}

// PruneResult counts what retention deleted.
type PruneResult struct {
	Messages, Timeline, Events, Receipts, Callbacks int
	// Rejections counts rejected API requests (the Requests page).
	Rejections int
	// Uploads counts uploads and their rows.
	Uploads int
	// Inbound counts messages passengers sent, Conversations the
	// conversations whose content went, Contacts the contacts erased.
	Inbound, Conversations, Contacts int
	// More is set when the run stopped at its budget with old rows left.
	More bool
}

func (r *PruneResult) add(o PruneResult) {
	r.Messages += o.Messages
	r.Timeline += o.Timeline
	r.Events += o.Events
	r.Receipts += o.Receipts
	r.Callbacks += o.Callbacks
	r.Rejections += o.Rejections
	r.Uploads += o.Uploads
	r.Inbound += o.Inbound
	r.Conversations += o.Conversations
	r.Contacts += o.Contacts
}

// Prune removes, for every tenant, the personal data older than its
// retention: the personal data of finished messages (address, subject,
// body) together with their timelines, receipts and callback deliveries,
// keeping each message's facts; then finished events (EXPIRED ones too)
// whose messages kept no personal data, then the remaining receipts,
// rejected API requests and uploads; then messages passengers sent,
// conversations whose last message is older than retention, and contacts
// last active before it (their last change, message or inbound message),
// which are erased as on request (EraseContact).
//
// A message's facts (tenant, event type, channel, status, times, cost,
// SMS parts, provider, template) stay in its row, so every count the
// dashboard, usage, cost and the trend make is the same after retention
// as before; only the row's personal columns are blanked. A contact or a
// conversation keeps its id only.
//
// Retention deletes rows in batches rather than dropping monthly partitions.
// Partitioning messages by month would put created_at into every unique key
// (the per-tenant idempotency key, the provider's external id) and into the
// keys that timelines, callback deliveries and fallbacks reference, weakening
// the guarantees those keys give; and a partition holds every tenant's rows
// while retention is per tenant. Batched deletes keep the schema as it is:
// each batch is a short transaction of its own that picks up to
// PruneBatchSize of the oldest finished messages through the
// (tenant_id, created_at) index, skips rows other transactions hold (a
// second pruner, a late receipt), and deletes them with their dependents,
// so nothing is left pointing at a deleted message. Between batches it
// pauses (see PruneShare) to leave the database to live traffic, and
// autovacuum is tuned per table (their storage parameters in db/migrations)
// to follow the deletes.
//
// Messages still in flight are never pruned, however old: a QUEUED message
// has (or is given back, by RequeueStuck) a job that will send it, and a
// SENT one waits for its receipt until it is marked stale, after which it
// counts as finished. Their events stay with them.
func (m *Maintenance) Prune(ctx context.Context) (PruneResult, error) {
	var total PruneResult
	if err := m.prunePublicBuckets(ctx); err != nil {
		return total, err
	}
	var tenants []*Tenant
	err := m.Store.InPlatform(ctx, func(tx MaintenanceTx) (err error) {
		tenants, err = tx.ListTenants(ctx)
		return err
	})
	if err != nil {
		return total, err
	}
	p := pacer{m: m, deadline: m.Now().Add(cmp.Or(m.PruneBudget, DefaultPruneBudget))}
	for _, t := range tenants {
		res, err := m.pruneTenant(ctx, t, &p)
		total.add(res)
		if res != (PruneResult{}) {
			m.Log.InfoContext(ctx, "retention pruned", "tenant_id", t.ID, "retention_days", t.Retention(),
				"messages", res.Messages, "timeline", res.Timeline, "events", res.Events,
				"receipts", res.Receipts, "callbacks", res.Callbacks, "rejections", res.Rejections, "uploads", res.Uploads,
				"inbound", res.Inbound, "conversations", res.Conversations, "contacts", res.Contacts)
		}
		if err != nil {
			return total, err
		}
		if p.out {
			total.More = true
			return total, nil
		}
	}
	return total, nil
}

// PublicBucketIdle is how long a public link's bucket (one per client
// address, one per file) is kept after its last request. Every such bucket
// is full again well within it (its burst at its rate takes under two
// minutes), so deleting it changes no answer, and a client or a file that
// comes back starts from the full bucket it would have had.
const PublicBucketIdle = time.Hour

// prunePublicBuckets deletes the public links' idle buckets in batches:
// made-up tokens from many addresses would otherwise leave a row each.
func (m *Maintenance) prunePublicBuckets(ctx context.Context) error {
	before := m.Now().Add(-PublicBucketIdle)
	for {
		var n int
		err := m.Store.InPlatform(ctx, func(tx MaintenanceTx) (err error) {
			n, err = tx.PruneRateBuckets(ctx, PublicBucketPrefix, before, PruneBatch)
			return err
		})
		if err != nil || n < PruneBatch {
			return err
		}
	}
}

// pruneTenant prunes one tenant's old rows, batch by batch, until none are
// left or the run's budget is spent (p.out).
func (m *Maintenance) pruneTenant(ctx context.Context, t *Tenant, p *pacer) (PruneResult, error) {
	var res PruneResult
	limit := cmp.Or(m.PruneBatchSize, PruneBatch)
	before := m.Now().AddDate(0, 0, -t.Retention())
	steps := append(m.pruneSteps(ctx, t, before, limit, &res), m.personalSteps(ctx, t, before, limit, &res)...)
	for _, step := range steps {
		for {
			if err := p.wait(ctx); err != nil {
				return res, err
			}
			if p.out {
				return res, nil
			}
			var n int
			err := m.Store.InTenant(ctx, t.ID, func(tx MaintenanceTx) (err error) {
				n, err = step(tx)
				return err
			})
			p.done()
			if err != nil {
				return res, err
			}
			if n < limit {
				break
			}
		}
	}
	return res, nil
}

// personalSteps are the retention batches of what passengers wrote and
// who they are, after messages and events: messages passengers sent,
// conversations, then contacts (which read their messages' age).
func (m *Maintenance) personalSteps(ctx context.Context, t *Tenant, before time.Time, limit int, res *PruneResult) []func(MaintenanceTx) (int, error) {
	return []func(MaintenanceTx) (int, error){
		func(tx MaintenanceTx) (n int, err error) {
			n, err = tx.PruneInbound(ctx, t.ID, before, limit)
			res.Inbound += n
			return n, err
		},
		func(tx MaintenanceTx) (n int, err error) {
			n, err = tx.PruneConversations(ctx, t.ID, before, m.Now(), limit)
			res.Conversations += n
			return n, err
		},
		func(tx MaintenanceTx) (int, error) {
			e, err := tx.PruneContacts(ctx, t.ID, before, m.Now(), limit)
			res.Contacts += e.Contacts
			res.Messages += e.Messages
			res.Inbound += e.Inbound
			res.Conversations += e.Conversations
			return e.Contacts, err
		},
	}
}

// pruneSteps are the retention batches of messages, events, receipts,
// rejected requests and uploads.
func (m *Maintenance) pruneSteps(ctx context.Context, t *Tenant, before time.Time, limit int, res *PruneResult) []func(MaintenanceTx) (int, error) {
	return []func(MaintenanceTx) (int, error){
		func(tx MaintenanceTx) (int, error) {
			mp, err := tx.PruneMessages(ctx, t.ID, before, m.Now(), limit)
			res.Messages += mp.Messages
			res.Timeline += mp.Timeline
			res.Receipts += mp.Receipts
			res.Callbacks += mp.Callbacks
			return mp.Messages, err
		},
		func(tx MaintenanceTx) (n int, err error) {
			n, err = tx.PruneEvents(ctx, t.ID, before, limit)
			res.Events += n
			return n, err
		},
		func(tx MaintenanceTx) (n int, err error) {
			n, err = tx.PruneReceipts(ctx, t.ID, before, limit)
			res.Receipts += n
			return n, err
		},
		func(tx MaintenanceTx) (n int, err error) {
			n, err = tx.PruneRejections(ctx, t.ID, before, limit)
			res.Rejections += n
			return n, err
		},
		func(tx MaintenanceTx) (n int, err error) {
			n, err = tx.PruneUploads(ctx, t.ID, before, limit)
			res.Uploads += n
			return n, err
		},
	}
}

// pacer spaces retention's batches: before each batch after the first it
// waits PrunePause or what keeps the previous batch to PruneShare of the
// time, whichever is longer, and once the run's budget is spent it sets
// out.
type pacer struct {
	m        *Maintenance
	deadline time.Time
	started  time.Time
	last     time.Duration
	out      bool
}

func (p *pacer) wait(ctx context.Context) error {
	if !p.started.IsZero() {
		share := cmp.Or(p.m.PruneShare, DefaultPruneShare)
		yield := time.Duration(float64(p.last) * (1 - share) / share)
		pause := max(cmp.Or(p.m.PrunePause, DefaultPrunePause), yield)
		if err := p.m.sleep(ctx, pause); err != nil {
			return err
		}
	}
	// A run makes progress however small its budget: the first batch
	// always runs.
	now := p.m.Now()
	p.out = !p.started.IsZero() && !now.Before(p.deadline)
	p.started = now
	return nil
}

func (p *pacer) done() { p.last = p.m.Now().Sub(p.started) }

func (m *Maintenance) sleep(ctx context.Context, d time.Duration) error {
	if m.SleepFunc != nil {
		return m.SleepFunc(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
