package main

import "time"

// Result holds the figures the run measured. A figure left at zero was not
// measured: its phase did not run (the 10-million-message phases fill
// theirs when they run), and the goal table says so.
type Result struct {
	// Config is what the run was asked to do.
	Config Config

	// Burst and Broadcast are the noisy-neighbour phase's two parts: one
	// tenant's burst of events, then its broadcast to a trip, each beside
	// another tenant's confirmations at 5/s. Urgent is the urgent-first
	// phase.
	Burst, Broadcast Neighbour
	Urgent           UrgentFirst
	// LoadStart is the one-minute load average when the run began, and
	// Loads the one at the start of each phase: figures are comparable only
	// at similar load.
	LoadStart string
	Loads     []PhaseLoad

	// InsertTxPS is the benchmark's own insert baseline: one prepared
	// single-row INSERT per autocommit transaction, 8 clients.
	InsertTxPS float64
	// PgbenchTPS is pgbench's figure for the same script, when pgbench is
	// installed; PgbenchNote says why it is missing otherwise.
	PgbenchTPS  float64
	PgbenchNote string
	// RiverNoopJPS is River's rate on no-op jobs with the worker's pool and
	// queues, from the first job completed to the last.
	RiverNoopJPS float64
	RiverJobs    int

	// Closed-loop intake: Concurrency clients, each sending its next
	// request when the last is answered.
	IntakeRPS            float64
	IntakeP50, IntakeP99 time.Duration
	IntakeErrors         int64
	// Open-loop intake at OpenRate requests/s, latency counted from each
	// request's scheduled send time.
	OpenRate         float64
	OpenRequests     int
	OpenP50, OpenP99 time.Duration
	OpenErrors       int64
	// OpenCost is what the open loop's requests cost: CPU, SQL and how
	// busy the machine was; At10MCost the same for the window at 10M
	// messages.
	OpenCost, At10MCost WindowCost
	// EmptyWindows and At10MWindows are the 10M goal's comparison: the
	// same series of open-loop windows at compareRate on the empty
	// database and at 10M messages.
	EmptyWindows, At10MWindows Windows

	// EndToEndMPS is messages/s from the first message sent to the last
	// while the worker drains the intake backlog.
	EndToEndMPS float64
	// Delivered is the number of messages the end-to-end phase saw reach
	// DELIVERED or READ, the divisor of the per-message SQL figures.
	Delivered int
	// StatementsPerMessage counts the top-level statements Herald sent per
	// delivered message (BEGIN, COMMIT and ROLLBACK left out);
	// NestedPerMessage those run inside functions and triggers on top.
	// SQLNote says why they are missing when pg_stat_statements cannot be
	// read.
	StatementsPerMessage float64
	NestedPerMessage     float64
	CommitsPerMessage    float64
	TopStatements        []StatementShare
	// SlowestStatements are those Postgres spent most time executing per
	// delivered message.
	SlowestStatements []StatementShare
	SQLNote           string
	// IntakeSQL is what each accepted request of the closed loop cost in
	// SQL. Each request carries one recipient on one channel, so it is
	// also the intake's share of each delivered message.
	IntakeSQL SQLFigures

	// CPU time per accepted request of the closed loop (the web process
	// and its Postgres sessions) and per message of the end-to-end phase
	// (the worker and its sessions), and the machine's cores: together the
	// ceiling the machine sets on each rate.
	WebCPU, WebPGCPU, WorkerCPU, WorkerPGCPU time.Duration
	Cores                                    int
	// WebProfile and WorkerProfile are where each process spent its CPU,
	// from a CPU profile taken during the closed loop and the end-to-end
	// phase.
	WebProfile, WorkerProfile Profile

	// The latency phase: LatencyEvents at LatencyRate/s; LatencyUnsent had
	// not reached the provider when the phase gave up waiting (they count
	// with their age, a lower bound).
	LatencyRate                        int
	LatencyP50, LatencyP95, LatencyP99 time.Duration
	LatencyEvents, LatencyUnsent       int
	// WALPerMessage is the WAL the server wrote per delivered message in
	// the end-to-end phase; MessageUpdates the updates of messages rows
	// there and HOTShare the share of them that were HOT.
	WALPerMessage  float64
	MessageUpdates int64
	HOTShare       float64
	// FPIPerMessage is the full-page images in that WAL per delivered
	// message, and WritesPerMessage each table's writes per delivered
	// message, the most index entries first.
	FPIPerMessage    float64
	WritesPerMessage []TableWrites
	// WithinPromise counts the latency phase's events handed over within
	// promiseWithin of their acceptance.
	WithinPromise int
	LatencyErrors int64
	// Backlog is the latency phase's backlog (events accepted, not yet
	// sent) sampled every few seconds; BacklogGrowing says whether it grew
	// over the second half of the sending.
	Backlog        []BacklogSample
	BacklogGrowing bool

	// WorkerPeakRSSMB and WorkerLastRSSMB are the worker's resident memory,
	// sampled every second from its start to the end of the run.
	WorkerPeakRSSMB, WorkerLastRSSMB float64

	// Figures of the phases on a database of 10,000,000 messages in one
	// tenant: the slowest of each page kind in milliseconds, intake p99
	// there, and intake p99 while retention prunes 1,000,000 old messages
	// as a ratio of p99 without pruning.
	BookingPanelMS      float64
	ExplorerFilterMaxMS float64
	// ExplorerDeepMaxMS is the slowest of the explorer's pages far down
	// its list (keyset); PagesMaxMS the slowest page of all, the dashboard
	// and the API's included.
	ExplorerDeepMaxMS   float64
	PagesMaxMS          float64
	DashboardMS         float64
	IntakeP99At10M      time.Duration
	PruneIntakeP99Ratio float64
	// The retention phase's intake p99 at a fixed rate without and while
	// retention prunes, and how many messages it pruned meanwhile.
	PruneIntakeP99Base, PruneIntakeP99During time.Duration
	PrunedDuring                             int
	// PruneBaseCost and PruneDuringCost are the web's cost per request in
	// the windows without and while pruning; PruneWorkerCPU is the CPU the
	// worker and its sessions spent while pruning beyond what they spent in
	// the windows without, per pruned message.
	PruneBaseCost, PruneDuringCost WindowCost
	PruneWorkerCPU                 time.Duration
	// PruneWorkerShare is the share of the machine's CPU the worker and
	// its sessions took in the windows without and while pruning.
	PruneWorkerShare [2]float64
}

