package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/heraldhq/herald/db/internal/tool"
)

// The benchmark runs these statements on its database, beside Herald's
// processes; Herald's own statements are in package db. They read across
// tenants on a platform-scoped connection, which is why they take a querier
// and no tenant id: the benchmark measures the whole database, not one
// tenant's view of it.
//
// Every statement the benchmark runs on its database starts with benchTag,
// so that the statement counts it reads from pg_stat_statements can leave
// its own monitoring out.

// benchTag opens every statement the benchmark itself runs on the benchmark
// database. pg_stat_statements keeps a statement's leading comment in its
// text, so the benchmark's own statements can be told from Herald's.
const benchTag = "/* herald-bench */ "

// querier is what the benchmark's statements run on: a pgx connection
// or pool.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// createDatabase drops any benchmark database a failed run left behind
// and creates an empty one named name, so every run starts from the same
// state. adminURL is a connection to any database on the server.
func createDatabase(ctx context.Context, adminURL, name string) error {
	ident := pgx.Identifier{name}.Sanitize()
	err := tool.AdminExec(ctx, adminURL,
		`DROP DATABASE IF EXISTS `+ident+` WITH (FORCE)`,
		`CREATE DATABASE `+ident)
	if err != nil {
		return fmt.Errorf("create benchmark database (the role needs CREATEDB): %w", err)
	}
	return nil
}

