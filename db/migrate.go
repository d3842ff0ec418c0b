package db

import (
	"context"
	"database/sql"
	"embed"
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

// MigrateResult says what a migration run applied.
type MigrateResult struct {
	Applied      []string
	RiverApplied []int
}

// Migrate brings the schema up to date: Herald's migrations, then River's.
// It is idempotent (a second run applies nothing) and safe to run from two
// processes at once: a Postgres session lock serialises runs.
func Migrate(ctx context.Context, pool *pgxpool.Pool, sqlDB *sql.DB, log *slog.Logger) (*MigrateResult, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, err
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, Migrations(),
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
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
	return res, nil
}

// Pending reports whether migrations are waiting to be applied, so that a
// server started on an older schema stops with a clear message instead of
// failing on its first query.
func Pending(ctx context.Context, sqlDB *sql.DB) (bool, error) {
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, Migrations(), goose.WithDisableGlobalRegistry(true))
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
