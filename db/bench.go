package db

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The load generator (db/bench) runs these statements on a database of its
// own. They read across tenants on a platform-scoped pool, which is why they
// take the pgx pool and no tenant id: the benchmark measures the whole
// database, not one tenant's view of it.

// BenchDatabase is the database the benchmark creates, fills and drops on
// the server DATABASE_URL names: herald_bench, or HERALD_BENCH_DATABASE when
// set, so that two benchmarks on one server do not drop each other's.
func BenchDatabase() string {
	if name := os.Getenv("HERALD_BENCH_DATABASE"); name != "" {
		return name
	}
	return "herald_bench"
}

// BenchCreateDatabase drops any benchmark database a failed run left behind
// and creates an empty one, so every run starts from the same state.
// adminURL is a connection to any database on the server.
func BenchCreateDatabase(ctx context.Context, adminURL string) error {
	err := benchAdminExec(ctx, adminURL,
		`DROP DATABASE IF EXISTS `+benchIdent()+` WITH (FORCE)`,
		`CREATE DATABASE `+benchIdent())
	if err != nil {
		return fmt.Errorf("create benchmark database (the role needs CREATEDB): %w", err)
	}
	return nil
}

// BenchDropDatabase drops the benchmark database; FORCE ends the sessions of
// herald processes that have not yet exited.
func BenchDropDatabase(ctx context.Context, adminURL string) error {
	return benchAdminExec(ctx, adminURL, `DROP DATABASE IF EXISTS `+benchIdent()+` WITH (FORCE)`)
}

// benchIdent is the benchmark database's name as a quoted identifier.
func benchIdent() string {
	return pgx.Identifier{BenchDatabase()}.Sanitize()
}

// benchAdminExec runs statements on a single connection outside any
// transaction, as CREATE DATABASE and DROP DATABASE require.
func benchAdminExec(ctx context.Context, dsn string, stmts ...string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// BenchCountEvents counts accepted events: with one message per event, the
// number of messages the end-to-end phase waits for.
func BenchCountEvents(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n)
	return n, err
}

// BenchCountSent counts messages that reached the provider.
func BenchCountSent(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE sent_at IS NOT NULL`).Scan(&n)
	return n, err
}

// BenchBacklog counts the work still ahead of the worker: River jobs yet to
// run and sent messages whose receipts have not been applied. The receipts
// run outside River's queues, so the job count alone would read 0 too soon.
func BenchBacklog(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM river_job WHERE state IN ('available', 'running', 'retryable'))
		     + (SELECT count(*) FROM messages WHERE status = 'SENT')`).Scan(&n)
	return n, err
}

// BenchNow returns the database's clock, which stamps events.created_at; the
// latency phase compares against it, not against this machine's clock.
func BenchNow(ctx context.Context, pool *pgxpool.Pool) (time.Time, error) {
	var now time.Time
	err := pool.QueryRow(ctx, `SELECT now()`).Scan(&now)
	return now, err
}

// BenchUnsent counts messages of events accepted since a time that have not
// reached the provider yet.
func BenchUnsent(ctx context.Context, pool *pgxpool.Pool, since time.Time) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `
		SELECT count(*) FROM events e JOIN messages m ON m.event_id = e.id
		WHERE e.created_at >= $1 AND m.sent_at IS NULL`, since).Scan(&n)
	return n, err
}

// BenchLatency returns the accepted-to-provider latency percentiles of the
// messages of events accepted since a time, and how many there were.
// Accepted is when the event row was written; the provider call is the
// send's start, which the timeline records as sent_at minus provider_ms.
func BenchLatency(ctx context.Context, pool *pgxpool.Pool, since time.Time) (p50, p95, p99 time.Duration, events int, err error) {
	var m50, m95, m99 float64
	err = pool.QueryRow(ctx, `
		SELECT percentile_cont(0.50) WITHIN GROUP (ORDER BY d), percentile_cont(0.95) WITHIN GROUP (ORDER BY d),
		       percentile_cont(0.99) WITHIN GROUP (ORDER BY d), count(*)
		FROM (SELECT extract(epoch FROM m.sent_at - e.created_at) * 1000
		             - coalesce((me.detail->>'provider_ms')::float, 0) AS d
		      FROM events e JOIN messages m ON m.event_id = e.id
		      JOIN message_events me ON me.message_id = m.id AND me.to_status = 'SENT'
		      WHERE e.created_at >= $1) x`, since).Scan(&m50, &m95, &m99, &events)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	return ms(m50), ms(m95), ms(m99), events, nil
}

// BenchCreateRowsTable creates bench_rows, the table of the single-row
// insert baseline. It lives only in the benchmark database, so it is no
// migration.
func BenchCreateRowsTable(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_rows (id bigserial PRIMARY KEY, payload jsonb NOT NULL, at timestamptz NOT NULL DEFAULT now())`)
	return err
}

// BenchInsertRow writes one small row into bench_rows inside tx; the caller
// commits, because the commit is what the baseline measures.
func BenchInsertRow(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `INSERT INTO bench_rows (payload) VALUES ($1)`, `{"k":"v"}`)
	return err
}

// BenchDeleteNoopJobs deletes the River baseline's finished no-op jobs
// (kind bench_noop), so the phases after it start on a river_job table that
// holds only Herald's own jobs.
func BenchDeleteNoopJobs(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `DELETE FROM river_job WHERE kind = 'bench_noop'`)
	return err
}

// BenchSessionPIDs returns the backend pids of the benchmark database's
// sessions opened by one application (herald-web, herald-worker), whose CPU
// time the benchmark reads from /proc.
func BenchSessionPIDs(ctx context.Context, pool *pgxpool.Pool, applicationName string) ([]int, error) {
	rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $2 AND application_name = $1`, applicationName, BenchDatabase())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}
