package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

const apiKeyColumns = `id, tenant_id, name, prefix, hash, created_by, last_used_at, revoked_at, created_at, scopes`

// CreateAPIKey serves app.APIKeyTx.
func (t *Tx) CreateAPIKey(ctx context.Context, k *app.APIKey) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO api_keys (`+apiKeyColumns+`)
		VALUES (:id, :tenant_id, :name, :prefix, :hash, :created_by, :last_used_at, :revoked_at, :created_at, :scopes)`, k)
	return mapErr(err)
}

// TouchAPIKey serves app.APIKeyTx.
func (t *Tx) TouchAPIKey(ctx context.Context, tenantID, id uuid.UUID, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE api_keys SET last_used_at = $3 WHERE tenant_id = $1 AND id = $2`, tenantID, id, at)
	return mapErr(err)
}

// RevokeAPIKey revokes one of the tenant's keys and returns it; revoked is
// false when it was revoked before. An unknown key is ENOTFOUND. It serves
// app.APIKeyTx. A key already revoked keeps its first revocation time; the
// row lock makes two revocations at once agree on which of them revoked it.
func (t *Tx) RevokeAPIKey(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (*app.APIKey, bool, error) {
	var k struct {
		app.APIKey
		RevokedNow bool `db:"revoked_now"`
	}
	err := t.tx.GetContext(ctx, &k, `
		WITH old AS (SELECT id, revoked_at FROM api_keys WHERE tenant_id = $1 AND id = $2 FOR UPDATE)
		UPDATE api_keys k SET revoked_at = coalesce(k.revoked_at, $3)
		FROM old WHERE k.tenant_id = $1 AND k.id = old.id
		RETURNING k.id, k.tenant_id, k.name, k.prefix, k.created_by, k.last_used_at, k.revoked_at, k.created_at, k.scopes,
			old.revoked_at IS NULL AS revoked_now`, tenantID, id, at)
	if err != nil {
		return nil, false, notFound(err, "API key %s not found.", id)
	}
	return &k.APIKey, k.RevokedNow, nil
}

// APIKeyByHash looks an API key and its tenant's status, locale and time
// zone up in one round trip, outside any transaction, through the
// platform-scoped herald_api_key_auth function.
func (s *Store) APIKeyByHash(ctx context.Context, hash []byte) (*app.APIKey, error) {
	var k app.APIKey
	err := s.db.GetContext(ctx, &k, `SELECT `+apiKeyColumns+`, tenant_status, tenant_locale, tenant_timezone FROM herald_api_key_auth($1)`, hash)
	if err != nil {
		return nil, unavailable(notFound(err, "API key not found."))
	}
	return &k, nil
}

// apiKeyRowSelect reads keys for the console: no hash. Operators belong to
// no tenant, so row-level security hides them here and the creator of a
// key they made reads as nil.
const apiKeyRowSelect = `
	SELECT k.id, k.name, k.prefix, k.created_by, k.last_used_at, k.revoked_at, k.created_at, k.scopes, u.email AS creator_email
	FROM api_keys k LEFT JOIN users u ON u.id = k.created_by AND u.tenant_id = k.tenant_id`

// ListAPIKeys serves console.APIKeyTx.
func (t *Tx) ListAPIKeys(ctx context.Context, tenantID uuid.UUID, page console.PageRequest) ([]*console.APIKeyRow, error) {
	rows := []*console.APIKeyRow{}
	err := t.tx.SelectContext(ctx, &rows, apiKeyRowSelect+`
		WHERE k.tenant_id = $1
		ORDER BY k.created_at DESC, k.id DESC
		LIMIT $2 OFFSET $3`, tenantID, page.Limit, page.Offset)
	return rows, mapErr(err)
}
