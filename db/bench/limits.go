package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Limits explains the goals a run failed from the run's own figures: the
// CPU each message and request cost, the ceiling that puts on the rate on
// this machine's cores, and where the CPU and Postgres's time went (the
// profiles and pg_stat_statements). It only reads r, so it is tested on
// made-up figures.
func Limits(r *Result) []string {
	failed := map[string]bool{}
	for _, g := range Goals(r) {
		if g.Verdict == verdictFail {
			failed[g.Goal] = true
		}
	}
	has := func(prefix string) bool {
		for goal := range failed {
			if strings.HasPrefix(goal, prefix) {
				return true
			}
		}
		return false
	}
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	cores := max(r.Cores, 1)

	if (has("CPU per delivered") || has("handed over") || has("no growing backlog") || has("burst") || has("broadcast") ||
		has("urgent") || has("confirmation")) && r.WorkerCPU > 0 {
		per := r.WorkerCPU + r.WorkerPGCPU
		ceiling := coresAllow(cores, per)
		add("End to end: each message cost %s of worker CPU and %s of its Postgres sessions' CPU, %s in all.",
			ms3(r.WorkerCPU), ms3(r.WorkerPGCPU), ms3(per))
		add("  On %d cores that caps delivery at about %.0f messages/s (measured %.0f/s); the goal of %s per message would allow %.0f/s.",
			cores, ceiling, r.EndToEndMPS, ms3(goalCPUPerMessage), coresAllow(cores, goalCPUPerMessage))
		if r.LatencyRate > 0 && float64(r.LatencyRate) > ceiling {
			add("  At %d events/s the arrivals exceed that ceiling, so the backlog and the latency grow with the phase's length.", r.LatencyRate)
		}
		if r.WorkerPGCPU > r.WorkerCPU {
			add("  Postgres is the larger part: %.2f statements and %.2f commits per message after intake; per message it spent longest on:",
				r.StatementsPerMessage, r.CommitsPerMessage)
			out = append(out, statementLines(r.SlowestStatements, 5)...)
		}
		out = append(out, profileReport("  The worker's CPU profile", r.WorkerProfile)...)
	}
	if has("intake p99") && r.WebCPU > 0 {
		per := r.WebCPU + r.WebPGCPU
		ceiling, name := r.InsertCeiling()
		add("Intake: each request cost %s of web CPU and %s of its Postgres sessions' CPU, %s in all: on %d cores about %.0f requests/s at most (measured %.0f/s).",
			ms3(r.WebCPU), ms3(r.WebPGCPU), ms3(per), cores, coresAllow(cores, per), r.IntakeRPS)
		add("  The %s baseline (%.0f tx/s) runs one statement per transaction with no HTTP, JSON, validation or authentication; a request runs %.2f statements and %.2f commits.",
			name, ceiling, r.IntakeSQL.Statements, r.IntakeSQL.Commits)
		if len(r.IntakeSQL.Slowest) > 0 {
			add("  Per request Postgres spent longest on:")
			out = append(out, statementLines(r.IntakeSQL.Slowest, 4)...)
		}
		out = append(out, profileReport("  The web process's CPU profile", r.WebProfile)...)
	}
	if (has("WAL per delivered") || has("HOT share")) && len(r.WritesPerMessage) > 0 {
		add("WAL: %.1f KB per delivered message with %.2f full-page images (a page's first change after a checkpoint logs the whole page). "+
			"Each insert, and each update not made in place, adds an entry to every index of its table; per message:",
			r.WALPerMessage/1024, r.FPIPerMessage)
		out = append(out, writeLines(r.WritesPerMessage, 6)...)
		for _, w := range r.WritesPerMessage {
			if w.Table == "messages" && w.Updates > 0 {
				add("  A message's row changed %.2f times and %.2f of them in place. An update is made in place only when it changes no "+
					"indexed column and its page has room: the send sets the provider id (messages_external_key) and delivered the phase "+
					"(the explorer's and the queue's indexes); the call's start and read change neither.", w.Updates, w.HOT)
			}
		}
	}
	if has("SQL statements per delivered message") && r.IntakeSQL.Measured {
		add("Statements: %.2f per request at intake and %.2f per message after it; the most called after intake:",
			r.IntakeSQL.Statements, r.StatementsPerMessage)
		var top []StatementShare
		for _, s := range r.TopStatements {
			if s.TopLevel && !transactionControl(s.Query) {
				top = append(top, s)
			}
		}
		out = append(out, statementLines(top, 8)...)
	}
	if has("commits per delivered message") {
		add("Commits: %.2f per request at intake and %.2f per message after it (routing, the send's record, receipts in batches, River's own).",
			r.IntakeSQL.Commits, r.CommitsPerMessage)
	}
	if has("10M messages: intake p99") && r.At10MWindows.Cost.Requests > 0 && r.EmptyWindows.Cost.Requests > 0 {
		e, t := r.EmptyWindows, r.At10MWindows
		add("Intake at 10M messages: median p99 %.1f ms against %.1f ms on the empty database, %d open-loop windows of %s at %.0f/s on each (p99s: empty %s; 10M %s).",
			ms(t.median()), ms(e.median()), len(t.P99), t.Length, t.Rate, e.spread(), t.spread())
		out = append(out, costLines("empty database", "10M", e.Cost, t.Cost)...)
		if diff := float64(t.Cost.total())/float64(max(e.Cost.total(), 1)) - 1; math.Abs(diff) < sameWork {
			add("  The work per request differed by %+.0f%%: the higher p99 is time requests waited "+
				"(on the disk, a lock or autovacuum, above), not work they did.", 100*diff)
		} else {
			out = append(out, saturation(min(e.Cost.Busy, t.Cost.Busy), cores)...)
		}
		// The WAL figures are the server's: with other databases at work
		// beside a window they are not Herald's to explain.
		if e.Cost.WALBytes > 0 && t.Cost.WALBytes >= moreWAL*e.Cost.WALBytes && !crowded(e.Cost, t.Cost) {
			add("  Each commit at 10M waited for %.1f times the WAL: %.2f full-page images per request against %.2f. After a checkpoint "+
				"a page's first change writes the whole page, and inserts into a large table's indexes land on many more distinct pages "+
				"(a booking reference falls anywhere in its index) than into a small one's.",
				t.Cost.WALBytes/e.Cost.WALBytes, t.Cost.WALFPI, e.Cost.WALFPI)
		}
		if r.At10MCost.Requests > 0 && r.OpenCost.Requests > 0 {
			o, f := r.OpenCost, r.At10MCost
			add("  At the open loop's rate (%.0f/s, one window each): p99 %.1f ms at 10M against %.1f ms; the machine's CPU %.0f%% / %.0f%% busy.",
				r.OpenRate, ms(r.IntakeP99At10M), ms(r.OpenP99), 100*o.Busy, 100*f.Busy)
			if o.SQL.Measured && f.SQL.Measured {
				add("  %.2f / %.2f statements and %.2f / %.2f commits (the fewer commits, the larger the shared batches).",
					o.SQL.Statements, f.SQL.Statements, o.SQL.Commits, f.SQL.Commits)
				out = append(out, compareStatements(o.SQL.Slowest, f.SQL.Slowest, 4)...)
			}
		}
	}
	if has("intake p99 while pruning") && r.PruneBaseCost.Requests > 0 {
		p, q := r.PruneBaseCost, r.PruneDuringCost
		add("Pruning: intake p99 %.1f ms while pruning against %.1f ms without; %d messages pruned in the windows, each costing the worker and its sessions %s of CPU.",
			ms(r.PruneIntakeP99During), ms(r.PruneIntakeP99Base), r.PrunedDuring, ms3(r.PruneWorkerCPU))
		out = append(out, costLines("without", "while pruning", p, q)...)
		if r.PruneWorkerShare[0] > 0 || r.PruneWorkerShare[1] > 0 {
			add("  The worker and its sessions (routing and sending what intake accepts, and pruning) took %.0f%% / %.0f%% of the machine's CPU.",
				100*r.PruneWorkerShare[0], 100*r.PruneWorkerShare[1])
		}
		out = append(out, saturation(q.Busy, cores)...)
	}
	return out
}

