package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// sqlCounter counts what Herald sends to Postgres over the end-to-end
// phase: statements from pg_stat_statements and commits from
// pg_stat_database, each read before and after and subtracted, so the
// cluster's counts are never reset (other databases on a shared server keep
// theirs, and no privilege beyond reading is needed).
//
// The benchmark's own statements are left out this way: every statement it
// runs on its database opens with benchTag, which pg_stat_statements
// keeps in the statement's text, so they are filtered out by text; and they
// all run on one monitor connection, one statement per autocommit
// transaction, which counts them, so their commits are subtracted from
// pg_stat_database's. (pg_stat_statements cannot filter by application
// name, and a second role would need CREATEROLE, which Herald's role has not.)
type sqlCounter struct {
	b *bench
	// stats reads pg_stat_statements, nil when it cannot be read; admin is
	// its connection when that is not the monitor's.
	stats querier
	admin *pgx.Conn

	before           map[stmtKey]pgStatement
	dealloc          int64
	commits, ownFrom int64
}

type stmtKey struct {
	id       int64
	toplevel bool
}

// newSQLCounter finds where pg_stat_statements can be read: in the
// benchmark database (the extension is created there when the role may),
// or in the database DATABASE_URL names, where db/devdb.sh creates it. When
// neither works, the statement figures are not measured and SQLNote says
// why; the commits are counted anyway.
func (b *bench) newSQLCounter(ctx context.Context) *sqlCounter {
	c := &sqlCounter{b: b}
	errBench := ensureStatements(ctx, b.mon)
	if errBench == nil {
		c.stats = b.mon
		return c
	}
	admin, err := pgx.Connect(ctx, b.cfg.DatabaseURL)
	if err == nil {
		if err = ensureStatements(ctx, admin); err == nil {
			c.stats, c.admin = admin, admin
			return c
		}
		_ = admin.Close(context.Background())
	}
	b.res.SQLNote = fmt.Sprintf("pg_stat_statements cannot be read (in %s: %v; in the database DATABASE_URL names: %v). "+
		"The server must load it at start (shared_preload_libraries, which db/devdb.sh sets in herald.conf; "+
		"a cluster that was already running needs `db/devdb.sh restart`), and the extension must exist "+
		"(db/devdb.sh creates it in database herald)", b.cfg.Database, unwrapNote(errBench), unwrapNote(err))
	b.logf("   statements per message will not be measured: %s", b.res.SQLNote)
	return c
}

func unwrapNote(err error) string {
	if err == nil {
		return "no error"
	}
	return strings.TrimPrefix(err.Error(), errNoStatements.Error()+": ")
}

func (c *sqlCounter) close() {
	if c.admin != nil {
		_ = c.admin.Close(context.Background())
	}
}

// begin takes the first readings. The monitor's count is read before them,
// so the readings' own commits are the benchmark's.
func (c *sqlCounter) begin(ctx context.Context) error {
	c.ownFrom = c.b.mon.statements()
	if c.stats != nil {
		stmts, dealloc, err := readStatements(ctx, c.stats, c.b.cfg.Database)
		if err != nil {
			return fmt.Errorf("read pg_stat_statements: %w", err)
		}
		c.before, c.dealloc = byKey(stmts), dealloc
	}
	var err error
	c.commits, err = readCommits(ctx, c.b.mon, c.b.cfg.Database)
	return err
}

// SQLFigures is what a phase cost in SQL, per unit of work (a delivered
// message, or an accepted request).
type SQLFigures struct {
	// Statements are the top-level statements Herald sent (BEGIN, COMMIT and
	// ROLLBACK left out), Nested those run inside functions and triggers.
	Statements, Nested, Commits float64
	// Top are the most called statements, Slowest those Postgres spent
	// most time executing; nil when pg_stat_statements cannot be read.
	Top, Slowest []StatementShare
	// Measured says whether the statements were counted (the commits
	// always are).
	Measured bool
}

