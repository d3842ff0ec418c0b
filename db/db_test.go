package db_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
)

type testBundle struct {
	db    *db.DB
	store *db.Store
	ctx   context.Context
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	d := dbtest.NewDB(t)
	return &testBundle{db: d, store: d.Store(), ctx: context.Background()}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// createTenant inserts a tenant with one API key and returns the tenant.
func createTenant(t *testing.T, b *testBundle, slug string) *app.Tenant {
	t.Helper()
	tenants := &app.Tenants{Store: db.Scope[app.TenantTx](b.store), Now: time.Now}
	tn, err := tenants.Create(b.ctx, app.CLIActor, app.TenantInput{Slug: slug, Name: "Tenant " + slug})
	require.NoError(t, err)
	keys := &app.APIKeys{Store: db.Scope[app.APIKeyTx](b.store), Lookup: b.store, Now: time.Now}
	_, _, err = keys.Create(b.ctx, app.CLIActor, tn.ID, "key of "+slug)
	require.NoError(t, err)
	return tn
}

func TestMigrate(t *testing.T) {
	t.Parallel()

	t.Run("EmptyDatabaseThenNoOp", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		pool, err := pgxpool.New(ctx, dbtest.OwnerURL(dbtest.CreateEmptyDatabase(t)))
		require.NoError(t, err)
		d := db.New(pool)
		t.Cleanup(d.Close)

		first, err := db.Migrate(ctx, d.Pool, d.SQL.DB, quietLog(), dbtest.RuntimeRole)
		require.NoError(t, err)
		require.NotEmpty(t, first.Applied, "Herald's migrations apply to an empty database")
		require.NotEmpty(t, first.RiverApplied, "River's migrations apply too")

		var tables []string
		require.NoError(t, d.SQL.SelectContext(ctx, &tables, `
			SELECT tablename FROM pg_tables WHERE schemaname = 'public'
			AND tablename IN ('tenants', 'users', 'api_keys', 'audit_log', 'river_job') ORDER BY tablename`))
		require.Equal(t, []string{"api_keys", "audit_log", "river_job", "tenants", "users"}, tables)

		second, err := db.Migrate(ctx, d.Pool, d.SQL.DB, quietLog(), dbtest.RuntimeRole)
		require.NoError(t, err)
		require.Empty(t, second.Applied, "a second run applies nothing")
		require.Empty(t, second.RiverApplied)
	})

	t.Run("EveryTenantTableForcesRowLevelSecurity", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var unprotected []string
		require.NoError(t, b.db.SQL.SelectContext(b.ctx, &unprotected, `
			SELECT c.relname FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
			WHERE c.relkind = 'r'
			  AND (c.relname = 'tenants' OR EXISTS (
			      SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped))
			  AND NOT (c.relrowsecurity AND c.relforcerowsecurity)
			ORDER BY 1`))
		require.Empty(t, unprotected, "tables with tenant_id but without forced row-level security")
	})

	t.Run("EveryPolicyReadsTheScopeOncePerStatement", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// A policy that calls herald_tenant() or herald_platform() outside a
		// sub-select evaluates it for every row a statement reads.
		var perRow []string
		require.NoError(t, b.db.SQL.SelectContext(b.ctx, &perRow, `
			SELECT tablename || '.' || policyname FROM pg_policies
			WHERE schemaname = 'public'
			  AND regexp_replace(coalesce(qual, '') || ' ' || coalesce(with_check, ''),
			                     'SELECT herald_(tenant|platform)\(\) AS herald_(tenant|platform)', '', 'g')
			      ~ 'herald_(tenant|platform)\('
			ORDER BY 1`))
		require.Empty(t, perRow, "policies that read the scope once per row")
		var policies int
		require.NoError(t, b.db.SQL.GetContext(b.ctx, &policies, `SELECT count(*) FROM pg_policies WHERE schemaname = 'public'`))
		require.Greater(t, policies, 30, "the schema's policies were read")
	})
}

