package db

import (
	"context"
	"fmt"
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

// sweepTenants are the platform reads of SweepTenants, each through the
// partial index its sweep's statements use.
var sweepTenants = map[app.Sweep]string{
	// messages_queued_idx
	app.SweepStuck: `SELECT DISTINCT tenant_id FROM messages WHERE phase = 'QUEUED' AND queued_at < $1`,
	// messages_sent_idx
	app.SweepStale: `SELECT DISTINCT tenant_id FROM messages WHERE phase = 'SENT' AND stale_at IS NULL AND sent_at < $1`,
	// events_expiry_idx, messages_expiry_idx
	app.SweepExpiry: `
		SELECT tenant_id FROM events
		WHERE expires_at IS NOT NULL AND expires_at <= $1 AND status IN ('RECEIVED', 'SCHEDULED', 'AWAITING_APPROVAL')
		UNION
		SELECT tenant_id FROM messages
		WHERE expires_at IS NOT NULL AND expires_at <= $1 AND phase = 'QUEUED'`,
}

// SweepTenants serves app.MaintenanceTx, in platform scope: the tenants a
// sweep has work for, which it then does in transactions of each tenant.
func (t *Tx) SweepTenants(ctx context.Context, sweep app.Sweep, at time.Time) ([]uuid.UUID, error) {
	query, ok := sweepTenants[sweep]
	if !ok {
		return nil, fmt.Errorf("unknown sweep %q", sweep)
	}
	ids := []uuid.UUID{}
	err := t.tx.SelectContext(ctx, &ids, query, at)
	return ids, mapErr(err)
}

// StuckMessages returns the tenant's QUEUED messages queued before the
// given time that have no live dispatch job. It serves app.MaintenanceTx.
// It reads River's job table to find messages whose job is gone
// (completed, discarded or deleted).
func (t *Tx) StuckMessages(ctx context.Context, tenantID uuid.UUID, queuedBefore time.Time, limit int) ([]app.DispatchJob, error) {
	rows, err := t.tx.QueryxContext(ctx, `
		SELECT m.tenant_id, m.id, m.channel FROM messages m
		WHERE m.phase = 'QUEUED' AND m.queued_at < $1 AND m.tenant_id = $3
		  AND NOT EXISTS (
			SELECT 1 FROM river_job j
			WHERE j.kind = 'dispatch' AND j.args->>'message_id' = m.id::text
			  AND j.state IN ('available', 'pending', 'running', 'retryable', 'scheduled'))
		ORDER BY m.queued_at LIMIT $2`, queuedBefore, limit, tenantID)
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

// MarkStale sets stale_at on the tenant's SENT messages sent before the
// given time that never got a receipt, with a timeline entry each. It
// serves app.MaintenanceTx.
func (t *Tx) MarkStale(ctx context.Context, tenantID uuid.UUID, sentBefore, at time.Time, limit int) (int, error) {
	return t.prune(ctx, `
		WITH stale AS (
			UPDATE messages SET stale_at = $2, updated_at = $2
			WHERE tenant_id = $4 AND id IN (
				SELECT id FROM messages WHERE phase = 'SENT' AND stale_at IS NULL AND sent_at < $1 AND tenant_id = $4 LIMIT $3)
			RETURNING tenant_id, id
		)
		INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, detail, at)
		SELECT tenant_id, id, 'SENT', NULL, 'system', '{"stale": true, "note": "no receipt from the provider for 24 hours"}', $2
		FROM stale`, sentBefore, at, limit, tenantID)
}

// pruneMessagesBatch picks a batch of retention: $1 tenant, $2 created
// before, $3 limit. Messages redacted before are not picked again, and
// messages_unredacted_created_idx holds only the others, so the rows
// retention keeps never slow it down.
const pruneMessagesBatch = `
	SELECT id FROM messages WHERE tenant_id = $1 AND created_at < $2 AND redacted_at IS NULL
	  AND (status IN ('DELIVERED', 'READ', 'FAILED', 'CANCELLED', 'EXPIRED') OR (status = 'SENT' AND stale_at IS NOT NULL))
	ORDER BY created_at
	LIMIT $3
	FOR UPDATE SKIP LOCKED`

// pruneMessagesTimeline deletes the timeline entries of a batch of
// retention: $1 tenant, $2 message ids.
const pruneMessagesTimeline = `DELETE FROM message_events WHERE message_id = ANY($2::uuid[]) AND tenant_id = $1`

// PruneMessages serves app.MaintenanceTx: up to limit of the tenant's
// oldest finished messages created before the time lose their personal
// data (redactMessages): the rows that hang off them (timeline entries,
// receipts, callback deliveries) are deleted, the address, subject and
// body blanked, and the messages themselves kept with their facts. SENT
// messages count as finished once stale.
//
// The messages are picked through messages_unredacted_created_idx and
// locked with SKIP LOCKED: a second pruner takes the next rows instead of
// waiting for (or redacting again) these, and a message a late receipt or
// a resend holds is left for the next run. The dependents are deleted by
// message id through indexes that lead with it.
func (t *Tx) PruneMessages(ctx context.Context, tenantID uuid.UUID, before, now time.Time, limit int) (app.MessagePrune, error) {
	ids := []uuid.UUID{}
	if err := t.tx.SelectContext(ctx, &ids, pruneMessagesBatch, tenantID, before, limit); err != nil {
		return app.MessagePrune{}, mapErr(err)
	}
	return t.redactMessages(ctx, tenantID, ids, now, app.RemovedByRetention)
}

// PruneEvents serves app.MaintenanceTx: finished events (EXPIRED ones
// too) none of whose messages keeps personal data. Their messages stay,
// with the event id cleared first (nothing references events by foreign
// key from messages, see 00006), through messages_event_id_idx. Deleting
// an event deletes its files (ON DELETE CASCADE) and sets the event id of
// contact changes it carried to NULL (contact_changes_event_idx).
func (t *Tx) PruneEvents(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error) {
	ids := []uuid.UUID{}
	err := t.tx.SelectContext(ctx, &ids, `
		SELECT e.id FROM events e WHERE e.tenant_id = $1 AND e.created_at < $2
		  AND e.status IN ('ROUTED', 'CANCELLED', 'REJECTED', 'FAILED', 'EXPIRED')
		  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.tenant_id = $1 AND m.event_id = e.id AND m.redacted_at IS NULL)
		ORDER BY e.created_at
		LIMIT $3
		FOR UPDATE SKIP LOCKED`, tenantID, before, limit)
	if err != nil || len(ids) == 0 {
		return 0, mapErr(err)
	}
	if _, err := t.prune(ctx, `UPDATE messages SET event_id = NULL WHERE event_id = ANY($2::uuid[]) AND tenant_id = $1`,
		tenantID, uuidArray(ids)); err != nil {
		return 0, err
	}
	return t.prune(ctx, `DELETE FROM events WHERE id = ANY($2::uuid[]) AND tenant_id = $1`, tenantID, uuidArray(ids))
}

// PruneReceipts serves app.MaintenanceTx: old receipts that belong to no
// message (foreign ones), or to one already gone. A receipt of
// a message still kept stays with it and goes with it.
func (t *Tx) PruneReceipts(ctx context.Context, tenantID uuid.UUID, before time.Time, limit int) (int, error) {
	return t.prune(ctx, `
		DELETE FROM webhook_receipts WHERE id IN (
			SELECT id FROM webhook_receipts WHERE tenant_id = $1 AND received_at < $2
			  AND (message_id IS NULL OR NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = webhook_receipts.message_id))
			ORDER BY received_at LIMIT $3 FOR UPDATE SKIP LOCKED)`, tenantID, before, limit)
}

// PrunePendingReceipts serves app.MaintenanceTx: it deletes up to limit
// receipts parked in the inbox (their message unknown) that were received
// before the time, and returns their providers.
func (t *Tx) PrunePendingReceipts(ctx context.Context, receivedBefore time.Time, limit int) ([]string, error) {
	providers := []string{}
	err := t.tx.SelectContext(ctx, &providers, `
		DELETE FROM receipt_inbox WHERE id IN (
			SELECT id FROM receipt_inbox WHERE available_at = 'infinity' AND received_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
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
