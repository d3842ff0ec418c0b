package jobs

import (
	"context"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/app"
)

// RouteArgs asks for an event to be routed into messages.
type RouteArgs struct {
	TenantID uuid.UUID `json:"tenant_id"`
	EventID  uuid.UUID `json:"event_id"`
	// Version is the event's version when the job was scheduled; a
	// reschedule makes older jobs stale.
	Version int `json:"version"`
}

// Kind implements river.JobArgs.
func (RouteArgs) Kind() string { return "route" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (RouteArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: app.QueueRoute} }

// RouteWorker runs app.Router.
type RouteWorker struct {
	river.WorkerDefaults[RouteArgs]
	Router *app.Router
}

// Work implements river.Worker.
func (w *RouteWorker) Work(ctx context.Context, job *river.Job[RouteArgs]) error {
	return w.Router.Route(ctx, app.RouteJob{TenantID: job.Args.TenantID, EventID: job.Args.EventID, Version: job.Args.Version, Priority: job.Priority})
}
