package jobs

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/app"
)

// MetaTemplateSyncArgs asks for every WhatsApp account's Meta templates to
// be listed again, so that reviews Herald missed (a webhook not
// subscribed, a template edited in WhatsApp Manager) reach the dispatcher.
type MetaTemplateSyncArgs struct{}

// Kind implements river.JobArgs.
func (MetaTemplateSyncArgs) Kind() string { return "meta_template_sync" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (MetaTemplateSyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: app.QueueMaintenance}
}

// MetaTemplateSyncWorker runs app.MetaTemplates.SyncAll. One account's
// failure is logged by the service and does not fail the job: retrying
// would ask Meta again for every other account too.
type MetaTemplateSyncWorker struct {
	river.WorkerDefaults[MetaTemplateSyncArgs]
	MetaTemplates *app.MetaTemplates
}

// Work implements river.Worker.
func (w *MetaTemplateSyncWorker) Work(ctx context.Context, job *river.Job[MetaTemplateSyncArgs]) error {
	_, _, err := w.MetaTemplates.SyncAll(ctx)
	return err
}
