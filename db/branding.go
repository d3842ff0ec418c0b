package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// TenantBranding serves app.BrandingTx: the tenant's branding, or the
// empty branding when it set none.
func (t *Tx) TenantBranding(ctx context.Context, tenantID uuid.UUID) (*app.Branding, error) {
	var b app.Branding
	err := t.tx.GetContext(ctx, &b, `
		SELECT tenant_id, logo_url, brand_color, footer_text, sender_name, updated_by, updated_at
		FROM tenant_branding WHERE tenant_id = $1`, tenantID)
	if isNoRows(err) {
		return &app.Branding{TenantID: tenantID}, nil
	}
	return &b, mapErr(err)
}

// UpsertBranding serves app.BrandingTx.
func (t *Tx) UpsertBranding(ctx context.Context, b *app.Branding) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO tenant_branding (tenant_id, logo_url, brand_color, footer_text, sender_name, updated_by, updated_at)
		VALUES (:tenant_id, :logo_url, :brand_color, :footer_text, :sender_name, :updated_by, :updated_at)
		ON CONFLICT (tenant_id) DO UPDATE SET logo_url = EXCLUDED.logo_url, brand_color = EXCLUDED.brand_color,
			footer_text = EXCLUDED.footer_text, sender_name = EXCLUDED.sender_name,
			updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at`, b)
	return mapErr(err)
}
