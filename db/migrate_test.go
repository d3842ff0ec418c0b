package db_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
)

// TestMigrate_RefusesHistoryBeforeBaseline runs migrate on a database as the
// 39 migrations before the baseline left it (a developer's herald, an old
// benchmark database): the same schema, recorded in goose's default table at
// version 39. Migrate refuses it with a message that says what to do, and
// applies nothing.
func TestMigrate_RefusesHistoryBeforeBaseline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := dbtest.CreateEmptyDatabase(t)
	pool, err := pgxpool.New(ctx, dbtest.OwnerURL(name))
	require.NoError(t, err)
	d := db.New(pool)
	t.Cleanup(d.Close)

	old, err := goose.NewProvider(goose.DialectPostgres, d.SQL.DB, db.Migrations(), goose.WithDisableGlobalRegistry(true))
	require.NoError(t, err)
	_, err = old.Up(ctx)
	require.NoError(t, err)
	_, err = d.SQL.ExecContext(ctx, `INSERT INTO goose_db_version (version_id, is_applied) SELECT v, true FROM generate_series(2, 39) v`)
	require.NoError(t, err)

	_, err = db.Migrate(ctx, d.Pool, d.SQL.DB, quietLog(), dbtest.RuntimeRole)
	require.ErrorIs(t, err, db.ErrMigratedBeforeBaseline)
	require.ErrorContains(t, err, "database "+name+" has the earlier history (goose_db_version, at version 39)")
	require.ErrorContains(t, err, "`go tool task db:reset`")
	require.ErrorContains(t, err, "run `herald migrate`")

	var untouched bool
	require.NoError(t, d.SQL.GetContext(ctx, &untouched, `SELECT to_regclass($1) IS NULL AND to_regclass('river_job') IS NULL`, db.VersionTable))
	require.True(t, untouched, "neither Herald's nor River's migrations ran")

	_, err = db.Pending(ctx, d.SQL.DB)
	require.ErrorIs(t, err, db.ErrMigratedBeforeBaseline, "a server refuses to start on it with the same message")
}

// TestMigrate_DownLeavesNothing migrates an empty database, checks that the
// migrations are recorded where Migrate looks for them (not in goose's
// default table, which marks the earlier history), and that migrating all
// the way down leaves none of Herald's tables and functions behind, so that
// the migrations apply again.
func TestMigrate_DownLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbtest.OwnerURL(dbtest.CreateEmptyDatabase(t)))
	require.NoError(t, err)
	d := db.New(pool)
	t.Cleanup(d.Close)

	_, err = db.Migrate(ctx, d.Pool, d.SQL.DB, quietLog(), dbtest.RuntimeRole)
	require.NoError(t, err)
	var recorded bool
	require.NoError(t, d.SQL.GetContext(ctx, &recorded, `SELECT to_regclass($1) IS NOT NULL AND to_regclass('goose_db_version') IS NULL`, db.VersionTable))
	require.True(t, recorded, "the baseline is recorded in %s only", db.VersionTable)

	provider, err := db.NewMigrationProvider(d.SQL.DB)
	require.NoError(t, err)
	_, err = provider.DownTo(ctx, 0)
	require.NoError(t, err)
	var left []string
	require.NoError(t, d.SQL.SelectContext(ctx, &left, `
		SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v', 'm', 'S') AND c.relname NOT LIKE 'river\_%' AND c.relname NOT LIKE $1 || '%'
		UNION ALL
		SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'public' AND p.proname NOT LIKE 'river\_%'
		ORDER BY 1`, db.VersionTable))
	require.Empty(t, left, "what the Down sections leave behind")

	res, err := db.Migrate(ctx, d.Pool, d.SQL.DB, quietLog(), dbtest.RuntimeRole)
	require.NoError(t, err)
	require.Len(t, res.Applied, len(provider.ListSources()), "every migration applies again")
	require.Equal(t, "00001_baseline.sql", filepath.Base(res.Applied[0]))
}

// TestMigrate_BodyFormatKeepsHTML: a template and a kept version stored
// before body formats existed come out of the migration as HTML, and
// render exactly as they did.
func TestMigrate_BodyFormatKeepsHTML(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbtest.OwnerURL(dbtest.CreateEmptyDatabase(t)))
	require.NoError(t, err)
	d := db.New(pool)
	t.Cleanup(d.Close)
	_, err = db.Migrate(ctx, d.Pool, d.SQL.DB, quietLog(), dbtest.RuntimeRole)
	require.NoError(t, err)
	provider, err := db.NewMigrationProvider(d.SQL.DB)
	require.NoError(t, err)
	// Down to the migration before the one that brought body formats.
	branding, err := filepath.Glob(filepath.Join("migrations", "*_branding.sql"))
	require.NoError(t, err)
	require.Len(t, branding, 1)
	version, err := strconv.ParseInt(strings.SplitN(filepath.Base(branding[0]), "_", 2)[0], 10, 64)
	require.NoError(t, err)
	_, err = provider.DownTo(ctx, version-1)
	require.NoError(t, err)

	body := "<p>Hallo {{passenger_name}},</p>\n# no heading\n<p>*kein Markdown* {{seat}}</p>"
	tenantID, templateID := uuid.New(), uuid.New()
	// One connection in the platform scope, which row level security lets
	// write every tenant's rows.
	conn, err := d.SQL.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, `SELECT set_config('herald.scope', 'platform', false)`)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `INSERT INTO tenants (id, slug, name) VALUES ($1, 'alt', 'Alt Reisen')`, tenantID)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `
		INSERT INTO templates (id, tenant_id, trigger_event, channel, locale, subject, body, version, is_active, created_at, updated_at)
		VALUES ($1, $2, 'BOOKING_CONFIRMED', 'EMAIL', 'de-DE', 'Betreff', $3, 2, true, now(), now())`, templateID, tenantID, body)
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `
		INSERT INTO template_versions (template_id, version, tenant_id, subject, body, is_active, created_at)
		VALUES ($1, 1, $2, 'Alt', '<p>old</p>', true, now())`, templateID, tenantID)
	require.NoError(t, err)

	_, err = provider.UpTo(ctx, version)
	require.NoError(t, err)
	var formats []string
	rows, err := conn.QueryContext(ctx, `
		SELECT body_format FROM templates WHERE id = $1 UNION ALL SELECT body_format FROM template_versions WHERE template_id = $1`, templateID)
	require.NoError(t, err)
	for rows.Next() {
		var f string
		require.NoError(t, rows.Scan(&f))
		formats = append(formats, f)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"html", "html"}, formats)

	var tp app.Template
	require.NoError(t, conn.QueryRowContext(ctx, `SELECT body, body_format FROM templates WHERE id = $1`, templateID).Scan(&tp.Body, &tp.BodyFormat))
	after, _ := app.RenderEmailBody(tp.Body, tp.BodyFormat, map[string]string{"passenger_name": "Anna <A>", "seat": "12"})
	require.Equal(t, "<p>Hallo Anna &lt;A&gt;,</p>\n# no heading\n<p>*kein Markdown* 12</p>", after,
		"an HTML template renders as it did before the migration: markup kept, values escaped, no Markdown")
}
