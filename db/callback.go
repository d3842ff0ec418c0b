package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const callbackEndpointColumns = `id, tenant_id, url, description, event_types, enabled, disabled_reason,
	secrets, secrets_key_id, previous_expires_at, failing_since, created_by, created_at, updated_at`

const callbackDeliveryColumns = `id, tenant_id, endpoint_id, message_id, event_type, payload, status,
	attempts, round_attempts, last_status, last_error, last_attempt_at, next_attempt_at, created_at, updated_at`

// CallbackSubscribers serves app.CallbackEnqueueTx.
func (t *Tx) CallbackSubscribers(ctx context.Context, tenantID uuid.UUID, eventType string) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	err := t.tx.SelectContext(ctx, &ids, `
		SELECT id FROM callback_endpoints
		WHERE tenant_id = $1 AND enabled AND $2 = ANY (event_types)
		ORDER BY id`, tenantID, eventType)
	return ids, mapErr(err)
}

// CallbackMessage serves app.CallbackEnqueueTx: the message as the status
// change left it, with its event's caller id.
func (t *Tx) CallbackMessage(ctx context.Context, tenantID, messageID uuid.UUID) (*app.CallbackMessageFacts, error) {
	var f app.CallbackMessageFacts
	err := t.tx.GetContext(ctx, &f, `
		SELECT m.id, m.event_id, e.source_event_id, m.correlation_id, m.trigger_event, m.channel, m.status,
			m.to_address, m.failed_reason, m.error_code, m.provider, m.external_message_id,
			m.entity_type, m.entity_id, m.fallback_of, m.attempts, m.acknowledged_at, m.ack_via, m.test
		FROM messages m
		LEFT JOIN events e ON e.tenant_id = m.tenant_id AND e.id = m.event_id
		WHERE m.tenant_id = $1 AND m.id = $2`, tenantID, messageID)
	if isNoRows(err) {
		return nil, app.Errorf(app.ENOTFOUND, "Message %s not found.", messageID)
	}
	return &f, mapErr(err)
}

// InsertCallbackDeliveries serves app.CallbackEnqueueTx: one statement for
// every endpoint; a (endpoint, message, event type) that has its delivery
// already is skipped, and only the new ids come back.
func (t *Tx) InsertCallbackDeliveries(ctx context.Context, tenantID uuid.UUID, endpointIDs []uuid.UUID, messageID *uuid.UUID,
	eventType string, payload []byte, at time.Time) ([]uuid.UUID, error) {
	ids := []uuid.UUID{}
	err := t.tx.SelectContext(ctx, &ids, `
		INSERT INTO callback_deliveries (id, tenant_id, endpoint_id, message_id, event_type, payload, next_attempt_at, created_at, updated_at)
		SELECT gen_random_uuid(), $1, e, $3, $4, $5::json, $6, $6, $6 FROM unnest($2::uuid[]) AS e
		ON CONFLICT ON CONSTRAINT callback_deliveries_once DO NOTHING
		RETURNING id`, tenantID, uuidArray(endpointIDs), messageID, eventType, string(payload), at)
	return ids, mapErr(err)
}

// CallbackEndpoints serves app.CallbackTx.
func (t *Tx) CallbackEndpoints(ctx context.Context, tenantID uuid.UUID) ([]*app.CallbackEndpoint, error) {
	es := []*app.CallbackEndpoint{}
	err := t.tx.SelectContext(ctx, &es, `
		SELECT `+callbackEndpointColumns+` FROM callback_endpoints
		WHERE tenant_id = $1 ORDER BY created_at, id`, tenantID)
	return es, mapErr(err)
}

// CallbackEndpointByID serves app.CallbackTx.
func (t *Tx) CallbackEndpointByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*app.CallbackEndpoint, error) {
	q := `SELECT ` + callbackEndpointColumns + ` FROM callback_endpoints WHERE tenant_id = $1 AND id = $2`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	var e app.CallbackEndpoint
	err := t.tx.GetContext(ctx, &e, q, tenantID, id)
	if isNoRows(err) {
		return nil, app.Errorf(app.ENOTFOUND, "Callback endpoint %s not found.", id)
	}
	return &e, mapErr(err)
}

