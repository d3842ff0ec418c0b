// Package db is Herald's Postgres storage: embedded migrations, the sqlx
// store that implements app's interfaces, tenant-scoped transactions and the
// test database harness (in db/dbtest).
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jmoiron/sqlx"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// DB holds Herald's one connection pool in two shapes: the pgx pool, which
// River's workers use for LISTEN/NOTIFY, and a database/sql handle over the
// same pool, which application SQL (sqlx) and River's transactional inserts
// use. Sharing one pool keeps the connection budget in one place.
type DB struct {
	Pool *pgxpool.Pool
	SQL  *sqlx.DB
}

// Options tune the pool.
type Options struct {
	// MaxConns caps open connections; 0 means 25.
	MaxConns int32
	// ApplicationName shows in pg_stat_activity (web, worker, serve, ...).
	ApplicationName string
}

// Open connects to url and checks the connection.
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	cfg.MaxConns = 25
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	cfg.MaxConnIdleTime = 5 * time.Minute
	if opts.ApplicationName != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "herald-" + opts.ApplicationName
	}
	// No JIT compilation unless DATABASE_URL asks for it (jit=on). Herald's
	// statements are short, but the planner's estimate for one can pass
	// jit_above_cost, as the dashboard's counts under a tenant's row-level
	// security do at 10M messages: compiling then took 25 ms of a statement
	// that runs in 3.
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; !set {
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database %s@%s:%d/%s: %w",
			cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, err)
	}
	return New(pool), nil
}

// New wraps an open pool without checking it, for callers that want to start
// even while the database is down (health checks report it).
func New(pool *pgxpool.Pool) *DB {
	return &DB{Pool: pool, SQL: sqlx.NewDb(openSQL(pool), "pgx")}
}

// Close closes both handles and the pool.
func (d *DB) Close() {
	_ = d.SQL.Close()
	d.Pool.Close()
}

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error { return d.Pool.Ping(ctx) }

// Store returns the store of Herald's transactions on this database.
func (d *DB) Store() *Store { return &Store{db: d.SQL} }

// Store runs Herald's tenant-scoped transactions. Services get it through
// Scope, as an app.Store of the transaction interface they use. A
// transaction's scope is set once, when it begins (beginScoped), and never
// moves: a transaction belongs to one tenant, or to the platform.
type Store struct {
	db *sqlx.DB
}

// InTenant runs fn in a transaction that can see only tenantID's rows; it
// commits when fn returns nil.
func (s *Store) InTenant(ctx context.Context, tenantID uuid.UUID, fn func(*Tx) error) error {
	if tenantID == uuid.Nil {
		return fmt.Errorf("tenant transaction without a tenant")
	}
	return s.run(ctx, tenantID, fn)
}

// InPlatform runs fn in a transaction that can see every tenant's rows.
func (s *Store) InPlatform(ctx context.Context, fn func(*Tx) error) error {
	return s.run(ctx, uuid.Nil, fn)
}

// Scope returns s as the app.Store of a service whose statements are T (an
// interface that *Tx implements). It panics at wiring time, not on the first
// request, when *Tx lacks one of T's methods.
func Scope[T app.Tx](s *Store) app.Store[T] {
	if _, ok := any((*Tx)(nil)).(T); !ok {
		var t *T
		panic(fmt.Sprintf("db.Tx does not implement %T", t))
	}
	return scoped[T]{s}
}

// Every transaction interface of app and app/console: *Tx implements them
// all, checked when db compiles.
var (
	_ app.AccountTx       = (*Tx)(nil)
	_ app.UploadTx        = (*Tx)(nil)
	_ app.UploadReadTx    = (*Tx)(nil)
	_ app.APIKeyTx        = (*Tx)(nil)
	_ app.AuditTx         = (*Tx)(nil)
	_ app.BreakerTx       = (*Tx)(nil)
	_ app.CallbackTx      = (*Tx)(nil)
	_ app.ConfirmWindowTx = (*Tx)(nil)
	_ app.ContactsTx      = (*Tx)(nil)
	_ app.CredentialTx    = (*Tx)(nil)
	_ app.SMSLogTx        = (*Tx)(nil)
	_ app.ContactSearchTx = (*Tx)(nil)
	_ app.DeadlineTx      = (*Tx)(nil)
	_ app.DispatchPlanTx  = (*Tx)(nil)
	_ app.FileServeTx     = (*Tx)(nil)
	_ app.HookTx          = (*Tx)(nil)
	_ app.InboundTx       = (*Tx)(nil)
	_ app.InboxTx         = (*Tx)(nil)
	_ app.IntakeTx        = (*Tx)(nil)
	_ app.MaintenanceTx   = (*Tx)(nil)
	_ app.MessagesTx      = (*Tx)(nil)
	_ app.MetaTemplateTx  = (*Tx)(nil)
	_ app.ReceiptTx       = (*Tx)(nil)
	_ app.RouteTx         = (*Tx)(nil)
	_ app.SendTx          = (*Tx)(nil)
	_ app.SettleTx        = (*Tx)(nil)
	_ app.TemplateTx      = (*Tx)(nil)
	_ app.TenantTx        = (*Tx)(nil)
	_ app.UserTx          = (*Tx)(nil)

	_ console.APIKeyTx       = (*Tx)(nil)
	_ console.AuditLogTx     = (*Tx)(nil)
	_ console.AccountTx      = (*Tx)(nil)
	_ console.DashboardTx    = (*Tx)(nil)
	_ console.MessageTx      = (*Tx)(nil)
	_ console.TripTx         = (*Tx)(nil)
	_ console.MetaTemplateTx = (*Tx)(nil)
	_ console.QueueTx        = (*Tx)(nil)
	_ console.ScheduleTx     = (*Tx)(nil)
	_ console.SessionTx      = (*Tx)(nil)
	_ console.TemplateTx     = (*Tx)(nil)
	_ console.TenantTx       = (*Tx)(nil)
	_ console.UserTx         = (*Tx)(nil)
)