// coresAllow is how many units a second the cores can work at cost CPU
// each: the ceiling a cost puts on a rate.
func coresAllow(cores int, cost time.Duration) float64 {
	return float64(cores) / cost.Seconds()
}

// costLines sets two windows' costs side by side, per request: CPU, how
// busy the machine was, the disk's stalls, autovacuum, and what the web's
// sessions waited on.
func costLines(first, second string, a, b WindowCost) []string {
	out := []string{
		fmt.Sprintf("  Per request, %s / %s: web CPU %s / %s, its Postgres sessions' %s / %s; the machine's CPU %.0f%% / %.0f%% busy; "+
			"some task waiting for the disk %.0f%% / %.0f%% of the time; autovacuum workers %.2f / %.2f per sample.",
			first, second, ms3(a.CPU), ms3(b.CPU), ms3(a.PGCPU), ms3(b.PGCPU), 100*a.Busy, 100*b.Busy,
			100*a.IOStall, 100*b.IOStall, a.autovacuums(), b.autovacuums()),
		fmt.Sprintf("  The web's active Postgres sessions, on average per sample: %s %s; %s %s.", first, a.topWaits(4), second, b.topWaits(4)),
		fmt.Sprintf("  WAL per request (the server's, every session's): %.0f / %.0f bytes, %.2f / %.2f full-page images.",
			a.WALBytes, b.WALBytes, a.WALFPI, b.WALFPI),
	}
	if crowded(a, b) {
		out = append(out, fmt.Sprintf("  Other databases' active sessions ran beside them, %.2f / %.2f per sample: "+
			"the machine's CPU, the disk's stalls and the WAL above include their work.", a.others(), b.others()))
	}
	return out
}