func TestStore_RowLevelSecurity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := createTenant(t, b, "tenant-a")
	other := createTenant(t, b, "tenant-b")

	count := func(scope func(context.Context, func(*db.Tx) error) error, table string) (n int) {
		t.Helper()
		require.NoError(t, scope(b.ctx, func(tx *db.Tx) error {
			// Deliberately no tenant filter: row-level security alone must hold.
			return tx.SQL().QueryRowContext(b.ctx, `SELECT count(*) FROM `+table).Scan(&n)
		}))
		return n
	}
	inA := func(ctx context.Context, fn func(*db.Tx) error) error { return b.store.InTenant(ctx, a.ID, fn) }

	t.Run("TenantScopeSeesOnlyItsRows", func(t *testing.T) {
		require.Equal(t, 1, count(inA, "tenants"))
		require.Equal(t, 1, count(inA, "api_keys"))
		require.NoError(t, b.store.InTenant(b.ctx, a.ID, func(tx *db.Tx) error {
			_, err := tx.TenantByID(b.ctx, other.ID)
			require.Equal(t, app.ENOTFOUND, app.ErrorCode(err), "tenant B is invisible in A's scope")
			return nil
		}))
	})

	t.Run("PlatformScopeSeesAll", func(t *testing.T) {
		require.Equal(t, 2, count(b.store.InPlatform, "tenants"))
		require.Equal(t, 2, count(b.store.InPlatform, "api_keys"))
	})

	t.Run("NoScopeSeesNothing", func(t *testing.T) {
		var n int
		require.NoError(t, b.db.SQL.GetContext(b.ctx, &n, `SELECT count(*) FROM api_keys`))
		require.Zero(t, n, "a query outside any scoped transaction sees no tenant rows")
	})

	t.Run("CannotWriteIntoAnotherTenant", func(t *testing.T) {
		err := b.store.InTenant(b.ctx, a.ID, func(tx *db.Tx) error {
			return tx.CreateAPIKey(b.ctx, &app.APIKey{
				ID: uuid.New(), TenantID: other.ID, Name: "sneaky", Prefix: "hk_x", Hash: []byte("x"), CreatedAt: time.Now(),
			})
		})
		require.Error(t, err, "row-level security rejects a row for another tenant")
		require.Equal(t, 1, count(b.store.InPlatform, "api_keys WHERE tenant_id = '"+other.ID.String()+"'"))
	})

	t.Run("TransactionStartsScoped", func(t *testing.T) {
		// The scope travels with BEGIN: the first statement of the
		// transaction already sees it, and the transaction is a real one.
		settings := func(scope func(context.Context, func(*db.Tx) error) error) (s, tenant string) {
			t.Helper()
			require.NoError(t, scope(b.ctx, func(tx *db.Tx) error {
				return tx.SQL().QueryRowContext(b.ctx, `
					SELECT current_setting('herald.scope', true), current_setting('herald.tenant_id', true)`).Scan(&s, &tenant)
			}))
			return s, tenant
		}
		s, tenant := settings(inA)
		require.Equal(t, "tenant", s)
		require.Equal(t, a.ID.String(), tenant)
		s, tenant = settings(b.store.InPlatform)
		require.Equal(t, "platform", s)
		require.Empty(t, tenant)
		var mode string
		require.NoError(t, b.store.InTenant(b.ctx, a.ID, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.ctx, `SELECT current_setting('plan_cache_mode')`).Scan(&mode)
		}))
		require.Equal(t, "force_generic_plan", mode, "scoped transactions plan generically")
		require.NoError(t, b.db.SQL.GetContext(b.ctx, &mode, `SELECT current_setting('plan_cache_mode')`))
		require.Equal(t, "auto", mode, "and only they")

		// A failed transaction leaves nothing behind, its scope included.
		err := b.store.InTenant(b.ctx, a.ID, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, `UPDATE tenants SET name = 'renamed' WHERE id = $1`, a.ID)
			require.NoError(t, err)
			return app.Errorf(app.ECONFLICT, "roll back")
		})
		require.Error(t, err)
		var name string
		require.NoError(t, b.store.InTenant(b.ctx, a.ID, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.ctx, `SELECT name FROM tenants WHERE id = $1`, a.ID).Scan(&name)
		}))
		require.Equal(t, a.Name, name, "the update rolled back")
	})

	t.Run("ScopeEndsWithTransaction", func(t *testing.T) {
		// Run many scoped transactions, then check that a pooled connection
		// carries no scope into unscoped use.
		for range 20 {
			require.Equal(t, 1, count(inA, "tenants"))
		}
		var n int
		require.NoError(t, b.db.SQL.GetContext(b.ctx, &n, `SELECT count(*) FROM tenants`))
		require.Zero(t, n)
	})
}

