package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// ExpireEvents serves app.ExpiryTx, for one tenant, through the partial
// index events_expiry_idx. Rows another transaction holds (being routed or
// moved) are skipped: that transaction settles them, and the next sweep
// sees what it left.
func (t *Tx) ExpireEvents(ctx context.Context, tenantID uuid.UUID, now time.Time, limit int) (int, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE events SET status = 'EXPIRED', updated_at = $1,
			error = 'expired: the notification expired at ' || to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ' before it was sent'
		WHERE id IN (
			SELECT id FROM events
			WHERE expires_at IS NOT NULL AND expires_at <= $1 AND status IN ('RECEIVED', 'SCHEDULED', 'AWAITING_APPROVAL')
			  AND tenant_id = $3
			ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, now, limit, tenantID)
	if err != nil {
		return 0, mapErr(err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// ExpireMessages serves app.ExpiryTx, for one tenant, through the partial
// index messages_expiry_idx: the status change and the timeline entries in
// one statement.
func (t *Tx) ExpireMessages(ctx context.Context, tenantID uuid.UUID, now time.Time, limit int) (int, error) {
	var n int
	err := t.tx.GetContext(ctx, &n, `
		WITH expired AS (
			UPDATE messages SET status = 'EXPIRED', failed_reason = $3, updated_at = $1
			WHERE id IN (
				SELECT id FROM messages
				WHERE expires_at IS NOT NULL AND expires_at <= $1 AND phase = 'QUEUED' AND status = 'QUEUED'
				  AND send_started_at IS NULL AND quota_month IS NULL AND tenant_id = $5
				ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
			RETURNING tenant_id, id, expires_at
		), timeline AS (
			INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, detail, at)
			SELECT tenant_id, id, 'QUEUED', 'EXPIRED', $4,
				jsonb_build_object('reason', $3::text, 'expires_at', expires_at, 'note', 'past its expiry before it was sent'),
				$1
			FROM expired
		)
		SELECT count(*) FROM expired`, now, limit, app.ReasonExpired, app.SourceSystem, tenantID)
	return n, mapErr(err)
}
