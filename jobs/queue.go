package jobs

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heraldhq/herald/app"
)

// Queue enqueues jobs inside the caller's app.Tx: the job exists if and only
// if the transaction commits. It implements app's queue interface.
type Queue struct {
	inserter *river.Client[pgx.Tx]
}

// NewQueue returns a Queue that inserts through inserter.
func NewQueue(inserter *river.Client[pgx.Tx]) *Queue {
	return &Queue{inserter: inserter}
}

// pgxTx is implemented by db.Tx; it hands over the pgx transaction River
// inserts in.
type pgxTx interface{ PGX() pgx.Tx }

func unwrap(tx app.Tx) (pgx.Tx, error) {
	s, ok := tx.(pgxTx)
	if !ok || s.PGX() == nil {
		return nil, errors.New("jobs: transaction does not expose its pgx transaction")
	}
	return s.PGX(), nil
}

// Insert enqueues one job in tx.
func (q *Queue) Insert(ctx context.Context, tx app.Tx, args river.JobArgs, opts *river.InsertOpts) error {
	stx, err := unwrap(tx)
	if err != nil {
		return err
	}
	_, err = q.inserter.InsertTx(ctx, stx, args, opts)
	return err
}

// InsertMany enqueues several jobs in tx with one statement.
func (q *Queue) InsertMany(ctx context.Context, tx app.Tx, params []river.InsertManyParams) error {
	_, err := q.insertMany(ctx, tx, params)
	return err
}

// insertMany is InsertMany, returning the inserted jobs in params' order.
func (q *Queue) insertMany(ctx context.Context, tx app.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	if len(params) == 0 {
		return nil, nil
	}
	ptx, err := unwrap(tx)
	if err != nil {
		return nil, err
	}
	return q.inserter.InsertManyTx(ctx, ptx, params)
}

var _ app.Queue = (*Queue)(nil)

// EnqueueRoute implements app.Queue.
func (q *Queue) EnqueueRoute(ctx context.Context, tx app.Tx, job app.RouteJob) error {
	opts := &river.InsertOpts{Queue: app.QueueRoute, Priority: priority(job.Priority)}
	if !job.At.IsZero() {
		opts.ScheduledAt = job.At
	}
	return q.Insert(ctx, tx, RouteArgs{TenantID: job.TenantID, EventID: job.EventID, Version: job.Version}, opts)
}

// EnqueueDispatch implements app.Queue: one statement for all the jobs, each
// on its channel's queue. Each job's id is set in jobs.
func (q *Queue) EnqueueDispatch(ctx context.Context, tx app.Tx, jobs ...app.DispatchJob) error {
	params := make([]river.InsertManyParams, len(jobs))
	for i, j := range jobs {
		params[i] = river.InsertManyParams{
			Args:       DispatchArgs{TenantID: j.TenantID, MessageID: j.MessageID, Channel: j.Channel},
			InsertOpts: &river.InsertOpts{Queue: j.Channel.Queue(), ScheduledAt: j.NotBefore, Priority: priority(j.Priority)},
		}
	}
	res, err := q.insertMany(ctx, tx, params)
	if err != nil {
		return err
	}
	for i, r := range res {
		jobs[i].JobID = r.Job.ID
	}
	return nil
}

// priority is a route or dispatch job's River priority: the app's
// (app/priority.go), or PriorityTransactional for a job that names none
// (River's own default, 1, would put it among the urgent ones).
func priority(p int) int {
	if p < app.PriorityUrgent || p > app.PriorityBulk {
		return app.PriorityTransactional
	}
	return p
}

// EnqueueTemplateSync implements console.TemplateSyncQueue: a sync of one
// Meta account's templates, tried three times at the most.
func (q *Queue) EnqueueTemplateSync(ctx context.Context, tx app.Tx, tenantID, accountID uuid.UUID) error {
	return q.Insert(ctx, tx, MetaTemplateSyncArgs{TenantID: tenantID, AccountID: accountID},
		&river.InsertOpts{Queue: app.QueueMaintenance, MaxAttempts: 3})
}

// EnqueueUploadBatch implements app.UploadQueue.
func (q *Queue) EnqueueUploadBatch(ctx context.Context, tx app.Tx, tenantID, uploadID uuid.UUID, from int) error {
	return q.Insert(ctx, tx, UploadBatchArgs{TenantID: tenantID, UploadID: uploadID, From: from}, nil)
}