// scoped hands a Store's transactions to fn as T.
type scoped[T app.Tx] struct{ s *Store }

func (c scoped[T]) InTenant(ctx context.Context, tenantID uuid.UUID, fn func(T) error) error {
	return c.s.InTenant(ctx, tenantID, func(tx *Tx) error { return fn(any(tx).(T)) })
}

func (c scoped[T]) InPlatform(ctx context.Context, fn func(T) error) error {
	return c.s.InPlatform(ctx, func(tx *Tx) error { return fn(any(tx).(T)) })
}

func (s *Store) run(ctx context.Context, tenantID uuid.UUID, fn func(*Tx) error) (err error) {
	// A lost connection is told apart from every other failure, so that
	// callers can wait for the database instead of failing for good.
	defer func() { err = unavailable(err) }()
	// The scope is set in the BEGIN message itself (see beginScoped), with
	// set_config's is_local: both settings end with the transaction, so a
	// pooled connection never carries one tenant's scope into the next use.
	// Nothing sets it again in the transaction (db/dbtest's guard fails a
	// test database's transaction that does).
	req := &beginRequest{statement: beginScoped(tenantID)}
	tx, err := s.db.BeginTxx(context.WithValue(ctx, beginKey{}, req), nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(&Tx{tx: tx, pgx: req.tx, tenantID: tenantID}); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return mapErr(fmt.Errorf("commit: %w", err))
	}
	return nil
}

// Tx is one database transaction. It implements every store interface of
// app and app/console; services see it through the one they declare.
type Tx struct {
	tx *sqlx.Tx
	// pgx is the same transaction as pgx sees it, for River's native driver.
	pgx      pgx.Tx
	tenantID uuid.UUID
	// route holds what a route transaction read with its event.
	route *routeLookups
}

// PGX returns the transaction as a pgx.Tx, on the same connection as SQL's:
// River inserts jobs in it through riverpgxv5, without database/sql's
// re-encoding of every array parameter.
func (t *Tx) PGX() pgx.Tx { return t.pgx }

// SQL returns the underlying *sql.Tx so that River can insert jobs in it:
// a row and its job commit or roll back together.
func (t *Tx) SQL() *sql.Tx { return t.tx.Tx }

// TenantID returns the tenant the transaction is scoped to, or uuid.Nil in
// platform scope.
func (t *Tx) TenantID() uuid.UUID { return t.tenantID }

// Savepoint serves app.DispatchTx: fn runs inside a savepoint, and when it
// fails the transaction goes back to the savepoint and carries on. fnErr is
// fn's error; err is a failure of the savepoint statements, after which the
// transaction is unusable.
func (t *Tx) Savepoint(ctx context.Context, fn func() error) (fnErr, err error) {
	if _, err := t.tx.ExecContext(ctx, `SAVEPOINT herald_sp`); err != nil {
		return nil, mapErr(err)
	}
	if fnErr = fn(); fnErr != nil {
		if _, err := t.tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT herald_sp`); err != nil {
			return fnErr, mapErr(err)
		}
		return fnErr, nil
	}
	_, err = t.tx.ExecContext(ctx, `RELEASE SAVEPOINT herald_sp`)
	return nil, mapErr(err)
}

// notFound turns sql.ErrNoRows into ENOTFOUND with the given message and maps
// any other error.
func notFound(err error, format string, args ...any) error {
	if errors.Is(err, sql.ErrNoRows) {
		return app.Errorf(app.ENOTFOUND, format, args...)
	}
	return mapErr(err)
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// prefixed turns a column list into "alias.col AS "alias.col", ..." so that
// one row can fill several structs (sqlx maps "alias.col" into the field
// tagged db:"alias").
func prefixed(alias, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		c = strings.TrimSpace(c)
		cols[i] = alias + "." + c + ` AS "` + alias + "." + c + `"`
	}
	return strings.Join(cols, ", ")
}
