package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"
)

func TestLimits(t *testing.T) {
	t.Parallel()

	t.Run("NothingFailedNothingToExplain", func(t *testing.T) {
		t.Parallel()
		require.Empty(t, Limits(fullRun()))
	})

	t.Run("ThroughputCeilingFromTheCPUPerMessage", func(t *testing.T) {
		t.Parallel()
		// Made-up figures: 1 ms of worker CPU and 3 ms of Postgres CPU per
		// message on 2 cores cap delivery at 500 messages/s.
		r := fullRun()
		r.EndToEndMPS, r.Cores = 480, 2
		r.WorkerCPU, r.WorkerPGCPU = time.Millisecond, 3*time.Millisecond
		r.SlowestStatements = []StatementShare{{Query: "INSERT INTO messages (id) VALUES ($1)", PerMessage: 1, TopLevel: true, MSPerMessage: 0.25}}
		r.WorkerProfile = Profile{Herald: []ProfileLine{{Func: "app.(*Router).route", Share: 0.42}},
			Flat: []ProfileLine{{Func: "runtime.mallocgc", Share: 0.07}}}
		text := strings.Join(Limits(r), "\n")
		require.Contains(t, text, "1.000 ms of worker CPU and 3.000 ms of its Postgres sessions' CPU, 4.000 ms in all")
		require.Contains(t, text, "On 2 cores that caps delivery at about 500 messages/s (measured 480/s)")
		// The report names the goal and the ceiling it would give the
		// made-up cores, computed as the measured ceiling is: constants
		// only, no clock involved.
		require.Contains(t, text, "the goal of 1.200 ms per message")
		require.Contains(t, text, fmt.Sprintf("would allow %.0f", coresAllow(2, goalCPUPerMessage)))
		require.Contains(t, text, "At 3200 events/s the arrivals exceed that ceiling")
		require.Contains(t, text, "0.250 ms  INSERT INTO messages")
		require.Contains(t, text, " 42.0%  app.(*Router).route")
		require.Contains(t, text, "  7.0%  runtime.mallocgc")
		require.NotContains(t, text, "Intake:", "intake met its goal")
	})

	t.Run("WALAndInPlaceUpdates", func(t *testing.T) {
		t.Parallel()
		r := fullRun()
		r.WALPerMessage, r.FPIPerMessage, r.HOTShare = 20*1024, 1.5, 0.5
		r.WritesPerMessage = []TableWrites{
			{Table: "messages", Inserts: 1, Updates: 4, HOT: 2, Indexes: 13},
			{Table: "message_events", Inserts: 4, Indexes: 2},
		}
		text := strings.Join(Limits(r), "\n")
		require.Contains(t, text, "WAL: 20.0 KB per delivered message with 1.50 full-page images")
		require.Contains(t, text, "messages                  1.00 inserted,  4.00 updated (50% in place),  0.00 deleted; 13 indexes:  39.0 index entries")
		require.Contains(t, text, "message_events            4.00 inserted,  0.00 updated,  0.00 deleted;  2 indexes:   8.0 index entries")
		require.Contains(t, text, "A message's row changed 4.00 times and 2.00 of them in place")
	})

	t.Run("IntakeAndSQL", func(t *testing.T) {
		t.Parallel()
		r := fullRun()
		r.IntakeRPS, r.Cores = 2500, 2
		r.OpenP99 = 30 * time.Millisecond
		r.WebCPU, r.WebPGCPU = 200*time.Microsecond, 400*time.Microsecond
		r.StatementsPerMessage = 12
		r.TopStatements = []StatementShare{
			{Query: "commit", PerMessage: 2, TopLevel: true},
			{Query: "SELECT 1 FROM ONLY tenants", PerMessage: 5},
			{Query: "SELECT id FROM contacts", PerMessage: 1.7, TopLevel: true},
		}
		lines := Limits(r)
		text := strings.Join(lines, "\n")
		require.Contains(t, text, "on 2 cores about 3333 requests/s at most (measured 2500/s)")
		require.Contains(t, text, "a request runs 2.00 statements and 1.00 commits")
		require.Contains(t, text, "The web process's CPU profile: not taken")
		require.Contains(t, text, "Statements: 2.00 per request at intake and 12.00 per message after it")
		require.Contains(t, text, "1.70 calls")
		require.NotContains(t, text, "ONLY tenants", "nested statements are counted apart")
		require.NotContains(t, text, "  commit", "transaction control is not a statement that does work")
	})

	t.Run("IntakeAt10MAndPruning", func(t *testing.T) {
		t.Parallel()
		r := fullRun()
		r.Cores = 2
		// Made-up figures: the 10M window costs the same per request, at a
		// saturated machine, and its p99 is 2.5 times the empty one's.
		r.IntakeP99At10M = 50 * time.Millisecond
		insert := "INSERT INTO events (id) VALUES ($1)"
		r.OpenCost = WindowCost{Requests: 60000, CPU: 100 * time.Microsecond, PGCPU: 80 * time.Microsecond, Busy: 0.93,
			IOStall: 0.02, Waits: map[string]int{"CPU": 300, "IO:WALSync": 100}, Samples: 200,
			SQL: SQLFigures{Statements: 1.2, Commits: 0.3, Measured: true, Slowest: []StatementShare{{Query: insert, MSPerMessage: 0.04}}}}
		r.At10MCost = WindowCost{Requests: 60000, CPU: 101 * time.Microsecond, PGCPU: 82 * time.Microsecond, Busy: 0.95,
			IOStall: 0.31, Waits: map[string]int{"CPU": 300, "IO:WALSync": 500, "Lock:tuple": 20}, Samples: 200,
			SQL: SQLFigures{Statements: 1.3, Commits: 0.4, Measured: true, Slowest: []StatementShare{
				{Query: insert, MSPerMessage: 0.041}, {Query: "SELECT 2", MSPerMessage: 0.01}}}}
		r.EmptyWindows = Windows{Rate: 1500, Length: 4 * time.Second, P99: []time.Duration{8 * time.Millisecond, 9 * time.Millisecond, 30 * time.Millisecond},
			Cost: WindowCost{Requests: 18000, CPU: 120 * time.Microsecond, PGCPU: 100 * time.Microsecond, Busy: 0.55,
				IOStall: 0.02, Waits: map[string]int{"CPU": 30, "IO:WALSync": 10}, Samples: 100, WALBytes: 1500, WALFPI: 0.05}}
		r.At10MWindows = Windows{Rate: 1500, Length: 4 * time.Second, P99: []time.Duration{14 * time.Millisecond, 12 * time.Millisecond, 13 * time.Millisecond},
			Cost: WindowCost{Requests: 18000, CPU: 121 * time.Microsecond, PGCPU: 102 * time.Microsecond, Busy: 0.56,
				IOStall: 0.31, Waits: map[string]int{"CPU": 30, "IO:WALSync": 50, "Lock:tuple": 2}, Samples: 100, Autovacuum: 50,
				WALBytes: 9800, WALFPI: 1.2}}
		r.PruneIntakeP99Ratio, r.PruneIntakeP99Base, r.PruneIntakeP99During = 1.5, 20*time.Millisecond, 30*time.Millisecond
		r.PrunedDuring, r.PruneWorkerCPU = 90000, 400*time.Microsecond
		r.PruneWorkerShare = [2]float64{0.3, 0.45}
		r.PruneBaseCost = WindowCost{Requests: 1000, CPU: 120 * time.Microsecond, PGCPU: 90 * time.Microsecond, Busy: 0.6}
		r.PruneDuringCost = WindowCost{Requests: 1000, CPU: 125 * time.Microsecond, PGCPU: 95 * time.Microsecond, Busy: 0.8}
		text := strings.Join(Limits(r), "\n")
		require.Contains(t, text, "Intake at 10M messages: median p99 13.0 ms against 9.0 ms on the empty database, 3 open-loop windows of 4s at 1500/s on each "+
			"(p99s: empty 8.0, 9.0, 30.0 ms; 10M 14.0, 12.0, 13.0 ms)")
		require.Contains(t, text, "Per request, empty database / 10M: web CPU 0.120 ms / 0.121 ms, its Postgres sessions' 0.100 ms / 0.102 ms; the machine's CPU 55% / 56% busy; "+
			"some task waiting for the disk 2% / 31% of the time; autovacuum workers 0.00 / 0.50 per sample")
		require.Contains(t, text, "empty database CPU 0.30, IO:WALSync 0.10; 10M IO:WALSync 0.50, CPU 0.30, Lock:tuple 0.02")
		require.Contains(t, text, "WAL per request (the server's, every session's): 1500 / 9800 bytes, 0.05 / 1.20 full-page images")
		require.Contains(t, text, "The work per request differed by +1%: the higher p99 is time requests waited")
		require.Contains(t, text, "Each commit at 10M waited for 6.5 times the WAL: 1.20 full-page images per request against 0.05.")
		require.Contains(t, text, "At the open loop's rate (3000/s, one window each): p99 50.0 ms at 10M against 20.0 ms; the machine's CPU 93% / 95% busy")
		require.Contains(t, text, "1.20 / 1.30 statements and 0.30 / 0.40 commits")
		require.Contains(t, text, "0.040 ms / 0.041 ms  INSERT INTO events")
		require.Contains(t, text, "- / 0.010 ms  SELECT 2", "a statement the empty window did not run")
		require.NotContains(t, text, "busy or more", "the same work below saturation: saturation does not explain it")
		require.Contains(t, text, "Pruning: intake p99 30.0 ms while pruning against 20.0 ms without; 90000 messages pruned in the windows, each costing the worker and its sessions 0.400 ms of CPU")
		require.Contains(t, text, "Per request, without / while pruning: web CPU 0.120 ms / 0.125 ms")
		require.Contains(t, text, "the machine's CPU 60% / 80% busy")
		require.Contains(t, text, "without none sampled; while pruning none sampled")
		require.Contains(t, text, "The worker and its sessions (routing and sending what intake accepts, and pruning) took 30% / 45% of the machine's CPU")
		require.Zero(t, strings.Count(text, "busy or more"), "the pruning windows were below saturation")

		require.NotContains(t, text, "Other databases' active sessions", "nothing else ran on the server")

		// Another database's sessions at work beside the 10M windows (a
		// test run, say): the WAL is the server's, so it is not explained
		// as Herald's, and the figures say what ran beside them.
		r.At10MWindows.Cost.Others = 40
		text = strings.Join(Limits(r), "\n")
		require.Contains(t, text, "Other databases' active sessions ran beside them, 0.00 / 0.40 per sample: "+
			"the machine's CPU, the disk's stalls and the WAL above include their work.")
		require.NotContains(t, text, "times the WAL")
		// A dev server's pollers, seen in a few samples, change nothing.
		r.At10MWindows.Cost.Others = 2
		text = strings.Join(Limits(r), "\n")
		require.NotContains(t, text, "Other databases' active sessions")
		require.Contains(t, text, "Each commit at 10M waited for 6.5 times the WAL")
		r.At10MWindows.Cost.Others = 0

		// The same WAL on both sides: nothing to say about it.
		r.At10MWindows.Cost.WALBytes, r.At10MWindows.Cost.WALFPI = 1600, 0.06
		require.NotContains(t, strings.Join(Limits(r), "\n"), "times the WAL")

		// More work per request at 10M on a saturated machine: the
		// saturation explains p99.
		r.At10MWindows.Cost.CPU, r.At10MWindows.Cost.PGCPU = 150*time.Microsecond, 120*time.Microsecond
		r.EmptyWindows.Cost.Busy, r.At10MWindows.Cost.Busy = 0.9, 0.93
		text = strings.Join(Limits(r), "\n")
		require.Contains(t, text, "cores were 90% busy or more")
		require.NotContains(t, text, "The work per request differed")
	})
}

