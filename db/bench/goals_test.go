package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fullRun is a made-up result of a full-length run that meets every goal
// it measured; the 10-million-message phases did not run.
func fullRun() *Result {
	cfg := Defaults(false)
	return &Result{
		Config: cfg, LoadStart: "1.30",
		InsertTxPS: 10000, PgbenchTPS: 10700, RiverNoopJPS: 12000, RiverJobs: 100000,
		IntakeRPS: 6000, OpenRate: 3000, OpenRequests: 60000, OpenP99: 20 * time.Millisecond,
		EndToEndMPS: 4000, Delivered: 20000, StatementsPerMessage: 6, CommitsPerMessage: 1.5,
		IntakeSQL: SQLFigures{Statements: 2, Commits: 1, Measured: true},
		WorkerCPU: 400 * time.Microsecond, WorkerPGCPU: 700 * time.Microsecond,
		WALPerMessage: 6000, MessageUpdates: 60000, HOTShare: 0.85,
		LatencyRate: 3200, LatencyEvents: 384000, WithinPromise: 384000, LatencyP50: 20 * time.Millisecond, LatencyP99: 120 * time.Millisecond,
		Backlog:         []BacklogSample{{At: 2 * time.Second, Pending: 30}, {At: 4 * time.Second, Pending: 25}},
		WorkerPeakRSSMB: 120,
		Burst:           Neighbour{Events: 250, P50: 80 * time.Millisecond, P99: 400 * time.Millisecond, Sent: 5000, MPS: 3500},
		Broadcast:       Neighbour{Events: 200, P50: 90 * time.Millisecond, P99: 600 * time.Millisecond, Sent: 5000, MPS: 3600},
		Urgent:          UrgentFirst{Backlog: 19000, Urgent: 300 * time.Millisecond, Confirmation: 900 * time.Millisecond, BacklogDone: 6 * time.Second},
	}
}

