package main

import (
	"fmt"
	"time"
)

// The goals the benchmark checks, and the load each is defined at. A run
// below that load (--quick, or smaller flags) still fails a goal it misses,
// but cannot pass it: its verdict reads "short run".
const (
	goalRiverJobs      = 100000
	goalLatencyLength  = 2 * time.Minute
	goalOpenP99        = 25 * time.Millisecond
	goalPromiseShare   = 0.999
	goalCPUPerMessage  = 1200 * time.Microsecond
	goalWALPerMessage  = 8 * 1024
	goalHOTShare       = 0.80
	goalStatements     = 10
	goalCommits        = 3
	goalRSSMB          = 200
	goalPageMS         = 50
	goalAt10MRatio     = 1.2
	goalPruneP99Ratio  = 1.2
	goalBurst          = 5000
	goalBacklog        = 20000
	goalNeighbourP99   = time.Second
	goalBurstRatio     = 0.8
	goalUrgent         = 2 * time.Second
	verdictRecord      = "for the record"
	verdictPass        = "PASS"
	verdictFail        = "FAIL"
	verdictShort       = "short run"
	verdictNotRun      = "not run"
	verdictNotMeasured = "not measured"
)

// GoalRow is one line of the goal table.
type GoalRow struct {
	Goal, Measured, Target, Ratio, Verdict string
}

// Goals turns a run's figures into the goal table: each goal with its
// figure, target, ratio where the goal is one, and verdict. It only reads
// r, so it is tested on made-up figures.
func Goals(r *Result) []GoalRow {
	// The promise holds at 80% of the end-to-end rate (Config.Rate 0) for
	// at least two minutes.
	atLoad := r.Config.Rate == 0 && r.Config.RateDuration >= goalLatencyLength
	rows := fairnessRows(r)
	rows = append(rows,
		promiseRow(r, atLoad),
		backlogRow(r, atLoad),
		atMostRow("CPU per delivered message (worker + its Postgres sessions)", ms(r.WorkerCPU+r.WorkerPGCPU), ms(goalCPUPerMessage),
			r.WorkerCPU > 0, "%.2f ms", true),
		atMostRow("WAL per delivered message", r.WALPerMessage/1024, goalWALPerMessage/1024, r.WALPerMessage > 0, "%.1f KB", true),
		atLeastRow("HOT share of message updates", 100*r.HOTShare, 100*goalHOTShare, "%.1f%%",
			fmt.Sprintf("%d updates", r.MessageUpdates), true),
	)
	rows = append(rows, []GoalRow{
		atMostRow("intake p99, open loop at half the max rate", ms(r.OpenP99), ms(goalOpenP99), r.OpenRequests > 0,
			fmt.Sprintf("%%.1f ms at %.0f/s", r.OpenRate), true),
		sqlRow("SQL statements per delivered message, intake included", r.StatementsPerMessage, r.IntakeSQL.Statements,
			r.IntakeSQL.Measured, goalStatements, r),
		sqlRow("commits per delivered message, intake included", r.CommitsPerMessage, r.IntakeSQL.Commits, true, goalCommits, r),
		atMostRow("worker RSS, peak while sampled each second", r.WorkerPeakRSSMB, goalRSSMB, r.WorkerPeakRSSMB > 0, "%.1f MB", true),
		atMostRow("10M messages: booking panel", r.BookingPanelMS, goalPageMS, r.BookingPanelMS > 0, "%.1f ms", true),
		atMostRow("10M messages: explorer, slowest filter", r.ExplorerFilterMaxMS, goalPageMS, r.ExplorerFilterMaxMS > 0, "%.1f ms", true),
		atMostRow("10M messages: explorer, slowest deep page (keyset)", r.ExplorerDeepMaxMS, goalPageMS, r.ExplorerDeepMaxMS > 0, "%.1f ms", true),
		atMostRow("10M messages: dashboard", r.DashboardMS, goalPageMS, r.DashboardMS > 0, "%.1f ms", true),
		at10MRow(r),
		atMostRow("intake p99 while pruning 1M old messages / without", r.PruneIntakeP99Ratio, goalPruneP99Ratio,
			r.PruneIntakeP99Ratio > 0, "%.2f", true),
	}...)
	return append(rows, recordRows(r)...)
}

// recordRows are figures kept for the record, with no target: throughput
// against the baselines. An operator's tenants feel latency, fairness and
// cost, which the goals above measure; these say how far the machine is
// from its ceilings.
func recordRows(r *Result) []GoalRow {
	ceiling, ceilingName := r.InsertCeiling()
	row := func(goal string, figure, base float64, baseText string) GoalRow {
		out := GoalRow{Goal: goal, Target: baseText, Measured: "-", Verdict: verdictNotRun}
		if figure > 0 && base > 0 {
			out.Measured, out.Ratio, out.Verdict = fmt.Sprintf("%.0f/s", figure), fmt.Sprintf("%.3f", figure/base), verdictRecord
		}
		return out
	}
	return []GoalRow{
		row("end-to-end messages/s vs River no-op jobs/s", r.EndToEndMPS, r.RiverNoopJPS, fmt.Sprintf("River %.0f jobs/s", r.RiverNoopJPS)),
		row("intake requests/s vs one-row insert tx/s", r.IntakeRPS, ceiling, fmt.Sprintf("%s %.0f tx/s", ceilingName, ceiling)),
	}
}

