package jobs

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/app"
)

// AlertCheckArgs asks for every tenant's staff alerts to be checked: the
// conditions time reveals and the daily digests that are due.
type AlertCheckArgs struct{}

// Kind implements river.JobArgs.
func (AlertCheckArgs) Kind() string { return "staff_alert_check" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (AlertCheckArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: app.QueueMaintenance}
}

// AlertCheckWorker runs app.Alerts.CheckAll.
type AlertCheckWorker struct {
	river.WorkerDefaults[AlertCheckArgs]
	Alerts *app.Alerts
}

// Timeout implements river.Worker: a check ends before the next minute's
// begins (and before River would take it for a crashed worker's). What it
// raised stays raised, each alert in its own transaction, and the next
// check finds the rest.
func (w *AlertCheckWorker) Timeout(*river.Job[AlertCheckArgs]) time.Duration {
	return 50 * time.Second
}

// Work implements river.Worker.
func (w *AlertCheckWorker) Work(ctx context.Context, _ *river.Job[AlertCheckArgs]) error {
	_, err := w.Alerts.CheckAll(ctx)
	return err
}

// AlertSendArgs asks for one staff alert to be delivered. It carries ids
// only: the text and the webhook URLs stay in the database.
type AlertSendArgs struct {
	TenantID uuid.UUID `json:"tenant_id"`
	AlertID  uuid.UUID `json:"alert_id"`
}

// Kind implements river.JobArgs.
func (AlertSendArgs) Kind() string { return "staff_alert_send" }

// InsertOpts implements river.JobArgsWithInsertOpts: alerts post to
// outside receivers, as status callbacks do, on their queue.
func (AlertSendArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: app.QueueCallback}
}

// AlertSendWorker runs app.Alerts.Deliver; an error retries the targets
// that did not take the alert.
type AlertSendWorker struct {
	river.WorkerDefaults[AlertSendArgs]
	Alerts *app.Alerts
}

// Timeout implements river.Worker: up to three posts and a few e-mails,
// each bounded.
func (w *AlertSendWorker) Timeout(*river.Job[AlertSendArgs]) time.Duration {
	return 3*app.AlertTimeout + 15*time.Second
}

// Work implements river.Worker.
func (w *AlertSendWorker) Work(ctx context.Context, job *river.Job[AlertSendArgs]) error {
	return w.Alerts.Deliver(ctx, job.Args.TenantID, job.Args.AlertID)
}

// EnqueueAlert implements app.AlertQueue.
func (q *Queue) EnqueueAlert(ctx context.Context, tx app.Tx, tenantID, alertID uuid.UUID) error {
	return q.Insert(ctx, tx, AlertSendArgs{TenantID: tenantID, AlertID: alertID}, nil)
}