func TestWindowCost(t *testing.T) {
	t.Parallel()
	a := WindowCost{Requests: 100, CPU: 100 * time.Microsecond, PGCPU: 50 * time.Microsecond, Busy: 0.5}
	b := WindowCost{Requests: 300, CPU: 200 * time.Microsecond, PGCPU: 10 * time.Microsecond, Busy: 0.9}
	a.WALBytes, b.WALBytes, a.WALFPI, b.WALFPI = 1000, 3000, 0.1, 0.5
	a.Waits, a.Samples, a.IOStall, a.Autovacuum, a.Others = map[string]int{"CPU": 2}, 4, 0.1, 2, 0
	b.Waits, b.Samples, b.IOStall, b.Autovacuum, b.Others = map[string]int{"CPU": 1, "IO:WALSync": 3}, 4, 0.5, 1, 6
	sum := WindowCost{}.add(a).add(b)
	require.Equal(t, map[string]int{"CPU": 3, "IO:WALSync": 3}, sum.Waits)
	require.Equal(t, 8, sum.Samples)
	require.InDelta(t, 3.0/8, sum.autovacuums(), 1e-9, "autovacuum workers per sample of both windows")
	require.InDelta(t, 6.0/8, sum.others(), 1e-9, "other databases' sessions per sample of both windows")
	require.InDelta(t, 2500, sum.WALBytes, 1e-9, "WAL per request, weighted by requests")
	require.InDelta(t, 0.4, sum.WALFPI, 1e-9)
	require.Zero(t, WindowCost{}.autovacuums(), "no samples")
	require.Zero(t, WindowCost{}.others(), "no samples")
	require.InDelta(t, 0.4, sum.IOStall, 1e-9)
	require.Equal(t, map[string]int{"CPU": 2}, a.Waits, "the windows' own counts are left as they were")
	require.Equal(t, "CPU 0.38, IO:WALSync 0.38", sum.topWaits(4), "a tie ranks by name")
	require.Equal(t, 400, sum.Requests)
	require.Equal(t, 175*time.Microsecond, sum.CPU, "weighted by requests")
	require.Equal(t, 20*time.Microsecond, sum.PGCPU)
	require.InDelta(t, 0.8, sum.Busy, 1e-9)
	require.Equal(t, 195*time.Microsecond, sum.total())
	require.InDelta(t, 0.25, machineCPU{busy: 150, total: 400}.busySince(machineCPU{busy: 100, total: 200}), 1e-9)
	require.Zero(t, machineCPU{}.busySince(machineCPU{busy: 1, total: 2}), "a reading that did not move")
	if _, err := os.Stat("/proc/pressure/io"); err == nil {
		_, ok := ioStallTotal()
		require.True(t, ok, "this machine's /proc/pressure/io")
	}
	m := readMachineCPU()
	require.Positive(t, m.total, "this machine's /proc/stat")
	require.LessOrEqual(t, m.busy, m.total)
}

