package main

import (
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/db/internal/tool"
)

// TestRun_BadFlags checks that the benchmark refuses a bad call before it
// looks for herald or touches any database: each mistake is a usage error
// (exit 2) naming it.
func TestRun_BadFlags(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"NoRequests":       {[]string{"--requests", "0"}, "must be positive"},
		"NoRiverJobs":      {[]string{"--quick", "--river-jobs", "0"}, "must be positive"},
		"NegativeRate":     {[]string{"--rate", "-1"}, "must not be negative"},
		"NegativeBurst":    {[]string{"--burst", "-1"}, "must not be negative"},
		"NegativeDuration": {[]string{"--duration", "-1s"}, "durations must be positive"},
		"ZeroDrain":        {[]string{"--drain", "0s"}, "durations must be positive"},
		"NegativeMessages": {[]string{"--messages", "-1"}, "must not be negative"},
		"StrayArgument":    {[]string{"now"}, "unexpected argument"},
		"UnknownFlag":      {[]string{"--fast"}, "flag provided but not defined"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, _, err := tool.Run(run, tc.args...)
			var ue tool.UsageError
			require.True(t, errors.As(err, &ue), "a usage error, got %v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestRun_Help checks that --help prints the usage with every flag on
// stdout and succeeds.
func TestRun_Help(t *testing.T) {
	t.Parallel()
	out, _, err := tool.Run(run, "--help")
	require.ErrorIs(t, err, flag.ErrHelp)
	require.Contains(t, out, "go tool task bench -- [--quick]")
	for _, f := range []string{"-herald", "-quick", "-requests", "-prune-messages", "-profile"} {
		require.Contains(t, out, f)
	}
}

// TestRun_NoHerald checks that a run without the herald binary it starts
// says where it looked and how to build one.
func TestRun_NoHerald(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "herald")
	for _, args := range [][]string{{"--quick"}, {"--quick", "--herald", missing}} {
		_, _, err := tool.Run(run, args...)
		require.Error(t, err)
		var ue tool.UsageError
		require.False(t, errors.As(err, &ue), "no usage error: %v", err)
		want := tool.DefaultHerald
		if len(args) > 1 {
			want = missing
		}
		require.True(t, strings.HasPrefix(err.Error(), "no herald binary at "+want+": build one (`go build -o "+want+" .`"), err.Error())
	}
}