// PhaseLoad is the load average when a phase started.
type PhaseLoad struct {
	Phase, Load string
}

// StatementShare is one statement's calls per delivered message.
type StatementShare struct {
	Query      string
	PerMessage float64
	TopLevel   bool
	// MSPerMessage is the time Postgres spent executing it, per unit.
	MSPerMessage float64
}

// BacklogSample is the latency phase's backlog at one moment, At after the
// phase began.
type BacklogSample struct {
	At      time.Duration
	Pending int
}

// InsertCeiling is the higher of the two insert baselines, and which one it
// is: the ceiling intake is measured against.
func (r *Result) InsertCeiling() (float64, string) {
	if r.PgbenchTPS > r.InsertTxPS {
		return r.PgbenchTPS, "pgbench"
	}
	return r.InsertTxPS, "pgx"
}

// Neighbour is one part of the noisy-neighbour phase.
type Neighbour struct {
	// Events, P50 and P99 are the quiet tenant's confirmations and their
	// accepted-to-provider latency; Unsent counts those not handed over
	// when it was read, Failed the requests refused.
	Events, Unsent, Failed int
	P50, P99               time.Duration
	// Sent and MPS are the busy tenant's messages handed over and their
	// rate from the first to the last.
	Sent int
	MPS  float64
	// Load is the load average when the part began.
	Load string
}

// UrgentFirst is the urgent-first phase: an urgent event and a
// confirmation posted behind Backlog unsent reminders.
type UrgentFirst struct {
	Backlog int
	// Urgent and Confirmation are each event's accepted-to-provider time;
	// BacklogDone is when the last reminder went, from the urgent event's
	// acceptance.
	Urgent, Confirmation, BacklogDone time.Duration
	Load                              string
}

// PromiseShare is the share of the latency phase's events handed over
// within promiseWithin (0 when none ran).
func (r *Result) PromiseShare() float64 {
	if r.LatencyEvents == 0 {
		return 0
	}
	return float64(r.WithinPromise) / float64(r.LatencyEvents)
}
