package db

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchSeedOldMessages writes n finished (DELIVERED) messages created age
// ago, spread over every tenant, each with the two timeline entries routing
// and dispatch leave (QUEUED, SENT), in set-based statements of chunk
// messages each. It then vacuums and analyses both tables, so that neither
// autovacuum catching up with the seed nor stale statistics disturb what
// the benchmark measures next. The messages have no event: retention's
// cost is in messages and timelines.
func BenchSeedOldMessages(ctx context.Context, pool *pgxpool.Pool, n, chunk int, age time.Duration, progress func(done int)) error {
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

// BenchCountOlderThan counts the messages created before a time: what
// retention has still to prune of the seed.
func BenchCountOlderThan(ctx context.Context, pool *pgxpool.Pool, before time.Time) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM messages WHERE created_at < $1`, before).Scan(&n)
	return n, err
}

// BenchExplainPrune returns the plans of a retention batch's statements
// for the first tenant, as the pruner gets them: in that tenant's scope,
// planned generically (see beginScoped).
func BenchExplainPrune(ctx context.Context, pool *pgxpool.Pool, before time.Time, limit int) (string, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	var tenant uuid.UUID
	if _, err := tx.Exec(ctx, `SELECT set_config('herald.scope', 'platform', true)`); err != nil {
		return "", err
	}
	if err := tx.QueryRow(ctx, `SELECT id FROM tenants ORDER BY slug LIMIT 1`).Scan(&tenant); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `SELECT set_config('herald.scope', 'tenant', true), set_config('herald.tenant_id', $1, true),
		set_config('plan_cache_mode', 'force_generic_plan', true)`, tenant.String()); err != nil {
		return "", err
	}
	plan := ""
	for name, query := range map[string]string{
		"batch":    `PREPARE retention_batch (uuid, timestamptz, int) AS ` + pruneMessagesBatch,
		"timeline": `PREPARE retention_timeline (uuid, uuid[]) AS DELETE FROM message_events WHERE message_id = ANY($2) AND tenant_id = $1`,
	} {
		if _, err := tx.Exec(ctx, query); err != nil {
			return "", fmt.Errorf("prepare %s: %w", name, err)
		}
	}
	// EXECUTE takes no bound parameters: the values go in as literals, a
	// formatted UUID, timestamp and integer.
	for _, explain := range []string{
		fmt.Sprintf(`EXPLAIN EXECUTE retention_batch('%s', '%s', %d)`, tenant, before.UTC().Format(time.RFC3339Nano), limit),
		fmt.Sprintf(`EXPLAIN EXECUTE retention_timeline('%s', ARRAY['%s']::uuid[])`, tenant, uuid.New()),
	} {
		rows, err := tx.Query(ctx, explain)
		if err != nil {
			return "", err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return "", err
		}
		for _, l := range lines {
			plan += "     " + l + "\n"
		}
	}
	return plan, nil
}
