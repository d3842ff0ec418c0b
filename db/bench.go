package db

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The load generator (db/bench) runs these statements on a database of its
// own. They read across tenants on a platform-scoped connection, which is
// why they take a BenchQuerier and no tenant id: the benchmark measures the
// whole database, not one tenant's view of it.
//
// Every statement the benchmark runs on its database starts with BenchTag,
// so that the statement counts it reads from pg_stat_statements can leave
// its own monitoring out.

// BenchTag opens every statement the benchmark itself runs on the benchmark
// database. pg_stat_statements keeps a statement's leading comment in its
// text, so the benchmark's own statements can be told from Herald's.
const BenchTag = "/* herald-bench */ "

// BenchQuerier is what the benchmark's statements run on: a pgx connection
// or pool.
type BenchQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

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
// and creates an empty one named name, so every run starts from the same
// state. adminURL is a connection to any database on the server.
func BenchCreateDatabase(ctx context.Context, adminURL, name string) error {
	ident := pgx.Identifier{name}.Sanitize()
	err := benchAdminExec(ctx, adminURL,
		`DROP DATABASE IF EXISTS `+ident+` WITH (FORCE)`,
		`CREATE DATABASE `+ident)
	if err != nil {
		return fmt.Errorf("create benchmark database (the role needs CREATEDB): %w", err)
	}
	return nil
}

