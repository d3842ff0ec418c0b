package jobs

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/heraldhq/herald/app"
)

// DispatchArgs asks for one message to be sent. It carries ids only: the
// message's content and the account's secrets stay in the database.
type DispatchArgs struct {
	TenantID  uuid.UUID   `json:"tenant_id"`
	MessageID uuid.UUID   `json:"message_id"`
	Channel   app.Channel `json:"channel"`
}

// Kind implements river.JobArgs.
func (DispatchArgs) Kind() string { return "dispatch" }

// DispatchWorker runs app.Dispatcher and maps its outcome onto River: a
// retry is an error (backoff), a snooze is river.JobSnooze (no attempt
// used), and success or permanent failure completes the job inside the
// dispatcher's own transaction.
type DispatchWorker struct {
	river.WorkerDefaults[DispatchArgs]
	Dispatcher *app.Dispatcher
	// Driver completes jobs inside the app's transaction.
	Driver *riverpgxv5.Driver
	// RunTimeout bounds one run (app.DispatchTimeout: the job's own work
	// and its provider calls, each with its own time); zero: the client's
	// JobTimeout.
	RunTimeout time.Duration
}

// Timeout implements river.Worker.
func (w *DispatchWorker) Timeout(*river.Job[DispatchArgs]) time.Duration { return w.RunTimeout }

// Work implements river.Worker.
func (w *DispatchWorker) Work(ctx context.Context, job *river.Job[DispatchArgs]) error {
	complete := func(ctx context.Context, tx app.Tx) error {
		stx, err := unwrap(tx)
		if err != nil {
			return err
		}
		return completeInTx(ctx, w.Driver, stx, job.ID)
	}
	out, err := w.Dispatcher.Dispatch(ctx, app.DispatchJob{TenantID: job.Args.TenantID, MessageID: job.Args.MessageID, Channel: job.Args.Channel},
		job.Attempt, job.MaxAttempts, complete)
	switch {
	case err != nil:
		return err
	case out.Snooze > 0:
		return river.JobSnooze(out.Snooze)
	case out.Retry != nil:
		return out.Retry
	}
	return nil
}

// completeInTx marks a running job completed in tx, as river.JobCompleteTx
// does. River's own completion of the job afterwards finds it no longer
// running and leaves it.
func completeInTx(ctx context.Context, driver *riverpgxv5.Driver, tx pgx.Tx, jobID int64) error {
	p := riverdriver.JobSetStateCompleted(jobID, time.Now(), nil)
	_, err := driver.UnwrapExecutor(tx).JobSetStateIfRunningMany(ctx, &riverdriver.JobSetStateIfRunningManyParams{
		ID:              []int64{p.ID},
		Attempt:         []*int{p.Attempt},
		ErrData:         [][]byte{p.ErrData},
		FinalizedAt:     []*time.Time{p.FinalizedAt},
		MetadataDoMerge: []bool{p.MetadataDoMerge},
		MetadataUpdates: [][]byte{p.MetadataUpdates},
		ScheduledAt:     []*time.Time{p.ScheduledAt},
		State:           []rivertype.JobState{p.State},
	})
	return err
}
