package console

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// Job states, as the job queue names them.
const (
	JobAvailable = "available"
	JobScheduled = "scheduled"
	JobRunning   = "running"
	JobRetryable = "retryable"
	JobCompleted = "completed"
	JobCancelled = "cancelled"
	JobDiscarded = "discarded"
	// JobPending jobs wait for something outside the queue; Herald does not
	// create them, but the console lists them if they exist.
	JobPending = "pending"
)

// JobStates lists the job states in the order the console shows them.
var JobStates = []string{JobAvailable, JobScheduled, JobRunning, JobRetryable, JobCompleted, JobCancelled, JobDiscarded}

// HeraldQueues lists Herald's queues in the order the console shows them.
var HeraldQueues = []string{app.QueueRoute, app.QueueDispatchWhatsApp, app.QueueDispatchEmail, app.QueueDispatchSMS, app.QueueDispatchWebhook, app.QueueCallback, app.QueueMaintenance}

// Job is one background job as the console shows it. Args are reduced to
// the ids they carry: a job's arguments may hold tenant data, which the
// queues page never shows.
type Job struct {
	ID          int64
	Kind        string
	Queue       string
	State       string
	Attempt     int
	MaxAttempts int
	CreatedAt   time.Time
	ScheduledAt time.Time
	AttemptedAt *time.Time
	FinalizedAt *time.Time
	// Errors holds one entry per failed attempt, oldest first.
	Errors []JobError
	// TenantID, EventID and MessageID are the ids the job's args name.
	TenantID  *uuid.UUID
	EventID   *uuid.UUID
	MessageID *uuid.UUID
}

// JobError is the error of one failed attempt.
type JobError struct {
	Attempt int
	At      time.Time
	Error   string
}

// LastError returns the error of the job's latest failed attempt, if any.
func (j *Job) LastError() *JobError {
	if len(j.Errors) == 0 {
		return nil
	}
	return &j.Errors[len(j.Errors)-1]
}

// CanRetry reports whether the job may be run again now: a job that is
// waiting to retry, was given up, cancelled or finished.
func (j *Job) CanRetry() bool {
	return slices.Contains([]string{JobRetryable, JobDiscarded, JobCancelled, JobCompleted}, j.State)
}

// CanCancel reports whether the job may still be stopped.
func (j *Job) CanCancel() bool {
	return slices.Contains([]string{JobAvailable, JobScheduled, JobRetryable, JobRunning, JobPending}, j.State)
}

// QueueInfo is what the job queue knows about one queue.
type QueueInfo struct {
	Name string
	// PausedAt is when the queue was paused; nil while it runs.
	PausedAt *time.Time
	// SeenAt is when a worker last reported working the queue; nil when
	// none ever has (recently).
	SeenAt *time.Time
}

// JobCount is the number of jobs of one queue in one state.
type JobCount struct {
	Queue string `db:"queue"`
	State string `db:"state"`
	Count int    `db:"count"`
}

// JobListQuery selects jobs, newest first: those with an id below Before,
// or, when After is set, the oldest ones above After (a page back towards
// the newest), still returned newest first.
type JobListQuery struct {
	Queues []string
	States []string
	Before int64
	After  int64
	// Limit caps the rows; ask for one more than shown to learn whether
	// another page follows.
	Limit int
}

// QueueAdmin is the job queue's administration, implemented on River in
// jobs. Every method works inside the caller's platform transaction, so a
// change and its audit entry commit together.
type QueueAdmin interface {
	// Queues returns what the job queue knows about its queues.
	Queues(ctx context.Context, tx app.Tx) ([]QueueInfo, error)
	// Jobs lists jobs.
	Jobs(ctx context.Context, tx app.Tx, q JobListQuery) ([]*Job, error)
	// Job returns one job; ENOTFOUND if it does not exist.
	Job(ctx context.Context, tx app.Tx, id int64) (*Job, error)
	// PauseQueue stops workers fetching the queue's jobs; ResumeQueue
	// lets them fetch again. ENOTFOUND for a queue the job queue does not
	// know.
	PauseQueue(ctx context.Context, tx app.Tx, name string) error
	ResumeQueue(ctx context.Context, tx app.Tx, name string) error
	// RetryJob makes the job available to run now.
	RetryJob(ctx context.Context, tx app.Tx, id int64) (*Job, error)
	// CancelJob cancels the job, or asks its worker to stop if it runs.
	CancelJob(ctx context.Context, tx app.Tx, id int64) (*Job, error)
}

// QueueTx reads the job queue's figures that River offers no API for.
type QueueTx interface {
	app.Tx
	InsertAudit(ctx context.Context, e *app.AuditEntry) error
	// JobCounts counts jobs by queue and state.
	JobCounts(ctx context.Context) ([]JobCount, error)
	// RegisterQueue records a queue in the job queue's queue table if no
	// worker has yet, so that it can be paused before workers start (they
	// start paused then).
	RegisterQueue(ctx context.Context, name string, at time.Time) error
}

