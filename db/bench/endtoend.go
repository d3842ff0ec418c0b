package main

import (
	"context"
	"errors"
	"path/filepath"
	"time"
)

// statsFlush is how long to wait before reading pg_stat_database: a
// session publishes its counts when it goes idle, at most once a second,
// and an idle session with counts still pending within ten seconds.
const statsFlush = 11 * time.Second

// phaseEndToEnd starts the worker on the intake's backlog and measures how
// fast messages reach the provider, and what each delivered message costs
// in SQL statements and commits, receipts included.
func (b *bench) phaseEndToEnd(ctx context.Context) error {
	total, err := countEvents(ctx, b.mon)
	if err != nil {
		return err
	}
	counter := b.newSQLCounter(ctx)
	defer counter.close()
	// The web process's last counts from the intake must be published
	// before the first reading, or they would land in this phase's.
	b.logf("   waiting %s for Postgres to publish the intake's statistics", statsFlush)
	if err := sleepCtx(ctx, statsFlush); err != nil {
		return err
	}
	if err := counter.begin(ctx); err != nil {
		return err
	}
	walBefore, fpiBefore, walErr := readWAL(ctx, b.mon)
	updBefore, hotBefore, updErr := readMessageUpdates(ctx, b.mon)
	writesBefore, writesErr := readTableWrites(ctx, b.mon)
	start := time.Now()
	if b.worker, err = b.start("worker"); err != nil {
		return err
	}
	b.startRSS(b.worker)
	// The profile starts with the first message sent, so it shows the
	// backlog's work rather than the worker's start.
	var wait func() Profile
	var sent int
	var first, last time.Time
	// Each poll counts the sent messages, a scan of every message: every
	// 2 s it costs the machine a few percent, where every 250 ms it took
	// half a core from the workers it measures. The rate is read from the
	// messages' own send times, so the poll's period does not change it.
	ok, err := waitFor(ctx, 2*time.Second, 10*time.Minute, func() (bool, error) {
		var err error
		sent, first, last, err = sentSpan(ctx, b.mon)
		if sent > 0 && wait == nil {
			wait = b.profile("worker", 5*time.Second)
		}
		return sent >= total, err
	})
	if wait != nil {
		b.res.WorkerProfile = wait()
	}
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("the workers did not send the backlog within 10 minutes; see " + filepath.Join(b.dataDir, "worker.log"))
	}
	if span := last.Sub(first); sent > 1 && span > 0 {
		b.res.EndToEndMPS = float64(sent-1) / span.Seconds()
	}
	b.logf("   %d messages routed and sent, first to last send %s: %.0f messages/s (%s since the worker started)",
		sent, last.Sub(first).Round(time.Millisecond), b.res.EndToEndMPS, time.Since(start).Round(time.Millisecond))
	if err := b.settle(ctx); err != nil {
		return err
	}
	if b.res.Delivered, err = countDelivered(ctx, b.mon); err != nil {
		return err
	}
	// The worker and its sessions started with this phase, so their whole
	// CPU time is the backlog's: routing, dispatch, receipts.
	worker, sessions := b.sampleCPU(ctx, b.worker, "worker").since(cpuSample{})
	if sent > 0 {
		b.res.WorkerCPU, b.res.WorkerPGCPU = worker/time.Duration(sent), sessions/time.Duration(sent)
	}
	b.logf("   %d messages delivered (receipts applied); CPU per message: worker %s, its Postgres sessions %s",
		b.res.Delivered, perUnit(worker, sent), perUnit(sessions, sent))
	b.logf("   waiting %s for Postgres to publish the phase's statistics", statsFlush)
	if err := sleepCtx(ctx, statsFlush); err != nil {
		return err
	}
	walAfter, fpiAfter, walErr2 := readWAL(ctx, b.mon)
	updAfter, hotAfter, updErr2 := readMessageUpdates(ctx, b.mon)
	writesAfter, writesErr2 := readTableWrites(ctx, b.mon)
	if walErr == nil && walErr2 == nil && b.res.Delivered > 0 {
		// The server's WAL: other databases' writes would count too
		// (the report's load line tells whether anything else ran).
		b.res.WALPerMessage = float64(walAfter-walBefore) / float64(b.res.Delivered)
		b.res.FPIPerMessage = float64(fpiAfter-fpiBefore) / float64(b.res.Delivered)
	}
	if writesErr == nil && writesErr2 == nil {
		b.res.WritesPerMessage = writesPer(writesBefore, writesAfter, b.res.Delivered)
	}
	if updErr == nil && updErr2 == nil && updAfter > updBefore {
		b.res.MessageUpdates = updAfter - updBefore
		b.res.HOTShare = float64(hotAfter-hotBefore) / float64(updAfter-updBefore)
	}
	b.logf("   per delivered message: %.1f KB of WAL, %.2f full-page images; %d updates of messages rows, %.1f%% of them HOT",
		b.res.WALPerMessage/1024, b.res.FPIPerMessage, b.res.MessageUpdates, 100*b.res.HOTShare)
	b.logf("   writes per delivered message, the most index entries first:")
	for _, l := range writeLines(b.res.WritesPerMessage, 6) {
		b.logf("%s", l)
	}
	f, err := counter.end(ctx, b.res.Delivered, "delivered message")
	if err != nil {
		return err
	}
	b.res.CommitsPerMessage = f.Commits
	if f.Measured {
		b.res.StatementsPerMessage, b.res.NestedPerMessage = f.Statements, f.Nested
		b.res.TopStatements, b.res.SlowestStatements = f.Top, f.Slowest
	}
	return nil
}

// settle waits until the sandbox's receipts for the backlog have been
// applied (they run in the worker, outside River's queues), so the latency
// phase starts on an idle worker.
func (b *bench) settle(ctx context.Context) error {
	start := time.Now()
	ok, err := waitFor(ctx, 250*time.Millisecond, 5*time.Minute, func() (bool, error) {
		pending, err := countBacklog(ctx, b.mon)
		return pending == 0, err
	})
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("the backlog's receipts were not applied within 5 minutes")
	}
	b.logf("   receipts of the backlog applied %s after the last send", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// sleepCtx waits d unless ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
