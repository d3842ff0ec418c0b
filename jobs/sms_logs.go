package jobs

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heraldhq/herald/app"
)

// SMSLogScanArgs asks for a read of every ACTIVE SNS account's SMS
// delivery logs (app.SMSLogs.Scan): one SMSLogRead job per account.
type SMSLogScanArgs struct{}

// Kind implements river.JobArgs.
func (SMSLogScanArgs) Kind() string { return "sms_log_scan" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (SMSLogScanArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: app.QueueMaintenance}
}

// SMSLogScanWorker runs app.SMSLogs.Scan.
type SMSLogScanWorker struct {
	river.WorkerDefaults[SMSLogScanArgs]
	SMSLogs *app.SMSLogs
}

// Work implements river.Worker.
func (w *SMSLogScanWorker) Work(ctx context.Context, job *river.Job[SMSLogScanArgs]) error {
	_, err := w.SMSLogs.Scan(ctx)
	return err
}

// SMSLogReadArgs asks for one account's SMS delivery logs to be read.
type SMSLogReadArgs struct {
	TenantID  uuid.UUID `json:"tenant_id"`
	AccountID uuid.UUID `json:"account_id"`
}

// Kind implements river.JobArgs.
func (SMSLogReadArgs) Kind() string { return "sms_log_read" }

// smsLogReadStates are the states in which a read of an account keeps
// another from being enqueued: one read per account at a time, and the
// scans of a backlog never pile up.
var smsLogReadStates = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled,
}

// InsertOpts implements river.JobArgsWithInsertOpts.
func (SMSLogReadArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: app.QueueMaintenance, MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: smsLogReadStates}}
}

// SMSLogReadWorker runs app.SMSLogs.Read. An account's own problem (its
// keys refused, throttling, no log group) is recorded on the account and
// ends the job: the next scan tries again. Only an outage is retried.
type SMSLogReadWorker struct {
	river.WorkerDefaults[SMSLogReadArgs]
	SMSLogs *app.SMSLogs
}

// Timeout bounds one read: its page budget at the pace, with waits.
func (w *SMSLogReadWorker) Timeout(*river.Job[SMSLogReadArgs]) time.Duration { return 5 * time.Minute }

// Work implements river.Worker.
func (w *SMSLogReadWorker) Work(ctx context.Context, job *river.Job[SMSLogReadArgs]) error {
	_, err := w.SMSLogs.Read(ctx, job.Args.TenantID, job.Args.AccountID)
	if err == nil || app.ErrorCode(err) == app.EUNAVAILABLE || ctx.Err() != nil {
		return err
	}
	// Recorded on the account by Read (or the account is gone or no longer
	// ACTIVE): the next scan reads again.
	return river.JobCancel(err)
}

// EnqueueSMSLogRead implements app.SMSLogQueue; a read of the account
// already waiting or running makes this one nothing.
func (q *Queue) EnqueueSMSLogRead(ctx context.Context, tx app.Tx, tenantID, accountID uuid.UUID) error {
	return q.Insert(ctx, tx, SMSLogReadArgs{TenantID: tenantID, AccountID: accountID}, nil)
}