// promiseRow is the delivery promise: the share of the latency phase's
// events handed to the provider within 10 s of acceptance.
func promiseRow(r *Result, atLoad bool) GoalRow {
	row := GoalRow{Goal: fmt.Sprintf("handed over within %s at 80%% of the end-to-end rate", promiseWithin),
		Target: fmt.Sprintf(">= %.1f%%", 100*goalPromiseShare)}
	if r.LatencyEvents == 0 {
		row.Measured, row.Verdict = "-", verdictNotRun
		return row
	}
	row.Measured = fmt.Sprintf("%.2f%% of %d at %d/s (p50 %.0f ms, p99 %.0f ms)", 100*r.PromiseShare(), r.LatencyEvents, r.LatencyRate,
		ms(r.LatencyP50), ms(r.LatencyP99))
	row.Verdict = verdict(r.PromiseShare() >= goalPromiseShare, atLoad)
	return row
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// verdict turns a comparison into PASS or FAIL; a run below the goal's
// load cannot pass.
func verdict(ok, atLoad bool) string {
	switch {
	case !ok:
		return verdictFail
	case !atLoad:
		return verdictShort
	}
	return verdictPass
}

// ratioRow is a goal of the form figure >= k x baseline.
func ratioRow(goal string, figure, base, k float64, format, baseText string, atLoad bool) GoalRow {
	row := GoalRow{Goal: goal, Target: fmt.Sprintf(">= %.2f x %s", k, baseText)}
	if figure <= 0 || base <= 0 {
		row.Measured, row.Verdict = "-", verdictNotRun
		return row
	}
	ratio := figure / base
	row.Measured, row.Ratio = fmt.Sprintf(format, figure), fmt.Sprintf("%.3f", ratio)
	row.Verdict = verdict(ratio >= k, atLoad)
	return row
}

// atLeastRow is a goal of the form figure >= limit.
func atLeastRow(goal string, figure, limit float64, format, ratio string, atLoad bool) GoalRow {
	row := GoalRow{Goal: goal, Target: ">= " + fmt.Sprintf(format, limit)}
	if figure <= 0 {
		row.Measured, row.Verdict = "-", verdictNotRun
		return row
	}
	row.Measured, row.Ratio = fmt.Sprintf(format, figure), ratio
	row.Verdict = verdict(figure >= limit, atLoad)
	return row
}

// atMostRow is a goal of the form figure <= limit, measured only when ran.
func atMostRow(goal string, figure, limit float64, ran bool, format string, atLoad bool) GoalRow {
	row := GoalRow{Goal: goal, Target: "<= " + trimLoad(fmt.Sprintf(format, limit))}
	if !ran {
		row.Measured, row.Verdict = "-", verdictNotRun
		return row
	}
	row.Measured = fmt.Sprintf(format, figure)
	row.Verdict = verdict(figure <= limit, atLoad)
	return row
}

// trimLoad drops the " at ..." a measured figure's format adds, which the
// target does not need.
func trimLoad(s string) string {
	for i := 0; i+4 <= len(s); i++ {
		if s[i:i+4] == " at " {
			return s[:i]
		}
	}
	return s
}

// backlogRow is the sustained-rate goal: the backlog did not grow, every
// event was sent by the end, and every request was accepted.
func backlogRow(r *Result, atLoad bool) GoalRow {
	row := GoalRow{Goal: fmt.Sprintf("no growing backlog at %d/s", r.LatencyRate), Target: "steady over the 2nd half"}
	if len(r.Backlog) == 0 {
		row.Measured, row.Verdict = "-", verdictNotRun
		return row
	}
	state := "steady"
	if r.BacklogGrowing {
		state = "growing"
	}
	row.Measured = fmt.Sprintf("%s, %d unsent at the end", state, r.LatencyUnsent)
	if r.LatencyErrors > 0 {
		// A request refused or timed out is load the intake shed, not
		// load it sustained.
		row.Measured += fmt.Sprintf(", %d requests failed", r.LatencyErrors)
	}
	row.Verdict = verdict(!r.BacklogGrowing && r.LatencyUnsent == 0 && r.LatencyErrors == 0, atLoad)
	return row
}

// sqlRow is a per-message SQL goal: what the message cost after intake
// plus what its request cost at intake (each of the benchmark's requests
// carries one message). Without the intake's figure the row is the
// delivery's alone and says so.
func sqlRow(goal string, delivery, intake float64, intakeMeasured bool, limit int, r *Result) GoalRow {
	row := GoalRow{Goal: goal, Target: fmt.Sprintf("<= %d", limit)}
	switch {
	case r.Delivered == 0:
		row.Measured, row.Verdict = "-", verdictNotRun
	case delivery <= 0:
		row.Measured, row.Verdict = "-", verdictNotMeasured
	case !intakeMeasured:
		row.Measured = fmt.Sprintf("%.2f without intake", delivery)
		row.Verdict = verdict(delivery <= float64(limit), false)
	default:
		total := intake + delivery
		row.Measured = fmt.Sprintf("%.2f (intake %.2f + %.2f)", total, intake, delivery)
		row.Verdict = verdict(total <= float64(limit), true)
	}
	return row
}

func at10MRow(r *Result) GoalRow {
	row := GoalRow{Goal: "10M messages: intake p99 / empty database's", Target: fmt.Sprintf("<= %.2f", goalAt10MRatio)}
	empty, full := r.EmptyWindows.median(), r.At10MWindows.median()
	if empty <= 0 || full <= 0 {
		row.Measured, row.Verdict = "-", verdictNotRun
		return row
	}
	ratio := float64(full) / float64(empty)
	row.Measured = fmt.Sprintf("%.1f ms (median of %d windows at %.0f/s)", ms(full), len(r.At10MWindows.P99), r.At10MWindows.Rate)
	row.Ratio = fmt.Sprintf("%.2f", ratio)
	row.Verdict = verdict(ratio <= goalAt10MRatio, true)
	return row
}

// backlogGrowing tells whether the backlog grew over the second half of
// the sending (samples taken before sendEnd): its least-squares slope there
// exceeds 1% of the sending rate per second, and it ends higher than it
// started. A backlog that wobbles around a level is steady; one that climbs
// by more than a hundredth of what arrives each second is not keeping up.
func backlogGrowing(samples []BacklogSample, sendEnd time.Duration, rate int) bool {
	var xs, ys []float64
	for _, s := range samples {
		if s.At >= sendEnd/2 && s.At <= sendEnd {
			xs = append(xs, s.At.Seconds())
			ys = append(ys, float64(s.Pending))
		}
	}
	if len(xs) < 2 {
		return false
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(ys))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den == 0 {
		return false
	}
	slope := num / den
	return slope > 0.01*float64(rate) && ys[len(ys)-1] > ys[0]
}

// fairnessRows are the goals of the noisy-neighbour and urgent-first
// phases, each at the load the goal names (a 5,000-event burst, a backlog
// of 20,000 reminders).
func fairnessRows(r *Result) []GoalRow {
	burstLoad := r.Config.Burst >= goalBurst
	neighbour := func(goal string, n Neighbour) GoalRow {
		return atMostRow(fmt.Sprintf("%s of %d: other tenant's confirmations at 5/s, accepted -> provider p99", goal, r.Config.Burst),
			ms(n.P99), ms(goalNeighbourP99), n.Events > 0, "%.1f ms", burstLoad)
	}
	rows := []GoalRow{
		neighbour("burst", r.Burst),
		ratioRow(fmt.Sprintf("burst of %d: handed over, messages/s against the end-to-end rate", r.Config.Burst), r.Burst.MPS, r.EndToEndMPS,
			goalBurstRatio, "%.0f/s", fmt.Sprintf("end to end %.0f/s", r.EndToEndMPS), burstLoad),
		neighbour("broadcast to a trip", r.Broadcast),
		ratioRow(fmt.Sprintf("broadcast to %d: handed over, messages/s against the end-to-end rate", r.Config.Burst), r.Broadcast.MPS, r.EndToEndMPS,
			goalBurstRatio, "%.0f/s", fmt.Sprintf("end to end %.0f/s", r.EndToEndMPS), burstLoad),
		atMostRow(fmt.Sprintf("urgent event behind %d reminders: accepted -> provider", r.Urgent.Backlog), ms(r.Urgent.Urgent),
			ms(goalUrgent), r.Urgent.Urgent > 0, "%.1f ms", r.Config.Backlog >= goalBacklog),
	}
	confirm := GoalRow{Goal: "confirmation behind the same reminders: before the last of them", Target: "before the last reminder"}
	if r.Urgent.Confirmation <= 0 {
		confirm.Measured, confirm.Verdict = "-", verdictNotRun
	} else {
		confirm.Measured = fmt.Sprintf("%.1f ms, last reminder at %.1f ms", ms(r.Urgent.Confirmation), ms(r.Urgent.BacklogDone))
		confirm.Verdict = verdict(r.Urgent.Confirmation < r.Urgent.BacklogDone, r.Config.Backlog >= goalBacklog)
	}
	return append(rows, confirm)
}
