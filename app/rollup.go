package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
)

// RollupTx holds the statements that keep the dashboard's message counts.
type RollupTx interface {
	Tx
	ListTenants(ctx context.Context) ([]*Tenant, error)
	// RollUpMessageCounts counts the tenant's messages created in [from,
	// through) again, per quarter hour, channel and status, and sums the
	// quarters of the days from the one from falls in per day of the
	// tenant's timezone; full says the span is the whole window the
	// dashboard shows.
	RollUpMessageCounts(ctx context.Context, tenantID uuid.UUID, from, through time.Time, full bool, now time.Time) (int, error)
	// MessageCountMark returns when the tenant's counts were last recounted
	// in full and over the last RollupWeekWindow (zero when never).
	MessageCountMark(ctx context.Context, tenantID uuid.UUID) (fullAt, weekAt time.Time, err error)
}

// The dashboard's counts: quarters of an hour (every timezone's hours and
// days begin on one), recounted over the last quarter or so every run (a
// minute), over the last 2 hours every 10 minutes, over the last 8 days
// once an hour, and over the whole window the dashboard shows (30 days, and
// a day more for the timezones ahead of UTC) every 6 hours. Statuses mostly
// settle within minutes of the send; the longer the time since, the rarer
// a change and the longer it may wait to show. A tenant sending 300
// messages a second has a million in 2 hours: recounting them every
// minute would keep a core busy.
const (
	RollupQuarter     = 15 * time.Minute
	RollupShort       = 15 * time.Minute
	RollupRecent      = 2 * time.Hour
	RollupRecentEvery = 10 * time.Minute
	RollupWeekWindow  = 8 * 24 * time.Hour
	RollupWeekEvery   = time.Hour
	RollupFullWindow  = 31 * 24 * time.Hour
	RollupFullEvery   = 6 * time.Hour
	// RollupSettle keeps the newest minutes out of the counts: a message
	// created then may belong to a transaction not committed yet, and the
	// dashboard counts those minutes live.
	RollupSettle = 2 * time.Minute
)

// Rollups keeps message_counts, the dashboard's per-quarter message counts.
//
// Why a periodic recount and not counters updated with each message: every
// status change of every message would then write a counter row too, the
// newest quarter's row of a busy tenant would be a lock every send waits
// on, and the send path is the one that must stay short. A recount costs
// the maintenance queue a few index scans a minute instead, and the
// dashboard reads a few thousand rows instead of a million messages. The
// price is freshness: a status that changes after its quarter was
// recounted shows within a minute for messages of the last quarter hour,
// within 10 minutes for those of the last two hours, within an hour for
// those of the last 8 days, and within 6 hours for older ones; the newest
// minutes are always counted live.
//
// The same recount keeps the delivery times, failure reasons and
// per-template counts of the dashboard's month and the template pages
// (see the dashboard's count tables in db/migrations).
type Rollups struct {
	Store Store[RollupTx]
	Now   Clock

	mu sync.Mutex
	// recentAt holds, by tenant, when this process last recounted the
	// tenant's RollupRecent window; a process that starts recounts it
	// first.
	recentAt map[uuid.UUID]time.Time
}

// RollUp recounts every tenant's recent messages, and a tenant's whole
// window when its last full recount is older than RollupFullEvery. It
// returns how many count rows it wrote.
func (r *Rollups) RollUp(ctx context.Context) (int, error) {
	var tenants []*Tenant
	err := r.Store.InPlatform(ctx, func(tx RollupTx) (err error) {
		tenants, err = tx.ListTenants(ctx)
		return err
	})
	if err != nil {
		return 0, err
	}
	total := 0
	for _, t := range tenants {
		n, err := r.RollUpTenant(ctx, t.ID)
		if err != nil {
			return total, fmt.Errorf("roll up message counts of tenant %s: %w", t.ID, err)
		}
		total += n
	}
	return total, nil
}

// RollUpTenant recounts one tenant, each span in a transaction of its own.
//
// The span ends RollupSettle before now, mid-quarter as a rule: the
// quarter it ends in is counted up to there, and recounted up to a later
// time by the next run. The dashboard thus counts live at most the
// messages of the last RollupSettle and of the time since the last run (a
// minute), not those of a whole quarter: a busy tenant sends tens of
// thousands in a quarter. The span starts on a quarter, so that every
// bucket it recounts is recounted whole.
func (r *Rollups) RollUpTenant(ctx context.Context, tenantID uuid.UUID) (int, error) {
	now := r.Now()
	var n int
	var window time.Duration
	err := r.Store.InTenant(ctx, tenantID, func(tx RollupTx) error {
		fullAt, weekAt, err := tx.MessageCountMark(ctx, tenantID)
		if err != nil {
			return err
		}
		full := now.Sub(fullAt) >= RollupFullEvery
		window = RollupShort
		switch {
		case full:
			window = RollupFullWindow
		case now.Sub(weekAt) >= RollupWeekEvery:
			window = RollupWeekWindow
		case r.recentDue(tenantID, now):
			window = RollupRecent
		}
		from, through := RollupSpan(now, window)
		n, err = tx.RollUpMessageCounts(ctx, tenantID, from, through, full, now)
		return err
	})
	if err == nil && window >= RollupRecent {
		r.mu.Lock()
		if r.recentAt == nil {
			r.recentAt = map[uuid.UUID]time.Time{}
		}
		r.recentAt[tenantID] = now
		r.mu.Unlock()
	}
	return n, err
}

// recentDue reports whether the tenant's RollupRecent window is due: not
// recounted by this process in the last RollupRecentEvery.
func (r *Rollups) recentDue(tenantID uuid.UUID, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.recentAt[tenantID]
	return !ok || now.Sub(at) >= RollupRecentEvery
}

// RollupSpan is the span a run at now recounts over window (RollupShort,
// RollupRecent, RollupWeekWindow or RollupFullWindow): from the quarter
// window before the one through falls in, to through, RollupSettle before
// now.
func RollupSpan(now time.Time, window time.Duration) (from, through time.Time) {
	through = now.Add(-RollupSettle)
	return through.Truncate(RollupQuarter).Add(-window), through
}
