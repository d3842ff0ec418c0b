package main

import (
	"context"
	"fmt"
	"time"
)

// Faults of the database that leave the server up: sessions ended under the
// worker (h) and locks that make its statements wait (i).

// terminations ends the worker's database sessions cfg.Kills times at
// random points of progress (h). A session ended in the middle of the
// transaction that records a send loses that record; Herald retries it on
// a new connection, and the webhook sends uncommitted at the moment bound
// what may legitimately be repeated, as a Postgres restart's do.
func (e *experiment) terminations(ctx context.Context) error {
	for _, t := range e.targets(e.cfg.Kills, e.cfg.Messages) {
		if err := e.progress(ctx, t); err != nil {
			return err
		}
		calls, mails := e.meta.active.Load(), e.ses.active.Load()
		n, err := terminateWorkers(ctx, e.pool, e.dbName)
		if err != nil {
			return fmt.Errorf("terminate the worker's sessions: %w", err)
		}
		open, err := uncommitted(ctx, e.pool, e.prov.acceptedIDs())
		if err != nil {
			return err
		}
		inflight := e.countInFlight(open)
		e.row.InFlight = append(e.row.InFlight, inflight)
		e.row.WAInFlight = append(e.row.WAInFlight, int(calls))
		e.row.MailInFlight = append(e.row.MailInFlight, int(mails))
		e.dupBound += inflight
		e.logf("pg_terminate_backend ended %d worker sessions after %d sends; %d webhook sends uncommitted, %d WhatsApp calls at Meta, %d e-mail calls at SES",
			n, e.sends(), inflight, calls, mails)
		if err := e.recovered(ctx, time.Now(), e.sends(), e.sends); err != nil {
			return err
		}
	}
	return nil
}

// lockedTables are the tables a send's claim and record write (the rate
// token, the quota reservation, the usage count) and, last, the messages
// themselves, whose rows the claim locks.
var lockedTables = []string{"rate_buckets", "quota_usage", "usage_counters", "messages"}

// lockWaits slows the database down (i): a connection of the suite's takes
// the locks the send path needs and holds each for cfg.LockHold, with a
// third of that free in between, until every message is final. A table is
// locked in SHARE ROW EXCLUSIVE mode, which every insert and update of it
// waits for; of the messages, a batch of queued rows is locked FOR UPDATE.
func (e *experiment) lockWaits(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Minute)
	holds := 0
	for i := 0; ; i++ {
		if done, _ := e.drained(); done || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		table := lockedTables[i%len(lockedTables)]
		if err := e.holdLock(ctx, table); err != nil {
			// The lock is the fault, not the experiment: a failed one is
			// reported and the next one tried.
			e.logf("lock on %s: %v", table, err)
		} else {
			holds++
		}
		if err := sleepCtx(ctx, e.cfg.LockHold/3); err != nil {
			return err
		}
	}
	e.row.InFlight = append(e.row.InFlight, 0)
	e.logf("held %d locks of %s each", holds, e.cfg.LockHold)
	return nil
}

// holdLock takes one lock on table and holds it for cfg.LockHold.
func (e *experiment) holdLock(ctx context.Context, table string) error {
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if table == "messages" {
		_, err = tx.Exec(ctx, `SELECT id FROM messages WHERE status = 'QUEUED' ORDER BY queued_at LIMIT 200 FOR UPDATE`)
	} else {
		_, err = tx.Exec(ctx, `LOCK TABLE `+table+` IN SHARE ROW EXCLUSIVE MODE`)
	}
	if err != nil {
		return err
	}
	// How long the lock is held is the experiment's input.
	if err := sleepCtx(ctx, e.cfg.LockHold); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
