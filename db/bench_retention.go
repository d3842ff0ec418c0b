package db

import (
	"context"
	"fmt"
	"time"

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

// BenchExplainPrune returns the plan of retention's batch selection for one
// tenant, to show which index it walks.
func BenchExplainPrune(ctx context.Context, pool *pgxpool.Pool, before time.Time, limit int) (string, error) {
	var tenant string
	if err := pool.QueryRow(ctx, `SELECT id FROM tenants ORDER BY slug LIMIT 1`).Scan(&tenant); err != nil {
		return "", err
	}
	rows, err := pool.Query(ctx, `EXPLAIN `+pruneMessagesBatch, tenant, before, limit)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	plan := ""
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		plan += "     " + line + "\n"
	}
	return plan, rows.Err()
}
