package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/jobs"
)

// insertClients is the insert baselines' client count, pgbench's -c.
const insertClients = 8

// phaseInsertBaseline measures the ceiling under any intake that writes
// durably, as pgbench measures it: one prepared single-row INSERT per
// autocommit transaction, 8 clients, for a fixed time. When pgbench is
// installed it runs the same script too and its own figure is printed
// beside the benchmark's.
func (b *bench) phaseInsertBaseline(ctx context.Context) error {
	if err := createRowsTable(ctx, b.mon); err != nil {
		return err
	}
	conns := make([]*pgx.Conn, insertClients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				_ = c.Close(context.Background())
			}
		}
	}()
	for i := range conns {
		c, err := pgx.Connect(ctx, b.dbURL)
		if err != nil {
			return err
		}
		conns[i] = c
		if _, err := c.Prepare(ctx, "bench_insert", insertRowSQL); err != nil {
			return err
		}
	}
	var count, errs atomic.Int64
	runCtx, cancel := context.WithTimeout(ctx, b.cfg.BaselineDuration)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				// The prepared statement's name runs it with Bind and
				// Execute only: one autocommit transaction per row.
				if _, err := c.Exec(runCtx, "bench_insert"); err != nil {
					if runCtx.Err() == nil {
						errs.Add(1)
					}
					continue
				}
				count.Add(1)
			}
		}()
	}
	wg.Wait()
	b.res.InsertTxPS = float64(count.Load()) / time.Since(start).Seconds()
	b.logf("   pgx, %d clients, prepared, %s: %.0f transactions/s (errors %d)",
		insertClients, b.cfg.BaselineDuration, b.res.InsertTxPS, errs.Load())
	if errs.Load() > 0 && count.Load() == 0 {
		return errors.New("every insert of the baseline failed")
	}
	b.pgbench(ctx)
	return nil
}

// pgbench runs pgbench on the insert script when it is on PATH; a missing
// or failing pgbench only costs its figure, which the report explains.
func (b *bench) pgbench(ctx context.Context) {
	bin, err := exec.LookPath("pgbench")
	if err != nil {
		b.res.PgbenchNote = "pgbench is not on PATH"
		b.logf("   pgbench: not run (%s)", b.res.PgbenchNote)
		return
	}
	script := filepath.Join(b.dataDir, "insert.sql")
	if err := os.WriteFile(script, []byte(insertRowSQL+";\n"), 0o600); err != nil {
		b.res.PgbenchNote = err.Error()
		return
	}
	secs := max(1, int(b.cfg.BaselineDuration.Round(time.Second).Seconds()))
	// A busy machine may spend a short run's whole time connecting 8
	// clients, and pgbench then has no rate to print: the run is made
	// again with a count of transactions per client instead, which ends
	// with a rate however slow the machine is.
	run := "-T " + strconv.Itoa(secs)
	out, tps, ok := b.runPgbench(ctx, bin, script, "-T", strconv.Itoa(secs))
	if !ok && b.res.PgbenchNote == "" {
		b.logf("   pgbench -T %d processed nothing (a busy machine); running -t %d instead", secs, pgbenchCount)
		run = "-t " + strconv.Itoa(pgbenchCount)
		out, tps, ok = b.runPgbench(ctx, bin, script, "-t", strconv.Itoa(pgbenchCount))
	}
	switch {
	case b.res.PgbenchNote != "":
		b.logf("   %s\n%s", b.res.PgbenchNote, out)
	case !ok:
		b.res.PgbenchNote = "pgbench printed no tps line"
		b.logf("   %s:\n%s", b.res.PgbenchNote, out)
	default:
		b.res.PgbenchTPS = tps
		b.logf("   pgbench -c %d -j 2 %s -M prepared: %.0f transactions/s", insertClients, run, tps)
	}
}

// pgbenchCount is the transactions per client of the counted pgbench run.
const pgbenchCount = 200

