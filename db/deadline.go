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
		SELECT tenant_id, trigger_event, channel, stage, coalesce(minutes, 0) AS minutes,
			coalesce(before_departure_minutes, 0) AS before_departure_minutes, updated_at FROM delivery_deadlines
		WHERE tenant_id = $1 ORDER BY trigger_event, channel, array_position(ARRAY['DELIVERED', 'READ', 'ACKNOWLEDGED'], stage)`, tenantID)
	return ds, mapErr(err)
}

// SetDeliveryDeadline serves app.DeadlineTx.
func (t *Tx) SetDeliveryDeadline(ctx context.Context, d *app.DeliveryDeadline) error {
	_, err := t.tx.ExecContext(ctx, `
		INSERT INTO delivery_deadlines (tenant_id, trigger_event, channel, stage, minutes, before_departure_minutes, updated_at)
		VALUES ($1, $2, $3, $4, nullif($5, 0), nullif($6, 0), $7)
		ON CONFLICT (tenant_id, trigger_event, channel, stage) DO UPDATE SET minutes = excluded.minutes,
			before_departure_minutes = excluded.before_departure_minutes, updated_at = excluded.updated_at`,
		d.TenantID, d.TriggerEvent, d.Channel, d.Stage, d.Minutes, d.BeforeDepartureMinutes, d.UpdatedAt)
	return mapErr(err)
}

// DeleteDeliveryDeadline serves app.DeadlineTx.
func (t *Tx) DeleteDeliveryDeadline(ctx context.Context, tenantID uuid.UUID, triggerEvent string, ch app.Channel, stage string) error {
	_, err := t.tx.ExecContext(ctx, `
		DELETE FROM delivery_deadlines WHERE tenant_id = $1 AND trigger_event = $2 AND channel = $3 AND stage = $4`,
		tenantID, triggerEvent, ch, stage)
	return mapErr(err)
}

// OverdueMessages serves app.MaintenanceTx, in platform scope: messages
// of tenants with deadlines that missed one, each once: SENT for a
// DELIVERED deadline, not READ for a READ one, not acknowledged for an
// ACKNOWLEDGED one (which, as '*', covers only the safety events, given
// as safety). A rule is due minutes after the send, or
// before_departure_minutes before the departure of the message's event
// (herald_departure_at, in the tenant's time zone); a rule with no due
// time (no departure) does not apply, so the '*' rule of the stage does.
// The event's own applicable deadline of a stage wins over the tenant's
// '*' one. A message is overdue once: not when a fallback names it, nor
// once it is on the call list. The scan starts from the deadlines, so only
// tenants that set one are read, through their recent messages (created
// within two days, sent within one: older SENT messages are stale; for a
// rule before the departure, created within 30 days).
func (t *Tx) OverdueMessages(ctx context.Context, now time.Time, safety []string, limit int) ([]app.OverdueMessage, error) {
	out := []app.OverdueMessage{}
	err := t.tx.SelectContext(ctx, &out, `
		WITH due AS (
			SELECT m.tenant_id, m.id, m.sent_at, m.status, m.phase, m.acknowledged_at, m.trigger_event,
				d.trigger_event AS rule_event, d.stage, coalesce(d.minutes, 0) AS minutes,
				coalesce(d.before_departure_minutes, 0) AS before_departure_minutes,
				CASE WHEN d.before_departure_minutes IS NULL THEN m.sent_at + make_interval(mins => d.minutes)
					ELSE herald_departure_at(e.context, tn.timezone) - make_interval(mins => d.before_departure_minutes) END AS due_at
			FROM delivery_deadlines d
			JOIN messages m ON m.tenant_id = d.tenant_id AND m.channel = d.channel
				AND (d.trigger_event = '*' OR d.trigger_event = m.trigger_event)
			JOIN tenants tn ON tn.id = m.tenant_id
			LEFT JOIN events e ON e.tenant_id = m.tenant_id AND e.id = m.event_id AND d.before_departure_minutes IS NOT NULL
			WHERE m.created_at > $1::timestamptz - interval '30 days'
				AND (d.before_departure_minutes IS NOT NULL
					OR m.created_at > $1::timestamptz - interval '2 days' AND m.sent_at > $1::timestamptz - interval '1 day')
				AND m.phase IN ('SENT', 'DELIVERED') AND m.stale_at IS NULL AND m.call_listed_at IS NULL
				AND m.sent_at IS NOT NULL
		), rules AS (
			SELECT DISTINCT ON (id, stage) * FROM due WHERE due_at IS NOT NULL
			ORDER BY id, stage, rule_event = '*'
		)
		SELECT tenant_id, id, minutes, before_departure_minutes, stage FROM (
			SELECT DISTINCT ON (id) tenant_id, id, minutes, before_departure_minutes, stage, sent_at FROM rules r
			WHERE due_at <= $1::timestamptz
				AND CASE stage
					WHEN 'DELIVERED' THEN phase = 'SENT'
					WHEN 'READ' THEN status IN ('SENT', 'DELIVERED')
					ELSE acknowledged_at IS NULL AND (rule_event <> '*' OR trigger_event = ANY($3))
				END
				AND NOT EXISTS (SELECT FROM messages f WHERE f.tenant_id = r.tenant_id AND f.fallback_of = r.id)
			ORDER BY id, array_position(ARRAY['DELIVERED', 'READ', 'ACKNOWLEDGED'], stage)
		) o
		ORDER BY sent_at
		LIMIT $2`, now, limit, app.StringList(safety))
	return out, mapErr(err)
}
