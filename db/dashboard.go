package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// MessageCounts serves console.DashboardTx. The bucket boundaries come from
// the caller, computed in the tenant's timezone, so that days and hours are
// the tenant's without relying on the server's zone database; width_bucket
// numbers each row's bucket from 1.
//
// Counts come from message_counts (quarters of an hour, kept by
// RollUpMessageCounts) where its mark says they are complete, and from the
// messages themselves before and after that span: the last few minutes,
// or everything when nothing was rolled up yet. A status change since the
// last recount of its quarter shows at the next one (see
// app.Maintenance.RollUpCounts). Bounds that do not fall on quarters
// (no timezone has such hours today) are counted live throughout.
func (t *Tx) MessageCounts(ctx context.Context, tenantID uuid.UUID, bounds []time.Time, to time.Time) ([]console.MessageCount, error) {
	if len(bounds) == 0 {
		return nil, nil
	}
	rolled := true
	for _, b := range bounds {
		rolled = rolled && onStep(b, rollupQuarter)
	}
	// The span the counts cover, clipped to the period; lo == hi when they
	// cover none of it. It is read first so that the count below has plain
	// bounds to walk the tenant's created_at index with.
	lo, hi := to, to
	days := hi
	if rolled {
		var zone string
		var err error
		if lo, hi, zone, err = t.markedSpan(ctx, tenantID, bounds[0], to, rollupQuarter); err != nil {
			return nil, err
		}
		days = firstDay(bounds, zone, lo, hi)
	}
	// Whole days from message_day_counts where the bounds are its days,
	// quarters from message_counts before them, and the messages outside
	// the marked span: [lo, days) quarters, [days, hi) days.
	var out []console.MessageCount
	err := t.tx.SelectContext(ctx, &out, `
		SELECT width_bucket(at, $2::timestamptz[]) AS bucket, channel, status, sum(count)::bigint AS count
		FROM (
			SELECT day AS at, channel, status, count
			FROM message_day_counts
			WHERE tenant_id = $1 AND day >= $7 AND day < $6
			UNION ALL
			SELECT bucket AS at, channel, status, count
			FROM message_counts
			WHERE tenant_id = $1 AND bucket >= $5 AND bucket < $7
			UNION ALL
			SELECT created_at, channel, status, 1
			FROM messages
			WHERE tenant_id = $1 AND created_at >= $3 AND created_at < $5
			UNION ALL
			SELECT created_at, channel, status, 1
			FROM messages
			WHERE tenant_id = $1 AND created_at >= $6 AND created_at < $4
		) counted
		GROUP BY 1, 2, 3`, tenantID, bounds, bounds[0], to, lo, hi, days)
	return out, mapErr(err)
}

// firstDay returns the first of bounds at or after lo from which on the
// counts are read per day, or hi when none are: every bound must be a
// midnight of zone, the timezone message_day_counts was summed in (a
// tenant whose timezone changed reads quarters until the next roll-up
// sums its days again), and the days must start before hi.
func firstDay(bounds []time.Time, zone string, lo, hi time.Time) time.Time {
	loc, err := time.LoadLocation(zone)
	if zone == "" || err != nil {
		return hi
	}
	for _, b := range bounds {
		if l := b.In(loc); l.Hour() != 0 || l.Minute() != 0 || l.Second() != 0 || l.Nanosecond() != 0 {
			return hi
		}
	}
	for _, b := range bounds {
		if !b.Before(lo) && b.Before(hi) {
			return b
		}
	}
	return hi
}

// rollupQuarter is the width of message_counts' buckets.
const rollupQuarter = 15 * time.Minute

// RollUpMessageCounts serves app.MaintenanceTx: the tenant's messages
// created in [from, through) counted again into message_counts; full says
// the span is the whole window the dashboard shows.
func (t *Tx) RollUpMessageCounts(ctx context.Context, tenantID uuid.UUID, from, through time.Time, full bool, now time.Time) (int, error) {
	var n int
	if err := t.tx.GetContext(ctx, &n, rollUpQuarters, tenantID, from, through, full, now); err != nil {
		return 0, mapErr(err)
	}
	_, err := t.tx.ExecContext(ctx, rollUpDays, tenantID, from, full)
	return n, mapErr(err)
}

