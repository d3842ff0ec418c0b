package bench

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/jobs"
)

// pruneAge is how old the seeded messages are: past every tenant's
// retention (90 days unless set).
const pruneAge = 200 * 24 * time.Hour

// retention measures what pruning old messages costs live traffic: it seeds
// PruneMessages finished messages (with timelines) older than retention,
// measures intake p99 at a fixed open-loop rate without pruning, then asks
// Herald's worker to prune (the retention job, as the daily schedule does)
// and measures it again at the same rate while the job runs. The worker
// keeps routing and sending what intake accepts in both windows.
//
// The rate is half of the lower of the intake and end-to-end maxima measured
// earlier in the run: half of what intake alone sustains would leave the
// worker a growing backlog, and the second window would then measure the
// backlog rather than the pruning.
func (b *bench) retention(ctx context.Context) error {
	n := b.cfg.PruneMessages
	if n <= 0 {
		b.logf("   skipped (--prune-messages 0)")
		return nil
	}
	start := time.Now()
	lastLog := start
	err := db.BenchSeedOldMessages(ctx, b.pool, n, 100000, pruneAge, func(done int) {
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
	// The seed is older than cutoff; everything intake writes is newer.
	now, err := db.BenchNow(ctx, b.pool)
	if err != nil {
		return err
	}
	cutoff := now.Add(-pruneAge / 2)
	plan, err := db.BenchExplainPrune(ctx, b.pool, now.AddDate(0, 0, -90), app.PruneBatch)
	if err != nil {
		return err
	}
	b.logf("   plan of a retention batch:\n%s", plan)

	rate := b.pruneRate()
	window := b.cfg.RateDuration
	b.logf("   open-loop intake at %d/s for %s, without pruning (load average %s)", rate, window, loadAverage())
	base, baseErrs := b.openLoop(ctx, rate, window)
	b.res.PruneIntakeP99Base = percentile(base, 99)
	b.logf("   without pruning: p50 %s, p99 %s, errors %d (load average %s)", percentile(base, 50).Round(10*time.Microsecond),
		b.res.PruneIntakeP99Base.Round(10*time.Microsecond), baseErrs, loadAverage())

	if err := b.startRetentionJob(ctx); err != nil {
		return err
	}
	// Measure once the job is deleting, not while it waits for a worker.
	left, err := b.waitPruning(ctx, cutoff, n)
	if err != nil {
		return err
	}
	b.logf("   open-loop intake at %d/s for %s, while retention prunes (load average %s)", rate, window, loadAverage())
	began := time.Now()
	during, duringErrs := b.openLoop(ctx, rate, window)
	elapsed := time.Since(began)
	b.res.PruneIntakeP99During = percentile(during, 99)
	after, err := db.BenchCountOlderThan(ctx, b.pool, cutoff)
	if err != nil {
		return err
	}
	b.res.PrunedDuring = left - after
	if b.res.PruneIntakeP99Base > 0 {
		b.res.PruneIntakeP99Ratio = float64(b.res.PruneIntakeP99During) / float64(b.res.PruneIntakeP99Base)
	}
	b.logf("   while pruning: p50 %s, p99 %s, errors %d; %d messages pruned in the window (%.0f/s), %d left (load average %s)",
		percentile(during, 50).Round(10*time.Microsecond), b.res.PruneIntakeP99During.Round(10*time.Microsecond),
		duringErrs, b.res.PrunedDuring, float64(b.res.PrunedDuring)/elapsed.Seconds(), after, loadAverage())
	b.logf("   intake p99 while pruning is %.2fx of without (goal <= 1.20x)", b.res.PruneIntakeP99Ratio)
	return nil
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
	return max(1, int(math.Round(limit/2)))
}

// startRetentionJob inserts the retention job that the worker's daily
// schedule would, through an insert-only River client.
func (b *bench) startRetentionJob(ctx context.Context) error {
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{})
	if err != nil {
		return err
	}
	_, err = client.Insert(ctx, jobs.RetentionArgs{}, nil)
	return err
}

// waitPruning waits until the seed starts to shrink and returns how many old
// messages are left at that moment.
func (b *bench) waitPruning(ctx context.Context, cutoff time.Time, seeded int) (int, error) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		left, err := db.BenchCountOlderThan(ctx, b.pool, cutoff)
		if err != nil {
			return 0, err
		}
		if left < seeded {
			return left, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return 0, errors.New("the retention job did not start pruning within a minute")
}

// openLoop sends requests at a fixed rate for d, each at its scheduled
// moment whether or not the earlier ones have been answered (an open loop,
// so a slow answer cannot slow the load down), and returns the latencies of
// the answered ones and the number of failures.
func (b *bench) openLoop(ctx context.Context, rate int, d time.Duration) ([]time.Duration, int64) {
	total := int(d.Seconds() * float64(rate))
	interval := time.Second / time.Duration(rate)
	lat := make([]time.Duration, total)
	var errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := range total {
		if ctx.Err() != nil {
			break
		}
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat[i], _ = b.post(b.keys[i%len(b.keys)])
			if lat[i] == 0 {
				errs.Add(1)
			}
		}()
	}
	wg.Wait()
	answered := lat[:0]
	for _, l := range lat {
		if l > 0 {
			answered = append(answered, l)
		}
	}
	return answered, errs.Load()
}
