package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// report prints the run's figures and the goal table.
func (b *bench) report() {
	WriteReport(b.cfg.Out, b.res)
}

// WriteReport prints a result: baselines, the figures behind the goals, the
// statements each delivered message costs, the load average of each phase,
// and the goal table.
func WriteReport(out io.Writer, r *Result) {
	p := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	p("")
	p("Herald benchmark: %d tenants, sandbox provider with zero delay", r.Config.Tenants)
	p("")
	p("Baselines on the same database")
	pg := fmt.Sprintf("%.0f tx/s", r.PgbenchTPS)
	if r.PgbenchTPS == 0 {
		pg = "not run: " + r.PgbenchNote
	}
	p("  single-row insert, 8 clients, prepared, autocommit:  pgx %.0f tx/s; pgbench %s", r.InsertTxPS, pg)
	p("  River no-op jobs (%d, worker's pool and queues):     %.0f jobs/s, first to last completion", r.RiverJobs, r.RiverNoopJPS)
	p("")
	p("Herald")
	p("  intake, closed loop, %d clients:  %.0f req/s, p50 %s, p99 %s, errors %d",
		r.Config.Concurrency, r.IntakeRPS, round(r.IntakeP50), round(r.IntakeP99), r.IntakeErrors)
	p("  intake, open loop at %.0f/s:      %d requests, p50 %s, p99 %s, errors %d",
		r.OpenRate, r.OpenRequests, round(r.OpenP50), round(r.OpenP99), r.OpenErrors)
	p("  end to end:                       %.0f messages/s, %d delivered", r.EndToEndMPS, r.Delivered)
	p("  accepted -> provider at %d/s:   p50 %s, p95 %s, p99 %s, %d events, %d unsent, errors %d",
		r.LatencyRate, round(r.LatencyP50), round(r.LatencyP95), round(r.LatencyP99), r.LatencyEvents, r.LatencyUnsent, r.LatencyErrors)
	p("  worker RSS:                       peak %.1f MB, last %.1f MB", r.WorkerPeakRSSMB, r.WorkerLastRSSMB)
	if r.SQLNote != "" {
		p("  SQL statements per message:       not measured: %s", r.SQLNote)
	} else if r.Delivered > 0 {
		p("  SQL per delivered message:        %.2f statements sent (+%.2f inside functions and triggers), %.2f commits, after intake",
			r.StatementsPerMessage, r.NestedPerMessage, r.CommitsPerMessage)
	}
	if r.IntakeSQL.Measured {
		p("  SQL per accepted request:         %.2f statements sent (+%.2f inside functions and triggers), %.2f commits, at intake",
			r.IntakeSQL.Statements, r.IntakeSQL.Nested, r.IntakeSQL.Commits)
	}
	if len(r.TopStatements) > 0 {
		p("")
		p("Top %d statements by calls per delivered message", len(r.TopStatements))
		for _, s := range r.TopStatements {
			where := ""
			if !s.TopLevel {
				where = " (nested)"
			}
			p("  %6.2f  %s%s", s.PerMessage, oneLine(s.Query, 110), where)
		}
	}
	p("")
	p("Load average: %s at the start", r.LoadStart)
	for _, l := range r.Loads {
		p("  %-6s %s", l.Load, l.Phase)
	}
	p("")
	p("Goals")
	WriteGoals(out, Goals(r))
	if limits := Limits(r); len(limits) > 0 {
		p("")
		p("What limits the goals not met (from this run's CPU, statements and profiles)")
		for _, l := range limits {
			p("  %s", l)
		}
	}
}

// WriteGoals prints the goal table.
func WriteGoals(out io.Writer, rows []GoalRow) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  goal\tmeasured\ttarget\tratio\tverdict")
	for _, g := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", g.Goal, g.Measured, g.Target, g.Ratio, g.Verdict)
	}
	_ = tw.Flush()
}

func round(d time.Duration) time.Duration {
	if d > 10*time.Millisecond {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}

// oneLine collapses a statement's whitespace and cuts it to n characters.
func oneLine(q string, n int) string {
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > n {
		return q[:n-3] + "..."
	}
	return q
}
