package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// rolledSpan returns the part of [from, to) the tenant's rolled-up counts
// cover, with from and to themselves when they cover none of it (lo == hi
// == to). The tables behind the dashboard's month are counted in buckets
// of width step, so the span's start is narrowed to a whole bucket (its
// end may fall inside one, which then holds the messages up to hi): a
// reader sums the buckets in [lo, hi) and counts live the messages
// created in [from, lo) and [hi, to).
func (t *Tx) rolledSpan(ctx context.Context, tenantID uuid.UUID, from, to time.Time, step time.Duration) (lo, hi time.Time, err error) {
	lo, hi, _, err = t.markedSpan(ctx, tenantID, from, to, step)
	return lo, hi, err
}

// markedSpan is rolledSpan, with the timezone message_day_counts was
// summed in ("" when never).
func (t *Tx) markedSpan(ctx context.Context, tenantID uuid.UUID, from, to time.Time, step time.Duration) (lo, hi time.Time, zone string, err error) {
	if !onStep(from, step) {
		return to, to, "", nil
	}
	var mark struct {
		Lo   time.Time `db:"lo"`
		Hi   time.Time `db:"hi"`
		Zone *string   `db:"day_zone"`
	}
	err = t.tx.GetContext(ctx, &mark, `
		SELECT greatest(since, $2) AS lo, least(through, $3) AS hi, day_zone
		FROM message_count_marks WHERE tenant_id = $1`, tenantID, from, to)
	switch {
	case isNoRows(err):
		return to, to, "", nil
	case err != nil:
		return to, to, "", mapErr(err)
	}
	// since may fall between two buckets (the mark is kept in quarters);
	// the bucket it falls in holds less than its whole width, so it is
	// counted live. The last bucket holds the messages up to through,
	// where the live count takes over.
	lo = mark.Lo
	if !onStep(lo, step) {
		lo = lo.Truncate(step).Add(step)
	}
	if !lo.Before(mark.Hi) {
		return to, to, "", nil
	}
	if mark.Zone != nil {
		zone = *mark.Zone
	}
	return lo, mark.Hi, zone, nil
}

// onStep reports whether t is a multiple of step since the Unix epoch
// (message counts' buckets start on such times).
func onStep(t time.Time, step time.Duration) bool {
	return t.UnixNano()%int64(step) == 0
}

// LatencyCounts serves console.TrendTx: message_latency_counts where the
// mark says they are complete, the messages themselves elsewhere.
func (t *Tx) LatencyCounts(ctx context.Context, tenantID uuid.UUID, from, to time.Time) ([]console.LatencyCount, error) {
	lo, hi, err := t.rolledSpan(ctx, tenantID, from, to, rollupQuarter)
	if err != nil {
		return nil, err
	}
	out := []console.LatencyCount{}
	err = t.tx.SelectContext(ctx, &out, `
		SELECT channel, bin, sum(count)::bigint AS count
		FROM (
			SELECT channel, bin, count
			FROM message_latency_counts
			WHERE tenant_id = $1 AND measure = 'delivered' AND bucket >= $4 AND bucket < $5
			UNION ALL
			SELECT channel, width_bucket(extract(epoch FROM coalesce(delivered_at, read_at) - created_at)::double precision,
				message_latency_bounds()), 1
			FROM messages
			WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $4
				AND status IN ('DELIVERED', 'READ') AND coalesce(delivered_at, read_at) IS NOT NULL
			UNION ALL
			SELECT channel, width_bucket(extract(epoch FROM coalesce(delivered_at, read_at) - created_at)::double precision,
				message_latency_bounds()), 1
			FROM messages
			WHERE tenant_id = $1 AND created_at >= $5 AND created_at < $3
				AND status IN ('DELIVERED', 'READ') AND coalesce(delivered_at, read_at) IS NOT NULL
		) counted
		GROUP BY 1, 2`, tenantID, from, to, lo, hi)
	return out, mapErr(err)
}

