package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/db/dbtest"
)

// TestLocalCluster_RefusesOtherServers checks that experiment c never
// restarts a server other than the project's local cluster.
func TestLocalCluster_RefusesOtherServers(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"postgres://herald:herald@db.example.com:54320/herald",
		"postgres://herald:herald@127.0.0.1:5432/herald",
		"postgres://herald:herald@10.0.0.7:54320/herald",
	} {
		_, err := localCluster(u, "")
		require.Error(t, err, u)
		require.Contains(t, err.Error(), "not the project's local cluster", u)
	}
}

// TestLocalCluster_FindsTheRunningCluster checks that the suite finds the
// local cluster's data directory and binaries the way db/devdb.sh knows
// them, without restarting it (that would break every test running beside).
func TestLocalCluster_FindsTheRunningCluster(t *testing.T) {
	t.Parallel()
	base := dbtest.BaseURL()
	if !strings.Contains(base, "127.0.0.1:"+localPort) {
		t.Skip("DATABASE_URL names another server than the local cluster")
	}
	c, err := localCluster(base, "")
	require.NoError(t, err)
	pid, err := os.ReadFile(filepath.Join(c.dataDir, "postmaster.pid"))
	require.NoError(t, err)
	require.Equal(t, localPort, strings.TrimSpace(strings.Split(string(pid), "\n")[3]), "the data directory of the server on the port")
	require.True(t, hasServerBins(c.bindir), "pg_ctl and initdb are in %s", c.bindir)
}