// QueueSummary is one queue on the queues page.
type QueueSummary struct {
	QueueInfo
	// Counts holds the number of jobs per state.
	Counts map[string]int
	Total  int
}

// Paused reports whether workers are held off the queue.
func (q QueueSummary) Paused() bool { return q.PausedAt != nil }

// QueueOverview is the queues page: every queue and the latest errors.
type QueueOverview struct {
	Queues []QueueSummary
	// RecentErrors are the newest jobs waiting to retry or given up.
	RecentErrors []*Job
}

// RecentErrorsShown is how many failing jobs the queues page lists.
const RecentErrorsShown = 10

// Queues lets operators watch and steer the job queues shared by every
// tenant.
type Queues struct {
	Store app.Store[QueueTx]
	Admin QueueAdmin
	Now   app.Clock
}

// Overview returns every queue with its job counts, and the latest errors.
func (s *Queues) Overview(ctx context.Context, u *app.User) (*QueueOverview, error) {
	if err := app.RequirePermission(u, app.PermQueues); err != nil {
		return nil, err
	}
	out := &QueueOverview{}
	err := s.Store.InPlatform(ctx, func(tx QueueTx) error {
		summaries, err := s.summaries(ctx, tx)
		if err != nil {
			return err
		}
		out.Queues = summaries
		out.RecentErrors, err = s.Admin.Jobs(ctx, tx, JobListQuery{States: []string{JobRetryable, JobDiscarded}, Limit: RecentErrorsShown})
		return err
	})
	return out, err
}

// summaries joins Herald's queues, any other queue River knows, and the
// job counts.
func (s *Queues) summaries(ctx context.Context, tx QueueTx) ([]QueueSummary, error) {
	infos, err := s.Admin.Queues(ctx, tx)
	if err != nil {
		return nil, err
	}
	counts, err := tx.JobCounts(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*QueueSummary{}
	var out []*QueueSummary
	add := func(name string) *QueueSummary {
		if q, ok := byName[name]; ok {
			return q
		}
		q := &QueueSummary{QueueInfo: QueueInfo{Name: name}, Counts: map[string]int{}}
		byName[name] = q
		out = append(out, q)
		return q
	}
	for _, name := range HeraldQueues {
		add(name)
	}
	for _, info := range infos {
		add(info.Name).QueueInfo = info
	}
	for _, c := range counts {
		q := add(c.Queue)
		q.Counts[c.State] += c.Count
		q.Total += c.Count
	}
	res := make([]QueueSummary, len(out))
	for i, q := range out {
		res[i] = *q
	}
	return res, nil
}

// Queue returns one queue with its job counts; ENOTFOUND for a queue that
// is neither Herald's nor known to the job queue.
func (s *Queues) Queue(ctx context.Context, u *app.User, name string) (*QueueSummary, error) {
	if err := app.RequirePermission(u, app.PermQueues); err != nil {
		return nil, err
	}
	var out *QueueSummary
	err := s.Store.InPlatform(ctx, func(tx QueueTx) error {
		summaries, err := s.summaries(ctx, tx)
		if err != nil {
			return err
		}
		for i := range summaries {
			if summaries[i].Name == name {
				out = &summaries[i]
				return nil
			}
		}
		return errUnknownQueue(name)
	})
	return out, err
}

func errUnknownQueue(name string) error {
	return app.Errorf(app.ENOTFOUND, "There is no queue named %q. Herald's queues are %s.", name, strings.Join(HeraldQueues, ", "))
}

// ParseJobState checks a state filter: empty means every state.
func ParseJobState(s string) (string, error) {
	if s == "" || slices.Contains(JobStates, s) || s == JobPending {
		return s, nil
	}
	return "", app.FieldErrorf("state", "There is no job state %q. Choose one of: %s.", s, strings.Join(JobStates, ", "))
}

// Jobs lists a queue's jobs, optionally in some states only.
func (s *Queues) Jobs(ctx context.Context, u *app.User, queue string, q JobListQuery) ([]*Job, error) {
	if err := app.RequirePermission(u, app.PermQueues); err != nil {
		return nil, err
	}
	for _, st := range q.States {
		if _, err := ParseJobState(st); err != nil {
			return nil, err
		}
	}
	q.Queues = []string{queue}
	var out []*Job
	err := s.Store.InPlatform(ctx, func(tx QueueTx) (err error) {
		out, err = s.Admin.Jobs(ctx, tx, q)
		return err
	})
	return out, err
}

// ParseJobID reads a job id from a path; anything but a positive number
// names no job.
func ParseJobID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, app.Errorf(app.ENOTFOUND, "There is no job %q.", s)
	}
	return id, nil
}