// rowWith returns the one goal row whose label holds every word.
func rowWith(t *testing.T, rows []GoalRow, words ...string) GoalRow {
	t.Helper()
	var found []GoalRow
	for _, r := range rows {
		all := true
		for _, w := range words {
			all = all && strings.Contains(r.Goal, w)
		}
		if all {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1, "one goal row with %q", words)
	return found[0]
}

func verdicts(rows []GoalRow) map[string]string {
	m := map[string]string{}
	for _, r := range rows {
		m[r.Goal] = r.Verdict
	}
	return m
}

func TestGoals(t *testing.T) {
	t.Parallel()

	t.Run("EveryGoalHasARow", func(t *testing.T) {
		t.Parallel()
		rows := Goals(fullRun())
		require.Len(t, rows, 23)
		for _, want := range []string{"burst of 5000: other", "burst of 5000: handed", "broadcast to a trip of 5000", "broadcast to 5000: handed",
			"urgent event", "confirmation behind", "within 10s", "backlog", "CPU per delivered", "WAL", "HOT",
			"vs River", "vs one-row insert", "open loop", "statements", "commits", "RSS", "booking panel", "slowest filter",
			"slowest deep page", "dashboard", "empty database", "pruning"} {
			n := 0
			for _, r := range rows {
				if strings.Contains(r.Goal, want) {
					n++
				}
			}
			require.Equal(t, 1, n, "one row for %q", want)
		}
	})

	t.Run("MetGoalsPassAndUnrunOnesSaySo", func(t *testing.T) {
		t.Parallel()
		for _, r := range Goals(fullRun()) {
			switch {
			case strings.HasPrefix(r.Goal, "10M") || strings.Contains(r.Goal, "pruning"):
				require.Equal(t, verdictNotRun, r.Verdict, r.Goal)
				require.Equal(t, "-", r.Measured, r.Goal)
			case strings.Contains(r.Goal, " vs "):
				require.Equal(t, verdictRecord, r.Verdict, "throughput is for the record: %s", r.Goal)
			default:
				require.Equal(t, verdictPass, r.Verdict, "%s: %+v", r.Goal, r)
			}
		}
	})

	t.Run("RatiosAgainstTheBaselinesForTheRecord", func(t *testing.T) {
		t.Parallel()
		r := fullRun()
		r.EndToEndMPS = 3000 // 0.25 of River's 12,000
		r.IntakeRPS = 5000   // below half of pgbench's 10,700, above half of pgx's
		rows := Goals(r)
		river, intake := rowWith(t, rows, "vs River"), rowWith(t, rows, "vs one-row insert")
		require.Equal(t, "0.250", river.Ratio)
		require.Equal(t, verdictRecord, river.Verdict)
		require.Equal(t, "0.467", intake.Ratio, "intake is measured against the higher baseline")
		require.Contains(t, intake.Target, "pgbench")
		require.Equal(t, verdictRecord, intake.Verdict)
	})

	t.Run("FairnessAgainstTheirLimits", func(t *testing.T) {
		t.Parallel()
		r := fullRun()
		r.Burst.P99 = 1100 * time.Millisecond
		r.Broadcast.MPS = 3000 // 0.75 of the end-to-end rate
		r.Urgent.Urgent = 2100 * time.Millisecond
		r.Urgent.Confirmation = 7 * time.Second // after the last reminder
		rows := Goals(r)
		require.Equal(t, verdictFail, rowWith(t, rows, "burst", "p99").Verdict)
		require.Equal(t, verdictPass, rowWith(t, rows, "burst", "handed over").Verdict)
		require.Equal(t, verdictFail, rowWith(t, rows, "broadcast to 5000", "handed over").Verdict)
		require.Equal(t, verdictPass, rowWith(t, rows, "broadcast", "p99").Verdict)
		require.Equal(t, verdictFail, rowWith(t, rows, "urgent event").Verdict)
		require.Equal(t, verdictFail, rowWith(t, rows, "confirmation behind").Verdict)

		r.Config.Burst, r.Config.Backlog = 1000, 3000
		r.Burst.P99, r.Urgent.Urgent = 300*time.Millisecond, time.Second
		rows = Goals(r)
		require.Equal(t, verdictShort, rowWith(t, rows, "burst", "p99").Verdict, "a burst smaller than 5,000 cannot pass")
		require.Equal(t, verdictShort, rowWith(t, rows, "urgent event").Verdict, "nor a backlog smaller than 20,000")
	})

	t.Run("MissedLimitsFail", func(t *testing.T) {
		t.Parallel()
		r := fullRun()
		r.OpenP99 = 26 * time.Millisecond
		r.WithinPromise = r.LatencyEvents - 385 // 99.8997%
		r.WorkerPGCPU = 801 * time.Microsecond
		r.WALPerMessage, r.HOTShare = 8*1024+1, 0.79
		r.Burst.P99, r.Broadcast.P99, r.Burst.MPS, r.Broadcast.MPS = 1001*time.Millisecond, 2*time.Second, 3000, 100
		r.Urgent.Urgent, r.Urgent.Confirmation = 2001*time.Millisecond, 7*time.Second
		r.StatementsPerMessage, r.CommitsPerMessage = 8.5, 2.1 // 10.5 and 3.1 with intake's
		r.WorkerPeakRSSMB = 201
		r.BacklogGrowing = true
		r.ExplorerDeepMaxMS, r.PruneIntakeP99Ratio = 51, 1.3
		r.EmptyWindows = Windows{Rate: 1000, P99: []time.Duration{20 * time.Millisecond, 19 * time.Millisecond, 21 * time.Millisecond}}
		r.At10MWindows = Windows{Rate: 1000, P99: []time.Duration{27 * time.Millisecond, 26 * time.Millisecond, 28 * time.Millisecond}} // 1.35 x
		for goal, v := range verdicts(Goals(r)) {
			if strings.Contains(goal, " vs ") {
				require.Equal(t, verdictRecord, v, goal)
				continue
			}
			if v == verdictNotRun {
				require.True(t, strings.HasPrefix(goal, "10M") && !strings.Contains(goal, "page") && !strings.Contains(goal, "intake"), goal)
				continue
			}
			require.Equal(t, verdictFail, v, goal)
		}
	})

	t.Run("AShortRunCannotPass", func(t *testing.T) {
		t.Parallel()
		r := fullRun()
		r.Config = Defaults(true)
		r.RiverJobs = r.Config.RiverJobs
		rows := Goals(r)
		v := verdicts(rows)
		require.Equal(t, verdictShort, rowWith(t, rows, "within 10s").Verdict, "a 10 s latency phase is short")
		require.Equal(t, verdictShort, rowWith(t, rows, "burst", "p99").Verdict)
		require.Equal(t, verdictPass, rowWith(t, rows, "SQL statements").Verdict, "the SQL counts do not depend on the load")
		_ = v

		r.WithinPromise = r.LatencyEvents / 2
		require.Equal(t, verdictFail, rowWith(t, Goals(r), "within 10s").Verdict, "a short run still fails")

		r = fullRun()
		r.Config.Rate = 5000
		require.Equal(t, verdictShort, rowWith(t, Goals(r), "within 10s").Verdict, "the promise is kept at 80% of the end-to-end rate only")
	})

	t.Run("UnsentEventsFailTheBacklogGoal", func(t *testing.T) {
		t.Parallel()
		r := fullRun()
		r.LatencyUnsent = 12
		require.Equal(t, verdictFail, rowWith(t, Goals(r), "backlog").Verdict)
	})

	t.Run("FailedRequestsFailTheBacklogGoal", func(t *testing.T) {
		t.Parallel()
		r := fullRun()
		r.LatencyErrors = 3
		rows := Goals(r)
		require.Equal(t, verdictFail, rowWith(t, rows, "backlog").Verdict)
		require.Contains(t, rowWith(t, rows, "backlog").Measured, "3 requests failed")
	})

	t.Run("StatementsNotMeasured", func(t *testing.T) {
		t.Parallel()
		r := fullRun()
		r.StatementsPerMessage, r.SQLNote = 0, "pg_stat_statements cannot be read"
		require.Equal(t, verdictNotMeasured, rowWith(t, Goals(r), "SQL statements").Verdict)
		r.Delivered = 0
		require.Equal(t, verdictNotRun, rowWith(t, Goals(r), "commits").Verdict)
	})

	t.Run("IntakeCountsInTheSQLGoals", func(t *testing.T) {
		t.Parallel()
		r := fullRun()
		r.StatementsPerMessage, r.CommitsPerMessage = 9, 2.5
		rows := Goals(r)
		statements, commits := rowWith(t, rows, "SQL statements"), rowWith(t, rows, "commits")
		require.Equal(t, "11.00 (intake 2.00 + 9.00)", statements.Measured)
		require.Equal(t, verdictFail, statements.Verdict, "9 after intake passes alone, 11 with it does not")
		require.Equal(t, "3.50 (intake 1.00 + 2.50)", commits.Measured)
		require.Equal(t, verdictFail, commits.Verdict)

		// Without intake's figure the delivery's alone cannot pass.
		r.StatementsPerMessage, r.IntakeSQL = 5, SQLFigures{}
		statements = rowWith(t, Goals(r), "SQL statements")
		require.Equal(t, "5.00 without intake", statements.Measured)
		require.Equal(t, verdictShort, statements.Verdict)
	})

	t.Run("NothingRan", func(t *testing.T) {
		t.Parallel()
		for _, r := range Goals(&Result{}) {
			require.Equal(t, verdictNotRun, r.Verdict, r.Goal)
		}
	})

	t.Run("TenMillionRowsFilledByTheirPhases", func(t *testing.T) {
		t.Parallel()
		r := fullRun()
		r.BookingPanelMS, r.ExplorerFilterMaxMS, r.ExplorerDeepMaxMS, r.DashboardMS = 12, 40, 30, 49
		r.PruneIntakeP99Ratio = 1.1
		r.EmptyWindows = Windows{Rate: 1000, P99: []time.Duration{20 * time.Millisecond}}
		r.At10MWindows = Windows{Rate: 1000, P99: []time.Duration{22 * time.Millisecond}}
		for goal, v := range verdicts(Goals(r)) {
			if strings.Contains(goal, " vs ") {
				continue
			}
			require.Equal(t, verdictPass, v, goal)
		}
	})

	t.Run("TenMillionIntakeComparesTheMedianWindows", func(t *testing.T) {
		t.Parallel()
		r := fullRun()
		// One stalled window on each side: the medians compare the rest.
		r.EmptyWindows = Windows{Rate: 900, Length: 4 * time.Second, P99: []time.Duration{
			10 * time.Millisecond, 60 * time.Millisecond, 11 * time.Millisecond, 12 * time.Millisecond, 10 * time.Millisecond}}
		r.At10MWindows = Windows{Rate: 900, Length: 4 * time.Second, P99: []time.Duration{
			12 * time.Millisecond, 11 * time.Millisecond, 90 * time.Millisecond, 12 * time.Millisecond, 13 * time.Millisecond}}
		// A single window at the open loop's rate, as before, would fail.
		r.OpenP99, r.IntakeP99At10M = 10*time.Millisecond, 90*time.Millisecond
		row := at10MRow(r)
		require.Equal(t, verdictPass, row.Verdict)
		require.Equal(t, "1.09", row.Ratio, "12 ms against 11 ms")
		require.Equal(t, "12.0 ms (median of 5 windows at 900/s)", row.Measured)
		require.Equal(t, "10.0, 60.0, 11.0, 12.0, 10.0 ms", r.EmptyWindows.spread(), "in the order they ran")
		require.Equal(t, []time.Duration{10 * time.Millisecond, 60 * time.Millisecond, 11 * time.Millisecond, 12 * time.Millisecond, 10 * time.Millisecond},
			r.EmptyWindows.P99, "the median leaves the series as it was")

		r.At10MWindows.P99[1] = 14 * time.Millisecond
		r.At10MWindows.P99[4] = 14 * time.Millisecond
		row = at10MRow(r)
		require.Equal(t, verdictFail, row.Verdict, "14 ms against 11 ms is 1.27x")

		r.At10MWindows = Windows{}
		require.Equal(t, verdictNotRun, at10MRow(r).Verdict, "no windows at 10M")
	})
}

func TestBacklogGrowing(t *testing.T) {
	t.Parallel()
	samples := func(pending ...int) []BacklogSample {
		s := make([]BacklogSample, len(pending))
		for i, p := range pending {
			s[i] = BacklogSample{At: time.Duration(i+1) * 2 * time.Second, Pending: p}
		}
		return s
	}
	send := 20 * time.Second
	require.False(t, backlogGrowing(samples(10, 40, 20, 35, 15, 30, 25, 20, 30, 25), send, 1000), "wobbling around a level")
	require.True(t, backlogGrowing(samples(0, 500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500), send, 1000), "climbing")
	require.False(t, backlogGrowing(samples(0, 500, 1000, 1500, 2000, 2000, 1800, 1500, 1000, 500), send, 1000), "grew, then caught up")
	require.False(t, backlogGrowing(samples(0, 500, 1000, 1500, 2000, 2010, 2020, 2030, 2040, 2050), send, 1000), "a slope of 5 a second is under 1% of the rate of 1,000")
	require.False(t, backlogGrowing(samples(5), send, 1000), "too few samples")
	drain := append(samples(0, 500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500), BacklogSample{At: 30 * time.Second, Pending: 0})
	require.True(t, backlogGrowing(drain, send, 1000), "samples after the sending are not part of it")
}

func TestStatementsDelta(t *testing.T) {
	t.Parallel()
	before := byKey([]pgStatement{
		{QueryID: 1, TopLevel: true, Query: "INSERT INTO messages ...", Calls: 100},
		{QueryID: 2, TopLevel: true, Query: "BEGIN", Calls: 50},
	})
	after := []pgStatement{
		{QueryID: 1, TopLevel: true, Query: "INSERT INTO messages ...", Calls: 300, TotalMS: 50},
		{QueryID: 2, TopLevel: true, Query: "BEGIN", Calls: 250, TotalMS: 900},
		{QueryID: 3, TopLevel: true, Query: "commit", Calls: 200},
		{QueryID: 4, TopLevel: true, Query: "SELECT id FROM contacts", Calls: 100, TotalMS: 30},
		{QueryID: 4, TopLevel: true, Query: "SELECT id FROM contacts", Calls: 100, TotalMS: 40}, // a second role
		{QueryID: 5, TopLevel: false, Query: "SELECT 1 FROM ONLY tenants", Calls: 300},
		{QueryID: 6, TopLevel: true, Query: "SELECT untouched", Calls: 0},
	}
	top, nested, shares, slowest := statementsDelta(before, after, 100)
	require.InDelta(t, 4.0, top, 1e-9, "200 inserts and 200 selects over 100 messages; BEGIN and commit left out")
	require.InDelta(t, 3.0, nested, 1e-9)
	require.Len(t, shares, 5)
	require.Equal(t, "SELECT 1 FROM ONLY tenants", shares[0].Query)
	require.False(t, shares[0].TopLevel)
	require.InDelta(t, 2.0, shares[1].PerMessage, 1e-9)
	// By time: transaction control and nested statements left out; the
	// second role's time adds to the first's.
	require.Len(t, slowest, 2)
	require.Equal(t, "SELECT id FROM contacts", slowest[0].Query)
	require.InDelta(t, 0.7, slowest[0].MSPerMessage, 1e-9)
	require.Equal(t, "INSERT INTO messages ...", slowest[1].Query)
	require.InDelta(t, 0.5, slowest[1].MSPerMessage, 1e-9, "50 ms over 100 messages: none of it before")
}

func TestTransactionControl(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]bool{
		"BEGIN": true, "begin": true, "commit": true, "COMMIT;": true, "ROLLBACK": true,
		"BEGIN ISOLATION LEVEL SERIALIZABLE": true, "START TRANSACTION": true,
		"SELECT set_config($1, $2, $3)": false, "INSERT INTO commits VALUES ($1)": false, "": false,
	} {
		require.Equal(t, want, transactionControl(q), q)
	}
}

