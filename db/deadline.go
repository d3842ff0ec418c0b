package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// DeliveryDeadlines serves app.DeadlineTx.
func (t *Tx) DeliveryDeadlines(ctx context.Context, tenantID uuid.UUID) ([]*app.DeliveryDeadline, error) {
	ds := []*app.DeliveryDeadline{}
	err := t.tx.SelectContext(ctx, &ds, `
		SELECT tenant_id, trigger_event, channel, minutes, updated_at FROM delivery_deadlines
		WHERE tenant_id = $1 ORDER BY trigger_event, channel`, tenantID)
	return ds, mapErr(err)
}

// SetDeliveryDeadline serves app.DeadlineTx.
func (t *Tx) SetDeliveryDeadline(ctx context.Context, d *app.DeliveryDeadline) error {
	_, err := t.tx.ExecContext(ctx, `
		INSERT INTO delivery_deadlines (tenant_id, trigger_event, channel, minutes, updated_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (tenant_id, trigger_event, channel) DO UPDATE SET minutes = excluded.minutes, updated_at = excluded.updated_at`,
		d.TenantID, d.TriggerEvent, d.Channel, d.Minutes, d.UpdatedAt)
	return mapErr(err)
}

// DeleteDeliveryDeadline serves app.DeadlineTx.
func (t *Tx) DeleteDeliveryDeadline(ctx context.Context, tenantID uuid.UUID, triggerEvent string, ch app.Channel) error {
	_, err := t.tx.ExecContext(ctx, `
		DELETE FROM delivery_deadlines WHERE tenant_id = $1 AND trigger_event = $2 AND channel = $3`, tenantID, triggerEvent, ch)
	return mapErr(err)
}

// OverdueMessages serves app.MaintenanceTx, in platform scope: SENT
// messages with a chain left whose tenant's deadline for their event (or
// every event) and channel has passed, that no fallback names yet. The
// event's own deadline wins over the tenant's '*' one. The scan starts from
// the deadlines, so only tenants that set one are read, through their
// recent messages (created within two days, sent within one: older SENT
// messages are stale).
func (t *Tx) OverdueMessages(ctx context.Context, now time.Time, limit int) ([]app.OverdueMessage, error) {
	out := []app.OverdueMessage{}
	err := t.tx.SelectContext(ctx, &out, `
		SELECT tenant_id, id, minutes FROM (
			SELECT DISTINCT ON (m.id) m.tenant_id, m.id, m.sent_at, d.minutes
			FROM delivery_deadlines d
			JOIN messages m ON m.tenant_id = d.tenant_id AND m.channel = d.channel
				AND (d.trigger_event = '*' OR d.trigger_event = m.trigger_event)
			WHERE m.created_at > $1::timestamptz - interval '2 days'
				AND m.phase = 'SENT' AND m.stale_at IS NULL
				AND m.sent_at > $1::timestamptz - interval '1 day'
				AND cardinality(m.fallback_chain) > 0
			ORDER BY m.id, d.trigger_event = '*'
		) o
		WHERE sent_at <= $1::timestamptz - make_interval(mins => minutes)
			AND NOT EXISTS (SELECT FROM messages f WHERE f.tenant_id = o.tenant_id AND f.fallback_of = o.id)
		ORDER BY sent_at
		LIMIT $2`, now, limit)
	return out, mapErr(err)
}
