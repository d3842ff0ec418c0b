package db_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
)

// TestMigrate_APIKeyScopesKeepSendAndRead upgrades a database with an API
// key made before keys had scopes: the key keeps send and read (what it
// was used for), gains neither manage nor approve, and the authentication
// lookup returns its scopes.
func TestMigrate_APIKeyScopesKeepSendAndRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbtest.URL(dbtest.CreateEmptyDatabase(t)))
	require.NoError(t, err)
	d := db.New(pool)
	t.Cleanup(d.Close)

	provider, err := goose.NewProvider(goose.DialectPostgres, d.SQL.DB, db.Migrations(), goose.WithDisableGlobalRegistry(true))
	require.NoError(t, err)
	// The migration is found by its name, not its number, which may change
	// when migrations are merged.
	var scopes int64
	for _, src := range provider.ListSources() {
		if strings.HasSuffix(src.Path, "_api_key_scopes.sql") {
			scopes = src.Version
		}
	}
	require.NotZero(t, scopes, "the API key scopes migration exists")
	_, err = provider.UpTo(ctx, scopes-1)
	require.NoError(t, err)

	tenantID, keyID := uuid.New(), uuid.New()
	hash := app.HashAPIKey("hk_BEFORESCOPES234567ABCDEFGHIJ")
	tx, err := d.SQL.BeginTxx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `SELECT set_config('herald.scope', 'platform', true)`)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `INSERT INTO tenants (id, slug, name, created_at, updated_at) VALUES ($1, 'old', 'Old Travel', now(), now())`, tenantID)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `INSERT INTO api_keys (id, tenant_id, name, prefix, hash, created_at) VALUES ($1, $2, 'booking system', 'hk_BEFORESC', $3, $4)`,
		keyID, tenantID, hash, time.Now())
	require.NoError(t, err)
	require.NoError(t, tx.Commit())

	_, err = db.Migrate(ctx, d.Pool, d.SQL.DB, quietLog())
	require.NoError(t, err)

	k, err := d.Store().APIKeyByHash(ctx, hash)
	require.NoError(t, err)
	require.Equal(t, keyID, k.ID)
	require.Equal(t, app.StringList{app.ScopeSend, app.ScopeRead}, k.Scopes, "a key from before scopes keeps send and read")
	require.True(t, k.HasScope(app.ScopeSend))
	require.False(t, k.HasScope(app.ScopeManage))
	require.False(t, k.HasScope(app.ScopeApprove))

	t.Run("UnknownScopeRefused", func(t *testing.T) {
		tx, err := d.SQL.BeginTxx(ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback() //nolint:errcheck
		_, err = tx.ExecContext(ctx, `SELECT set_config('herald.scope', 'platform', true)`)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, `UPDATE api_keys SET scopes = ARRAY['send', 'admin'] WHERE id = $1`, keyID)
		require.ErrorContains(t, err, "api_keys_scopes_known")
	})

	t.Run("NoScopeRefused", func(t *testing.T) {
		tx, err := d.SQL.BeginTxx(ctx, nil)
		require.NoError(t, err)
		defer tx.Rollback() //nolint:errcheck
		_, err = tx.ExecContext(ctx, `SELECT set_config('herald.scope', 'platform', true)`)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, `UPDATE api_keys SET scopes = '{}' WHERE id = $1`, keyID)
		require.ErrorContains(t, err, "api_keys_scopes_known")
	})
}
