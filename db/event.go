package db

import (
	"context"
	"errors"
	"strconv"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/heraldhq/herald/app"
)

const eventColumns = `id, tenant_id, source_event_id, trigger_event, recipients, context, channels, fallback_chain, locale,
	entity_type, entity_id, send_at, version, status, error, payload_size, api_key_id, decided_by, decided_at,
	decision_reason, created_at, updated_at, routed_at, audience, status_reason, send_at_rule, expires_at, expires_rule`

// InsertEvent stores the event unless the tenant used its source event id
// before; it reports whether it stored it. It serves app.IntakeTx. A
// concurrent insert of the same source event id waits for the other
// transaction and then does nothing.
func (t *Tx) InsertEvent(ctx context.Context, e *app.Event, peers []string) (inserted bool, recent int, err error) {
	// The tenant's recent events ride on the insert: one statement, an
	// index range of at most BurstLookback entries
	// (events_tenant_created_idx), in the insert's snapshot, which does not
	// hold the new row.
	arg := struct {
		*app.Event
		Peers app.StringList `db:"peers"`
	}{e, peers}
	rows, err := sqlx.NamedQueryContext(ctx, t.tx, `
		WITH ins AS (
			INSERT INTO events (`+eventColumns+`)
			VALUES (:id, :tenant_id, :source_event_id, :trigger_event, :recipients, :context, :channels, :fallback_chain, :locale,
				:entity_type, :entity_id, :send_at, :version, :status, :error, :payload_size, :api_key_id, :decided_by, :decided_at,
				:decision_reason, :created_at, :updated_at, :routed_at, :audience, :status_reason, :send_at_rule, :expires_at, :expires_rule)
			ON CONFLICT (tenant_id, source_event_id) DO NOTHING
			RETURNING 1)
		SELECT (SELECT count(*) FROM ins) = 1,
			least((SELECT count(*) FROM (SELECT trigger_event FROM events
				WHERE tenant_id = :tenant_id AND created_at > CAST(:created_at AS timestamptz) - make_interval(secs => `+burstWindowSecs+`)
				ORDER BY created_at DESC
				LIMIT `+strconv.Itoa(app.BurstLookback)+`) r
				WHERE CAST(:peers AS text[]) IS NULL OR trigger_event = ANY (CAST(:peers AS text[]))), `+strconv.Itoa(app.BurstShare)+`)`, arg)
	if err != nil {
		return false, 0, mapErr(err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return false, 0, mapErr(err)
		}
		return false, 0, errors.New("insert event: no row returned")
	}
	if err := rows.Scan(&inserted, &recent); err != nil {
		return false, 0, mapErr(err)
	}
	return inserted, recent, mapErr(rows.Close())
}

// burstWindowSecs is app.BurstWindow in seconds, as SQL text.
var burstWindowSecs = strconv.FormatFloat(app.BurstWindow.Seconds(), 'f', -1, 64)

// EventByID serves app.IntakeTx, app.FallbackTx, console.MessageTx and
// console.ScheduleTx.
func (t *Tx) EventByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*app.Event, error) {
	q := `SELECT ` + eventColumns + `, ` + eventFiles + ` AS files FROM events e WHERE tenant_id = $1 AND id = $2`
	if forUpdate {
		q += ` FOR UPDATE OF e`
	}
	var e app.Event
	if err := t.tx.GetContext(ctx, &e, q, tenantID, id); err != nil {
		return nil, notFound(err, "Notification %s not found.", id)
	}
	return &e, nil
}

// EventForRouting locks the event for the routing transaction and returns it
// with its tenant (whose row it does not lock). It serves app.RouteTx. FOR
// UPDATE OF e: the tenant row, which every routing transaction of the tenant
// reads, is not locked.
func (t *Tx) EventForRouting(ctx context.Context, tenantID, id uuid.UUID) (*app.Event, *app.Tenant, error) {
	var row struct {
		Event     app.Event  `db:"e"`
		Tenant    app.Tenant `db:"t"`
		Accounts  []byte     `db:"route_accounts"`
		Templates []byte     `db:"route_templates"`
		// The supersession, if any (see supersededBy).
		SupersededBy *uuid.UUID `db:"superseded_by"`
		SupersedingT *string    `db:"superseding_trigger"`
	}
	// The tenant's ACTIVE accounts and the event's active templates come
	// with the event: routing needs them for every message, and reading
	// them here saves two statements per message (see routeLookups).
	err := t.tx.GetContext(ctx, &row, `
		SELECT `+prefixed("e", eventColumns)+`, `+eventFiles+` AS "e.files", `+prefixed("t", tenantColumns)+`,
			s.event_id AS superseded_by, s.trigger_event AS superseding_trigger,
			(SELECT coalesce(json_agg(`+accountJSON+`), '[]') FROM channel_accounts a
				WHERE a.tenant_id = e.tenant_id AND a.status = 'ACTIVE') AS route_accounts,
			(SELECT coalesce(json_agg(`+templateJSON+`), '[]') FROM templates tp
				WHERE tp.tenant_id = e.tenant_id AND tp.trigger_event = e.trigger_event AND tp.is_active) AS route_templates
		FROM events e JOIN tenants t ON t.id = e.tenant_id
		LEFT JOIN LATERAL (`+supersededBy+`) s ON e.entity_type IS NOT NULL
		WHERE e.tenant_id = $1 AND e.id = $2
		FOR UPDATE OF e`, tenantID, id)
	if err != nil {
		return nil, nil, notFound(err, "Notification %s not found.", id)
	}
	if row.SupersededBy != nil {
		row.Event.Superseding = &app.SupersedingRef{EventID: *row.SupersededBy, TriggerEvent: *row.SupersedingT}
	}
	lookups, err := decodeRouteLookups(row.Event.TenantID, row.Event.TriggerEvent, row.Accounts, row.Templates)
	if err != nil {
		return nil, nil, err
	}
	t.route = lookups
	return &row.Event, &row.Tenant, nil
}

