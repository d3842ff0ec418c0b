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
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// HangGuard bounds a test's wait for work that real Postgres, River and
// HTTP servers do: a database created, a job worked, a message delivered, a
// lock granted. It tells a hang from slowness, not fast from slow: a machine
// busy with other work takes many times as long as an idle one, and the
// tests must pass on both. So it is minutes, and used only where the
// alternative is waiting for ever; a test waits on a condition or a signal,
// never for a fixed time.
const HangGuard = 5 * time.Minute

// BaseURL is the server the harness creates databases on, as the role that
// owns them and runs their migrations: HERALD_TEST_DATABASE_URL, else
// MIGRATE_DATABASE_URL, else DATABASE_URL, else the project's local
// cluster's owner. Its role needs CREATEDB.
func BaseURL() string {
	for _, name := range []string{"HERALD_TEST_DATABASE_URL", "MIGRATE_DATABASE_URL", "DATABASE_URL"} {
		if v := os.Getenv(name); v != "" {
			return v
		}
	}
	return app.DefaultOwnerDatabaseURL
}

// RuntimeRole is the role tests connect as, as web, worker and serve do:
// the runtime role db/devdb.sh creates on the local cluster (password
// herald_app), granted its privileges by each template's migration.
const RuntimeRole = "herald_app"

// RuntimeURL is BaseURL's server as RuntimeRole, on database name.
func RuntimeURL(name string) string {
	u, err := url.Parse(WithDatabase(BaseURL(), name))
	if err != nil {
		return ""
	}
	u.User = url.UserPassword(RuntimeRole, RuntimeRole)
	return u.String()
}

var (
	templateMu   sync.Mutex
	templateName string
)

// template returns the template database of the current migrations,
// building it when it is missing or when rebuild says the last clone found
// it gone: the tests of another checkout on the same server keep only their
// own migration set's template and may have dropped this one.
func template(rebuild bool) (string, error) {
	templateMu.Lock()
	defer templateMu.Unlock()
	if templateName != "" && !rebuild {
		return templateName, nil
	}
	name, err := ensureTemplate(context.Background())
	if err != nil {
		return "", err
	}
	templateName = name
	return name, nil
}

// NewDB returns a fresh, migrated database for t, dropped when t ends.
func NewDB(t testing.TB) *db.DB {
	t.Helper()
	name := CreateDatabase(t)
	d, err := db.Open(context.Background(), URL(name), db.Options{MaxConns: 10, ApplicationName: "test"})
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(d.Close)
	return d
}

// OwnerDB opens d's database as the role that owns its schema, for a test
// that does what only an owner may (tampering by someone with the owner's
// access, ANALYZE); closed when t ends.
func OwnerDB(t testing.TB, d *db.DB) *db.DB {
	t.Helper()
	var name string
	if err := d.SQL.QueryRowContext(context.Background(), `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	o, err := db.Open(context.Background(), OwnerURL(name), db.Options{MaxConns: 2, ApplicationName: "test-owner"})
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(o.Close)
	return o
}

// CreateDatabase creates a migrated database for t and returns its name; it
// is dropped when t ends, after the test's own cleanups have closed their
// connections.
func CreateDatabase(t testing.TB) string {
	t.Helper()
	for try := 0; ; try++ {
		tpl, err := template(try > 0)
		if err != nil {
			t.Fatalf("dbtest: %v\n(is Postgres running? `go tool task db` starts the project's own cluster)", err)
		}
		name, err := tryCreateDatabase(t, "TEMPLATE "+tpl,
			// Database settings are not copied from a template: each
			// clone puts the guard in its path (see guard.go).
			func(name string) string {
				return fmt.Sprintf(`ALTER DATABASE %s SET search_path = %s`, name, guardSearchPath)
			})
		if err == nil {
			return name
		}
		// 3D000: the template was dropped between its check and the clone.
		if try >= 4 || !strings.Contains(err.Error(), "3D000") {
			t.Fatalf("dbtest: create database: %v", err)
		}
	}
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

// tryCreateDatabase creates a database with the options, then runs the
// statements then returns for it; it is dropped when t ends.
func tryCreateDatabase(t testing.TB, options string, then ...func(name string) string) (string, error) {
	t.Helper()
	name := "herald_test_" + strings.ToLower(rand.Text()[:16])
	ctx, cancel := context.WithTimeout(context.Background(), HangGuard)
	defer cancel()
	statements := []string{fmt.Sprintf(`CREATE DATABASE %s %s`, name, options)}
	for _, f := range then {
		statements = append(statements, f(name))
	}
	err := adminExec(ctx, statements...)
	if err != nil && !created(ctx, name) {
		return "", err
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), HangGuard)
		defer cancel()
		if err := adminExec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name)); err != nil {
			t.Logf("dbtest: drop database %s: %v", name, err)
		}
	})
	return name, err
}

// created reports whether the database exists (a statement after its
// CREATE DATABASE failed), so that it is dropped with the test.
func created(ctx context.Context, name string) bool {
	conn, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return false
	}
	defer conn.Close(context.Background())
	var ok bool
	return conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&ok) == nil && ok
}

// URL returns the connection URL of the named database on the test server.
func URL(name string) string { return RuntimeURL(name) }

// OwnerURL is database name's URL as the role that owns its schema, for
// what only an owner may do (ANALYZE, a migration's test).
func OwnerURL(name string) string { return WithDatabase(BaseURL(), name) }

// WithDatabase returns rawURL with its database name replaced.
func WithDatabase(rawURL, name string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Path = "/" + name
	return u.String()
}

// adminExec runs the statements one after the other on one connection to
// the test server, each on its own (CREATE DATABASE cannot share a
// transaction).
func adminExec(ctx context.Context, statements ...string) error {
	conn, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, sql := range statements {
		if _, err = conn.Exec(ctx, sql); err != nil {
			return err
		}
	}
	return nil
}

// keptTemplates is how many templates of different migration sets may live
// on the server at once.
const keptTemplates = 8

// ensureTemplate builds the template database for the current migrations
// unless it exists. Test binaries run in parallel, so the build happens under
// an advisory lock and the name carries a fingerprint of every migration.
func ensureTemplate(ctx context.Context) (string, error) {
	// Waiting for another binary's build and then building: two hang
	// guards' worth.
	ctx, cancel := context.WithTimeout(ctx, 2*HangGuard)
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
	// Other checkouts on this server (a branch, a worktree, CI beside a
	// developer) test other migration sets at the same time, so their
	// templates stay; only the oldest beyond keptTemplates go.
	rows, err := conn.Query(ctx, `
		SELECT datname FROM pg_database WHERE datname LIKE 'herald\_test\_tpl\_%'
		ORDER BY oid DESC OFFSET $1`, keptTemplates-1)
	if err != nil {
		return "", err
	}
	old, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	for _, o := range old {
		_, _ = conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, o))
	}

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
	_, err = db.Migrate(ctx, pool, d.SQL.DB, slog.New(slog.NewTextHandler(io.Discard, nil)), RuntimeRole)
	if err == nil {
		// After the migrations, which run unguarded (see guard.go).
		if _, gerr := pool.Exec(ctx, guardSchema); gerr != nil {
			err = fmt.Errorf("create the tenant scope guard: %w", gerr)
		}
	}
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

// fingerprint hashes Herald's and River's migrations, and the guard the
// template holds beside them.
func fingerprint() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "guard\x00%s\x00grants\x00%s\x00", guardSchema, db.RuntimeGrants())
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
