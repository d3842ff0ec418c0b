package main

import (
	"context"
	"errors"
	"math"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/heraldhq/herald/jobs"
)

// pruneAge is how old the seeded messages are: past every tenant's
// retention (90 days unless set).
const pruneAge = 200 * 24 * time.Hour

// pruneRounds is how many windows without and with pruning the retention
// phase alternates: on a shared machine the load drifts, and alternating
// spreads that drift over both sides instead of charging it to one.
const pruneRounds = 3

// retention measures what pruning old messages costs live traffic: it seeds
// PruneMessages finished messages (with timelines) older than retention,
// then alternates windows of intake at a fixed open-loop rate without
// pruning and while Herald's worker prunes (the retention job, as the daily
// schedule inserts it; cancelled through River at the end of each window),
// and compares the p99 of all windows of each kind. The worker keeps
// routing and sending what intake accepts throughout.
//
// The rate is a quarter of the lower of the intake and end-to-end maxima
// measured earlier in the run. Half of what intake alone sustains would
// leave the worker a growing backlog, and the windows would then measure
// the backlog rather than the pruning. Half of the end-to-end maximum
// saturates the machine: that maximum is measured with intake stopped,
// and here intake and the worker share the cores, each at smaller batches
// than when draining a backlog (a quick run at 307/s: the worker took 69%
// of the machine, all of it 97%). At saturation p99 measures the queue for
// a CPU, and one window's p99 came out 3.3 times the next one's with
// nothing pruned in either.
func (b *bench) retention(ctx context.Context) error {
	n := b.cfg.PruneMessages
	if n <= 0 {
		b.logf("   skipped (--prune-messages 0)")
		return nil
	}
	if err := b.openPool(ctx); err != nil {
		return err
	}
	start := time.Now()
	lastLog := start
	err := seedOldMessages(ctx, b.pool, n, 100000, pruneAge, func(done int) {
		if time.Since(lastLog) > 10*time.Second || done == n {
			b.logf("   seeded %d old messages (%s)", done, time.Since(start).Round(time.Second))
			lastLog = time.Now()
		}
	})
	if err != nil {
		return err
	}
	b.logf("   %d old messages with 2 timeline entries each seeded and vacuumed in %s",
		n, time.Since(start).Round(time.Second))
	if err := b.waitBacklog(ctx); err != nil {
		return err
	}
	// The seed is older than cutoff; everything intake writes is newer.
	now, err := dbNow(ctx, b.pool)
	if err != nil {
		return err
	}
	cutoff := now.Add(-pruneAge / 2)
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{})
	if err != nil {
		return err
	}

	rate := b.pruneRate()
	// The seed and its vacuum were written through the cache: the windows
	// start on the disk's quiet, not on their flush.
	b.levelStart(ctx, "the retention windows")
	window := b.cfg.RateDuration
	var base, during []time.Duration
	var ratios []float64
	var pruneTime time.Duration
	// The worker's CPU in the windows without pruning is what routing and
	// sending intake's events costs; beyond it in the windows while pruning
	// is the pruning's.
	var workerBase, workerDuring, baseTime time.Duration
	for round := 1; round <= pruneRounds; round++ {
		if err := b.waitAutovacuum(ctx); err != nil {
			return err
		}
		web, worker := b.startCost(ctx, b.web, "web"), b.sampleCPU(ctx, b.worker, "worker")
		began := time.Now()
		lat, errs := b.openLoop(ctx, float64(rate), window)
		baseTime += time.Since(began)
		b.res.PruneBaseCost = b.res.PruneBaseCost.add(web.stop(ctx, len(lat)))
		workerBase += b.sampleCPU(ctx, b.worker, "worker").total(worker)
		base = append(base, lat...)
		roundBase := percentile(lat, 99)
		b.logf("   round %d without pruning, %d/s for %s: p99 %s, errors %d (load average %s)", round, rate, window,
			percentile(lat, 99).Round(10*time.Microsecond), errs, loadAverage())

		res, err := client.Insert(ctx, jobs.RetentionArgs{}, nil)
		if err != nil {
			return err
		}
		// Measure once the job is deleting, not while it waits for a worker.
		left, err := b.waitPruning(ctx, cutoff)
		if err != nil {
			return err
		}
		began = time.Now()
		web, worker = b.startCost(ctx, b.web, "web"), b.sampleCPU(ctx, b.worker, "worker")
		lat, errs = b.openLoop(ctx, float64(rate), window)
		elapsed := time.Since(began)
		b.res.PruneDuringCost = b.res.PruneDuringCost.add(web.stop(ctx, len(lat)))
		workerDuring += b.sampleCPU(ctx, b.worker, "worker").total(worker)
		if _, err := client.JobCancel(ctx, res.Job.ID); err != nil {
			return err
		}
		after, err := countOlderThan(ctx, b.pool, cutoff)
		if err != nil {
			return err
		}
		during = append(during, lat...)
		if roundBase > 0 {
			ratios = append(ratios, float64(percentile(lat, 99))/float64(roundBase))
		}
		b.res.PrunedDuring += left - after
		pruneTime += elapsed
		b.logf("   round %d while pruning,     %d/s for %s: p99 %s, errors %d; %d messages pruned (%.0f/s), %d left (load average %s)",
			round, rate, window, percentile(lat, 99).Round(10*time.Microsecond), errs, left-after,
			float64(left-after)/elapsed.Seconds(), after, loadAverage())
		if err := b.waitStopped(ctx, client, res.Job.ID); err != nil {
			return err
		}
	}
	b.res.PruneIntakeP99Base = percentile(base, 99)
	b.res.PruneIntakeP99During = percentile(during, 99)
	if b.res.PruneIntakeP99Base > 0 {
		b.res.PruneIntakeP99Ratio = float64(b.res.PruneIntakeP99During) / float64(b.res.PruneIntakeP99Base)
	}
	b.logf("   intake at %d/s: p50 %s / p99 %s without pruning, p50 %s / p99 %s while pruning %.0f messages/s",
		rate, percentile(base, 50).Round(10*time.Microsecond), b.res.PruneIntakeP99Base.Round(10*time.Microsecond),
		percentile(during, 50).Round(10*time.Microsecond), b.res.PruneIntakeP99During.Round(10*time.Microsecond),
		float64(b.res.PrunedDuring)/pruneTime.Seconds())
	if b.res.PrunedDuring > 0 {
		b.res.PruneWorkerCPU = max(workerDuring-workerBase, 0) / time.Duration(b.res.PrunedDuring)
	}
	cores := float64(max(b.res.Cores, 1))
	b.res.PruneWorkerShare = [2]float64{workerBase.Seconds() / (baseTime.Seconds() * cores), workerDuring.Seconds() / (pruneTime.Seconds() * cores)}
	b.logf("   the machine's CPU %.0f%% busy without pruning, %.0f%% while; web CPU per request %s and %s, its Postgres sessions' %s and %s; "+
		"the worker and its sessions %.0f%% and %.0f%% of the machine, %s more while pruning, %s per pruned message; autovacuum workers %.2f and %.2f per sample",
		100*b.res.PruneBaseCost.Busy, 100*b.res.PruneDuringCost.Busy, ms3(b.res.PruneBaseCost.CPU), ms3(b.res.PruneDuringCost.CPU),
		ms3(b.res.PruneBaseCost.PGCPU), ms3(b.res.PruneDuringCost.PGCPU), 100*b.res.PruneWorkerShare[0], 100*b.res.PruneWorkerShare[1],
		(workerDuring - workerBase).Round(time.Millisecond), ms3(b.res.PruneWorkerCPU),
		b.res.PruneBaseCost.autovacuums(), b.res.PruneDuringCost.autovacuums())
	sort.Float64s(ratios)
	median := 0.0
	if len(ratios) > 0 {
		median = ratios[len(ratios)/2]
	}
	b.logf("   intake p99 while pruning is %.2fx of without (goal <= 1.20x); median of the rounds' ratios %.2fx; p50 %.2fx (load average %s)",
		b.res.PruneIntakeP99Ratio, median, float64(percentile(during, 50))/float64(max(percentile(base, 50), 1)), loadAverage())
	return nil
}

