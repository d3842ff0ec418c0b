package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/db/internal/tool"
)

// TestBench_Quick runs the quick benchmark against a freshly built herald
// and checks the report's shape: every phase measured something, every
// goal has a row whose verdict follows from its figure, and the load
// average is printed for each phase. It asserts no speed: the machine's
// load decides the figures.
func TestBench_Quick(t *testing.T) {
	if testing.Short() || os.Getenv("HERALD_TEST_TOOLS") == "" {
		t.Skip("the benchmark builds herald and runs it for a few minutes: HERALD_TEST_TOOLS=1 runs it (go tool task test sets it), -short skips it")
	}
	bin := filepath.Join(t.TempDir(), "herald")
	build := exec.Command("go", "build", "-o", bin, "github.com/heraldhq/herald")
	build.Dir = filepath.Join("..", "..")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build herald: %s", out)

	cfg := Defaults(true)
	// A lighter latency phase than --quick's: this is about the report's
	// shape, and other tests share the machine.
	cfg.Rate, cfg.RateDuration, cfg.Drain = 100, 4*time.Second, 30*time.Second
	// Fairness phases past one fair share (100) but small.
	cfg.Burst, cfg.Backlog = 200, 500
	cfg.Requests, cfg.OpenDuration, cfg.RiverJobs = 500, 2*time.Second, 2000
	cfg.BaselineDuration = time.Second
	// A small pages phase, so that the 10M comparison's windows run on
	// both sides.
	cfg.Messages = 2000
	// Herald's settings as the command reads them, in an environment that
	// sets none: the defaults `herald help env` lists.
	h, err := tool.FindHerald(context.Background(), bin, func(string) string { return "" })
	require.NoError(t, err)
	require.NoError(t, heraldSettings(h, &cfg))
	require.Equal(t, app.DefaultOwnerDatabaseURL, cfg.DatabaseURL)
	require.Equal(t, app.DefaultWorkers, cfg.Workers)
	require.Positive(t, cfg.PoolSize)
	cfg.DatabaseURL, cfg.Binary = dbtest.BaseURL(), h.Path
	// Named like the test databases, so db/devdb.sh reset drops one a
	// crashed run leaves behind.
	cfg.Database = fmt.Sprintf("herald_test_bench_%d", os.Getpid())
	// A smaller River baseline pool than the worker's: other tests share
	// the server's connections.
	cfg.PoolSize = 10
	var report bytes.Buffer
	cfg.Out = &report
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := Run(ctx, cfg)
	t.Log("\n" + report.String())
	require.NoError(t, err)

	require.Positive(t, r.InsertTxPS)
	if _, err := exec.LookPath("pgbench"); err == nil {
		require.Positive(t, r.PgbenchTPS, r.PgbenchNote)
	} else {
		require.NotEmpty(t, r.PgbenchNote)
	}
	require.Positive(t, r.RiverNoopJPS)
	require.Equal(t, cfg.RiverJobs, r.RiverJobs)
	require.Positive(t, r.IntakeRPS)
	require.Positive(t, r.OpenRequests)
	require.Equal(t, r.OpenRequests, r.OpenCost.Requests)
	require.Positive(t, r.OpenCost.Samples, "the open loop's wait events were sampled")
	require.Positive(t, r.OpenCost.Busy)
	require.Positive(t, r.EndToEndMPS)
	require.Len(t, r.EmptyWindows.P99, compareWindows, "the empty database's side of the 10M comparison")
	require.Positive(t, r.EmptyWindows.Cost.Samples)
	require.Positive(t, r.EmptyWindows.Cost.WALBytes, "the windows' inserts wrote WAL")
	require.Equal(t, cfg.Requests+r.OpenRequests+r.EmptyWindows.Cost.Requests+min(200, cfg.Requests), r.Delivered,
		"every accepted event (warm-up and the comparison's windows included) was delivered")
	require.Positive(t, r.CommitsPerMessage)
	if r.SQLNote == "" {
		require.Positive(t, r.StatementsPerMessage)
		require.NotEmpty(t, r.TopStatements)
		for _, s := range r.TopStatements {
			require.NotContains(t, s.Query, "herald-bench", "the benchmark's own statements are left out")
		}
	}
	require.Equal(t, cfg.Rate*int(cfg.RateDuration/time.Second), r.LatencyEvents)
	require.NotEmpty(t, r.Backlog)
	require.Positive(t, r.WorkerPeakRSSMB)
	require.Positive(t, r.WorkerLastRSSMB)
	require.Len(t, r.At10MWindows.P99, compareWindows, "the filled database's side, at the same rate")
	require.Equal(t, r.EmptyWindows.Rate, r.At10MWindows.Rate)
	require.Positive(t, r.At10MCost.Requests)
	require.Positive(t, r.BookingPanelMS)
	require.Len(t, r.Loads, 10, "a load average for each phase (retention and pages too, which the quick run skips)")
	require.Positive(t, r.WALPerMessage)
	require.Positive(t, r.MessageUpdates)
	for name, n := range map[string]Neighbour{"burst": r.Burst, "broadcast": r.Broadcast} {
		require.Equal(t, cfg.Burst, n.Sent, "%s: every message of the busy tenant was handed over", name)
		require.Positive(t, n.MPS, name)
		require.Positive(t, n.Events, "%s: the quiet tenant's confirmations", name)
		require.Zero(t, n.Unsent, name)
		require.Positive(t, n.P99, name)
	}
	require.Positive(t, r.Urgent.Backlog)
	require.Positive(t, r.Urgent.Urgent)
	require.Positive(t, r.Urgent.Confirmation)
	require.Positive(t, r.Urgent.BacklogDone)

	goals := report.String()[strings.Index(report.String(), "\nGoals\n"):]
	for _, g := range Goals(r) {
		require.Contains(t, goals, g.Goal)
		require.Contains(t, []string{verdictPass, verdictFail, verdictShort, verdictNotRun, verdictNotMeasured, verdictRecord}, g.Verdict)
		if strings.HasPrefix(g.Goal, "handed over within") || strings.HasPrefix(g.Goal, "no growing backlog") || strings.Contains(g.Goal, "vs River") ||
			strings.HasPrefix(g.Goal, "burst") || strings.HasPrefix(g.Goal, "broadcast") || strings.HasPrefix(g.Goal, "urgent") || strings.HasPrefix(g.Goal, "confirmation") {
			require.NotEqual(t, verdictPass, g.Verdict, "a run below the goal's load cannot pass it: %s", g.Goal)
		}
	}
}
