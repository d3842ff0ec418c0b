package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const tenantEventColumns = `tenant_id, name, version, description, variables, channels, category, urgent,
	expiry, supersedes, deleted, created_by, created_at`

// TenantEvent serves app.RegistryTx: the newest version of the event.
func (t *Tx) TenantEvent(ctx context.Context, tenantID uuid.UUID, name string) (*app.TenantEvent, error) {
	var e app.TenantEvent
	err := t.tx.GetContext(ctx, &e, `SELECT `+tenantEventColumns+` FROM tenant_events
		WHERE tenant_id = $1 AND name = $2 ORDER BY version DESC LIMIT 1`, tenantID, name)
	if isNoRows(err) {
		return nil, app.Errorf(app.ENOTFOUND, "Event %s is not one of your events.", name)
	}
	return &e, mapErr(err)
}

// TenantEvents serves app.RegistryTx.
func (t *Tx) TenantEvents(ctx context.Context, tenantID uuid.UUID) ([]*app.TenantEvent, error) {
	es := []*app.TenantEvent{}
	err := t.tx.SelectContext(ctx, &es, `SELECT `+tenantEventColumns+` FROM (
			SELECT DISTINCT ON (name) `+tenantEventColumns+` FROM tenant_events
			WHERE tenant_id = $1 ORDER BY name, version DESC) newest
		WHERE NOT deleted ORDER BY name`, tenantID)
	return es, mapErr(err)
}

// TenantEventVersions serves app.RegistryTx.
func (t *Tx) TenantEventVersions(ctx context.Context, tenantID uuid.UUID, name string) ([]*app.TenantEvent, error) {
	es := []*app.TenantEvent{}
	err := t.tx.SelectContext(ctx, &es, `SELECT `+tenantEventColumns+` FROM tenant_events
		WHERE tenant_id = $1 AND name = $2 ORDER BY version DESC`, tenantID, name)
	return es, mapErr(err)
}

// TenantEventVersion serves app.RegistryTx.
func (t *Tx) TenantEventVersion(ctx context.Context, tenantID uuid.UUID, name string, version int) (*app.TenantEvent, error) {
	var e app.TenantEvent
	err := t.tx.GetContext(ctx, &e, `SELECT `+tenantEventColumns+` FROM tenant_events
		WHERE tenant_id = $1 AND name = $2 AND version = $3`, tenantID, name, version)
	if isNoRows(err) {
		return nil, app.Errorf(app.ENOTFOUND, "Event %s has no version %d.", name, version)
	}
	return &e, mapErr(err)
}

// InsertTenantEvent serves app.RegistryTx. Two writers of one version
// collide on the primary key.
func (t *Tx) InsertTenantEvent(ctx context.Context, e *app.TenantEvent) error {
	_, err := t.tx.NamedExecContext(ctx, `INSERT INTO tenant_events (`+tenantEventColumns+`)
		VALUES (:tenant_id, :name, :version, :description, :variables, :channels, :category, :urgent,
			:expiry, :supersedes, :deleted, :created_by, :created_at)`, e)
	return mapErr(err)
}