// runPgbench runs pgbench on the insert script with the run's length
// (-T seconds or -t transactions) and returns its output and rate; a
// failure to run sets the result's note.
func (b *bench) runPgbench(ctx context.Context, bin, script, lengthFlag, length string) (string, float64, bool) {
	// -n: no vacuum of pgbench's own tables, which this database lacks.
	cmd := exec.CommandContext(ctx, bin, "-n", "-c", strconv.Itoa(insertClients), "-j", "2",
		lengthFlag, length, "-M", "prepared", "-f", script, b.dbURL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		b.res.PgbenchNote = fmt.Sprintf("pgbench failed: %v", err)
		return out.String(), 0, false
	}
	tps, ok := parsePgbenchTPS(out.String())
	return out.String(), tps, ok
}

var pgbenchTPS = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \((without initial connection time|excluding connections establishing)\)`)

// parsePgbenchTPS reads pgbench's throughput line, which leaves connection
// set-up out ("without initial connection time" since PostgreSQL 14,
// "excluding connections establishing" before).
func parsePgbenchTPS(out string) (float64, bool) {
	m := pgbenchTPS.FindStringSubmatch(out)
	if m == nil {
		return 0, false
	}
	tps, err := strconv.ParseFloat(m[1], 64)
	return tps, err == nil
}

type noopArgs struct {
	N int `json:"n"`
}

// noopKind is the River baseline's job kind, deleted after it.
const noopKind = "bench_noop"

// Kind implements river.JobArgs.
func (noopArgs) Kind() string { return noopKind }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (w *noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// baselineQueues are the queues a benchmark message's jobs run on: its
// route job, then its e-mail dispatch. The River baseline spreads its jobs
// over them alike.
var baselineQueues = []string{app.QueueRoute, app.QueueDispatchEmail}

// phaseRiverBaseline measures River working no-op jobs on this database:
// the ceiling for any pipeline built of River jobs. It runs as Herald's
// worker does: a pool of the worker's size, every queue with the worker's
// MaxWorkers, the same fetch cooldown; the jobs go half to the route queue
// and half to the e-mail queue, the two a benchmark message passes. It is
// timed from the first job River completed to the last, as River recorded
// them, so the client's start-up is not part of it.
func (b *bench) phaseRiverBaseline(ctx context.Context) error {
	pcfg, err := pgxpool.ParseConfig(b.dbURL)
	if err != nil {
		return err
	}
	pcfg.MaxConns = b.cfg.PoolSize
	pcfg.MinConns = 0
	pcfg.MaxConnIdleTime = 2 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	queues := make(map[string]river.QueueConfig, len(b.cfg.Workers))
	for name, n := range b.cfg.Workers {
		queues[name] = river.QueueConfig{MaxWorkers: n}
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues: queues, Workers: workers, FetchCooldown: jobs.FetchCooldown,
		Logger: discardLogger(),
	})
	if err != nil {
		return err
	}
	n := b.cfg.RiverJobs
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noopArgs{N: i}, InsertOpts: &river.InsertOpts{Queue: baselineQueues[i%len(baselineQueues)]}}
	}
	if _, err := client.InsertManyFast(ctx, params); err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	var done int
	var first, last time.Time
	ok, err := waitFor(ctx, 250*time.Millisecond, 10*time.Minute, func() (bool, error) {
		var err error
		done, first, last, err = riverWindow(ctx, b.mon, noopKind)
		return done >= n, err
	})
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = client.Stop(stopCtx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("River completed %d of %d no-op jobs within 10 minutes", done, n)
	}
	elapsed := last.Sub(first)
	if elapsed <= 0 {
		return fmt.Errorf("River completed %d jobs within one timestamp; raise --river-jobs", n)
	}
	// n jobs finished over n-1 intervals between the first and the last.
	b.res.RiverNoopJPS = float64(n-1) / elapsed.Seconds()
	b.res.RiverJobs = n
	b.logf("   %d no-op jobs on %v (pool %d), first to last completion %s: %.0f jobs/s",
		n, b.cfg.Workers, b.cfg.PoolSize, elapsed.Round(time.Millisecond), b.res.RiverNoopJPS)
	return deleteJobs(ctx, b.mon, noopKind)
}
