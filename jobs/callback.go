package jobs

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/app"
)

// CallbackArgs asks for one status callback delivery to be posted. It
// carries ids only: the payload and the endpoint's secret stay in the
// database.
type CallbackArgs struct {
	TenantID   uuid.UUID `json:"tenant_id"`
	DeliveryID uuid.UUID `json:"delivery_id"`
}

// Kind implements river.JobArgs.
func (CallbackArgs) Kind() string { return "callback" }

// InsertOpts implements river.JobArgsWithInsertOpts: callbacks have a queue
// of their own, so slow receivers never hold up sends.
func (CallbackArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: app.QueueCallback} }

// CallbackWorker runs app.Callbacks.Deliver. Retries are snoozes: the
// delivery row counts attempts against Standard Webhooks' schedule and a
// receiver's Retry-After, which River's own backoff cannot express; an
// error (the database, say) is retried by River as usual.
type CallbackWorker struct {
	river.WorkerDefaults[CallbackArgs]
	Callbacks *app.Callbacks
}

// Timeout implements river.Worker: one POST is bounded by
// app.CallbackTimeout (Standard Webhooks asks for 15 to 30 seconds, more
// than the default job timeout), and recording it takes little more; the
// total stays below the default time after which River takes a running job
// for a crashed worker's (HERALD_RESCUE_STUCK_AFTER).
func (w *CallbackWorker) Timeout(*river.Job[CallbackArgs]) time.Duration {
	return app.CallbackTimeout + 5*time.Second
}

// Work implements river.Worker.
func (w *CallbackWorker) Work(ctx context.Context, job *river.Job[CallbackArgs]) error {
	out, err := w.Callbacks.Deliver(ctx, job.Args.TenantID, job.Args.DeliveryID)
	switch {
	case err != nil:
		return err
	case out.Snooze > 0:
		return river.JobSnooze(out.Snooze)
	}
	return nil
}

// EnqueueCallbacks implements app.CallbackQueue: one statement for all the
// deliveries of a status change.
func (q *Queue) EnqueueCallbacks(ctx context.Context, tx app.Tx, tenantID uuid.UUID, deliveryIDs ...uuid.UUID) error {
	params := make([]river.InsertManyParams, len(deliveryIDs))
	for i, id := range deliveryIDs {
		params[i] = river.InsertManyParams{Args: CallbackArgs{TenantID: tenantID, DeliveryID: id}}
	}
	return q.InsertMany(ctx, tx, params)
}

var _ app.CallbackQueue = (*Queue)(nil)
