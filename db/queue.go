package db

import (
	"context"
	"time"

	"github.com/heraldhq/herald/app/console"
)

// JobCounts serves console.QueueTx. River's client has no count API, so the
// console counts its table directly; the grouping reads River's (state,
// queue, ...) fetch index for the live states.
func (t *Tx) JobCounts(ctx context.Context) ([]console.JobCount, error) {
	var out []console.JobCount
	err := t.tx.SelectContext(ctx, &out, `
		SELECT queue, state::text AS state, count(*) AS count
		FROM river_job
		GROUP BY queue, state
		ORDER BY queue, state`)
	return out, mapErr(err)
}

// RegisterQueue serves console.QueueTx. with the same upsert River's workers
// make when they start a queue: an existing row (and its pause) is left as
// it is.
func (t *Tx) RegisterQueue(ctx context.Context, name string, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `
		INSERT INTO river_queue (name, created_at, metadata, paused_at, updated_at)
		VALUES ($1, $2, '{}', NULL, $2)
		ON CONFLICT (name) DO NOTHING`, name, at)
	return mapErr(err)
}