// busyNeighbours is how many active sessions of other databases per sample
// make a window's server-wide figures (the WAL, the machine's CPU) not
// Herald's alone: a dev server's pollers beside the benchmark stay below it,
// a test run beside it does not.
const busyNeighbours = 0.05

// crowded tells whether other databases were at work beside either window.
func crowded(a, b WindowCost) bool {
	return a.others() >= busyNeighbours || b.others() >= busyNeighbours
}

// moreWAL is how many times the WAL per request of one window over
// another's is worth explaining.
const moreWAL = 1.5

// sameWork is the difference in CPU per request under which two windows
// did the same work.
const sameWork = 0.10

// saturationBusy is how busy a machine's CPUs are when requests queue for
// them: past it, p99 measures that queue more than any request's own cost.
const saturationBusy = 0.85

// saturation says what a window's busy share means for its p99.
func saturation(busy float64, cores int) []string {
	if busy < saturationBusy {
		return nil
	}
	return []string{fmt.Sprintf("  The machine's %d cores were %.0f%% busy or more (the benchmark's client, web, worker and Postgres together): "+
		"requests waited for a CPU, so p99 moves by multiples with a few percent more work per request.", cores, 100*busy)}
}

// compareStatements lists the statements Postgres spent longest on per
// request in the second window beside the same statements' time in the
// first.
func compareStatements(first, second []StatementShare, n int) []string {
	before := map[string]StatementShare{}
	for _, s := range first {
		before[s.Query] = s
	}
	out := []string{"  Postgres time per request on the slowest statements, empty database / 10M:"}
	for _, s := range second[:min(len(second), n)] {
		was := "-"
		if b, ok := before[s.Query]; ok {
			was = fmt.Sprintf("%.3f ms", b.MSPerMessage)
		}
		out = append(out, fmt.Sprintf("    %9s / %.3f ms  %s", was, s.MSPerMessage, oneLine(s.Query, 90)))
	}
	return out
}

// statementLines lists up to n statements with their calls and execution
// time per unit.
func statementLines(stmts []StatementShare, n int) []string {
	var out []string
	for _, s := range stmts[:min(len(stmts), n)] {
		out = append(out, fmt.Sprintf("    %6.2f calls %7.3f ms  %s", s.PerMessage, s.MSPerMessage, oneLine(s.Query, 90)))
	}
	return out
}

// profileReport lists a profile's Herald functions by cumulative share and
// its busiest functions by their own share.
func profileReport(title string, p Profile) []string {
	if len(p.Herald) == 0 && len(p.Flat) == 0 {
		return []string{title + ": not taken"}
	}
	out := []string{title + ", by the innermost Herald function of each sample (its own time and the libraries' it calls):"}
	for _, l := range p.Herald {
		out = append(out, fmt.Sprintf("    %5.1f%%  %s", 100*l.Share, l.Func))
	}
	out = append(out, "  and the functions busiest in themselves:")
	for _, l := range p.Flat {
		out = append(out, fmt.Sprintf("    %5.1f%%  %s", 100*l.Share, l.Func))
	}
	return out
}

// ms3 prints a duration in milliseconds with three decimals.
func ms3(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", ms(d))
}
