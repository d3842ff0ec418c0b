package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// Admin implements console.QueueAdmin on River's own client API: queue list,
// pause and resume, job list, retry and cancel, each inside the caller's
// transaction. A client without workers can do all of it, so the web
// process uses the inserting client.
type Admin struct {
	client *river.Client[pgx.Tx]
}

var _ console.QueueAdmin = (*Admin)(nil)

// Admin returns the queue administration over the queue's River client.
func (q *Queue) Admin() *Admin {
	return &Admin{client: q.inserter}
}

// maxQueues bounds the queue list; Herald has six.
const maxQueues = 100

// Queues implements console.QueueAdmin.
func (a *Admin) Queues(ctx context.Context, tx app.Tx) ([]console.QueueInfo, error) {
	stx, err := unwrap(tx)
	if err != nil {
		return nil, err
	}
	res, err := a.client.QueueListTx(ctx, stx, river.NewQueueListParams().First(maxQueues))
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	out := make([]console.QueueInfo, len(res.Queues))
	for i, q := range res.Queues {
		seen := q.UpdatedAt
		out[i] = console.QueueInfo{Name: q.Name, PausedAt: q.PausedAt, SeenAt: &seen}
	}
	return out, nil
}

// Jobs implements console.QueueAdmin. Pages are keyed by job id, newest first;
// a page towards the newest is read oldest first and turned around.
func (a *Admin) Jobs(ctx context.Context, tx app.Tx, q console.JobListQuery) ([]*console.Job, error) {
	stx, err := unwrap(tx)
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit < 1 || limit > 1000 {
		limit = 100
	}
	order, cursor := river.SortOrderDesc, q.Before
	if q.After > 0 {
		order, cursor = river.SortOrderAsc, q.After
	}
	params := river.NewJobListParams().OrderBy(river.JobListOrderByID, order).First(limit)
	if len(q.Queues) > 0 {
		params = params.Queues(q.Queues...)
	}
	if len(q.States) > 0 {
		states := make([]rivertype.JobState, len(q.States))
		for i, s := range q.States {
			states[i] = rivertype.JobState(s)
		}
		params = params.States(states...)
	}
	if cursor > 0 {
		params = params.After(river.JobListCursorFromJob(&rivertype.JobRow{ID: cursor}))
	}
	res, err := a.client.JobListTx(ctx, stx, params)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	out := make([]*console.Job, len(res.Jobs))
	for i, j := range res.Jobs {
		out[i] = jobOf(j)
	}
	if order == river.SortOrderAsc {
		slices.Reverse(out)
	}
	return out, nil
}

// Job implements console.QueueAdmin.
func (a *Admin) Job(ctx context.Context, tx app.Tx, id int64) (*console.Job, error) {
	stx, err := unwrap(tx)
	if err != nil {
		return nil, err
	}
	j, err := a.client.JobGetTx(ctx, stx, id)
	if err != nil {
		return nil, jobErr(err, id)
	}
	return jobOf(j), nil
}

// PauseQueue implements console.QueueAdmin; the workers hear of it when the
// transaction commits.
func (a *Admin) PauseQueue(ctx context.Context, tx app.Tx, name string) error {
	stx, err := unwrap(tx)
	if err != nil {
		return err
	}
	return queueErr(a.client.QueuePauseTx(ctx, stx, name, nil), name)
}

// ResumeQueue implements console.QueueAdmin.
func (a *Admin) ResumeQueue(ctx context.Context, tx app.Tx, name string) error {
	stx, err := unwrap(tx)
	if err != nil {
		return err
	}
	return queueErr(a.client.QueueResumeTx(ctx, stx, name, nil), name)
}

// RetryJob implements console.QueueAdmin.
func (a *Admin) RetryJob(ctx context.Context, tx app.Tx, id int64) (*console.Job, error) {
	stx, err := unwrap(tx)
	if err != nil {
		return nil, err
	}
	j, err := a.client.JobRetryTx(ctx, stx, id)
	if err != nil {
		return nil, jobErr(err, id)
	}
	return jobOf(j), nil
}

// CancelJob implements console.QueueAdmin.
func (a *Admin) CancelJob(ctx context.Context, tx app.Tx, id int64) (*console.Job, error) {
	stx, err := unwrap(tx)
	if err != nil {
		return nil, err
	}
	j, err := a.client.JobCancelTx(ctx, stx, id)
	if err != nil {
		return nil, jobErr(err, id)
	}
	return jobOf(j), nil
}

func jobErr(err error, id int64) error {
	if errors.Is(err, rivertype.ErrNotFound) {
		return app.Errorf(app.ENOTFOUND, "There is no job %d. Finished jobs are removed after their retention period.", id)
	}
	return fmt.Errorf("job %d: %w", id, err)
}

func queueErr(err error, name string) error {
	if errors.Is(err, rivertype.ErrNotFound) {
		return app.Errorf(app.ENOTFOUND, "The job queue does not know queue %q.", name)
	}
	if err != nil {
		return fmt.Errorf("queue %s: %w", name, err)
	}
	return nil
}

// jobIDs are the ids Herald's job args carry; nothing else of the args
// leaves this package.
type jobIDs struct {
	TenantID  *uuid.UUID `json:"tenant_id"`
	EventID   *uuid.UUID `json:"event_id"`
	MessageID *uuid.UUID `json:"message_id"`
}

func jobOf(j *rivertype.JobRow) *console.Job {
	out := &console.Job{
		ID: j.ID, Kind: j.Kind, Queue: j.Queue, State: string(j.State),
		Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
		CreatedAt: j.CreatedAt, ScheduledAt: j.ScheduledAt, AttemptedAt: j.AttemptedAt, FinalizedAt: j.FinalizedAt,
	}
	for _, e := range j.Errors {
		out.Errors = append(out.Errors, console.JobError{Attempt: e.Attempt, At: e.At, Error: e.Error})
	}
	var ids jobIDs
	if json.Unmarshal(j.EncodedArgs, &ids) == nil {
		out.TenantID, out.EventID, out.MessageID = nonNil(ids.TenantID), nonNil(ids.EventID), nonNil(ids.MessageID)
	}
	return out
}

func nonNil(id *uuid.UUID) *uuid.UUID {
	if id == nil || *id == uuid.Nil {
		return nil
	}
	return id
}
