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
	SentIDs                    []string // the webhook messages sent
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
	rows, err = pool.Query(ctx, `SELECT id::text FROM messages WHERE channel = 'WEBHOOK' AND status IN `+sentStatuses)
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

// addressIDs maps recipients' addresses to the messages of a channel sent
// to them: the suite gives every WhatsApp and e-mail message an address of
// its own, so a send a fake counted by recipient names one message.
func addressIDs(ctx context.Context, pool *pgxpool.Pool, channel string, tos []string) (map[string]string, error) {
	rows, err := pool.Query(ctx, `
		SELECT to_address, id::text FROM messages WHERE channel = $1 AND to_address = ANY($2::text[])`, channel, tos)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for rows.Next() {
		var to, id string
		if err := rows.Scan(&to, &id); err != nil {
			return nil, err
		}
		out[to] = id
	}
	return out, rows.Err()
}

// messageState is a message's channel, status, why it failed and the
// provider's id for it.
type messageState struct {
	ID, Channel, Status string
	Reason, Code        string
	ExternalID          string
}

// messageStates reads the state of the messages among ids, or of every
// FAILED message when ids is nil.
func messageStates(ctx context.Context, pool *pgxpool.Pool, ids []string) ([]messageState, error) {
	where, args := `WHERE status = 'FAILED'`, []any{}
	if ids != nil {
		where, args = `WHERE id = ANY($1::uuid[])`, []any{ids}
	}
	rows, err := pool.Query(ctx, `
		SELECT id::text, channel, status, coalesce(failed_reason, ''), coalesce(error_code, ''), coalesce(external_message_id, '')
		FROM messages `+where+` ORDER BY id`, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (messageState, error) {
		var m messageState
		err := r.Scan(&m.ID, &m.Channel, &m.Status, &m.Reason, &m.Code, &m.ExternalID)
		return m, err
	})
}

// sentOn lists the messages of a channel the database records as sent.
func sentOn(ctx context.Context, pool *pgxpool.Pool, channel string) ([]string, error) {
	rows, err := pool.Query(ctx, `SELECT id::text FROM messages WHERE channel = $1 AND status IN `+sentStatuses, channel)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// terminateWorkers ends every session herald worker processes hold on the
// experiment's database (herald names its sessions herald-<role>), as an
// operator's pg_terminate_backend or a connection pooler's restart would.
func terminateWorkers(ctx context.Context, pool *pgxpool.Pool, database string) (int, error) {
	var n int
	err := pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = $1 AND application_name = 'herald-worker' AND pid <> pg_backend_pid()`, database).Scan(&n)
	return n, err
}
