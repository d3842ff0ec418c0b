package jobs

import (
	"context"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/app"
)

// MetaTemplateSyncArgs asks for every WhatsApp account's Meta templates to
// be listed again, so that reviews Herald missed (a webhook not
// subscribed, a template edited in WhatsApp Manager) reach the dispatcher.
// With AccountID set it asks for that account's only: a Meta account just
// saved in the console, whose business-initiated messages need its
// approved templates before the hourly sync comes round.
type MetaTemplateSyncArgs struct {
	TenantID  uuid.UUID `json:"tenant_id,omitzero"`
	AccountID uuid.UUID `json:"account_id,omitzero"`
}

// Kind implements river.JobArgs.
func (MetaTemplateSyncArgs) Kind() string { return "meta_template_sync" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (MetaTemplateSyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: app.QueueMaintenance}
}

// MetaTemplateSyncWorker runs app.MetaTemplates.SyncAll. One account's
// failure is logged by the service and does not fail the job: retrying
// would ask Meta again for every other account too. A job for one account
// is retried (a few times, see EnqueueTemplateSync) unless the account is
// gone or cannot be synced at all.
type MetaTemplateSyncWorker struct {
	river.WorkerDefaults[MetaTemplateSyncArgs]
	MetaTemplates *app.MetaTemplates
}

// Work implements river.Worker.
func (w *MetaTemplateSyncWorker) Work(ctx context.Context, job *river.Job[MetaTemplateSyncArgs]) error {
	if job.Args.AccountID == uuid.Nil {
		_, _, err := w.MetaTemplates.SyncAll(ctx)
		return err
	}
	_, err := w.MetaTemplates.Sync(ctx, job.Args.TenantID, job.Args.AccountID)
	switch app.ErrorCode(err) {
	case "":
		return nil
	case app.ENOTFOUND, app.EINVALID:
		return river.JobCancel(err)
	}
	return err
}
