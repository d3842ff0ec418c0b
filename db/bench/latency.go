package main

import (
	"context"
	"errors"
	"sync"
	"time"
)

// backlogEvery is how often the latency phase samples its backlog.
const backlogEvery = 2 * time.Second

// The delivery promise: at promiseLoad of the machine's sustainable rate,
// messages are handed to the provider within promiseWithin of being due.
const (
	promiseLoad   = 0.8
	promiseWithin = 10 * time.Second
)

// phaseLatency sends at Rate events per second for RateDuration, open loop,
// and measures accepted-to-provider latency from the database's own
// timestamps. Meanwhile it samples the backlog (events accepted and not yet
// sent) to tell a worker that keeps up from one falling behind. After the
// sending it waits at most Drain for the backlog to clear; events still
// unsent then count with their age, a lower bound.
func (b *bench) phaseLatency(ctx context.Context) error {
	since, err := dbNow(ctx, b.mon)
	if err != nil {
		return err
	}
	rate := b.cfg.Rate
	if rate == 0 {
		// The delivery promise is kept at 80% of what the machine
		// sustains: the end-to-end phase's rate.
		rate = int(promiseLoad * b.res.EndToEndMPS)
	}
	if rate < 1 {
		return errors.New("no rate for the latency phase: the end-to-end phase measured none (give --rate)")
	}
	b.res.LatencyRate = rate
	start := time.Now()
	// The sampler stops on a channel, not by cancelling its context: pgx
	// closes a connection whose query's context ends, and the monitor's
	// connection is shared.
	stopSampling := make(chan struct{})
	var samples []BacklogSample
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(backlogEvery)
		defer t.Stop()
		for {
			if n, err := countUnsent(ctx, b.mon, since); err == nil {
				samples = append(samples, BacklogSample{At: time.Since(start), Pending: n})
			}
			select {
			case <-stopSampling:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	_, errs := b.openLoop(ctx, float64(rate), b.cfg.RateDuration)
	sendEnd := time.Since(start)
	b.res.LatencyErrors = errs

	var waiting int
	drained, err := waitFor(ctx, 500*time.Millisecond, b.cfg.Drain, func() (bool, error) {
		var err error
		waiting, err = countUnsent(ctx, b.mon, since)
		return waiting == 0, err
	})
	close(stopSampling)
	wg.Wait()
	if err != nil {
		return err
	}
	b.res.Backlog = samples
	b.res.BacklogGrowing = backlogGrowing(samples, sendEnd, rate)
	if !drained {
		b.logf("   %d events still unsent %s after the sending ended", waiting, b.cfg.Drain)
	}
	b.res.LatencyP50, b.res.LatencyP95, b.res.LatencyP99, b.res.LatencyEvents, b.res.LatencyUnsent, b.res.WithinPromise, err = readLatency(ctx, b.mon, since)
	if err != nil {
		return err
	}
	b.logf("   %d events at %d/s for %s: %.2f%% handed over within %s; accepted-to-provider p50 %s, p95 %s, p99 %s, unsent %d, errors %d",
		b.res.LatencyEvents, rate, b.cfg.RateDuration, 100*b.res.PromiseShare(), promiseWithin, b.res.LatencyP50.Round(100*time.Microsecond),
		b.res.LatencyP95.Round(100*time.Microsecond), b.res.LatencyP99.Round(100*time.Microsecond),
		b.res.LatencyUnsent, b.res.LatencyErrors)
	b.logf("   backlog every %s: %s (%s over the second half)", backlogEvery, backlogLine(samples),
		map[bool]string{true: "growing", false: "steady"}[b.res.BacklogGrowing])
	return nil
}

// backlogLine lists the backlog samples compactly.
func backlogLine(samples []BacklogSample) string {
	var s []byte
	for i, x := range samples {
		if i > 0 {
			s = append(s, ' ')
		}
		s = append(s, []byte(itoa(x.Pending))...)
	}
	return string(s)
}
