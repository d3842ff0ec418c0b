// Command herald-chaos is Herald's fault-injection suite, run by
// `go tool task chaos`, which builds it and the herald binary it starts. It
// starts Herald's web and worker processes on a fresh database per
// experiment, sends notifications over the API to three fakes that count
// every call by message, a webhook receiver, Meta's WhatsApp Cloud API and
// Amazon SES (with its events published through SNS), and meanwhile kills
// workers, kills the web process, restarts Postgres, ends the worker's
// sessions, holds locks the sends need, has the receiver fail or Meta and
// SES answer after Herald's send timeout. Then it checks that nothing was
// lost and nothing done twice: every accepted event is stored once and its
// message reached a final state once, Meta accepted each WhatsApp message
// and SES each e-mail once, and the receiver took each webhook message
// once, give or take the sends a SIGKILL or a restart caught between the
// provider's answer and the commit (the webhook channel is at least once,
// with one webhook-id per message; WhatsApp and SES have no idempotency
// key, so a second send is a second message to the passenger).
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
		"go tool task chaos -- [--messages N] [--kills N] [--seed N] [--storm D] [--throttle D] [--rate N] [--quota N] [--latency D-D] [--slow-latency D] [--slow-for D] [--send-timeout D] [--meta-fail F] [--lock-hold D] [--confirm-window D] [--experiments abcdefghi] [--pg-restart local|throwaway|off]\n"+
			"       herald-chaos --herald PATH [flags]",
		"Fault injection: kills, Postgres restarts and terminations, lock waits, provider storms and a slow Meta and SES on fresh databases; fails on any loss, duplicate or unexplained failure.",
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
	cc.Latency = latency{time.Second, 3 * time.Second}
	fs.Var(&cc.Latency, "latency", "how long the Meta and SES fakes take to accept a WhatsApp or e-mail send: a random duration between two, e.g. 1s-3s, or one")
	fs.DurationVar(&cc.SlowLatency, "slow-latency", 30*time.Second, "how long the Meta and SES fakes take in g, longer than the send timeout")
	fs.DurationVar(&cc.SlowFor, "slow-for", time.Minute, "how long the Meta and SES fakes stay slow in g")
	fs.DurationVar(&cc.SendTimeout, "send-timeout", 0, "HERALD_SEND_TIMEOUT of g's processes; 0: herald's default (15s)")
	fs.Float64Var(&cc.MetaFail, "meta-fail", 0.01, "the share of WhatsApp messages the Meta fake reports failed (131026), which the suite expects")
	fs.DurationVar(&cc.LockHold, "lock-hold", 3*time.Second, "how long i holds each lock on the send path's tables")
	fs.DurationVar(&cc.ConfirmWindow, "confirm-window", 0, "the tenant's confirmation window for every event (whole seconds, 1s to 24h); 0: herald's defaults (5m, 1m urgent)")
	fs.IntVar(&cc.Concurrency, "concurrency", 16, "concurrent API clients")
	fs.StringVar(&cc.Experiments, "experiments", "abcdefghi", "the experiments to run, by letter")
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
	case cc.SlowLatency <= 0 || cc.SlowFor <= 0 || cc.LockHold <= 0:
		return tool.Usagef("--slow-latency, --slow-for and --lock-hold must be positive")
	case cc.ConfirmWindow != 0 && (cc.ConfirmWindow < time.Second || cc.ConfirmWindow > 24*time.Hour || cc.ConfirmWindow%time.Second != 0):
		return tool.Usagef("--confirm-window is 0 or whole seconds from 1s to 24h, got %s", cc.ConfirmWindow)
	case cc.SendTimeout != 0 && (cc.SendTimeout < time.Second || cc.SendTimeout > 5*time.Minute):
		return tool.Usagef("--send-timeout is 0 or from 1s to 5m, as HERALD_SEND_TIMEOUT, got %s", cc.SendTimeout)
	case cc.MetaFail < 0 || cc.MetaFail > 0.5:
		return tool.Usagef("--meta-fail is a share from 0 to 0.5, got %g", cc.MetaFail)
	case strings.Trim(cc.Experiments, "abcdefghi") != "" || cc.Experiments == "":
		return tool.Usagef("--experiments takes letters from abcdefghi, got %q", cc.Experiments)
	case cc.PGRestart != "local" && cc.PGRestart != "throwaway" && cc.PGRestart != "off":
		return tool.Usagef("--pg-restart is local, throwaway or off, got %q", cc.PGRestart)
	}
	h, err := tool.FindHerald(ctx, *herald, getenv)
	if err != nil {
		return err
	}
	cc.Binary, cc.DatabaseURL = h.Path, h.OwnerURL()
	_, err = Run(ctx, cc)
	return err
}
