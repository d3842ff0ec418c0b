package db

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations returns the embedded SQL migrations, for tools that fingerprint them.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrationFiles, "migrations")
	return sub
}

// versionTable is where goose records the Herald migrations a database has
// applied. It is not goose's default, goose_db_version: that table holds the
// history from before the baseline (00001_baseline.sql folded 39 earlier
// migrations into one), whose version numbers the migrations after the
// baseline use again. A database migrated before the baseline is told apart
// by the table's name, never mistaken for one at the same version.
const versionTable = "herald_migrations"

// ErrMigratedBeforeBaseline says that a database holds the migration history
// from before the baseline. Its schema was built by files that changed after
// they were applied (some were edited, others renumbered), so its version
// numbers do not prove it equals the baseline's: it is recreated, never
// upgraded in place.
var ErrMigratedBeforeBaseline = errors.New("the database was migrated before Herald's migrations were folded into 00001_baseline.sql")

// MigrateResult says what a migration run applied.
type MigrateResult struct {
	Applied      []string
	RiverApplied []int
}

// Migrate brings the schema up to date: Herald's migrations, then River's,
// then the runtime role's grants (GrantRuntime; none when runtimeRole is
// empty). It runs as the owner of the schema. It is idempotent (a second
// run applies nothing) and safe to run from two processes at once: a
// Postgres session lock serialises runs. A database migrated before the
// baseline is refused with ErrMigratedBeforeBaseline, before anything is
// applied.
func Migrate(ctx context.Context, pool *pgxpool.Pool, sqlDB *sql.DB, log *slog.Logger, runtimeRole string) (*MigrateResult, error) {
	if err := checkHistory(ctx, sqlDB); err != nil {
		return nil, err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, err
	}
	provider, err := newProvider(sqlDB, goose.WithSessionLocker(locker))
	if err != nil {
		return nil, err
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("apply migrations: %w", err)
	}
	res := &MigrateResult{}
	for _, r := range results {
		res.Applied = append(res.Applied, r.Source.Path)
		log.Info("applied migration", "file", r.Source.Path, "duration", r.Duration)
	}

	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: log})
	if err != nil {
		return nil, err
	}
	riverRes, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, fmt.Errorf("apply River migrations: %w", err)
	}
	for _, v := range riverRes.Versions {
		res.RiverApplied = append(res.RiverApplied, v.Version)
	}
	return res, GrantRuntime(ctx, sqlDB, runtimeRole)
}

// Pending reports whether migrations are waiting to be applied, so that a
// server started on an older schema stops with a clear message instead of
// failing on its first query. A database migrated before the baseline is an
// error (ErrMigratedBeforeBaseline), not a pending migration.
func Pending(ctx context.Context, sqlDB *sql.DB) (bool, error) {
	if err := checkHistory(ctx, sqlDB); err != nil {
		return false, err
	}
	// An unmigrated database has no version table, and the runtime role
	// may not create the one goose would.
	var migrated bool
	if err := sqlDB.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, versionTable).Scan(&migrated); err != nil || !migrated {
		return !migrated, err
	}
	provider, err := newProvider(sqlDB)
	if err != nil {
		return false, err
	}
	has, err := provider.HasPending(ctx)
	if err != nil {
		return false, err
	}
	if has {
		return true, nil
	}
	var riverReady bool
	err = sqlDB.QueryRowContext(ctx, `SELECT to_regclass('river_queue') IS NOT NULL`).Scan(&riverReady)
	return !riverReady, err
}

func newProvider(sqlDB *sql.DB, opts ...goose.ProviderOption) (*goose.Provider, error) {
	opts = append(opts, goose.WithTableName(versionTable), goose.WithDisableGlobalRegistry(true))
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, Migrations(), opts...)
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return provider, nil
}

// checkHistory refuses a database that holds the history from before the
// baseline, telling the developer how to recreate it.
func checkHistory(ctx context.Context, sqlDB *sql.DB) error {
	var name string
	var old bool
	err := sqlDB.QueryRowContext(ctx, `SELECT current_database(), to_regclass('goose_db_version') IS NOT NULL`).Scan(&name, &old)
	if err != nil || !old {
		return err
	}
	var version int64
	err = sqlDB.QueryRowContext(ctx, `SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&version)
	if err != nil {
		return fmt.Errorf("read the migration history of database %s: %w", name, err)
	}
	return fmt.Errorf("%w: database %s has the earlier history (goose_db_version, at version %d), and those migrations can no longer be applied or checked. "+
		"Recreate the database, then migrate it: `go tool task db:reset` for the project's own cluster (it recreates database herald and drops the test databases), "+
		"or drop and create %s yourself and run `herald migrate`", ErrMigratedBeforeBaseline, name, version, name)
}