// Job returns one job.
func (s *Queues) Job(ctx context.Context, u *app.User, id int64) (*Job, error) {
	if err := app.RequirePermission(u, app.PermQueues); err != nil {
		return nil, err
	}
	var out *Job
	err := s.Store.InPlatform(ctx, func(tx QueueTx) (err error) {
		out, err = s.Admin.Job(ctx, tx, id)
		return err
	})
	return out, err
}

// Pause holds workers off a queue; jobs keep arriving and wait.
func (s *Queues) Pause(ctx context.Context, actor app.Actor, u *app.User, name string) error {
	return s.setPaused(ctx, actor, u, name, true)
}

// Resume lets workers fetch a paused queue's jobs again.
func (s *Queues) Resume(ctx context.Context, actor app.Actor, u *app.User, name string) error {
	return s.setPaused(ctx, actor, u, name, false)
}

func (s *Queues) setPaused(ctx context.Context, actor app.Actor, u *app.User, name string, pause bool) error {
	if err := app.RequirePermission(u, app.PermQueues); err != nil {
		return err
	}
	return s.Store.InPlatform(ctx, func(tx QueueTx) error {
		summaries, err := s.summaries(ctx, tx)
		if err != nil {
			return err
		}
		var q *QueueSummary
		for i := range summaries {
			if summaries[i].Name == name {
				q = &summaries[i]
			}
		}
		if q == nil {
			return errUnknownQueue(name)
		}
		if q.Paused() == pause {
			if pause {
				return app.Errorf(app.ECONFLICT, "Queue %s is already paused.", name)
			}
			return app.Errorf(app.ECONFLICT, "Queue %s is not paused.", name)
		}
		action := "queue.resume"
		if pause {
			action = "queue.pause"
			if err := tx.RegisterQueue(ctx, name, s.Now()); err != nil {
				return err
			}
			err = s.Admin.PauseQueue(ctx, tx, name)
		} else {
			err = s.Admin.ResumeQueue(ctx, tx, name)
		}
		if err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(nil, action, "queue", name, map[string]any{
			"available": q.Counts[JobAvailable], "scheduled": q.Counts[JobScheduled], "running": q.Counts[JobRunning],
		}))
	})
}

// Retry makes a job that waits to retry, was given up, cancelled or
// completed available to run now.
func (s *Queues) Retry(ctx context.Context, actor app.Actor, u *app.User, id int64) (*Job, error) {
	return s.change(ctx, actor, u, id, "job.retry", func(tx QueueTx, j *Job) (*Job, error) {
		if !j.CanRetry() {
			return nil, app.Errorf(app.ECONFLICT, "Job %d is %s; only jobs that are retryable, discarded, cancelled or completed can be retried.", j.ID, j.State)
		}
		return s.Admin.RetryJob(ctx, tx, j.ID)
	})
}

// Cancel stops a job that has not finished. A running job's worker is
// asked to stop; the job is cancelled when it does.
func (s *Queues) Cancel(ctx context.Context, actor app.Actor, u *app.User, id int64) (*Job, error) {
	return s.change(ctx, actor, u, id, "job.cancel", func(tx QueueTx, j *Job) (*Job, error) {
		if !j.CanCancel() {
			return nil, app.Errorf(app.ECONFLICT, "Job %d is already %s; there is nothing to cancel.", j.ID, j.State)
		}
		return s.Admin.CancelJob(ctx, tx, j.ID)
	})
}

// change runs one job action with its audit entry in one transaction. The
// entry belongs to the platform: queues are shared, so the job's tenant is
// recorded in the metadata.
func (s *Queues) change(ctx context.Context, actor app.Actor, u *app.User, id int64, action string, fn func(QueueTx, *Job) (*Job, error)) (*Job, error) {
	if err := app.RequirePermission(u, app.PermQueues); err != nil {
		return nil, err
	}
	var out *Job
	err := s.Store.InPlatform(ctx, func(tx QueueTx) error {
		j, err := s.Admin.Job(ctx, tx, id)
		if err != nil {
			return err
		}
		if out, err = fn(tx, j); err != nil {
			return err
		}
		meta := map[string]any{"queue": j.Queue, "kind": j.Kind, "from_state": j.State, "to_state": out.State, "attempt": j.Attempt}
		for k, v := range map[string]*uuid.UUID{"tenant_id": j.TenantID, "event_id": j.EventID, "message_id": j.MessageID} {
			if v != nil {
				meta[k] = v.String()
			}
		}
		return tx.InsertAudit(ctx, actor.Entry(nil, action, "job", fmt.Sprint(j.ID), meta))
	})
	return out, err
}
