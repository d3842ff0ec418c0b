package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/app"
)

// RequeueStuckArgs asks for the five-minute scan: QUEUED messages without a
// live job are enqueued again, and SENT messages without a receipt for a
// day are marked stale.
type RequeueStuckArgs struct{}

// Kind implements river.JobArgs.
func (RequeueStuckArgs) Kind() string { return "requeue_stuck" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (RequeueStuckArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: app.QueueMaintenance}
}

// RequeueStuckWorker runs app.Maintenance.RequeueStuck, prunes
// receipts still pending and intake day counters of past days, and marks
// messages stale.
type RequeueStuckWorker struct {
	river.WorkerDefaults[RequeueStuckArgs]
	Maintenance *app.Maintenance
	// Limits prunes the intake day counters of past days; nil leaves
	// them.
	Limits *app.IntakeLimits
}

// Work implements river.Worker.
func (w *RequeueStuckWorker) Work(ctx context.Context, job *river.Job[RequeueStuckArgs]) error {
	if _, err := w.Maintenance.RequeueStuck(ctx); err != nil {
		return err
	}
	if _, err := w.Maintenance.PrunePending(ctx); err != nil {
		return err
	}
	if w.Limits != nil {
		if _, err := w.Limits.Prune(ctx); err != nil {
			return err
		}
	}
	_, err := w.Maintenance.MarkStale(ctx)
	return err
}

// DeadlineArgs asks for the one-minute scan of messages past their
// tenant's delivery deadline.
type DeadlineArgs struct{}

// Kind implements river.JobArgs.
func (DeadlineArgs) Kind() string { return "delivery_deadlines" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (DeadlineArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: app.QueueMaintenance}
}

// DeadlineWorker runs app.Maintenance.FallBackOverdue.
type DeadlineWorker struct {
	river.WorkerDefaults[DeadlineArgs]
	Maintenance *app.Maintenance
}

// Work implements river.Worker.
func (w *DeadlineWorker) Work(ctx context.Context, job *river.Job[DeadlineArgs]) error {
	_, err := w.Maintenance.FallBackOverdue(ctx)
	return err
}

// RetentionArgs asks for every tenant's old, finished data to be pruned.
type RetentionArgs struct{}

// Kind implements river.JobArgs.
func (RetentionArgs) Kind() string { return "retention" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (RetentionArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: app.QueueMaintenance}
}

// RetentionSnooze is how long the retention job rests when a run stops at
// its budget with old rows left; it then resumes where the rows are.
const RetentionSnooze = 5 * time.Second

// RetentionWorker runs app.Maintenance.Prune.
type RetentionWorker struct {
	river.WorkerDefaults[RetentionArgs]
	Maintenance *app.Maintenance
}

// Work implements river.Worker. A run that spent its budget snoozes rather
// than completing, so a backlog is worked off in bounded runs (snoozing
// spends no attempt) and the job never outlasts MaintenanceTimeout.
func (w *RetentionWorker) Work(ctx context.Context, job *river.Job[RetentionArgs]) error {
	res, err := w.Maintenance.Prune(ctx)
	if err != nil {
		return err
	}
	if res.More {
		return river.JobSnooze(RetentionSnooze)
	}
	return nil
}

// MaintenanceTimeout bounds a run of the periodic sweeps (retention,
// audit verification, Meta template sync, re-enqueueing): they walk every
// tenant in batches and may outlast HERALD_JOB_TIMEOUT, which is sized for
// one send. River rescues a job of such a kind only once this has passed,
// so a long sweep is never run twice side by side.
const MaintenanceTimeout = 10 * time.Minute

// Timeout implements river.Worker.
func (w *RetentionWorker) Timeout(*river.Job[RetentionArgs]) time.Duration {
	return MaintenanceTimeout
}

// Timeout implements river.Worker.
func (w *RequeueStuckWorker) Timeout(*river.Job[RequeueStuckArgs]) time.Duration {
	return MaintenanceTimeout
}

// Timeout implements river.Worker.
func (w *AuditVerifyWorker) Timeout(*river.Job[AuditVerifyArgs]) time.Duration {
	return MaintenanceTimeout
}

// Timeout implements river.Worker.
func (w *MetaTemplateSyncWorker) Timeout(*river.Job[MetaTemplateSyncArgs]) time.Duration {
	return MaintenanceTimeout
}
