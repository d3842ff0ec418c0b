package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
)

// TestMigrate_SuspendedTenantBeforeConsole upgrades a database whose
// tenants were suspended before the console recorded why (00001 allowed
// that): the tenant administration migration gives them a suspension time
// and reason instead of failing on its check.
func TestMigrate_SuspendedTenantBeforeConsole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbtest.URL(dbtest.CreateEmptyDatabase(t)))
	require.NoError(t, err)
	d := db.New(pool)
	t.Cleanup(d.Close)

	provider, err := goose.NewProvider(goose.DialectPostgres, d.SQL.DB, db.Migrations(), goose.WithDisableGlobalRegistry(true))
	require.NoError(t, err)
	_, err = provider.UpTo(ctx, 8)
	require.NoError(t, err)
	version, err := provider.GetDBVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(8), version, "the schema before tenant administration")

	suspended, active := uuid.New(), uuid.New()
	since := time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)
	tx, err := d.SQL.BeginTxx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `SELECT set_config('herald.scope', 'platform', true)`)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `
		INSERT INTO tenants (id, slug, name, status, created_at, updated_at)
		VALUES ($1, 'paused', 'Paused Travel', 'SUSPENDED', $3, $3), ($2, 'running', 'Running Travel', 'ACTIVE', $3, $3)`,
		suspended, active, since)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())

	_, err = db.Migrate(ctx, d.Pool, d.SQL.DB, quietLog())
	require.NoError(t, err, "the migrations apply over a tenant suspended before the console")
	version, err = provider.GetDBVersion(ctx)
	require.NoError(t, err)
	sources := provider.ListSources()
	require.Equal(t, sources[len(sources)-1].Version, version, "migrated to the latest")

	type row struct {
		ID              uuid.UUID  `db:"id"`
		Status          string     `db:"status"`
		SuspendedAt     *time.Time `db:"suspended_at"`
		SuspendedReason string     `db:"suspended_reason"`
	}
	tx, err = d.SQL.BeginTxx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback() //nolint:errcheck
	_, err = tx.ExecContext(ctx, `SELECT set_config('herald.scope', 'platform', true)`)
	require.NoError(t, err)
	var rows []row
	require.NoError(t, tx.SelectContext(ctx, &rows, `SELECT id, status, suspended_at, suspended_reason FROM tenants ORDER BY slug`))
	require.Len(t, rows, 2)
	paused, running := rows[0], rows[1]
	require.Equal(t, suspended, paused.ID)
	require.Equal(t, "SUSPENDED", paused.Status)
	require.NotNil(t, paused.SuspendedAt)
	require.True(t, since.Equal(*paused.SuspendedAt), "suspended since its last change: %v", paused.SuspendedAt)
	require.Equal(t, "Suspended before the console", paused.SuspendedReason)
	require.Equal(t, active, running.ID)
	require.Equal(t, "ACTIVE", running.Status)
	require.Nil(t, running.SuspendedAt, "an active tenant stays without a suspension")
	require.Empty(t, running.SuspendedReason)
}
