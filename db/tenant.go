package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const tenantColumns = `id, slug, name, plan, default_locale, timezone, retention_days, status, suspended_at, suspended_reason, created_at, updated_at`

// CreateTenant implements app.TenantStore.
func (t *Tx) CreateTenant(ctx context.Context, tn *app.Tenant) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO tenants (`+tenantColumns+`)
		VALUES (:id, :slug, :name, :plan, :default_locale, :timezone, :retention_days, :status, :suspended_at, :suspended_reason, :created_at, :updated_at)`, tn)
	return mapErr(err)
}

// TenantByID implements app.TenantStore.
func (t *Tx) TenantByID(ctx context.Context, id uuid.UUID) (*app.Tenant, error) {
	var tn app.Tenant
	err := t.tx.GetContext(ctx, &tn, `SELECT `+tenantColumns+` FROM tenants WHERE id = $1`, id)
	if err != nil {
		return nil, notFound(err, "Tenant %s not found.", id)
	}
	return &tn, nil
}

// TenantBySlug implements app.TenantStore.
func (t *Tx) TenantBySlug(ctx context.Context, slug string) (*app.Tenant, error) {
	var tn app.Tenant
	err := t.tx.GetContext(ctx, &tn, `SELECT `+tenantColumns+` FROM tenants WHERE slug = $1`, slug)
	if err != nil {
		return nil, notFound(err, "Tenant %q not found.", slug)
	}
	return &tn, nil
}
