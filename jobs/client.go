// Package jobs runs Herald's background work on River: job args, thin
// workers that call app services, the River clients and their queues,
// periodic jobs, and the Queue that app uses to enqueue inside a transaction.
package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/heraldhq/herald/app"
)

// FetchCooldown is the shortest pause between two fetches of one queue.
// River's default (100 ms) caps a queue at ten fetches a second and adds
// up to that much latency to every hop of the pipeline (route, then
// dispatch); 10 ms keeps the added wait small for a little more polling.
const FetchCooldown = 10 * time.Millisecond

// MaxAttempts is how often a job runs before River discards it: the first
// try and four retries, per the dispatch rules.
const MaxAttempts = 5

// Config configures the worker client.
type Config struct {
	// Workers is the number of workers per queue (app.Config.Workers).
	Workers map[string]int
	// Periodic lists the periodic jobs; only the elected leader schedules them.
	Periodic []*river.PeriodicJob
	// Logger receives River's own logs and the job error log.
	Logger *slog.Logger
	// FetchPollInterval overrides River's fallback poll (tests shorten it).
	FetchPollInterval time.Duration
	// BackoffFunc overrides the retry schedule (tests shorten it).
	BackoffFunc func(attempt int) time.Duration
	// JobTimeout bounds one run of a job: its context is cancelled then
	// (app.Config.JobTimeout; zero: app.DefaultJobTimeout).
	JobTimeout time.Duration
	// RescueStuckAfter is how long a job may stay running before River
	// rescues it as a crashed worker's (app.Config.RescueStuckAfter; zero:
	// app.DefaultRescueStuckAfter).
	RescueStuckAfter time.Duration
	// SoftStopTimeout, when set, is how long running jobs may finish once
	// the client stops before their contexts are cancelled.
	SoftStopTimeout time.Duration
}

// riverConfig is the River configuration of the worker client.
func riverConfig(workers *river.Workers, cfg Config) (*river.Config, error) {
	queues := make(map[string]river.QueueConfig, len(cfg.Workers))
	for name, n := range cfg.Workers {
		queues[name] = river.QueueConfig{MaxWorkers: n}
	}
	if len(queues) == 0 {
		return nil, errors.New("jobs: no queues configured")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	timeout := cmp.Or(cfg.JobTimeout, app.DefaultJobTimeout)
	rescue := cmp.Or(cfg.RescueStuckAfter, app.DefaultRescueStuckAfter)
	if rescue <= timeout {
		return nil, fmt.Errorf("jobs: rescuing jobs after %s would rescue jobs still running (timeout %s)", rescue, timeout)
	}
	return &river.Config{
		Queues:       queues,
		Workers:      workers,
		PeriodicJobs: cfg.Periodic,
		MaxAttempts:  MaxAttempts,
		RetryPolicy:  RetryPolicy{BackoffFunc: cfg.BackoffFunc},
		ErrorHandler: &ErrorHandler{Log: log},
		Logger:       slog.New(minLevel{Handler: log.Handler(), min: slog.LevelWarn}).With("component", "river"),
		// River's own retention: finished jobs are evidence for a while, then
		// clutter. Herald's own rows (messages, timelines) are the record.
		CompletedJobRetentionPeriod: 24 * time.Hour,
		CancelledJobRetentionPeriod: 7 * 24 * time.Hour,
		DiscardedJobRetentionPeriod: 7 * 24 * time.Hour,
		FetchCooldown:               FetchCooldown,
		FetchPollInterval:           cfg.FetchPollInterval,
		// Every kind's run is bounded, and a job is rescued only once it
		// has certainly stopped: a crashed worker's sends wait about
		// RescueStuckAfter (plus River's rescuer interval), not an hour.
		JobTimeout:           timeout,
		RescueStuckJobsAfter: rescue,
		// Stopping lets running jobs finish: job contexts do not end with
		// the context Start was given (see StartWorkers), and only after
		// this long does River cancel them.
		SoftStopTimeout: cfg.SoftStopTimeout,
	}, nil
}

// NewWorkerClient returns a River client that works jobs on Herald's queues.
// It runs on the pgx pool so that it hears new jobs through LISTEN/NOTIFY the
// moment their transaction commits.
func NewWorkerClient(pool *pgxpool.Pool, workers *river.Workers, cfg Config) (*river.Client[pgx.Tx], error) {
	rc, err := riverConfig(workers, cfg)
	if err != nil {
		return nil, err
	}
	return river.NewClient(riverpgxv5.New(pool), rc)
}

// NewInserter returns an insert-only River client on pgx: jobs are inserted
// in the pgx transaction under the application's *sql.Tx (db.Tx.PGX), so a
// row and its job commit together, with River's native driver.
func NewInserter(pool *pgxpool.Pool) (*river.Client[pgx.Tx], error) {
	// The cooldown here limits how often inserts notify the workers of a queue.
	return river.NewClient(riverpgxv5.New(pool), &river.Config{MaxAttempts: MaxAttempts, FetchCooldown: FetchCooldown})
}

// RetryPolicy retries after 5 s, 10 s, 20 s, 40 s and 80 s: quick enough
// that a provider's short outage costs seconds, spread enough that a longer
// one is not hammered.
type RetryPolicy struct {
	// BackoffFunc replaces Backoff when set.
	BackoffFunc func(attempt int) time.Duration
}

// NextRetry implements river.ClientRetryPolicy.
func (p RetryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	if p.BackoffFunc != nil {
		return time.Now().Add(p.BackoffFunc(job.Attempt))
	}
	return time.Now().Add(Backoff(job.Attempt))
}

// Backoff returns the wait after the given failed attempt (1-based).
func Backoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 8 {
		attempt = 8
	}
	return 5 * time.Second << (attempt - 1)
}

