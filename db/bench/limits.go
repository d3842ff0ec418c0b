package bench

import (
	"fmt"
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

	if (has("end-to-end") || has("accepted -> provider") || has("no growing backlog")) && r.WorkerCPU > 0 {
		per := r.WorkerCPU + r.WorkerPGCPU
		ceiling := float64(cores) / per.Seconds()
		add("End to end: each message cost %s of worker CPU and %s of its Postgres sessions' CPU, %s in all.",
			ms3(r.WorkerCPU), ms3(r.WorkerPGCPU), ms3(per))
		add("  On %d cores that caps delivery at about %.0f messages/s (measured %.0f/s); %d/s needs at most %s per message in all.",
			cores, ceiling, r.EndToEndMPS, goalEndToEndMPS, ms3(time.Duration(float64(cores)*float64(time.Second)/goalEndToEndMPS)))
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
	if has("intake requests/s") && r.WebCPU > 0 {
		per := r.WebCPU + r.WebPGCPU
		ceiling, name := r.InsertCeiling()
		add("Intake: each request cost %s of web CPU and %s of its Postgres sessions' CPU, %s in all: on %d cores about %.0f requests/s at most (measured %.0f/s).",
			ms3(r.WebCPU), ms3(r.WebPGCPU), ms3(per), cores, float64(cores)/per.Seconds(), r.IntakeRPS)
		add("  The %s baseline (%.0f tx/s) runs one statement per transaction with no HTTP, JSON, validation or authentication; a request runs %.2f statements and %.2f commits.",
			name, ceiling, r.IntakeSQL.Statements, r.IntakeSQL.Commits)
		if len(r.IntakeSQL.Slowest) > 0 {
			add("  Per request Postgres spent longest on:")
			out = append(out, statementLines(r.IntakeSQL.Slowest, 4)...)
		}
		out = append(out, profileReport("  The web process's CPU profile", r.WebProfile)...)
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