// dropDatabase drops the benchmark database; FORCE ends the sessions of
// herald processes that have not yet exited.
func dropDatabase(ctx context.Context, adminURL, name string) error {
	return tool.AdminExec(ctx, adminURL, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
}

// countEvents counts accepted events: with one message per event, the
// number of messages the end-to-end phase waits for.
func countEvents(ctx context.Context, q querier) (int, error) {
	var n int
	err := q.QueryRow(ctx, benchTag+`SELECT count(*) FROM events`).Scan(&n)
	return n, err
}

// sentSpan returns how many messages reached the provider, and the first
// and last time one did: the end-to-end rate is read between those two, so
// that process start-up is not part of it.
func sentSpan(ctx context.Context, q querier) (n int, first, last time.Time, err error) {
	var f, l *time.Time
	err = q.QueryRow(ctx, benchTag+`SELECT count(*), min(sent_at), max(sent_at) FROM messages WHERE sent_at IS NOT NULL`).Scan(&n, &f, &l)
	if f != nil && l != nil {
		first, last = *f, *l
	}
	return n, first, last, err
}

// countDelivered counts messages whose delivery receipt has been applied
// (DELIVERED or READ): the unit the statement and commit counts are divided
// by, receipts included.
func countDelivered(ctx context.Context, q querier) (int, error) {
	var n int
	err := q.QueryRow(ctx, benchTag+`SELECT count(*) FROM messages WHERE status IN ('DELIVERED', 'READ')`).Scan(&n)
	return n, err
}

// countBacklog counts the work still ahead of the worker: River jobs yet to
// run and sent messages whose receipts have not been applied. The receipts
// run outside River's queues, so the job count alone would read 0 too soon.
func countBacklog(ctx context.Context, q querier) (int, error) {
	var n int
	err := q.QueryRow(ctx, benchTag+`
		SELECT (SELECT count(*) FROM river_job WHERE state IN ('available', 'running', 'retryable'))
		     + (SELECT count(*) FROM messages WHERE status = 'SENT')`).Scan(&n)
	return n, err
}

// dbNow returns the database's clock, which stamps events.created_at; the
// latency phase compares against it, not against this machine's clock.
func dbNow(ctx context.Context, q querier) (time.Time, error) {
	var now time.Time
	err := q.QueryRow(ctx, benchTag+`SELECT now()`).Scan(&now)
	return now, err
}

// countUnsent counts events accepted since a time whose message has not
// reached the provider yet, routed or not: the latency phase's backlog.
func countUnsent(ctx context.Context, q querier, since time.Time) (int, error) {
	var n int
	err := q.QueryRow(ctx, benchTag+`
		SELECT count(*) FROM events e
		WHERE e.created_at >= $1
		  AND NOT EXISTS (SELECT FROM messages m
		                  WHERE m.tenant_id = e.tenant_id AND m.event_id = e.id AND m.sent_at IS NOT NULL)`, since).Scan(&n)
	return n, err
}

// readLatency returns the accepted-to-provider latency percentiles of the
// messages of events accepted since a time, how many events there were and
// how many of them had not reached the provider yet. Accepted is when the
// event row was written; the provider call is the send's start, which the
// timeline records as sent_at minus provider_ms (each benchmark event has
// one message, which is sent once). An event still unsent
// counts with its age so far, a lower bound, so that a phase the worker
// could not keep up with never reads faster than it was.
func readLatency(ctx context.Context, q querier, since time.Time) (p50, p95, p99 time.Duration, events, unsent, within int, err error) {
	return latencyWhere(ctx, q, `e.created_at >= $1`, since)
}

// insertRowSQL is the single-row insert of the insert baseline, run
// prepared, one per autocommit transaction, by the benchmark's own clients
// and by pgbench.
const insertRowSQL = `INSERT INTO bench_rows (payload) VALUES ('{"k":"v"}')`

// createRowsTable creates bench_rows, the table of the single-row
// insert baseline. It lives only in the benchmark database, so it is no
// migration.
func createRowsTable(ctx context.Context, q querier) error {
	_, err := q.Exec(ctx, benchTag+`CREATE TABLE IF NOT EXISTS bench_rows (id bigserial PRIMARY KEY, payload jsonb NOT NULL, at timestamptz NOT NULL DEFAULT now())`)
	return err
}

// riverWindow returns how many jobs of a kind River completed and when
// the first and the last of them finished, as River recorded it.
func riverWindow(ctx context.Context, q querier, kind string) (n int, first, last time.Time, err error) {
	var f, l *time.Time
	err = q.QueryRow(ctx, benchTag+`
		SELECT count(*), min(finalized_at), max(finalized_at) FROM river_job
		WHERE kind = $1 AND state = 'completed'`, kind).Scan(&n, &f, &l)
	if f != nil && l != nil {
		first, last = *f, *l
	}
	return n, first, last, err
}

// deleteJobs deletes the River baseline's jobs (of one kind), so the
// phases after it start on a river_job table that holds only Herald's own.
func deleteJobs(ctx context.Context, q querier, kind string) error {
	_, err := q.Exec(ctx, benchTag+`DELETE FROM river_job WHERE kind = $1`, kind)
	return err
}

// sessionPIDs returns the backend pids of a database's sessions opened
// by one application (herald-web, herald-worker), whose CPU time the
// benchmark reads from /proc.
func sessionPIDs(ctx context.Context, q querier, applicationName, database string) ([]int, error) {
	rows, err := q.Query(ctx, benchTag+`SELECT pid FROM pg_stat_activity WHERE datname = $2 AND application_name = $1`, applicationName, database)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// readWaits counts what a database's active sessions of one application
// wait on at this moment, by wait event type and name ("Lock:transactionid",
// "IO:WALSync"); "CPU" counts those running or ready to run.
func readWaits(ctx context.Context, q querier, applicationName, database string) (map[string]int, error) {
	rows, err := q.Query(ctx, benchTag+`
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

// readWAL reads the server's WAL written since its statistics were last
// reset: bytes, and full-page images (the whole page a change writes when
// it is the page's first since the last checkpoint).
func readWAL(ctx context.Context, q querier) (bytes, fpi int64, err error) {
	err = q.QueryRow(ctx, benchTag+`SELECT wal_bytes::bigint, wal_fpi FROM pg_stat_wal`).Scan(&bytes, &fpi)
	return bytes, fpi, err
}

// countNeighbours counts what works on the server beside the benchmark's
// processes at this moment: the autovacuum workers in database, and the
// active sessions of other databases (another test run, say), whose CPU,
// disk and WAL the server-wide figures include.
func countNeighbours(ctx context.Context, q querier, database string) (autovacuum, others int, err error) {
	err = q.QueryRow(ctx, benchTag+`
		SELECT count(*) FILTER (WHERE datname = $1 AND backend_type = 'autovacuum worker')::int,
			count(*) FILTER (WHERE datname IS DISTINCT FROM $1 AND state = 'active' AND pid <> pg_backend_pid()
				AND backend_type IN ('client backend', 'autovacuum worker'))::int
		FROM pg_stat_activity`, database).Scan(&autovacuum, &others)
	return autovacuum, others, err
}

// pgStatement is one row of pg_stat_statements for the benchmark
// database: a normalised statement and how often it ran.
type pgStatement struct {
	QueryID  int64
	TopLevel bool
	Query    string
	Calls    int64
	// TotalMS is the time Postgres spent executing the statement, in
	// milliseconds (pg_stat_statements' total_exec_time).
	TotalMS float64
}

// errNoStatements says that pg_stat_statements cannot be read: the
// extension is not created in the database read from, or the server did not
// load its library at start.
var errNoStatements = errors.New("pg_stat_statements is not available")

// ensureStatements creates the pg_stat_statements extension where the
// role may (a superuser, or a server that marks it trusted) and checks that
// its view can be read, which it can only when the server loaded the
// library at start (shared_preload_libraries).
func ensureStatements(ctx context.Context, q querier) error {
	var exists bool
	if err := q.QueryRow(ctx, benchTag+`SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_stat_statements')`).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := q.Exec(ctx, benchTag+`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
			return fmt.Errorf("%w: CREATE EXTENSION pg_stat_statements: %v", errNoStatements, err)
		}
	}
	var n int64
	if err := q.QueryRow(ctx, benchTag+`SELECT count(*) FROM pg_stat_statements LIMIT 1`).Scan(&n); err != nil {
		return fmt.Errorf("%w: %v", errNoStatements, err)
	}
	return nil
}

// readStatements reads pg_stat_statements' counts for one database, the
// benchmark's own statements (those opening with benchTag) left out, and
// how many entries the extension has evicted so far (counts evicted between
// two reads are lost, so the benchmark says when that happened).
func readStatements(ctx context.Context, q querier, database string) (stmts []pgStatement, dealloc int64, err error) {
	rows, err := q.Query(ctx, benchTag+`
		SELECT s.queryid, s.toplevel, s.query, s.calls, s.total_exec_time
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
		WHERE d.datname = $1 AND s.query NOT LIKE '/* herald-bench */%'`, database)
	if err != nil {
		return nil, 0, err
	}
	stmts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgStatement, error) {
		var s pgStatement
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
	err = q.QueryRow(ctx, benchTag+`SELECT dealloc FROM pg_stat_statements_info`).Scan(&dealloc)
	return stmts, dealloc, err
}

// readCommits returns pg_stat_database's count of committed transactions
// in one database. Sessions publish it when they go idle, at most once a
// second (and an idle one within ten), so a reading lags by that much.
func readCommits(ctx context.Context, q querier, database string) (int64, error) {
	var n int64
	err := q.QueryRow(ctx, benchTag+`SELECT xact_commit FROM pg_stat_database WHERE datname = $1`, database).Scan(&n)
	return n, err
}

// seedOldMessages writes n finished (DELIVERED) messages created age
// ago, spread over every tenant, each with the two timeline entries routing
// and dispatch leave (QUEUED, SENT), in set-based statements of chunk
// messages each. It then vacuums and analyses both tables, so that neither
// autovacuum catching up with the seed nor stale statistics disturb what
// the benchmark measures next. The messages have no event: retention's
// cost is in messages and timelines.
func seedOldMessages(ctx context.Context, pool *pgxpool.Pool, n, chunk int, age time.Duration, progress func(done int)) error {
	for from := 0; from < n; from += chunk {
		to := min(from+chunk, n)
		_, err := pool.Exec(ctx, `
			WITH t AS (SELECT id, row_number() OVER (ORDER BY slug) - 1 AS i, count(*) OVER () AS n FROM tenants),
			m AS (
				INSERT INTO messages (id, tenant_id, correlation_id, idempotency_key, trigger_event, channel, status,
					to_address, subject, body, provider, queued_at, sent_at, delivered_at, created_at, updated_at)
				SELECT gen_random_uuid(), t.id, 'old-' || g, 'old:' || g, 'BOOKING_REFUNDED', 'EMAIL', 'DELIVERED',
					'p' || (g % 5000) || '@bench.example', 'Your refund', 'Hello Bench Passenger, your refund of 12.00 EUR is on its way.',
					'sandbox', c.at, c.at, c.at, c.at, c.at
				FROM generate_series($1::int, $2::int - 1) g
				JOIN t ON t.i = g % t.n
				CROSS JOIN LATERAL (SELECT now() - $3::interval + g * interval '1 millisecond' AS at) c
				RETURNING id, tenant_id, created_at
			)
			INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, detail, at)
			SELECT m.tenant_id, m.id, s.from_status, s.to_status, s.source, '{}', m.created_at
			FROM m CROSS JOIN (VALUES (NULL, 'QUEUED', 'routing'), ('QUEUED', 'SENT', 'dispatch')) s (from_status, to_status, source)`,
			from, to, fmt.Sprintf("%d seconds", int(age.Seconds())))
		if err != nil {
			return fmt.Errorf("seed old messages: %w", err)
		}
		if progress != nil {
			progress(to)
		}
	}
	for _, table := range []string{"messages", "message_events"} {
		if _, err := pool.Exec(ctx, `VACUUM (ANALYZE) `+table); err != nil {
			return fmt.Errorf("vacuum %s: %w", table, err)
		}
	}
	return nil
}

// countOlderThan counts the messages created before a time: what
// retention has still to prune of the seed.
func countOlderThan(ctx context.Context, pool *pgxpool.Pool, before time.Time) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE created_at < $1`, before).Scan(&n)
	return n, err
}

// ofTenant is the filter of the per-tenant readings: events of one tenant
// accepted since a time.
const ofTenant = `e.tenant_id = $1::uuid AND e.created_at >= $2`

// countSentOf counts a tenant's messages handed to the provider whose
// events were accepted since a time.
func countSentOf(ctx context.Context, q querier, tenant string, since time.Time) (int, error) {
	var n int
	err := q.QueryRow(ctx, benchTag+`
		SELECT count(*) FROM messages m JOIN events e ON e.tenant_id = m.tenant_id AND e.id = m.event_id
		WHERE `+ofTenant+` AND m.sent_at IS NOT NULL`, tenant, since).Scan(&n)
	return n, err
}

// countUnsentOf counts a tenant's events accepted since a time with no
// message handed to the provider yet.
func countUnsentOf(ctx context.Context, q querier, tenant string, since time.Time) (int, error) {
	var n int
	err := q.QueryRow(ctx, benchTag+`
		SELECT count(*) FROM events e
		WHERE `+ofTenant+` AND e.status NOT IN ('CANCELLED', 'REJECTED', 'FAILED', 'EXPIRED')
		  AND NOT EXISTS (SELECT FROM messages m
		                  WHERE m.tenant_id = e.tenant_id AND m.event_id = e.id AND m.sent_at IS NOT NULL)`, tenant, since).Scan(&n)
	return n, err
}

// sendRate returns how many of a tenant's messages (events accepted since
// a time) were handed over, and at what rate from the first to the last.
func sendRate(ctx context.Context, q querier, tenant string, since time.Time) (int, float64, error) {
	var n int
	var span *float64
	err := q.QueryRow(ctx, benchTag+`
		SELECT count(*), extract(epoch FROM max(m.sent_at) - min(m.sent_at))::float8
		FROM messages m JOIN events e ON e.tenant_id = m.tenant_id AND e.id = m.event_id
		WHERE `+ofTenant+` AND m.sent_at IS NOT NULL`, tenant, since).Scan(&n, &span)
	if err != nil || span == nil || *span <= 0 || n < 2 {
		return n, 0, err
	}
	return n, float64(n-1) / *span, nil
}

// handedOver is a message's accepted-to-provider time in milliseconds: from
// its event's acceptance to the start of the provider call (sent_at minus
// the call's provider_ms), or its age so far while it is unsent.
const handedOver = `coalesce(extract(epoch FROM m.sent_at - e.created_at) * 1000
		                        - coalesce((me.detail->>'provider_ms')::float, 0),
		                      extract(epoch FROM clock_timestamp() - e.created_at) * 1000)`

// readLatencyOf is readLatency for one tenant's events.
func readLatencyOf(ctx context.Context, q querier, tenant string, since time.Time) (p50, p95, p99 time.Duration, events, unsent int, err error) {
	p50, p95, p99, events, unsent, _, err = latencyWhere(ctx, q, ofTenant, tenant, since)
	return p50, p95, p99, events, unsent, err
}

// latencyWhere reads the accepted-to-provider percentiles of the events
// where says (its arguments from $1), how many there were, how many are
// unsent and how many were handed over within promiseWithin.
func latencyWhere(ctx context.Context, q querier, where string, args ...any) (p50, p95, p99 time.Duration, events, unsent, within int, err error) {
	var m50, m95, m99 *float64
	withinMS := fmt.Sprintf("%d", promiseWithin.Milliseconds())
	err = q.QueryRow(ctx, benchTag+`
		SELECT percentile_cont(0.50) WITHIN GROUP (ORDER BY d), percentile_cont(0.95) WITHIN GROUP (ORDER BY d),
		       percentile_cont(0.99) WITHIN GROUP (ORDER BY d), count(*), count(*) FILTER (WHERE NOT sent),
		       count(*) FILTER (WHERE sent AND d <= `+withinMS+`)
		FROM (SELECT `+handedOver+` AS d, m.sent_at IS NOT NULL AS sent
		      FROM events e
		      LEFT JOIN messages m
		        ON m.tenant_id = e.tenant_id AND m.event_id = e.id AND m.sent_at IS NOT NULL
		      LEFT JOIN message_events me
		        ON me.tenant_id = m.tenant_id AND me.message_id = m.id AND me.to_status = 'SENT'
		      WHERE `+where+`) x`, args...).Scan(&m50, &m95, &m99, &events, &unsent, &within)
	return msOf(m50), msOf(m95), msOf(m99), events, unsent, within, err
}

// eventLatency is one event's accepted-to-provider time: its first
// message's.
func eventLatency(ctx context.Context, q querier, tenant, eventID string) (time.Duration, error) {
	var d *float64
	err := q.QueryRow(ctx, benchTag+`
		SELECT min(`+handedOver+`)
		FROM events e
		JOIN messages m ON m.tenant_id = e.tenant_id AND m.event_id = e.id
		LEFT JOIN message_events me ON me.tenant_id = m.tenant_id AND me.message_id = m.id AND me.to_status = 'SENT'
		WHERE e.tenant_id = $1::uuid AND e.id = $2::uuid`, tenant, eventID).Scan(&d)
	return msOf(d), err
}

// lastSentAfter is how long after an event's acceptance the last of a
// tenant's messages (events accepted since a time) was handed over.
func lastSentAfter(ctx context.Context, q querier, tenant string, since time.Time, eventID string) (time.Duration, error) {
	var d *float64
	err := q.QueryRow(ctx, benchTag+`
		SELECT extract(epoch FROM max(m.sent_at) - (SELECT created_at FROM events WHERE tenant_id = $1::uuid AND id = $3::uuid)) * 1000
		FROM messages m JOIN events e ON e.tenant_id = m.tenant_id AND e.id = m.event_id
		WHERE `+ofTenant+` AND m.sent_at IS NOT NULL`, tenant, since, eventID).Scan(&d)
	return msOf(d), err
}

// msOf turns milliseconds read from SQL into a duration (0 for NULL).
func msOf(f *float64) time.Duration {
	if f == nil {
		return 0
	}
	return time.Duration(*f * float64(time.Millisecond))
}

// readMessageUpdates reads how many updates the messages table has had,
// and how many of them were HOT (heap-only: no index written).
func readMessageUpdates(ctx context.Context, q querier) (updates, hot int64, err error) {
	err = q.QueryRow(ctx, benchTag+`
		SELECT coalesce(sum(n_tup_upd), 0)::bigint, coalesce(sum(n_tup_hot_upd), 0)::bigint
		FROM pg_stat_user_tables WHERE relname = 'messages'`).Scan(&updates, &hot)
	return updates, hot, err
}

// TableWrites is what a phase wrote to one table: rows inserted, updated
// (HOT of them in place) and deleted, with the table's index count. Every
// insert and every update not made in place adds an entry to each index
// (a partial index only for its rows), and the entries, with the pages
// they first touch after a checkpoint, are most of the WAL.
type TableWrites struct {
	Table                          string
	Inserts, Updates, HOT, Deletes float64
	Indexes                        int
}

// IndexEntries is how many index entries the writes added, at most.
func (w TableWrites) IndexEntries() float64 {
	return (w.Inserts + w.Updates - w.HOT) * float64(w.Indexes)
}

// readTableWrites reads every table's write counters and index count in
// the benchmark's database.
func readTableWrites(ctx context.Context, q querier) (map[string]TableWrites, error) {
	rows, err := q.Query(ctx, benchTag+`
		SELECT s.relname, s.n_tup_ins, s.n_tup_upd, s.n_tup_hot_upd, s.n_tup_del,
			(SELECT count(*) FROM pg_index i WHERE i.indrelid = s.relid)::int
		FROM pg_stat_user_tables s`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]TableWrites{}
	for rows.Next() {
		var w TableWrites
		var ins, upd, hot, del int64
		if err := rows.Scan(&w.Table, &ins, &upd, &hot, &del, &w.Indexes); err != nil {
			return nil, err
		}
		w.Inserts, w.Updates, w.HOT, w.Deletes = float64(ins), float64(upd), float64(hot), float64(del)
		out[w.Table] = w
	}
	return out, rows.Err()
}

// writesPer is each table's writes between two readings per unit (a
// delivered message), the most index entries first, tables without writes
// left out.
func writesPer(before, after map[string]TableWrites, units int) []TableWrites {
	if units <= 0 {
		return nil
	}
	n := float64(units)
	var out []TableWrites
	for table, a := range after {
		b := before[table]
		w := TableWrites{Table: table, Indexes: a.Indexes, Inserts: (a.Inserts - b.Inserts) / n, Updates: (a.Updates - b.Updates) / n,
			HOT: (a.HOT - b.HOT) / n, Deletes: (a.Deletes - b.Deletes) / n}
		if w.Inserts > 0 || w.Updates > 0 || w.Deletes > 0 {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(x, y TableWrites) int {
		if c := cmp.Compare(y.IndexEntries(), x.IndexEntries()); c != 0 {
			return c
		}
		return cmp.Compare(x.Table, y.Table)
	})
	return out
}

// writeLines lists up to n tables' writes per unit.
func writeLines(ws []TableWrites, n int) []string {
	var out []string
	for _, w := range ws[:min(len(ws), n)] {
		inPlace := ""
		if w.Updates > 0 {
			inPlace = fmt.Sprintf(" (%.0f%% in place)", 100*w.HOT/w.Updates)
		}
		out = append(out, fmt.Sprintf("    %-24s %5.2f inserted, %5.2f updated%s, %5.2f deleted; %2d indexes: %5.1f index entries",
			w.Table, w.Inserts, w.Updates, inPlace, w.Deletes, w.Indexes, w.IndexEntries()))
	}
	return out
}
