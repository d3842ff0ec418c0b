package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// ListTenants serves app.MaintenanceTx and console.AuditLogTx.
func (t *Tx) ListTenants(ctx context.Context) ([]*app.Tenant, error) {
	ts := []*app.Tenant{}
	err := t.tx.SelectContext(ctx, &ts, `SELECT `+tenantColumns+` FROM tenants ORDER BY slug`)
	return ts, mapErr(err)
}

// StuckMessages returns QUEUED messages queued before the given time that
// have no live dispatch job. It serves app.MaintenanceTx. It reads River's
// job table to find messages whose job is gone (completed, discarded or
// deleted).
func (t *Tx) StuckMessages(ctx context.Context, queuedBefore time.Time, limit int) ([]app.DispatchJob, error) {
	rows, err := t.tx.QueryxContext(ctx, `
		SELECT m.tenant_id, m.id, m.channel FROM messages m
		WHERE m.status = 'QUEUED' AND m.queued_at < $1
		  AND NOT EXISTS (
			SELECT 1 FROM river_job j
			WHERE j.kind = 'dispatch' AND j.args->>'message_id' = m.id::text
			  AND j.state IN ('available', 'pending', 'running', 'retryable', 'scheduled'))
		ORDER BY m.queued_at LIMIT $2`, queuedBefore, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []app.DispatchJob
	for rows.Next() {
		var j app.DispatchJob
		if err := rows.Scan(&j.TenantID, &j.MessageID, &j.Channel); err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// MarkStale sets stale_at on SENT messages sent before the given time that
// never got a receipt, with a timeline entry each. It serves
// app.MaintenanceTx.
func (t *Tx) MarkStale(ctx context.Context, sentBefore, at time.Time, limit int) (int, error) {
	return t.prune(ctx, `
		WITH stale AS (
			UPDATE messages SET stale_at = $2, updated_at = $2
			WHERE id IN (SELECT id FROM messages WHERE status = 'SENT' AND stale_at IS NULL AND sent_at < $1 LIMIT $3)
			RETURNING tenant_id, id
		)
		INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, detail, at)
		SELECT tenant_id, id, 'SENT', NULL, 'system', '{"stale": true, "note": "no receipt from the provider for 24 hours"}', $2
		FROM stale`, sentBefore, at, limit)
}

// PruneMessages serves app.MaintenanceTx: finished messages (and, by
// cascade, their timelines). SENT messages count as finished once stale.
func (t *Tx) PruneMessages(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error) {
	return t.prune(ctx, `
		DELETE FROM messages WHERE tenant_id = $1 AND id IN (
			SELECT id FROM messages WHERE tenant_id = $1 AND created_at < $2
			  AND (status IN ('DELIVERED', 'READ', 'FAILED', 'CANCELLED') OR (status = 'SENT' AND stale_at IS NOT NULL))
			LIMIT $3)`, tenantID, before, limit)
}

// PruneEvents serves app.MaintenanceTx: finished events with no message
// left.
func (t *Tx) PruneEvents(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error) {
	return t.prune(ctx, `
		DELETE FROM events WHERE tenant_id = $1 AND id IN (
			SELECT e.id FROM events e WHERE e.tenant_id = $1 AND e.created_at < $2
			  AND e.status IN ('ROUTED', 'CANCELLED', 'REJECTED', 'FAILED')
			  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.tenant_id = $1 AND m.event_id = e.id)
			LIMIT $3)`, tenantID, before, limit)
}

// PruneReceipts serves app.MaintenanceTx.
func (t *Tx) PruneReceipts(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error) {
	return t.prune(ctx, `
		DELETE FROM webhook_receipts WHERE id IN (
			SELECT id FROM webhook_receipts WHERE tenant_id = $1 AND received_at < $2 LIMIT $3)`, tenantID, before, limit)
}

// PrunePendingReceipts serves app.MaintenanceTx: it deletes up to limit
// receipts still pending (or unknown, as they were kept before) that were
// received before the time, and returns their providers.
func (t *Tx) PrunePendingReceipts(ctx context.Context, receivedBefore time.Time, limit int) ([]string, error) {
	providers := []string{}
	err := t.tx.SelectContext(ctx, &providers, `
		DELETE FROM webhook_receipts WHERE id IN (
			SELECT id FROM webhook_receipts WHERE outcome IN ('pending', 'unknown') AND received_at < $1 LIMIT $2)
		RETURNING provider`, receivedBefore, limit)
	return providers, mapErr(err)
}

func (t *Tx) prune(ctx context.Context, query string, args ...any) (int, error) {
	res, err := t.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, mapErr(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
