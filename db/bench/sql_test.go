package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/db/dbtest"
)

// TestCountNeighbours checks that the benchmark sees work of another
// database beside its own: a session of that database waiting for a lock is
// active, and counted among the others, not as the benchmark's database's.
func TestCountNeighbours(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	connect := func(name string) *pgx.Conn {
		t.Helper()
		c, err := pgx.Connect(ctx, dbtest.URL(name))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	benchDB, otherDB := dbtest.CreateEmptyDatabase(t), dbtest.CreateEmptyDatabase(t)
	mon, holder, waiter := connect(benchDB), connect(otherDB), connect(otherDB)

	_, err := holder.Exec(ctx, `SELECT pg_advisory_lock(7)`)
	require.NoError(t, err)
	var pid int
	require.NoError(t, waiter.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	waited := make(chan error, 1)
	go func() {
		_, err := waiter.Exec(ctx, `SELECT pg_advisory_lock(7)`)
		waited <- err
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		err := mon.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND wait_event_type = 'Lock')`, pid).Scan(&waiting)
		return err == nil && waiting
	}, dbtest.HangGuard, 5*time.Millisecond, "the other database's session waits for the lock")

	_, others, err := countNeighbours(ctx, mon, benchDB)
	require.NoError(t, err)
	require.GreaterOrEqual(t, others, 1, "the waiting session of the other database")

	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock(7)`)
	require.NoError(t, err)
	require.NoError(t, <-waited)
}
