package jobs

import (
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldhq/herald/app"
)

// Deps are the app services the workers call.
type Deps struct {
	Audit       *app.Audit
	Router      *app.Router
	Dispatcher  *app.Dispatcher
	Maintenance *app.Maintenance
	// MetaTemplates syncs WhatsApp accounts' Meta templates; nil leaves
	// the sync job unregistered.
	MetaTemplates *app.MetaTemplates
	// Callbacks posts status callbacks; nil leaves their worker
	// unregistered.
	Callbacks *app.Callbacks
	// Rollups keeps the dashboard's message counts; nil skips the recount
	// (the dashboard then counts live).
	Rollups *app.Rollups
	// Limits prunes the intake day counters; nil leaves them.
	Limits *app.IntakeLimits
	// Uploads turns uploads' rows into events; nil leaves their worker
	// unregistered.
	Uploads *app.Uploads
	// Alerts checks and delivers staff alerts; nil leaves their workers
	// unregistered.
	Alerts *app.Alerts
	// SMSLogs reads SNS accounts' delivery logs; nil leaves its workers
	// unregistered (production always sets it: PeriodicJobs schedules
	// its scan).
	SMSLogs *app.SMSLogs
	// DispatchTimeout bounds one run of a dispatch job
	// (app.DispatchTimeout); zero: the client's JobTimeout.
	DispatchTimeout time.Duration
}

// Workers registers every worker Herald runs.
func Workers(d Deps) *river.Workers {
	w := river.NewWorkers()
	river.AddWorker(w, &AuditVerifyWorker{Audit: d.Audit})
	river.AddWorker(w, &RouteWorker{Router: d.Router})
	river.AddWorker(w, &DispatchWorker{Dispatcher: d.Dispatcher, Driver: riverpgxv5.New(nil), RunTimeout: d.DispatchTimeout})
	river.AddWorker(w, &RequeueStuckWorker{Maintenance: d.Maintenance, Limits: d.Limits})
	river.AddWorker(w, &DeadlineWorker{Maintenance: d.Maintenance})
	river.AddWorker(w, &RetentionWorker{Maintenance: d.Maintenance})
	river.AddWorker(w, &ExpireWorker{Maintenance: d.Maintenance})
	if d.Callbacks != nil {
		river.AddWorker(w, &CallbackWorker{Callbacks: d.Callbacks})
	}
	river.AddWorker(w, &RollupWorker{Rollups: d.Rollups})
	if d.MetaTemplates != nil {
		river.AddWorker(w, &MetaTemplateSyncWorker{MetaTemplates: d.MetaTemplates})
	}
	if d.Uploads != nil {
		river.AddWorker(w, &UploadBatchWorker{Uploads: d.Uploads})
	}
	if d.Alerts != nil {
		river.AddWorker(w, &AlertCheckWorker{Alerts: d.Alerts})
		river.AddWorker(w, &AlertSendWorker{Alerts: d.Alerts})
	}
	if d.SMSLogs != nil {
		river.AddWorker(w, &SMSLogScanWorker{SMSLogs: d.SMSLogs})
		river.AddWorker(w, &SMSLogReadWorker{SMSLogs: d.SMSLogs})
	}
	return w
}

// PeriodicJobs is the registration point for work on a schedule. River's
// elected leader inserts them, so each runs once across all worker processes.
func PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
			func() (river.JobArgs, *river.InsertOpts) { return AuditVerifyArgs{}, nil },
			&river.PeriodicJobOpts{ID: "audit_verify", RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(time.Minute),
			func() (river.JobArgs, *river.InsertOpts) { return DeadlineArgs{}, nil },
			&river.PeriodicJobOpts{ID: "delivery_deadlines"}),
		river.NewPeriodicJob(river.PeriodicInterval(time.Minute),
			func() (river.JobArgs, *river.InsertOpts) { return ExpireArgs{}, nil },
			&river.PeriodicJobOpts{ID: "expire"}),
		river.NewPeriodicJob(river.PeriodicInterval(5*time.Minute),
			func() (river.JobArgs, *river.InsertOpts) { return RequeueStuckArgs{}, nil },
			&river.PeriodicJobOpts{ID: "requeue_stuck"}),
		river.NewPeriodicJob(river.PeriodicInterval(24*time.Hour),
			func() (river.JobArgs, *river.InsertOpts) { return RetentionArgs{}, nil },
			&river.PeriodicJobOpts{ID: "retention", RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(time.Minute),
			func() (river.JobArgs, *river.InsertOpts) { return RollupArgs{}, nil },
			&river.PeriodicJobOpts{ID: "message_counts", RunOnStart: true}),
		// Meta's webhook reports reviews as they happen; the hourly list
		// catches what it missed and templates changed in WhatsApp Manager.
		river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
			func() (river.JobArgs, *river.InsertOpts) { return MetaTemplateSyncArgs{}, nil },
			&river.PeriodicJobOpts{ID: "meta_template_sync", RunOnStart: true}),
		// Staff alerts' thresholds are minutes, and the digest's time a
		// minute of the day.
		river.NewPeriodicJob(river.PeriodicInterval(time.Minute),
			func() (river.JobArgs, *river.InsertOpts) { return AlertCheckArgs{}, nil },
			&river.PeriodicJobOpts{ID: "staff_alert_check"}),
		// SNS reports SMS outcomes only in CloudWatch Logs: a minute's
		// wait for a delivery is read, each run re-reading the last few
		// minutes CloudWatch may still be taking in.
		river.NewPeriodicJob(river.PeriodicInterval(time.Minute),
			func() (river.JobArgs, *river.InsertOpts) { return SMSLogScanArgs{}, nil },
			&river.PeriodicJobOpts{ID: "sms_log_scan"}),
	}
}
