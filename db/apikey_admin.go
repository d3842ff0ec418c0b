package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/console"
)

// apiKeyRowSelect reads keys for the console: no hash. Operators belong to
// no tenant, so row-level security hides them here and the creator of a
// key they made reads as nil.
const apiKeyRowSelect = `
	SELECT k.id, k.name, k.prefix, k.created_by, k.last_used_at, k.revoked_at, k.created_at, u.email AS creator_email
	FROM api_keys k LEFT JOIN users u ON u.id = k.created_by AND u.tenant_id = k.tenant_id`

// ListAPIKeys implements console.APIKeyAdminStore.
func (t *Tx) ListAPIKeys(ctx context.Context, tenantID uuid.UUID, page console.PageRequest) ([]*console.APIKeyRow, error) {
	rows := []*console.APIKeyRow{}
	err := t.tx.SelectContext(ctx, &rows, apiKeyRowSelect+`
		WHERE k.tenant_id = $1
		ORDER BY k.created_at DESC, k.id DESC
		LIMIT $2 OFFSET $3`, tenantID, page.Limit, page.Offset)
	return rows, mapErr(err)
}
