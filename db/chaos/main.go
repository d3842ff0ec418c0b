// Command herald-chaos is Herald's fault-injection suite, run by
// `go tool task chaos`, which builds it and the herald binary it starts. It
// starts Herald's web and worker processes on a fresh database per
// experiment, sends notifications over the API to a fake provider that
// counts every call by message, and meanwhile kills workers, kills the web
// process, restarts Postgres, or has the provider fail. Then it checks that
// nothing was lost and nothing done twice: every accepted event is stored
// once and its message reached a final state once, and the provider took
// each message once, give or take the sends a SIGKILL or a restart caught
// between the provider's answer and the commit.
//
// Every wait is on a condition (the provider's counters, the database),
// bounded by a generous timeout; nothing depends on the machine's speed.
package main

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/heraldhq/herald/db/internal/tool"
)

func main() { tool.Main("herald-chaos", run) }

// run parses the flags, finds herald and runs the experiments.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := tool.NewFlags("chaos",
		"go tool task chaos -- [--messages N] [--kills N] [--seed N] [--storm D] [--throttle D] [--rate N] [--quota N] [--experiments abcdef] [--pg-restart local|throwaway|off]\n"+
			"       herald-chaos --herald PATH [flags]",
		"Fault injection: kills, Postgres restarts and provider storms on fresh databases; fails on any loss or duplicate.",
		stdout, stderr)
	cc := Config{Out: stdout}
	herald := fs.Herald()
	fs.IntVar(&cc.Messages, "messages", 20000, "events (one message each) per experiment")
	fs.IntVar(&cc.Kills, "kills", 5, "SIGKILLs of the worker (experiment a) and of the web process (b)")
	fs.Uint64Var(&cc.Seed, "seed", 0, "seed of the kill moments; 0 picks one, printed")
	fs.DurationVar(&cc.Storm, "storm", 2*time.Minute, "how long the provider answers 503 (d)")
	fs.DurationVar(&cc.Throttle, "throttle", time.Minute, "how long the provider then answers 429 with Retry-After (d)")
	fs.Float64Var(&cc.Rate, "rate", 100, "the account's sends per second that two workers share (e)")
	fs.IntVar(&cc.Quota, "quota", 0, "the plan's monthly webhook quota (e); 0: half the messages")
	fs.IntVar(&cc.Concurrency, "concurrency", 16, "concurrent API clients")
	fs.StringVar(&cc.Experiments, "experiments", "abcdef", "the experiments to run, by letter")
	fs.StringVar(&cc.PGRestart, "pg-restart", "local", "where c restarts Postgres: local (the cluster DATABASE_URL names; it disturbs every other user of it), throwaway (a temporary cluster of its own) or off")
	fs.StringVar(&cc.PGData, "pgdata", "", "the local cluster's data directory; default: found from the server on port 54320")
	fs.DurationVar(&cc.Timeout, "timeout", 30*time.Minute, "limit on each experiment")
	fs.BoolVar(&cc.Keep, "keep", false, "keep the databases and the processes' logs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case cc.Messages < 1 || cc.Kills < 0 || cc.Concurrency < 1 || cc.Quota < 0 || cc.Rate <= 0 || cc.Timeout <= 0:
		return tool.Usagef("counts, rate and timeout must be positive")
	case cc.Storm < 0 || cc.Throttle < 0:
		return tool.Usagef("--storm and --throttle must not be negative")
	case strings.Trim(cc.Experiments, "abcdef") != "" || cc.Experiments == "":
		return tool.Usagef("--experiments takes letters from abcdef, got %q", cc.Experiments)
	case cc.PGRestart != "local" && cc.PGRestart != "throwaway" && cc.PGRestart != "off":
		return tool.Usagef("--pg-restart is local, throwaway or off, got %q", cc.PGRestart)
	}
	h, err := tool.FindHerald(ctx, *herald, getenv)
	if err != nil {
		return err
	}
	cc.Binary, cc.DatabaseURL = h.Path, h.Env("DATABASE_URL")
	_, err = Run(ctx, cc)
	return err
}
