package jobs

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/app"
)

// ExpireArgs asks for the one-minute sweep of events and messages past
// their expiry.
type ExpireArgs struct{}

// Kind implements river.JobArgs.
func (ExpireArgs) Kind() string { return "expire" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (ExpireArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: app.QueueMaintenance}
}

// ExpireWorker runs app.Maintenance.ExpireOverdue.
type ExpireWorker struct {
	river.WorkerDefaults[ExpireArgs]
	Maintenance *app.Maintenance
}

// Work implements river.Worker.
func (w *ExpireWorker) Work(ctx context.Context, job *river.Job[ExpireArgs]) error {
	_, _, err := w.Maintenance.ExpireOverdue(ctx)
	return err
}
