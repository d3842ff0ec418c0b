package jobs

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heraldhq/herald/app"
)

// UploadBatchArgs asks for the rows of an upload after row From to be
// turned into events, one batch of app.UploadBatchSize.
type UploadBatchArgs struct {
	TenantID uuid.UUID `json:"tenant_id"`
	UploadID uuid.UUID `json:"upload_id"`
	// From is the upload's cursor when the job was enqueued; a job whose
	// rows were handled already does nothing.
	From int `json:"from"`
}

// Kind implements river.JobArgs.
func (UploadBatchArgs) Kind() string { return "upload_batch" }

// InsertOpts implements river.JobArgsWithInsertOpts. Unique by its
// arguments while waiting or running, so that starting an upload twice,
// or starting a running one again, adds no second job for the same rows.
func (UploadBatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: app.QueueRoute, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
		rivertype.JobStateRetryable, rivertype.JobStateScheduled,
	}}}
}

// UploadBatchWorker runs app.Uploads.RunBatch.
type UploadBatchWorker struct {
	river.WorkerDefaults[UploadBatchArgs]
	Uploads *app.Uploads
}

// Timeout implements river.Worker.
func (w *UploadBatchWorker) Timeout(*river.Job[UploadBatchArgs]) time.Duration {
	return app.UploadBatchTimeout
}

// Work implements river.Worker.
func (w *UploadBatchWorker) Work(ctx context.Context, job *river.Job[UploadBatchArgs]) error {
	return w.Uploads.RunBatch(ctx, job.Args.TenantID, job.Args.UploadID, job.Args.From)
}