func TestParsePgbenchTPS(t *testing.T) {
	t.Parallel()
	out := `pgbench (15.14 (Debian 15.14-0+deb12u1))
transaction type: /tmp/insert.sql
scaling factor: 1
query mode: prepared
number of clients: 8
number of threads: 2
duration: 10 s
number of transactions actually processed: 107153
latency average = 0.746 ms
initial connection time = 12.501 ms
tps = 10715.331906 (without initial connection time)
`
	tps, ok := parsePgbenchTPS(out)
	require.True(t, ok)
	require.InDelta(t, 10715.33, tps, 0.01)
	tps, ok = parsePgbenchTPS("tps = 812.5 (excluding connections establishing)\n")
	require.True(t, ok, "PostgreSQL 13 and older")
	require.InDelta(t, 812.5, tps, 0.01)
	_, ok = parsePgbenchTPS("pgbench: error: connection refused\n")
	require.False(t, ok)
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond
	}
	require.Equal(t, 50*time.Millisecond, percentile(ds, 50))
	require.Equal(t, 99*time.Millisecond, percentile(ds, 99))
	require.Equal(t, time.Duration(0), percentile(nil, 99))
}

func TestWriteReport(t *testing.T) {
	t.Parallel()
	r := fullRun()
	r.Loads = []PhaseLoad{{Phase: "intake", Load: "1.42"}}
	r.TopStatements = []StatementShare{{Query: "SELECT\n   id FROM contacts", PerMessage: 1.5, TopLevel: true}}
	var out bytes.Buffer
	WriteReport(&out, r)
	s := out.String()
	require.Contains(t, s, "Load average: 1.30 at the start")
	require.Contains(t, s, "  1.42   intake")
	require.Contains(t, s, "1.50  SELECT id FROM contacts")
	require.Contains(t, s, "pgbench 10700", "the made-up pgbench figure is in the report")
	goals := s[strings.Index(s, "\nGoals\n"):]
	for _, g := range Goals(r) {
		line := ""
		for _, l := range strings.Split(goals, "\n") {
			if strings.Contains(l, g.Goal) {
				line = l
			}
		}
		require.NotEmpty(t, line, "a line for %q", g.Goal)
		require.True(t, strings.HasSuffix(strings.TrimSpace(line), g.Verdict), line)
	}
}

func TestConfigCheck(t *testing.T) {
	t.Parallel()
	require.NoError(t, Defaults(false).Check())
	require.NoError(t, Defaults(true).Check())
	c := Defaults(true)
	c.RiverJobs = 0
	require.ErrorContains(t, c.Check(), "positive")
	c = Defaults(true)
	c.Drain = 0
	require.ErrorContains(t, c.Check(), "durations")
}
