package db_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// TestStore_APIKeyScopes checks the scopes the schema gives and refuses: a
// key stored without naming its scopes can send and read, neither manage
// nor approve, and the authentication lookup returns them; a key with an
// unknown scope, or none, is refused.
func TestStore_APIKeyScopes(t *testing.T) {
	t.Parallel()
	b := setup(t)

	tenantID, keyID := uuid.New(), uuid.New()
	hash := app.HashAPIKey("hk_DEFAULTSCOPES234567ABCDEFGHIJ")
	require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
		if _, err := tx.SQL().ExecContext(b.ctx, `INSERT INTO tenants (id, slug, name) VALUES ($1, 'plain', 'Plain Travel')`, tenantID); err != nil {
			return err
		}
		_, err := tx.SQL().ExecContext(b.ctx, `INSERT INTO api_keys (id, tenant_id, name, prefix, hash, created_at) VALUES ($1, $2, 'booking system', 'hk_DEFAULTS', $3, $4)`,
			keyID, tenantID, hash, time.Now())
		return err
	}))

	k, err := b.store.APIKeyByHash(b.ctx, hash)
	require.NoError(t, err)
	require.Equal(t, keyID, k.ID)
	require.Equal(t, app.StringList{app.ScopeSend, app.ScopeRead}, k.Scopes, "a key stored without scopes can send and read")
	require.True(t, k.HasScope(app.ScopeSend))
	require.False(t, k.HasScope(app.ScopeManage))
	require.False(t, k.HasScope(app.ScopeApprove))

	for name, scopes := range map[string]string{
		"UnknownScopeRefused": `ARRAY['send', 'admin']`,
		"NoScopeRefused":      `'{}'`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
				_, err := tx.SQL().ExecContext(b.ctx, `UPDATE api_keys SET scopes = `+scopes+` WHERE id = $1`, keyID)
				return err
			})
			require.ErrorContains(t, err, "api_keys_scopes_known")
		})
	}
}