// FailureCounts serves console.TrendTx, as LatencyCounts does.
func (t *Tx) FailureCounts(ctx context.Context, tenantID uuid.UUID, from, to time.Time) ([]console.FailureCount, error) {
	lo, hi, err := t.rolledSpan(ctx, tenantID, from, to, rollupQuarter)
	if err != nil {
		return nil, err
	}
	out := []console.FailureCount{}
	err = t.tx.SelectContext(ctx, &out, `
		SELECT channel, reason, sum(count)::bigint AS count
		FROM (
			SELECT channel, reason, count
			FROM message_failure_counts
			WHERE tenant_id = $1 AND bucket >= $4 AND bucket < $5
			UNION ALL
			SELECT channel, coalesce(failed_reason, ''), 1
			FROM messages
			WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $4
				AND status = 'FAILED'
			UNION ALL
			SELECT channel, coalesce(failed_reason, ''), 1
			FROM messages
			WHERE tenant_id = $1 AND created_at >= $5 AND created_at < $3
				AND status = 'FAILED'
		) counted
		GROUP BY 1, 2`, tenantID, from, to, lo, hi)
	return out, mapErr(err)
}

// TemplateCounts serves console.TrendTx from message_template_counts (per
// hour) and the messages outside the span it covers.
func (t *Tx) TemplateCounts(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, from, to time.Time) ([]console.TemplateCount, error) {
	lo, hi, err := t.rolledSpan(ctx, tenantID, from, to, time.Hour)
	if err != nil {
		return nil, err
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = id.String()
	}
	out := []console.TemplateCount{}
	err = t.tx.SelectContext(ctx, &out, `
		SELECT template_id, status, sum(count)::bigint AS count
		FROM (
			SELECT template_id, status, count
			FROM message_template_counts
			WHERE tenant_id = $1 AND bucket >= $4 AND bucket < $5 AND ($7 OR template_id = ANY($6::uuid[]))
			UNION ALL
			SELECT template_id, status, 1
			FROM messages
			WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $4
				AND template_id IS NOT NULL AND ($7 OR template_id = ANY($6::uuid[]))
			UNION ALL
			SELECT template_id, status, 1
			FROM messages
			WHERE tenant_id = $1 AND created_at >= $5 AND created_at < $3
				AND template_id IS NOT NULL AND ($7 OR template_id = ANY($6::uuid[]))
		) counted
		GROUP BY 1, 2`, tenantID, from, to, lo, hi, app.StringList(list), ids == nil)
	return out, mapErr(err)
}

// PromiseCounts serves console.PromiseTx: the tenant's three histograms
// per day of zone, as rolled up (the newest minutes, not rolled up yet,
// are left out: the promise is read over days).
func (t *Tx) PromiseCounts(ctx context.Context, tenantID uuid.UUID, from, to time.Time, zone string) ([]console.PromiseCount, error) {
	out := []console.PromiseCount{}
	// The days (message_latency_day_counts) hold exactly the quarters
	// rolled up for them when they were summed in zone; a tenant whose
	// timezone changed since reads the quarters until the next roll-up
	// sums its days again.
	err := t.tx.SelectContext(ctx, &out, `
		WITH mark AS (SELECT day_zone FROM message_count_marks WHERE tenant_id = $1)
		SELECT tenant_id, '' AS tenant_name, day, channel, measure, bin, count
		FROM message_latency_day_counts
		WHERE tenant_id = $1 AND day >= $2 AND day < $3 AND (SELECT day_zone FROM mark) = $4
		UNION ALL
		SELECT tenant_id, '', date_trunc('day', bucket, $4), channel, measure, bin, sum(count)::bigint
		FROM message_latency_counts
		WHERE tenant_id = $1 AND bucket >= $2 AND bucket < $3 AND (SELECT day_zone FROM mark) IS DISTINCT FROM $4
		GROUP BY 1, 3, 4, 5, 6`, tenantID, from, to, zone)
	return out, mapErr(err)
}

// PlatformPromiseCounts serves console.PromiseTx: every tenant's
// histograms over the period, per tenant and channel, read in a platform
// transaction (the operator's view).
func (t *Tx) PlatformPromiseCounts(ctx context.Context, from, to time.Time) ([]console.PromiseCount, error) {
	out := []console.PromiseCount{}
	err := t.tx.SelectContext(ctx, &out, `
		SELECT c.tenant_id, tn.name AS tenant_name, timestamptz 'epoch' AS day, c.channel, c.measure, c.bin, sum(c.count)::bigint AS count
		FROM message_latency_counts c
		JOIN tenants tn ON tn.id = c.tenant_id
		WHERE c.bucket >= $1 AND c.bucket < $2
		GROUP BY c.tenant_id, tn.name, c.channel, c.measure, c.bin`, from, to)
	return out, mapErr(err)
}