// ErrorHandler logs every failed or panicking job with its id and kind, so
// that a failure in the log leads straight to the job.
type ErrorHandler struct {
	Log *slog.Logger
}

// HandleError implements river.ErrorHandler.
func (h *ErrorHandler) HandleError(ctx context.Context, job *rivertype.JobRow, err error) *river.ErrorHandlerResult {
	level := slog.LevelWarn
	if job.Attempt >= job.MaxAttempts {
		level = slog.LevelError
	}
	h.Log.Log(ctx, level, "job failed",
		"job_id", job.ID, "kind", job.Kind, "queue", job.Queue,
		"attempt", job.Attempt, "max_attempts", job.MaxAttempts, "err", err)
	return nil
}

// HandlePanic implements river.ErrorHandler.
func (h *ErrorHandler) HandlePanic(ctx context.Context, job *rivertype.JobRow, panicVal any, trace string) *river.ErrorHandlerResult {
	h.Log.ErrorContext(ctx, "job panicked",
		"job_id", job.ID, "kind", job.Kind, "queue", job.Queue,
		"attempt", job.Attempt, "panic", fmt.Sprint(panicVal), "trace", trace)
	return nil
}

// Stop stops the worker client softly: no new job starts, and running jobs
// get until ctx ends to finish; only then are their contexts cancelled
// (River's StopAndCancel), and they get a short moment to record that.
func Stop(ctx context.Context, client *river.Client[pgx.Tx], log *slog.Logger) {
	log.Info("workers stopping: no new jobs; running jobs may finish")
	err := client.Stop(ctx)
	if err == nil {
		return
	}
	log.Warn("jobs did not finish in time; cancelling them", "err", err)
	cancelCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.StopAndCancel(cancelCtx); err != nil {
		log.Error("stop jobs", "err", err)
	}
}

// minLevel drops records below min: River reports routine producer
// statistics at info every few seconds, which would drown Herald's own log.
type minLevel struct {
	slog.Handler
	min slog.Level
}

// Enabled implements slog.Handler.
func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

// WithAttrs implements slog.Handler.
func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

// WithGroup implements slog.Handler.
func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
