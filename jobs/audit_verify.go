package jobs

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/app"
)

// AuditVerifyArgs asks for the audit log's hash chains to be verified.
type AuditVerifyArgs struct{}

// Kind implements river.JobArgs.
func (AuditVerifyArgs) Kind() string { return "audit_verify" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (AuditVerifyArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: app.QueueMaintenance}
}

// AuditVerifyWorker runs app.Audit.Verify.
type AuditVerifyWorker struct {
	river.WorkerDefaults[AuditVerifyArgs]
	Audit *app.Audit
}

// Work implements river.Worker. Breaks are reported by Verify; the job itself
// succeeds, since running it again would find the same.
func (w *AuditVerifyWorker) Work(ctx context.Context, job *river.Job[AuditVerifyArgs]) error {
	_, err := w.Audit.Verify(ctx)
	return err
}