// A roll-up recounts the quarters, then sums the days from them, in one
// transaction (see message_day_counts in db/migrations).
const (
	rollUpQuarters = `SELECT message_counts_roll_up($1, $2, $3, $4, $5)`
	rollUpDays     = `SELECT message_day_counts_roll_up($1, $2, $3)`
)

// MessageCountMark serves app.RollupTx: when the tenant's counts were last
// recounted in full and over the last 8 days; zero times when never.
func (t *Tx) MessageCountMark(ctx context.Context, tenantID uuid.UUID) (fullAt, weekAt time.Time, err error) {
	err = t.tx.QueryRowxContext(ctx, `
		SELECT full_at, week_at FROM message_count_marks WHERE tenant_id = $1`, tenantID).Scan(&fullAt, &weekAt)
	if isNoRows(err) {
		return time.Time{}, time.Time{}, nil
	}
	return fullAt, weekAt, mapErr(err)
}

// StaleMessages serves console.DashboardTx. A receipt clears stale_at, so a
// set stale_at means the message is stale now.
func (t *Tx) StaleMessages(ctx context.Context, tenantID uuid.UUID) (int, error) {
	var n int
	err := t.tx.GetContext(ctx, &n, `
		SELECT count(*) FROM messages WHERE tenant_id = $1 AND stale_at IS NOT NULL`, tenantID)
	return n, mapErr(err)
}

// UsageByChannel serves console.DashboardTx: the counter's shards summed.
func (t *Tx) UsageByChannel(ctx context.Context, tenantID uuid.UUID, month time.Time) (map[app.Channel]int, error) {
	var rows []struct {
		Channel app.Channel `db:"channel"`
		Count   int         `db:"count"`
	}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT channel, coalesce(sum(count), 0) AS count
		FROM usage_counters WHERE tenant_id = $1 AND month = $2
		GROUP BY channel`, tenantID, month)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make(map[app.Channel]int, len(rows))
	for _, r := range rows {
		out[r.Channel] = r.Count
	}
	return out, nil
}

// WaitingWork serves console.DashboardTx.
func (t *Tx) WaitingWork(ctx context.Context, tenantID uuid.UUID) (*console.WaitingWork, error) {
	var w console.WaitingWork
	err := t.tx.GetContext(ctx, &w, `
		SELECT q.queued_messages, q.oldest_queued_at,
			e.scheduled_events, e.oldest_scheduled_at, e.next_send_at, e.awaiting_approval
		FROM (
			SELECT count(*) AS queued_messages, min(queued_at) AS oldest_queued_at
			FROM messages WHERE tenant_id = $1 AND phase = 'QUEUED'
		) q, (
			SELECT count(*) FILTER (WHERE status = 'SCHEDULED') AS scheduled_events,
				min(created_at) FILTER (WHERE status = 'SCHEDULED') AS oldest_scheduled_at,
				min(send_at) FILTER (WHERE status = 'SCHEDULED') AS next_send_at,
				count(*) FILTER (WHERE status = 'AWAITING_APPROVAL') AS awaiting_approval
			FROM events WHERE tenant_id = $1 AND status IN ('SCHEDULED', 'AWAITING_APPROVAL')
		) e`, tenantID)
	if err != nil {
		return nil, mapErr(err)
	}
	return &w, nil
}

// HasActivity serves console.DashboardTx.
func (t *Tx) HasActivity(ctx context.Context, tenantID uuid.UUID) (messages, events bool, err error) {
	err = t.tx.QueryRowxContext(ctx, `
		SELECT EXISTS (SELECT 1 FROM messages WHERE tenant_id = $1),
			EXISTS (SELECT 1 FROM events WHERE tenant_id = $1)`, tenantID).Scan(&messages, &events)
	return messages, events, mapErr(err)
}