// BenchDropDatabase drops the benchmark database; FORCE ends the sessions of
// herald processes that have not yet exited.
func BenchDropDatabase(ctx context.Context, adminURL, name string) error {
	return benchAdminExec(ctx, adminURL, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
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
func BenchCountEvents(ctx context.Context, q BenchQuerier) (int, error) {
	var n int
	err := q.QueryRow(ctx, BenchTag+`SELECT count(*) FROM events`).Scan(&n)
	return n, err
}

// BenchSent returns how many messages reached the provider, and the first
// and last time one did: the end-to-end rate is read between those two, so
// that process start-up is not part of it.
func BenchSent(ctx context.Context, q BenchQuerier) (n int, first, last time.Time, err error) {
	var f, l *time.Time
	err = q.QueryRow(ctx, BenchTag+`SELECT count(*), min(sent_at), max(sent_at) FROM messages WHERE sent_at IS NOT NULL`).Scan(&n, &f, &l)
	if f != nil && l != nil {
		first, last = *f, *l
	}
	return n, first, last, err
}

// BenchDelivered counts messages whose delivery receipt has been applied
// (DELIVERED or READ): the unit the statement and commit counts are divided
// by, receipts included.
func BenchDelivered(ctx context.Context, q BenchQuerier) (int, error) {
	var n int
	err := q.QueryRow(ctx, BenchTag+`SELECT count(*) FROM messages WHERE status IN ('DELIVERED', 'READ')`).Scan(&n)
	return n, err
}

// BenchBacklog counts the work still ahead of the worker: River jobs yet to
// run and sent messages whose receipts have not been applied. The receipts
// run outside River's queues, so the job count alone would read 0 too soon.
func BenchBacklog(ctx context.Context, q BenchQuerier) (int, error) {
	var n int
	err := q.QueryRow(ctx, BenchTag+`
		SELECT (SELECT count(*) FROM river_job WHERE state IN ('available', 'running', 'retryable'))
		     + (SELECT count(*) FROM messages WHERE status = 'SENT')`).Scan(&n)
	return n, err
}

// BenchNow returns the database's clock, which stamps events.created_at; the
// latency phase compares against it, not against this machine's clock.
func BenchNow(ctx context.Context, q BenchQuerier) (time.Time, error) {
	var now time.Time
	err := q.QueryRow(ctx, BenchTag+`SELECT now()`).Scan(&now)
	return now, err
}

// BenchUnsent counts events accepted since a time whose message has not
// reached the provider yet, routed or not: the latency phase's backlog.
func BenchUnsent(ctx context.Context, q BenchQuerier, since time.Time) (int, error) {
	var n int
	err := q.QueryRow(ctx, BenchTag+`
		SELECT count(*) FROM events e
		WHERE e.created_at >= $1
		  AND NOT EXISTS (SELECT FROM messages m
		                  WHERE m.tenant_id = e.tenant_id AND m.event_id = e.id AND m.sent_at IS NOT NULL)`, since).Scan(&n)
	return n, err
}

// BenchLatency returns the accepted-to-provider latency percentiles of the
// messages of events accepted since a time, how many events there were and
// how many of them had not reached the provider yet. Accepted is when the
// event row was written; the provider call is the send's start, which the
// timeline records as sent_at minus provider_ms (each benchmark event has
// one message, which is sent once). An event still unsent
// counts with its age so far, a lower bound, so that a phase the worker
// could not keep up with never reads faster than it was.
func BenchLatency(ctx context.Context, q BenchQuerier, since time.Time) (p50, p95, p99 time.Duration, events, unsent int, err error) {
	var m50, m95, m99 *float64
	err = q.QueryRow(ctx, BenchTag+`
		SELECT percentile_cont(0.50) WITHIN GROUP (ORDER BY d), percentile_cont(0.95) WITHIN GROUP (ORDER BY d),
		       percentile_cont(0.99) WITHIN GROUP (ORDER BY d), count(*), count(*) FILTER (WHERE NOT sent)
		FROM (SELECT coalesce(extract(epoch FROM m.sent_at - e.created_at) * 1000
		                        - coalesce((me.detail->>'provider_ms')::float, 0),
		                      extract(epoch FROM clock_timestamp() - e.created_at) * 1000) AS d,
		             m.sent_at IS NOT NULL AS sent
		      FROM events e
		      LEFT JOIN messages m
		        ON m.tenant_id = e.tenant_id AND m.event_id = e.id AND m.sent_at IS NOT NULL
		      LEFT JOIN message_events me
		        ON me.tenant_id = m.tenant_id AND me.message_id = m.id AND me.to_status = 'SENT'
		      WHERE e.created_at >= $1) x`, since).Scan(&m50, &m95, &m99, &events, &unsent)
	if err != nil {
		return 0, 0, 0, 0, 0, err
	}
	ms := func(f *float64) time.Duration {
		if f == nil {
			return 0
		}
		return time.Duration(*f * float64(time.Millisecond))
	}
	return ms(m50), ms(m95), ms(m99), events, unsent, nil
}

// BenchInsertRowSQL is the single-row insert of the insert baseline, run
// prepared, one per autocommit transaction, by the benchmark's own clients
// and by pgbench.
const BenchInsertRowSQL = `INSERT INTO bench_rows (payload) VALUES ('{"k":"v"}')`

// BenchCreateRowsTable creates bench_rows, the table of the single-row
// insert baseline. It lives only in the benchmark database, so it is no
// migration.
func BenchCreateRowsTable(ctx context.Context, q BenchQuerier) error {
	_, err := q.Exec(ctx, BenchTag+`CREATE TABLE IF NOT EXISTS bench_rows (id bigserial PRIMARY KEY, payload jsonb NOT NULL, at timestamptz NOT NULL DEFAULT now())`)
	return err
}

// BenchRiverWindow returns how many jobs of a kind River completed and when
// the first and the last of them finished, as River recorded it.
func BenchRiverWindow(ctx context.Context, q BenchQuerier, kind string) (n int, first, last time.Time, err error) {
	var f, l *time.Time
	err = q.QueryRow(ctx, BenchTag+`
		SELECT count(*), min(finalized_at), max(finalized_at) FROM river_job
		WHERE kind = $1 AND state = 'completed'`, kind).Scan(&n, &f, &l)
	if f != nil && l != nil {
		first, last = *f, *l
	}
	return n, first, last, err
}

// BenchDeleteJobs deletes the River baseline's jobs (of one kind), so the
// phases after it start on a river_job table that holds only Herald's own.
func BenchDeleteJobs(ctx context.Context, q BenchQuerier, kind string) error {
	_, err := q.Exec(ctx, BenchTag+`DELETE FROM river_job WHERE kind = $1`, kind)
	return err
}

// BenchSessionPIDs returns the backend pids of a database's sessions opened
// by one application (herald-web, herald-worker), whose CPU time the
// benchmark reads from /proc.
func BenchSessionPIDs(ctx context.Context, q BenchQuerier, applicationName, database string) ([]int, error) {
	rows, err := q.Query(ctx, BenchTag+`SELECT pid FROM pg_stat_activity WHERE datname = $2 AND application_name = $1`, applicationName, database)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// BenchWaits counts what a database's active sessions of one application
// wait on at this moment, by wait event type and name ("Lock:transactionid",
// "IO:WALSync"); "CPU" counts those running or ready to run.
func BenchWaits(ctx context.Context, q BenchQuerier, applicationName, database string) (map[string]int, error) {
	rows, err := q.Query(ctx, BenchTag+`
		SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU'), count(*)::int FROM pg_stat_activity
		WHERE datname = $2 AND application_name = $1 AND state = 'active' GROUP BY 1`, applicationName, database)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	var name string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&name, &n}, func() error {
		out[name] += n
		return nil
	})
	return out, err
}

// BenchWAL reads the server's WAL written since its statistics were last
// reset: bytes, and full-page images (the whole page a change writes when
// it is the page's first since the last checkpoint).
func BenchWAL(ctx context.Context, q BenchQuerier) (bytes, fpi int64, err error) {
	err = q.QueryRow(ctx, BenchTag+`SELECT wal_bytes::bigint, wal_fpi FROM pg_stat_wal`).Scan(&bytes, &fpi)
	return bytes, fpi, err
}

// BenchNeighbours counts what works on the server beside the benchmark's
// processes at this moment: the autovacuum workers in database, and the
// active sessions of other databases (another test run, say), whose CPU,
// disk and WAL the server-wide figures include.
func BenchNeighbours(ctx context.Context, q BenchQuerier, database string) (autovacuum, others int, err error) {
	err = q.QueryRow(ctx, BenchTag+`
		SELECT count(*) FILTER (WHERE datname = $1 AND backend_type = 'autovacuum worker')::int,
			count(*) FILTER (WHERE datname IS DISTINCT FROM $1 AND state = 'active' AND pid <> pg_backend_pid()
				AND backend_type IN ('client backend', 'autovacuum worker'))::int
		FROM pg_stat_activity`, database).Scan(&autovacuum, &others)
	return autovacuum, others, err
}

// BenchStatement is one row of pg_stat_statements for the benchmark
// database: a normalised statement and how often it ran.
type BenchStatement struct {
	QueryID  int64
	TopLevel bool
	Query    string
	Calls    int64
	// TotalMS is the time Postgres spent executing the statement, in
	// milliseconds (pg_stat_statements' total_exec_time).
	TotalMS float64
}

// ErrBenchNoStatements says that pg_stat_statements cannot be read: the
// extension is not created in the database read from, or the server did not
// load its library at start.
var ErrBenchNoStatements = errors.New("pg_stat_statements is not available")

// BenchEnsureStatements creates the pg_stat_statements extension where the
// role may (a superuser, or a server that marks it trusted) and checks that
// its view can be read, which it can only when the server loaded the
// library at start (shared_preload_libraries).
func BenchEnsureStatements(ctx context.Context, q BenchQuerier) error {
	var exists bool
	if err := q.QueryRow(ctx, BenchTag+`SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_stat_statements')`).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := q.Exec(ctx, BenchTag+`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
			return fmt.Errorf("%w: CREATE EXTENSION pg_stat_statements: %v", ErrBenchNoStatements, err)
		}
	}
	var n int64
	if err := q.QueryRow(ctx, BenchTag+`SELECT count(*) FROM pg_stat_statements LIMIT 1`).Scan(&n); err != nil {
		return fmt.Errorf("%w: %v", ErrBenchNoStatements, err)
	}
	return nil
}

// BenchStatements reads pg_stat_statements' counts for one database, the
// benchmark's own statements (those opening with BenchTag) left out, and
// how many entries the extension has evicted so far (counts evicted between
// two reads are lost, so the benchmark says when that happened).
func BenchStatements(ctx context.Context, q BenchQuerier, database string) (stmts []BenchStatement, dealloc int64, err error) {
	rows, err := q.Query(ctx, BenchTag+`
		SELECT s.queryid, s.toplevel, s.query, s.calls, s.total_exec_time
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
		WHERE d.datname = $1 AND s.query NOT LIKE '/* herald-bench */%'`, database)
	if err != nil {
		return nil, 0, err
	}
	stmts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (BenchStatement, error) {
		var s BenchStatement
		var id *int64
		err := r.Scan(&id, &s.TopLevel, &s.Query, &s.Calls, &s.TotalMS)
		if id != nil {
			s.QueryID = *id
		}
		return s, err
	})
	if err != nil {
		return nil, 0, err
	}
	err = q.QueryRow(ctx, BenchTag+`SELECT dealloc FROM pg_stat_statements_info`).Scan(&dealloc)
	return stmts, dealloc, err
}

// BenchCommits returns pg_stat_database's count of committed transactions
// in one database. Sessions publish it when they go idle, at most once a
// second (and an idle one within ten), so a reading lags by that much.
func BenchCommits(ctx context.Context, q BenchQuerier, database string) (int64, error) {
	var n int64
	err := q.QueryRow(ctx, BenchTag+`SELECT xact_commit FROM pg_stat_database WHERE datname = $1`, database).Scan(&n)
	return n, err
}

// BenchRollUp recounts a tenant's dashboard counts over [from, through)
// with the periodic roll-up's own statements (Tx.RollUpMessageCounts); tx
// must be a transaction, as the roll-up's is. It returns the quarter rows
// written.
func BenchRollUp(ctx context.Context, tx BenchQuerier, tenantID string, from, through, now time.Time) (int, error) {
	var n int
	if err := tx.QueryRow(ctx, rollUpQuarters, tenantID, from, through, true, now).Scan(&n); err != nil {
		return 0, err
	}
	_, err := tx.Exec(ctx, rollUpDays, tenantID, from, true)
	return n, err
}
