package db

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// beginKey carries a *beginRequest from Store.run to the driver, through the
// context database/sql hands to the driver's BeginTx.
type beginKey struct{}

// beginRequest is a transaction's BEGIN statement, and the pgx transaction
// the driver opened with it: River inserts and completes jobs on that pgx
// transaction natively (riverpgxv5) while sqlx runs Herald's own statements
// on the same connection, so a row and its job still commit together.
type beginRequest struct {
	statement string
	tx        pgx.Tx
}

// beginScoped returns the statement that opens a transaction already scoped
// to the tenant (or to the platform for uuid.Nil): BEGIN and the set_config
// calls travel in one simple-protocol message, so a scoped transaction costs
// no extra round trip for its scope. The values are constants and a
// formatted UUID (hex and hyphens), so inlining them is safe. The calls are
// set_config unqualified, not SET LOCAL: the test databases' guard
// (db/dbtest/guard.go) sees every scope a transaction takes that way.
//
// The transaction also plans its prepared statements generically
// (plan_cache_mode, local to it): Herald's statements are short index
// lookups and writes whose best plan does not depend on the values, and
// Postgres would otherwise re-plan some of them on every execution (River's
// job completion, with its array parameters, took longer to plan than to
// run).
func beginScoped(tenantID uuid.UUID) string {
	// herald.writer says the transaction is Herald's own: a status change
	// made in any other leaves a trace (herald_message_status_guard).
	const generic = `, set_config('plan_cache_mode', 'force_generic_plan', true), set_config('herald.writer', 'herald', true)`
	if tenantID == uuid.Nil {
		return `BEGIN; SELECT set_config('herald.scope', 'platform', true), set_config('herald.tenant_id', '', true)` + generic
	}
	return `BEGIN; SELECT set_config('herald.scope', 'tenant', true), set_config('herald.tenant_id', '` + tenantID.String() + `', true)` + generic
}

// openSQL returns a database/sql handle over the pgx pool whose connections
// begin transactions with the statement found in the context, if any. Like
// stdlib.OpenDBFromPool it keeps no idle connections of its own: the pgx
// pool is the one place connections wait.
func openSQL(pool *pgxpool.Pool) *sql.DB {
	db := sql.OpenDB(scopedConnector{stdlib.GetPoolConnector(pool)})
	db.SetMaxIdleConns(0)
	return db
}

// scopedConnector hands out scopedConns.
type scopedConnector struct{ driver.Connector }

// Connect implements driver.Connector.
func (c scopedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return scopedConn{conn.(*stdlib.Conn)}, nil
}

// scopedConn is pgx's database/sql connection with a BeginTx that honours
// a BEGIN statement from the context; every other method is pgx's own.
type scopedConn struct{ *stdlib.Conn }

// BeginTx implements driver.ConnBeginTx.
func (c scopedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	req, ok := ctx.Value(beginKey{}).(*beginRequest)
	if !ok || opts.Isolation != driver.IsolationLevel(sql.LevelDefault) || opts.ReadOnly {
		return c.Conn.BeginTx(ctx, opts)
	}
	if c.Conn.Conn().IsClosed() {
		return nil, driver.ErrBadConn
	}
	tx, err := c.Conn.Conn().BeginTx(ctx, pgx.TxOptions{BeginQuery: req.statement})
	if err != nil {
		return nil, err
	}
	req.tx = tx
	return pgxTx{ctx: ctx, tx: tx}, nil
}

// pgxTx is a driver.Tx over a pgx transaction, as stdlib's own.
type pgxTx struct {
	ctx context.Context
	tx  pgx.Tx
}

func (t pgxTx) Commit() error   { return t.tx.Commit(t.ctx) }
func (t pgxTx) Rollback() error { return t.tx.Rollback(t.ctx) }