func TestStore_Errors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	createTenant(t, b, "taken")
	tenants := &app.Tenants{Store: db.Scope[app.TenantTx](b.store), Now: time.Now}

	t.Run("DuplicateSlugIsConflictOnSlug", func(t *testing.T) {
		_, err := tenants.Create(b.ctx, app.CLIActor, app.TenantInput{Slug: "taken", Name: "Again"})
		require.Equal(t, app.ECONFLICT, app.ErrorCode(err))
		require.Equal(t, "slug", app.ErrorField(err))
	})

	t.Run("FailedCreateStoresNothing", func(t *testing.T) {
		var n int
		require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.ctx, `SELECT count(*) FROM audit_log WHERE action = 'tenant.create'`).Scan(&n)
		}))
		require.Equal(t, 1, n, "only the first, successful create left an audit entry")
	})

	t.Run("MissingIsNotFound", func(t *testing.T) {
		_, err := tenants.BySlug(b.ctx, "nope")
		require.Equal(t, app.ENOTFOUND, app.ErrorCode(err))
	})
}

func TestAuditLog_Chain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "chained")

	var entries []*app.AuditEntry
	for i := range 3 {
		e := app.SystemActor.Entry(&tn.ID, "test.step", "step", "", map[string]any{"i": i})
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error { return tx.InsertAudit(b.ctx, e) }))
		entries = append(entries, e)
	}
	for i := 1; i < len(entries); i++ {
		require.Equal(t, entries[i-1].Hash, entries[i].PrevHash, "entry %d links to its predecessor", i)
		require.Greater(t, entries[i].ID, entries[i-1].ID)
	}

	t.Run("EntriesCannotBeEdited", func(t *testing.T) {
		for _, store := range []*db.Store{b.store, dbtest.OwnerDB(t, b.db).Store()} {
			err := store.InPlatform(b.ctx, func(tx *db.Tx) error {
				_, err := tx.SQL().ExecContext(b.ctx, `UPDATE audit_log SET action = 'forged' WHERE id = $1`, entries[0].ID)
				return err
			})
			if store == b.store {
				require.ErrorContains(t, err, "permission denied for table audit_log", "the runtime role may not update it")
			} else {
				require.ErrorContains(t, err, "cannot be changed", "nor may the owner while the trigger stands")
			}
		}
	})

	t.Run("HashCoversContent", func(t *testing.T) {
		var ok bool
		require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.ctx,
				`SELECT bool_and(hash = audit_log_digest(audit_log)) FROM audit_log`).Scan(&ok)
		}))
		require.True(t, ok, "every stored hash matches a recomputation")
	})

	t.Run("VerifyFindsTampering", func(t *testing.T) {
		audit := &app.Audit{Store: db.Scope[app.AuditTx](b.store), Log: quietLog(), Now: time.Now}
		breaks, err := audit.Verify(b.ctx)
		require.NoError(t, err)
		require.Empty(t, breaks, "an untouched log verifies")

		// Someone with the owner's database access edits an entry behind
		// Herald's back (the runtime role cannot: TestRuntimeRole).
		_, err = dbtest.OwnerDB(t, b.db).SQL.ExecContext(b.ctx, `
			BEGIN;
			SET LOCAL herald.scope = 'platform';
			ALTER TABLE audit_log DISABLE TRIGGER audit_log_immutable;
			UPDATE audit_log SET metadata = '{"i": 99}' WHERE id = `+strconv.FormatInt(entries[1].ID, 10)+`;
			ALTER TABLE audit_log ENABLE TRIGGER audit_log_immutable;
			COMMIT;`)
		require.NoError(t, err)
		breaks, err = audit.Verify(b.ctx)
		require.NoError(t, err)
		require.Len(t, breaks, 1)
		require.Equal(t, entries[1].ID, breaks[0].EntryID)
		require.Equal(t, "content does not match its hash", breaks[0].Reason)
	})
}

func TestHealthProbe(t *testing.T) {
	t.Parallel()
	b := setup(t)
	q, err := b.db.QueueState(b.ctx)
	require.NoError(t, err)
	require.Zero(t, q.Available)
	require.Empty(t, q.Paused)

	_, err = b.db.SQL.ExecContext(b.ctx, `
		INSERT INTO river_job (kind, args, queue, state, scheduled_at, max_attempts, priority)
		VALUES ('test', '{}', 'route', 'available', now() - interval '90 seconds', 5, 1)`)
	require.NoError(t, err)
	q, err = b.db.QueueState(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, q.Available)
	require.InDelta(t, 90, q.OldestAvailable.Seconds(), 10)
}