func TestRankProfile(t *testing.T) {
	t.Parallel()
	fn := func(id uint64, name string) *profile.Function { return &profile.Function{ID: id, Name: name} }
	route, render, malloc := fn(1, heraldModule+"app.(*Router).route"), fn(2, heraldModule+"app.Render"), fn(3, "runtime.mallocgc")
	loc := func(id uint64, fs ...*profile.Function) *profile.Location {
		l := &profile.Location{ID: id}
		for _, f := range fs {
			l.Line = append(l.Line, profile.Line{Function: f})
		}
		return l
	}
	lRoute, lRender, lMalloc := loc(1, route), loc(2, render), loc(3, malloc)
	lInlined := loc(4, render, route) // Render inlined into route
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{lMalloc, lRender, lRoute}, Value: []int64{1, 30}},
			{Location: []*profile.Location{lRender, lRoute}, Value: []int64{1, 20}},
			{Location: []*profile.Location{lInlined}, Value: []int64{1, 10}},
			{Location: []*profile.Location{lRoute, lRoute}, Value: []int64{1, 40}}, // recursion counts once
		},
	}
	got := rankProfile(p)
	// Innermost Herald function: Render for the first three samples (it
	// called mallocgc; inlined, it is the location's first line), route
	// for the last.
	require.Equal(t, []ProfileLine{{Func: "app.Render", Share: 0.6}, {Func: "app.(*Router).route", Share: 0.4}}, got.Herald)
	require.Equal(t, heraldModule+"app.(*Router).route", got.Flat[0].Func)
	require.InDelta(t, 0.4, got.Flat[0].Share, 1e-9)
	// A tie ranks by name.
	require.Equal(t, heraldModule+"app.Render", got.Flat[1].Func)
	require.InDelta(t, 0.3, got.Flat[1].Share, 1e-9, "Render ran 20 + 10 (inlined) in itself")
	require.Equal(t, "runtime.mallocgc", got.Flat[2].Func)
	require.InDelta(t, 0.3, got.Flat[2].Share, 1e-9)
	require.Empty(t, rankProfile(&profile.Profile{}).Flat)
	require.Equal(t, "db.scoped.InTenant.func1", shortName(heraldModule+"db.scoped[go.shape.1d3c[x]].InTenant.func1"))
}

func TestWritesPer(t *testing.T) {
	t.Parallel()
	before := map[string]TableWrites{
		"messages": {Table: "messages", Inserts: 10, Updates: 20, HOT: 5, Indexes: 13},
		"tenants":  {Table: "tenants", Updates: 3, Indexes: 2},
	}
	after := map[string]TableWrites{
		"messages":       {Table: "messages", Inserts: 110, Updates: 420, HOT: 205, Indexes: 13},
		"tenants":        {Table: "tenants", Updates: 3, Indexes: 2},
		"message_events": {Table: "message_events", Inserts: 400, Indexes: 2},
	}
	got := writesPer(before, after, 100)
	require.Equal(t, []TableWrites{
		{Table: "messages", Inserts: 1, Updates: 4, HOT: 2, Indexes: 13},
		{Table: "message_events", Inserts: 4, Indexes: 2},
	}, got, "per message, the most index entries first; a table without writes left out")
	require.InDelta(t, 39.0, got[0].IndexEntries(), 1e-9)
	require.Nil(t, writesPer(before, after, 0))
}
