package jobs

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/app"
)

// RollupArgs asks for the dashboard's message counts to be recounted.
type RollupArgs struct{}

// Kind implements river.JobArgs.
func (RollupArgs) Kind() string { return "message_counts" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (RollupArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: app.QueueMaintenance}
}

// RollupWorker runs app.Rollups.RollUp.
type RollupWorker struct {
	river.WorkerDefaults[RollupArgs]
	Rollups *app.Rollups
}

// Work implements river.Worker.
func (w *RollupWorker) Work(ctx context.Context, job *river.Job[RollupArgs]) error {
	if w.Rollups == nil {
		return nil
	}
	_, err := w.Rollups.RollUp(ctx)
	return err
}
