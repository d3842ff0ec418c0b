// Package dbtest gives each test its own migrated Postgres database, cloned
// from a template that is built once per migration set. A clone takes tens of
// milliseconds, so hundreds of tests can each have a real, isolated database
// and run in parallel, including tests where River workers commit for real.
package dbtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// BaseURL is the server the harness creates databases on: HERALD_TEST_DATABASE_URL,
// else DATABASE_URL, else the project's local cluster. Its role needs CREATEDB.
func BaseURL() string {
	for _, name := range []string{"HERALD_TEST_DATABASE_URL", "DATABASE_URL"} {
		if v := os.Getenv(name); v != "" {
			return v
		}
	}
	return app.DefaultDatabaseURL
}

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// NewDB returns a fresh, migrated database for t, dropped when t ends.
func NewDB(t testing.TB) *db.DB {
	t.Helper()
	name := CreateDatabase(t)
	d, err := db.Open(context.Background(), WithDatabase(BaseURL(), name), db.Options{MaxConns: 10, ApplicationName: "test"})
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(d.Close)
	return d
}

// CreateDatabase creates a migrated database for t and returns its name; it
// is dropped when t ends, after the test's own cleanups have closed their
// connections.
func CreateDatabase(t testing.TB) string {
	t.Helper()
	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(context.Background()) })
	if templateErr != nil {
		t.Fatalf("dbtest: %v\n(is Postgres running? `go tool task db` starts the project's own cluster)", templateErr)
	}
	// Checkouts with other migration sets share the server and drop
	// templates that are not theirs; a vanished template is rebuilt.
	for try := 0; ; try++ {
		name, err := tryCreateDatabase(t, "TEMPLATE "+templateName)
		var pgErr *pgconn.PgError
		if err == nil || try == 5 || !errors.As(err, &pgErr) || pgErr.Code != "3D000" {
			if err != nil {
				t.Fatalf("dbtest: create database: %v", err)
			}
			return name
		}
		if _, err := rebuildTemplate(); err != nil {
			t.Fatalf("dbtest: %v", err)
		}
	}
}

var rebuildMu sync.Mutex

// rebuildTemplate builds the template again after it vanished.
func rebuildTemplate() (string, error) {
	rebuildMu.Lock()
	defer rebuildMu.Unlock()
	name, err := ensureTemplate(context.Background())
	return name, err
}

// CreateEmptyDatabase creates a database with no schema at all, for tests of
// the migrations themselves; it is dropped when t ends.
func CreateEmptyDatabase(t testing.TB) string {
	t.Helper()
	return createDatabase(t, "")
}

func createDatabase(t testing.TB, options string) string {
	t.Helper()
	name, err := tryCreateDatabase(t, options)
	if err != nil {
		t.Fatalf("dbtest: create database: %v", err)
	}
	return name
}

// tryCreateDatabase creates a database that is dropped when t ends.
func tryCreateDatabase(t testing.TB, options string) (string, error) {
	t.Helper()
	name := "herald_test_" + strings.ToLower(rand.Text()[:16])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := adminExec(ctx, fmt.Sprintf(`CREATE DATABASE %s %s`, name, options)); err != nil {
		return "", err
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := adminExec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
			t.Logf("dbtest: drop database %s: %v", name, err)
		}
	})
	return name, nil
}

// URL returns the connection URL of the named database on the test server.
func URL(name string) string { return WithDatabase(BaseURL(), name) }

// WithDatabase returns rawURL with its database name replaced.
func WithDatabase(rawURL, name string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Path = "/" + name
	return u.String()
}

func adminExec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// ensureTemplate builds the template database for the current migrations
// unless it exists. Test binaries run in parallel, so the build happens under
// an advisory lock and the name carries a fingerprint of every migration.
func ensureTemplate(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	fp, err := fingerprint()
	if err != nil {
		return "", err
	}
	name := "herald_test_tpl_" + fp

	conn, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", redact(BaseURL()), err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('herald.dbtest.template'))`); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtext('herald.dbtest.template'))`) //nolint:errcheck

	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	// Templates of other migration sets are left alone: other checkouts
	// (branches with other migrations) may be using them on this server.
	// `go tool task db:reset` drops them all.
	building := name + "_build"
	_, _ = conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, building))
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s`, building)); err != nil {
		return "", fmt.Errorf("create template database: %w", err)
	}
	pool, err := pgxpool.New(ctx, WithDatabase(BaseURL(), building))
	if err != nil {
		return "", err
	}
	d := db.New(pool)
	_, err = db.Migrate(ctx, pool, d.SQL.DB, slog.New(slog.NewTextHandler(io.Discard, nil)))
	d.Close()
	if err != nil {
		return "", fmt.Errorf("migrate template database: %w", err)
	}
	// Renamed only when complete, so a crash mid-build never leaves a
	// half-migrated template under the real name.
	if _, err := conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`, building, name)); err != nil {
		return "", fmt.Errorf("rename template database: %w", err)
	}
	return name, nil
}

// fingerprint hashes Herald's and River's migrations.
func fingerprint() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(db.Migrations(), ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(db.Migrations(), path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%s\x00", path, b)
		return nil
	})
	if err != nil {
		return "", err
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	if err != nil {
		return "", err
	}
	for _, m := range migrator.AllVersions() {
		fmt.Fprintf(h, "river%d\x00%s\x00", m.Version, m.SQLUp)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the test database"
	}
	return u.Redacted()
}
