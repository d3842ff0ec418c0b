package db

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

const tenantColumns = `id, slug, name, plan, default_locale, timezone, retention_days, status, suspended_at, suspended_reason, created_at, updated_at,
	quiet_hours_start, quiet_hours_end`

// CreateTenant serves app.TenantTx.
func (t *Tx) CreateTenant(ctx context.Context, tn *app.Tenant) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO tenants (`+tenantColumns+`)
		VALUES (:id, :slug, :name, :plan, :default_locale, :timezone, :retention_days, :status, :suspended_at, :suspended_reason, :created_at, :updated_at,
			:quiet_hours_start, :quiet_hours_end)`, tn)
	return mapErr(err)
}

// TenantByID serves app.MessagesTx, app.FallbackTx, app.RouteTx,
// app.TenantTx, console.MessageTx and console.ScheduleTx.
func (t *Tx) TenantByID(ctx context.Context, id uuid.UUID) (*app.Tenant, error) {
	var tn app.Tenant
	err := t.tx.GetContext(ctx, &tn, `SELECT `+tenantColumns+` FROM tenants WHERE id = $1`, id)
	if err != nil {
		return nil, notFound(err, "Tenant %s not found.", id)
	}
	return &tn, nil
}

// TenantBySlug serves app.HookTx, app.TenantTx, app.UserTx and
// console.AuditLogTx.
func (t *Tx) TenantBySlug(ctx context.Context, slug string) (*app.Tenant, error) {
	var tn app.Tenant
	err := t.tx.GetContext(ctx, &tn, `SELECT `+tenantColumns+` FROM tenants WHERE slug = $1`, slug)
	if err != nil {
		return nil, notFound(err, "Tenant %q not found.", slug)
	}
	return &tn, nil
}

// likePattern makes s a LIKE pattern matching any text that contains it
// literally.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// ListTenantSummaries serves console.TenantTx. It runs in platform scope:
// operators see every tenant.
func (t *Tx) ListTenantSummaries(ctx context.Context, search string, month time.Time, page console.PageRequest) ([]*console.TenantSummary, error) {
	rows := []*console.TenantSummary{}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT `+tenantColumns+`,
		       (SELECT count(*) FROM users u WHERE u.tenant_id = tenants.id AND u.disabled_at IS NULL) AS users,
		       (SELECT coalesce(sum(c.count), 0) FROM usage_counters c
		         WHERE c.tenant_id = tenants.id AND c.month = $1) AS messages_this_month
		FROM tenants
		WHERE $2 = '' OR name ILIKE $3 OR slug ILIKE $3
		ORDER BY created_at DESC, id DESC
		LIMIT $4 OFFSET $5`, month, search, likePattern(search), page.Limit, page.Offset)
	return rows, mapErr(err)
}

// LockTenant serves console.TenantTx.
func (t *Tx) LockTenant(ctx context.Context, id uuid.UUID) (*app.Tenant, error) {
	var tn app.Tenant
	err := t.tx.GetContext(ctx, &tn, `SELECT `+tenantColumns+` FROM tenants WHERE id = $1 FOR UPDATE`, id)
	if err != nil {
		return nil, notFound(err, "Tenant %s not found.", id)
	}
	return &tn, nil
}

// UpdateTenant serves console.TenantTx. Slug and name never change: the slug
// is in every console URL and webhook address.
func (t *Tx) UpdateTenant(ctx context.Context, tn *app.Tenant) error {
	res, err := t.tx.NamedExecContext(ctx, `
		UPDATE tenants SET plan = :plan, default_locale = :default_locale, timezone = :timezone,
		       retention_days = :retention_days, status = :status, suspended_at = :suspended_at,
		       suspended_reason = :suspended_reason, updated_at = :updated_at,
		       quiet_hours_start = :quiet_hours_start, quiet_hours_end = :quiet_hours_end
		WHERE id = :id`, tn)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return app.Errorf(app.ENOTFOUND, "Tenant %s not found.", tn.ID)
	}
	return nil
}
