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
func (t *Tx) MessageCounts(ctx context.Context, tenantID uuid.UUID, bounds []time.Time, to time.Time) ([]console.MessageCount, error) {
	if len(bounds) == 0 {
		return nil, nil
	}
	var out []console.MessageCount
	err := t.tx.SelectContext(ctx, &out, `
		SELECT width_bucket(created_at, $2::timestamptz[]) AS bucket, channel, status, count(*) AS count
		FROM messages
		WHERE tenant_id = $1 AND created_at >= $3 AND created_at < $4
		GROUP BY 1, 2, 3`, tenantID, bounds, bounds[0], to)
	return out, mapErr(err)
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
			FROM messages WHERE tenant_id = $1 AND status = 'QUEUED'
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