// InsertCallbackEndpoint serves app.CallbackTx.
func (t *Tx) InsertCallbackEndpoint(ctx context.Context, e *app.CallbackEndpoint) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO callback_endpoints (`+callbackEndpointColumns+`)
		VALUES (:id, :tenant_id, :url, :description, :event_types, :enabled, :disabled_reason,
			:secrets, :secrets_key_id, :previous_expires_at, :failing_since, :created_by, :created_at, :updated_at)`, e)
	return mapErr(err)
}

// UpdateCallbackEndpoint serves app.CallbackTx.
func (t *Tx) UpdateCallbackEndpoint(ctx context.Context, e *app.CallbackEndpoint) error {
	_, err := t.tx.NamedExecContext(ctx, `
		UPDATE callback_endpoints SET url = :url, description = :description, event_types = :event_types,
			enabled = :enabled, disabled_reason = :disabled_reason, secrets = :secrets, secrets_key_id = :secrets_key_id,
			previous_expires_at = :previous_expires_at, failing_since = :failing_since, updated_at = :updated_at
		WHERE tenant_id = :tenant_id AND id = :id`, e)
	return mapErr(err)
}

// DeleteCallbackEndpoint serves app.CallbackTx; its deliveries go with it.
func (t *Tx) DeleteCallbackEndpoint(ctx context.Context, tenantID, id uuid.UUID) error {
	_, err := t.tx.ExecContext(ctx, `DELETE FROM callback_endpoints WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	return mapErr(err)
}

// CallbackDeliveries serves app.CallbackTx.
func (t *Tx) CallbackDeliveries(ctx context.Context, tenantID, endpointID uuid.UUID, limit int) ([]*app.CallbackDelivery, error) {
	ds := []*app.CallbackDelivery{}
	err := t.tx.SelectContext(ctx, &ds, `
		SELECT `+callbackDeliveryColumns+` FROM callback_deliveries
		WHERE tenant_id = $1 AND endpoint_id = $2
		ORDER BY created_at DESC, id LIMIT $3`, tenantID, endpointID, limit)
	return ds, mapErr(err)
}

// CallbackDeliveryByID serves app.CallbackTx.
func (t *Tx) CallbackDeliveryByID(ctx context.Context, tenantID, id uuid.UUID) (*app.CallbackDelivery, error) {
	var d app.CallbackDelivery
	err := t.tx.GetContext(ctx, &d, `
		SELECT `+callbackDeliveryColumns+` FROM callback_deliveries WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if isNoRows(err) {
		return nil, app.Errorf(app.ENOTFOUND, "Delivery %s not found.", id)
	}
	return &d, mapErr(err)
}

// RestartCallbackDelivery serves app.CallbackTx. The status check and the
// change are one statement, so two replays at once start one round.
func (t *Tx) RestartCallbackDelivery(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE callback_deliveries SET status = 'pending', round_attempts = 0, next_attempt_at = $3, updated_at = $3
		WHERE tenant_id = $1 AND id = $2 AND status <> 'pending'`, tenantID, id, at)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RecordCallbackAttempt serves app.CallbackTx; only a POST counts as an
// attempt.
func (t *Tx) RecordCallbackAttempt(ctx context.Context, a app.CallbackAttempt) (bool, error) {
	var lastStatus *int
	if a.ResponseStatus > 0 {
		lastStatus = &a.ResponseStatus
	}
	var lastError *string
	if a.Error != "" {
		lastError = &a.Error
	}
	res, err := t.tx.ExecContext(ctx, `
		UPDATE callback_deliveries SET status = $3,
			attempts = attempts + $4::int, round_attempts = round_attempts + $4::int,
			last_status = $5, last_error = $6, last_attempt_at = CASE WHEN $4::int = 1 THEN $7 ELSE last_attempt_at END,
			next_attempt_at = $8, updated_at = $7
		WHERE tenant_id = $1 AND id = $2 AND status = 'pending'`,
		a.TenantID, a.DeliveryID, a.Status, boolInt(a.Posted), lastStatus, lastError, a.At, a.NextAt)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// MarkCallbackEndpointFailing serves app.CallbackTx.
func (t *Tx) MarkCallbackEndpointFailing(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (time.Time, error) {
	var since time.Time
	err := t.tx.GetContext(ctx, &since, `
		UPDATE callback_endpoints SET failing_since = coalesce(failing_since, $3)
		WHERE tenant_id = $1 AND id = $2 RETURNING failing_since`, tenantID, id, at)
	if isNoRows(err) {
		return at, nil
	}
	return since, mapErr(err)
}

// MarkCallbackEndpointHealthy serves app.CallbackTx.
func (t *Tx) MarkCallbackEndpointHealthy(ctx context.Context, tenantID, id uuid.UUID) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE callback_endpoints SET failing_since = NULL
		WHERE tenant_id = $1 AND id = $2 AND failing_since IS NOT NULL`, tenantID, id)
	return mapErr(err)
}

// DisableCallbackEndpoint serves app.CallbackTx.
func (t *Tx) DisableCallbackEndpoint(ctx context.Context, tenantID, id uuid.UUID, reason string, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE callback_endpoints SET enabled = false, disabled_reason = $3, updated_at = $4
		WHERE tenant_id = $1 AND id = $2 AND enabled`, tenantID, id, reason, at)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