// end takes the second readings and divides the differences by units,
// the phase's delivered messages or accepted requests; what names them in
// the log.
func (c *sqlCounter) end(ctx context.Context, units int, what string) (SQLFigures, error) {
	var f SQLFigures
	own := c.b.mon.statements() - c.ownFrom
	commits, err := readCommits(ctx, c.b.mon, c.b.cfg.Database)
	if err != nil {
		return f, err
	}
	if units == 0 {
		return f, errors.New("no " + what + " to count the statements of")
	}
	herald := commits - c.commits - own
	f.Commits = float64(herald) / float64(units)
	c.b.logf("   commits: %d in the database, %d of them the benchmark's: %.2f per %s",
		commits-c.commits, own, f.Commits, what)
	if c.stats == nil {
		return f, nil
	}
	stmts, dealloc, err := readStatements(ctx, c.stats, c.b.cfg.Database)
	if err != nil {
		return f, fmt.Errorf("read pg_stat_statements: %w", err)
	}
	if dealloc > c.dealloc {
		c.b.logf("   WARNING: pg_stat_statements evicted %d entries during the phase; the statement counts are low (raise pg_stat_statements.max)", dealloc-c.dealloc)
	}
	f.Statements, f.Nested, f.Top, f.Slowest = statementsDelta(c.before, stmts, units)
	f.Measured = true
	c.b.logf("   statements: %.2f per %s, sent by Herald (BEGIN, COMMIT, ROLLBACK left out); %.2f more run inside functions and triggers",
		f.Statements, what, f.Nested)
	return f, nil
}

func byKey(stmts []pgStatement) map[stmtKey]pgStatement {
	m := make(map[stmtKey]pgStatement, len(stmts))
	for _, s := range stmts {
		k := stmtKey{s.QueryID, s.TopLevel}
		prev := m[k]
		s.Calls += prev.Calls // one queryid may show once per role
		s.TotalMS += prev.TotalMS
		m[k] = s
	}
	return m
}

// topStatements is how many statements the report lists.
const topStatements = 10

// statementsDelta returns the statements per unit between two readings
// of pg_stat_statements: top-level ones without transaction control, those
// nested in functions and triggers, the ten most called (transaction
// control included, so engineers see it too) and the ten Postgres spent
// most time executing (nested ones left out: their time is in the
// statement that ran them).
func statementsDelta(before map[stmtKey]pgStatement, after []pgStatement, units int) (top, nested float64, most, slowest []StatementShare) {
	var topCalls, nestedCalls int64
	for k, s := range byKey(after) {
		calls := s.Calls - before[k].Calls
		if calls <= 0 {
			continue
		}
		share := StatementShare{Query: s.Query, PerMessage: float64(calls) / float64(units), TopLevel: k.toplevel,
			MSPerMessage: (s.TotalMS - before[k].TotalMS) / float64(units)}
		most = append(most, share)
		switch {
		case !k.toplevel:
			nestedCalls += calls
		case !transactionControl(s.Query):
			topCalls += calls
			slowest = append(slowest, share)
		}
	}
	sort.Slice(most, func(i, j int) bool {
		if most[i].PerMessage != most[j].PerMessage {
			return most[i].PerMessage > most[j].PerMessage
		}
		return most[i].Query < most[j].Query
	})
	sort.Slice(slowest, func(i, j int) bool {
		if slowest[i].MSPerMessage != slowest[j].MSPerMessage {
			return slowest[i].MSPerMessage > slowest[j].MSPerMessage
		}
		return slowest[i].Query < slowest[j].Query
	})
	return float64(topCalls) / float64(units), float64(nestedCalls) / float64(units),
		most[:min(len(most), topStatements)], slowest[:min(len(slowest), topStatements)]
}

// transactionControl tells BEGIN, COMMIT and ROLLBACK (in any spelling)
// from statements that do work.
func transactionControl(query string) bool {
	f := strings.Fields(strings.ToUpper(query))
	if len(f) == 0 {
		return false
	}
	switch strings.TrimSuffix(f[0], ";") {
	case "BEGIN", "COMMIT", "ROLLBACK", "START", "END", "ABORT":
		return true
	}
	return false
}