// EventBySourceID serves app.IntakeTx.
func (t *Tx) EventBySourceID(ctx context.Context, tenantID uuid.UUID, sourceID string) (*app.Event, error) {
	var e app.Event
	err := t.tx.GetContext(ctx, &e, `SELECT `+eventColumns+` FROM events WHERE tenant_id = $1 AND source_event_id = $2`, tenantID, sourceID)
	if err != nil {
		return nil, notFound(err, "Notification with event_id %q not found.", sourceID)
	}
	return &e, nil
}

// UpdateEventSchedule serves app.IntakeTx.
func (t *Tx) UpdateEventSchedule(ctx context.Context, e *app.Event) error {
	_, err := t.tx.NamedExecContext(ctx, `
		UPDATE events SET send_at = :send_at, version = :version, status = :status, updated_at = :updated_at,
			send_at_rule = :send_at_rule, expires_at = :expires_at, context = :context, error = :error
		WHERE tenant_id = :tenant_id AND id = :id`, e)
	return mapErr(err)
}

// PendingRelativeEvents serves app.IntakeTx, through the partial index
// events_relative_idx. The rows are locked in id order, so that two moves of
// one entity at once take them in the same order; a row routed while this
// waited for its lock no longer qualifies and is skipped.
func (t *Tx) PendingRelativeEvents(ctx context.Context, tenantID uuid.UUID, entityType, entityID string) ([]*app.Event, error) {
	out := []*app.Event{}
	err := t.tx.SelectContext(ctx, &out, `
		SELECT `+eventColumns+` FROM events
		WHERE tenant_id = $1 AND entity_type = $2 AND entity_id = $3
		  AND send_at_rule IS NOT NULL AND status IN ('RECEIVED', 'SCHEDULED', 'AWAITING_APPROVAL')
		ORDER BY id FOR UPDATE`, tenantID, entityType, entityID)
	return out, mapErr(err)
}

// SetEventStatus serves app.IntakeTx and app.RouteTx. The route decisions
// ride on the same UPDATE when the event carries them.
func (t *Tx) SetEventStatus(ctx context.Context, e *app.Event) error {
	_, err := t.tx.NamedExecContext(ctx, `
		UPDATE events SET status = :status, error = :error, decided_by = :decided_by, decided_at = :decided_at,
			decision_reason = :decision_reason, routed_at = :routed_at, updated_at = :updated_at, status_reason = :status_reason,
			routing = coalesce(:routing, routing)
		WHERE tenant_id = :tenant_id AND id = :id`, e)
	return mapErr(err)
}

// LatestEventForEntity returns the newest event about the entity, of the
// trigger event when one is named. It serves app.MessagesTx.
func (t *Tx) LatestEventForEntity(ctx context.Context, tenantID uuid.UUID, entityType, entityID, trigger string) (*app.Event, error) {
	var e app.Event
	err := t.tx.GetContext(ctx, &e, `
		SELECT `+eventColumns+`, `+eventFiles+` AS files FROM events e
		WHERE tenant_id = $1 AND entity_type = $2 AND entity_id = $3 AND ($4 = '' OR trigger_event = $4)
		ORDER BY created_at DESC LIMIT 1`, tenantID, entityType, entityID, trigger)
	if err != nil {
		return nil, notFound(err, "No notification about %s %s.", entityType, entityID)
	}
	return &e, nil
}

// AppendEventRouting adds route decisions to an event's: a fallback chain
// continued after its first message failed. It serves app.FallbackTx.
func (t *Tx) AppendEventRouting(ctx context.Context, tenantID, id uuid.UUID, decisions app.JSON) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE events SET routing = coalesce(routing, '[]'::jsonb) || $3::jsonb
		WHERE tenant_id = $1 AND id = $2`, tenantID, id, decisions)
	return mapErr(err)
}

// EventWithRouting returns one of the tenant's events with its route
// decisions, for the event's console page. It serves console.MessageTx.
func (t *Tx) EventWithRouting(ctx context.Context, tenantID, id uuid.UUID) (*app.Event, error) {
	var e app.Event
	err := t.tx.GetContext(ctx, &e, `SELECT `+eventColumns+`, routing FROM events WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return nil, notFound(err, "Event %s not found.", id)
	}
	return &e, nil
}