// pruneDrain bounds the wait for earlier phases' backlog before the
// retention windows.
const pruneDrain = 15 * time.Minute

// waitBacklog waits until the worker has sent what earlier phases left
// unsent: a latency phase above the worker's ceiling leaves tens of
// thousands of events, and a worker draining them in some windows and not
// in others would measure the backlog rather than the pruning.
func (b *bench) waitBacklog(ctx context.Context) error {
	start := time.Now()
	var waiting int
	drained, err := waitFor(ctx, time.Second, pruneDrain, func() (bool, error) {
		var err error
		waiting, err = countUnsent(ctx, b.mon, time.Time{})
		return waiting == 0, err
	})
	if err != nil {
		return err
	}
	if !drained {
		b.logf("   %d events of earlier phases still unsent after %s; the windows run beside that backlog", waiting, pruneDrain)
		return nil
	}
	b.logf("   earlier phases' backlog sent %s after the seeding (load average %s)", time.Since(start).Round(time.Second), loadAverage())
	return nil
}

// autovacuumWait bounds the wait for autovacuum before a window without
// pruning.
const autovacuumWait = 5 * time.Minute

// waitAutovacuum waits until no autovacuum worker is at work in the
// database. A round's deletes leave dead rows that autovacuum then clears
// from the tables and every index; a window without pruning that ran
// beside that would charge pruning's after-cost to the side without it and
// flatter the ratio.
func (b *bench) waitAutovacuum(ctx context.Context) error {
	start := time.Now()
	idle, err := waitFor(ctx, 500*time.Millisecond, autovacuumWait, func() (bool, error) {
		n, _, err := countNeighbours(ctx, b.mon, b.cfg.Database)
		return n == 0, err
	})
	if err != nil {
		return err
	}
	if waited := time.Since(start); !idle {
		b.logf("   autovacuum still at work after %s; the window without pruning runs beside it", autovacuumWait)
	} else if waited > time.Second {
		b.logf("   waited %s for autovacuum to finish before the window without pruning", waited.Round(time.Second))
	}
	return nil
}

// waitStopped waits until a cancelled retention job has stopped running, so
// the next window without pruning has none.
func (b *bench) waitStopped(ctx context.Context, client *river.Client[pgx.Tx], id int64) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		job, err := client.JobGet(ctx, id)
		if err != nil {
			return err
		}
		if job.State != rivertype.JobStateRunning {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("the cancelled retention job still runs after a minute")
}

// pruneRate is the fixed rate of the retention phase's open loop.
func (b *bench) pruneRate() int {
	limit := b.res.IntakeRPS
	if b.res.EndToEndMPS > 0 {
		limit = min(limit, b.res.EndToEndMPS)
	}
	if limit <= 0 {
		return b.cfg.Rate
	}
	return max(1, int(math.Round(limit/4)))
}

// waitPruning waits until the number of old messages starts to fall and
// returns how many are left at that moment.
func (b *bench) waitPruning(ctx context.Context, cutoff time.Time) (int, error) {
	first, err := countOlderThan(ctx, b.pool, cutoff)
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		left, err := countOlderThan(ctx, b.pool, cutoff)
		if err != nil {
			return 0, err
		}
		if left < first {
			return left, nil
		}
	}
	return 0, errors.New("the retention job did not start pruning within a minute")
}
