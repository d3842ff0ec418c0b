package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The suite reads Herald's tables directly, across the one tenant of its
// database, on a platform-scoped pool (herald.scope=platform passes the
// row-level security policies). These statements only read.

// finalStatuses are the message states nothing moves a webhook message out
// of; sentStatuses are the ones that mean the provider took it.
const (
	finalStatuses = `('SENT', 'DELIVERED', 'READ', 'FAILED', 'CANCELLED')`
	sentStatuses  = `('SENT', 'DELIVERED', 'READ')`
)

// pending counts the work still ahead: events not yet routed and messages
// not yet in a final state.
func pending(ctx context.Context, pool *pgxpool.Pool) (events, unrouted, open int, err error) {
	err = pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM events),
		       (SELECT count(*) FROM events WHERE status IN ('RECEIVED', 'SCHEDULED')),
		       (SELECT count(*) FROM messages WHERE status NOT IN `+finalStatuses+`)`).Scan(&events, &unrouted, &open)
	return events, unrouted, open, err
}

// tally is what the database holds at the end of an experiment.
type tally struct {
	Events, DistinctEvents     int
	Messages, DistinctMessages int
	Sent, Failed               int
	Missing, Lost              int // accepted event ids without an event / without a final message
	LostExamples               []string
	SentIDs                    []string
}

func count(ctx context.Context, pool *pgxpool.Pool, accepted []string) (*tally, error) {
	t := &tally{}
	if err := pool.QueryRow(ctx, `
		SELECT count(*), count(DISTINCT (tenant_id, source_event_id)) FROM events`).Scan(&t.Events, &t.DistinctEvents); err != nil {
		return nil, fmt.Errorf("count events: %w", err)
	}
	if err := pool.QueryRow(ctx, `
		SELECT count(*), count(DISTINCT (tenant_id, idempotency_key)),
		       count(*) FILTER (WHERE status IN `+sentStatuses+`),
		       count(*) FILTER (WHERE status = 'FAILED')
		FROM messages`).Scan(&t.Messages, &t.DistinctMessages, &t.Sent, &t.Failed); err != nil {
		return nil, fmt.Errorf("count messages: %w", err)
	}
	if err := pool.QueryRow(ctx, `
		SELECT count(*) FROM unnest($1::text[]) AS a(id)
		WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.source_event_id = a.id)`, accepted).Scan(&t.Missing); err != nil {
		return nil, fmt.Errorf("count missing events: %w", err)
	}
	rows, err := pool.Query(ctx, `
		SELECT a.id FROM unnest($1::text[]) AS a(id)
		WHERE NOT EXISTS (
			SELECT 1 FROM events e JOIN messages m ON m.tenant_id = e.tenant_id AND m.event_id = e.id
			WHERE e.source_event_id = a.id AND m.status IN `+finalStatuses+`)
		ORDER BY a.id`, accepted)
	if err != nil {
		return nil, fmt.Errorf("find lost events: %w", err)
	}
	lost, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	t.Lost = len(lost)
	t.LostExamples = lost[:min(len(lost), 10)]
	rows, err = pool.Query(ctx, `SELECT id::text FROM messages WHERE status IN `+sentStatuses)
	if err != nil {
		return nil, err
	}
	if t.SentIDs, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, err
	}
	return t, nil
}

// uncommitted lists the messages among ids (each taken by the provider)
// that the database does not record as sent: sends between the provider's
// answer and the commit, which a fault may make Herald repeat.
func uncommitted(ctx context.Context, pool *pgxpool.Pool, ids []string) ([]string, error) {
	rows, err := pool.Query(ctx, `
		SELECT id::text FROM messages WHERE id = ANY($1::uuid[]) AND status NOT IN `+sentStatuses, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// setRate sets a channel account's rate_per_second, the setting the
// dispatcher's rate limiter reads.
func setRate(ctx context.Context, pool *pgxpool.Pool, accountID, perSecond string) error {
	tag, err := pool.Exec(ctx, `
		UPDATE channel_accounts SET config = config || jsonb_build_object('rate_per_second', $2::text)
		WHERE id = $1::uuid`, accountID, perSecond)
	if err == nil && tag.RowsAffected() != 1 {
		err = fmt.Errorf("account %s not found", accountID)
	}
	return err
}
