package db_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/db"
)

// guardTripped is how the test databases' guard (db/dbtest/guard.go)
// refuses a second scope in a transaction.
const guardTripped = "a transaction belongs to one tenant"

// TestTransactionScope_OneTenant checks the rule every test database
// enforces: a transaction belongs to one tenant (or to the platform),
// always. The store's own scoping passes; any statement that moves a
// transaction to a second scope fails it, whoever runs it.
func TestTransactionScope_OneTenant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, other := createTenant(t, b, "scope-a"), createTenant(t, b, "scope-b")

	// setScope runs set_config on a scope setting inside the transaction.
	setScope := func(tx *db.Tx, setting, value string) error {
		_, err := tx.SQL().ExecContext(b.ctx, `SELECT set_config($1, $2, true)`, setting, value)
		return err
	}
	owner := func(tx *db.Tx) (s string) {
		require.NoError(t, tx.SQL().QueryRowContext(b.ctx, `SELECT current_setting('herald_guard.owner', true)`).Scan(&s))
		return s
	}

	t.Run("EveryTestDatabaseIsGuarded", func(t *testing.T) {
		t.Parallel()
		var schema string
		require.NoError(t, b.db.SQL.GetContext(b.ctx, &schema,
			`SELECT pronamespace::regnamespace::text FROM pg_proc WHERE oid = 'set_config(text, text, boolean)'::regprocedure`))
		require.Equal(t, "herald_guard", schema, "an unqualified set_config is the guard's")
		var current string
		require.NoError(t, b.db.SQL.GetContext(b.ctx, &current, `SELECT current_schema()`))
		require.Equal(t, "public", current, "what tests create lands beside the migrations' tables")
	})

	t.Run("TheStoresOwnScopesPass", func(t *testing.T) {
		t.Parallel()
		// The connections are pooled: each transaction starts afresh.
		for range 3 {
			for _, tn := range []uuid.UUID{a.ID, other.ID} {
				require.NoError(t, b.store.InTenant(b.ctx, tn, func(tx *db.Tx) error {
					require.Equal(t, "tenant "+tn.String(), owner(tx), "the store scopes through the guard")
					// Other settings are the guard's business only as far
					// as their names go.
					_, err := tx.SQL().ExecContext(b.ctx, `SELECT set_config('herald.requeue_sent', 'on', true),
						set_config('plan_cache_mode', 'force_custom_plan', true), set_config('herald.tenant_id', $1, true)`, tn.String())
					return err
				}))
			}
			require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
				require.Equal(t, "the platform", owner(tx))
				return setScope(tx, "herald.tenant_id", "")
			}))
		}
		// The platform lookups of API keys, outside any transaction, widen
		// their own statement only.
		var n int
		require.NoError(t, b.db.SQL.GetContext(b.ctx, &n, `SELECT count(*) FROM herald_api_key_auth('\x00'::bytea)`))
		require.Zero(t, n)
	})

	t.Run("ASecondTenantFails", func(t *testing.T) {
		t.Parallel()
		err := b.store.InTenant(b.ctx, a.ID, func(tx *db.Tx) error {
			return setScope(tx, "herald.tenant_id", other.ID.String())
		})
		require.ErrorContains(t, err, guardTripped)
		require.ErrorContains(t, err, other.ID.String())
		// In capitals too: setting names are case-insensitive.
		err = b.store.InTenant(b.ctx, a.ID, func(tx *db.Tx) error {
			return setScope(tx, "HERALD.Tenant_ID", other.ID.String())
		})
		require.ErrorContains(t, err, guardTripped)
	})

	t.Run("ATenantLeftForNoneCannotMoveOn", func(t *testing.T) {
		t.Parallel()
		err := b.store.InTenant(b.ctx, a.ID, func(tx *db.Tx) error {
			require.NoError(t, setScope(tx, "herald.tenant_id", ""), "no tenant sees nothing: it passes")
			return setScope(tx, "herald.tenant_id", other.ID.String())
		})
		require.ErrorContains(t, err, guardTripped)
	})

	t.Run("APlatformTransactionIsNotNarrowed", func(t *testing.T) {
		t.Parallel()
		err := b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
			return setScope(tx, "herald.tenant_id", a.ID.String())
		})
		require.ErrorContains(t, err, guardTripped)
	})

	t.Run("ATenantTransactionIsNotWidened", func(t *testing.T) {
		t.Parallel()
		err := b.store.InTenant(b.ctx, a.ID, func(tx *db.Tx) error {
			return setScope(tx, "herald.scope", "platform")
		})
		require.ErrorContains(t, err, guardTripped)
		// A platform function called in a tenant's transaction widens it.
		err = b.store.InTenant(b.ctx, a.ID, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, `SELECT count(*) FROM herald_api_key_auth('\x00'::bytea)`)
			return err
		})
		require.ErrorContains(t, err, guardTripped)
	})

	t.Run("ARawTransactionThatSetsTwoTenantsFails", func(t *testing.T) {
		t.Parallel()
		// Not through the store: the database itself refuses.
		conn, err := b.db.Pool.Acquire(b.ctx)
		require.NoError(t, err)
		defer conn.Release()
		err = pgx.BeginFunc(b.ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(b.ctx, `SELECT set_config('herald.tenant_id', $1, true)`, a.ID.String()); err != nil {
				return err
			}
			if _, err := tx.Exec(b.ctx, `SELECT set_config('herald.tenant_id', $1, true)`, a.ID.String()); err != nil {
				return err
			}
			_, err := tx.Exec(b.ctx, `SELECT set_config('herald.tenant_id', $1, true)`, other.ID.String())
			return err
		})
		require.ErrorContains(t, err, guardTripped, "the same tenant again passes; a second one fails")
		// A scope taken with SET LOCAL, which the guard does not see, is
		// still the one the transaction belongs to.
		err = pgx.BeginFunc(b.ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(b.ctx, `SET LOCAL herald.tenant_id = '`+a.ID.String()+`'`); err != nil {
				return err
			}
			_, err := tx.Exec(b.ctx, `SELECT set_config('herald.tenant_id', $1, true)`, other.ID.String())
			return err
		})
		require.ErrorContains(t, err, guardTripped)
		// The connection carries nothing into its next transaction.
		require.NoError(t, pgx.BeginFunc(b.ctx, conn, func(tx pgx.Tx) error {
			_, err := tx.Exec(b.ctx, `SELECT set_config('herald.tenant_id', $1, true)`, other.ID.String())
			return err
		}))
	})
}

// TestScope_SetThroughSetConfig holds Herald's source to what the test
// databases' guard sees: a transaction's scope is set with an unqualified
// set_config, never with SET [LOCAL] or pg_catalog.set_config, which
// would pass it by.
func TestScope_SetThroughSetConfig(t *testing.T) {
	t.Parallel()
	bypass := regexp.MustCompile(`(?i)\bSET\s+(LOCAL\s+|SESSION\s+)?herald\.|pg_catalog\s*\.\s*set_config`)
	root := filepath.Join("..")
	var found []string
	scanned := 0
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case e.IsDir() && (strings.HasPrefix(e.Name(), ".") && path != root || e.Name() == "node_modules"):
			return filepath.SkipDir
		case e.IsDir(), strings.HasSuffix(path, "_test.go"), filepath.ToSlash(path) == "../db/dbtest/guard.go":
			return nil
		case !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".sql"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		for i, line := range strings.Split(string(b), "\n") {
			if bypass.MatchString(line) {
				found = append(found, path+":"+strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, scanned, 100, "the module's source was read")
	require.Empty(t, found, "scope set past the guard")
}