// TestAuditLog_AnchorsFindDeletedHead deletes a chain's newest entries, which
// leaves a shorter chain whose links all verify: only the anchored head
// (checkpointed by the previous verification) shows what is missing.
func TestAuditLog_AnchorsFindDeletedHead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "anchored")
	audit := &app.Audit{Store: db.Scope[app.AuditTx](b.store), Log: quietLog(), Now: time.Now}
	write := func(i int) *app.AuditEntry {
		e := app.SystemActor.Entry(&tn.ID, "test.step", "step", "", map[string]any{"i": i})
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error { return tx.InsertAudit(b.ctx, e) }))
		return e
	}
	// Tampering takes the owner's access: the runtime role may neither
	// delete nor update the log and its anchors (TestRuntimeRole).
	owner := dbtest.OwnerDB(t, b.db).Store()
	platform := func(query string, args ...any) (n int, err error) {
		store := b.store
		if !strings.HasPrefix(query, "SELECT") {
			store = owner
		}
		err = store.InPlatform(b.ctx, func(tx *db.Tx) error {
			if strings.HasPrefix(query, "SELECT") {
				return tx.SQL().QueryRowContext(b.ctx, query, args...).Scan(&n)
			}
			_, err := tx.SQL().ExecContext(b.ctx, query, args...)
			return err
		})
		return n, err
	}
	head := func() int {
		n, err := platform(`SELECT head_id FROM audit_anchors WHERE tenant_id = $1 ORDER BY id DESC LIMIT 1`, tn.ID)
		require.NoError(t, err)
		return n
	}
	for i := range 3 {
		write(i)
	}
	last := write(3)

	breaks, err := audit.Verify(b.ctx)
	require.NoError(t, err)
	require.Empty(t, breaks)
	require.EqualValues(t, last.ID, head(), "the head is anchored")
	anchors, err := platform(`SELECT count(*) FROM audit_anchors WHERE tenant_id = $1`, tn.ID)
	require.NoError(t, err)
	_, err = audit.Verify(b.ctx)
	require.NoError(t, err)
	again, err := platform(`SELECT count(*) FROM audit_anchors WHERE tenant_id = $1`, tn.ID)
	require.NoError(t, err)
	require.Equal(t, anchors, again, "an unmoved head is not anchored twice")

	newest := write(4)
	_, err = audit.Verify(b.ctx)
	require.NoError(t, err)
	require.EqualValues(t, newest.ID, head(), "the anchor follows the head")

	// Someone with database access deletes the two newest entries: every
	// remaining link still verifies.
	_, err = platform(`DELETE FROM audit_log WHERE id IN ($1, $2)`, last.ID, newest.ID)
	require.NoError(t, err)
	for range 2 {
		breaks, err = audit.Verify(b.ctx)
		require.NoError(t, err)
		require.Len(t, breaks, 1, "found, and found again on the next run")
		require.Equal(t, newest.ID, breaks[0].EntryID)
		require.Equal(t, tn.ID, *breaks[0].TenantID)
		require.Contains(t, breaks[0].Reason, "entries were deleted from the end of the chain")
		require.EqualValues(t, newest.ID, head(), "a broken chain is not re-anchored")
	}

	// Nor can the anchors be rewritten to match.
	_, err = platform(`UPDATE audit_anchors SET head_id = $2 WHERE tenant_id = $1`, tn.ID, last.ID)
	require.ErrorContains(t, err, "cannot be changed")
	_, err = platform(`DELETE FROM audit_anchors WHERE tenant_id = $1`, tn.ID)
	require.ErrorContains(t, err, "newest anchor of an audit chain cannot be deleted")
	_, err = platform(`DELETE FROM audit_anchors WHERE tenant_id = $1 AND head_id <> $2`, tn.ID, newest.ID)
	require.NoError(t, err, "older anchors may be pruned")
	_, err = platform(`DELETE FROM tenants WHERE id = $1`, tn.ID)
	require.NoError(t, err, "a deleted tenant takes its anchors along")
	n, err := platform(`SELECT count(*) FROM audit_anchors WHERE tenant_id = $1`, tn.ID)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestOpen_NoJIT checks that Herald's connections plan without JIT
// compilation unless DATABASE_URL asks for it: a statement whose estimate
// passes jit_above_cost would otherwise spend longer compiling than running.
func TestOpen_NoJIT(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.OwnerURL(dbtest.CreateEmptyDatabase(t))
	jit := func(url string) string {
		t.Helper()
		d, err := db.Open(ctx, url, db.Options{MaxConns: 1, ApplicationName: "test"})
		require.NoError(t, err)
		defer d.Close()
		var v string
		require.NoError(t, d.Pool.QueryRow(ctx, `SHOW jit`).Scan(&v))
		return v
	}
	require.Equal(t, "off", jit(url))
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	require.Equal(t, "on", jit(url+sep+"jit=on"), "the operator's choice in DATABASE_URL wins")
}
