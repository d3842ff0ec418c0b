// Command herald-bench is Herald's load generator, run by
// `go tool task bench`, which builds it and the herald binary it starts. It
// starts Herald's web and worker processes on a fresh database, measures the
// ceilings Herald works under (single-row insert transactions, as pgbench
// counts them; River working no-op jobs with the worker's own pool and
// queues), then Herald itself: intake closed and open loop, end-to-end
// throughput with the SQL statements and commits each delivered message
// costs, accepted-to-provider latency at a sustained rate, and the worker's
// memory. It ends with a table of the performance goals, each with its
// figure, target and PASS or FAIL.
//
// The statements it runs on the benchmark database are in sql.go; Herald's
// own are in package db, which exports nothing for the benchmark.
//
// A phase is a method `func (b *bench) phaseX(ctx context.Context) error` in
// a file of its own that fills fields of Result; it runs once listed in
// Run's steps, and the goals it serves read those fields in goals.go.
package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db/internal/tool"
)

func main() { tool.Main("herald-bench", run) }

// run parses the flags, finds herald and runs the benchmark. --quick
// shrinks every phase to seconds (development and tests); other flags
// still override it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := tool.NewFlags("bench",
		"go tool task bench -- [--quick] [--requests N] [--rate N] [--duration D] [--river-jobs N] ...\n"+
			"       herald-bench --herald PATH [flags]",
		"Load test against honest baselines: herald web and worker on a fresh database, the performance goals checked.",
		stdout, stderr)
	quick := slices.Contains(args, "--quick") || slices.Contains(args, "-quick")
	bc := Defaults(quick)
	bc.Out = stdout
	herald := fs.Herald()
	fs.BoolVar(&quick, "quick", false, "shrink every phase for development: 2,000 requests, 10,000 River jobs, a 10 s latency phase")
	fs.IntVar(&bc.Tenants, "tenants", bc.Tenants, "tenants to spread the load over")
	fs.IntVar(&bc.Concurrency, "concurrency", bc.Concurrency, "concurrent HTTP clients in the closed-loop intake phase")
	fs.IntVar(&bc.Requests, "requests", bc.Requests, "requests in the closed-loop intake phase")
	fs.DurationVar(&bc.OpenDuration, "open-duration", bc.OpenDuration, "length of the open-loop intake phase (at half the closed loop's rate)")
	fs.IntVar(&bc.Rate, "rate", bc.Rate, "events per second in the latency phase (0: 80% of the end-to-end rate, where the delivery promise is checked)")
	fs.DurationVar(&bc.RateDuration, "duration", bc.RateDuration, "length of the latency phase")
	fs.DurationVar(&bc.Drain, "drain", bc.Drain, "longest wait for the latency phase's backlog after its sending")
	fs.DurationVar(&bc.BaselineDuration, "baseline-duration", bc.BaselineDuration, "length of each insert baseline (the benchmark's and pgbench's)")
	fs.IntVar(&bc.RiverJobs, "river-jobs", bc.RiverJobs, "no-op jobs of the River baseline")
	fs.BoolVar(&bc.Keep, "keep", false, "keep the benchmark database and logs")
	fs.StringVar(&bc.ProfileDir, "profile", "", "directory for CPU profiles of the web and worker processes")
	fs.IntVar(&bc.PruneMessages, "prune-messages", bc.PruneMessages, "old messages retention prunes while intake runs (0 skips the phase)")
	fs.IntVar(&bc.Messages, "messages", bc.Messages, "messages in one tenant for the pages phase (0 skips it)")
	fs.IntVar(&bc.Burst, "burst", bc.Burst, "events of the busy tenant's burst, and passengers of its broadcast, in the noisy-neighbour phase (0 skips it)")
	fs.IntVar(&bc.Backlog, "backlog", bc.Backlog, "reminders queued ahead of the urgent event in the urgent-first phase (0 skips it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := bc.Check(); err != nil {
		return tool.Usagef("%v", err)
	}
	h, err := tool.FindHerald(ctx, *herald, getenv)
	if err != nil {
		return err
	}
	bc.Binary, bc.Database = h.Path, databaseName(getenv)
	if err := heraldSettings(h, &bc); err != nil {
		return err
	}
	_, err = Run(ctx, bc)
	return err
}

// databaseName is the database the benchmark creates, fills and drops on
// the server DATABASE_URL names: herald_bench, or HERALD_BENCH_DATABASE when
// set, so that two benchmarks on one server do not drop each other's.
func databaseName(getenv func(string) string) string {
	if name := getenv("HERALD_BENCH_DATABASE"); name != "" {
		return name
	}
	return "herald_bench"
}

// heraldSettings fills in what the benchmark takes from Herald's
// configuration, as the processes it starts read it from the same
// environment: the server, and the worker's pool size and workers per
// queue, which the River baseline runs with.
func heraldSettings(h *tool.Herald, bc *Config) error {
	bc.DatabaseURL = h.OwnerURL()
	n, err := strconv.Atoi(h.Env("HERALD_DB_MAX_CONNS"))
	if err != nil {
		return fmt.Errorf("HERALD_DB_MAX_CONNS: %w", err)
	}
	bc.PoolSize = int32(n)
	bc.Workers = make(map[string]int, len(app.DefaultWorkers))
	for q := range app.DefaultWorkers {
		name := "HERALD_WORKERS_" + strings.ToUpper(q)
		if bc.Workers[q], err = strconv.Atoi(h.Env(name)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
