package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBench_BadFlags checks that herald bench refuses a bad call before it
// touches any database: each mistake is a usage error (exit 2) naming it.
func TestBench_BadFlags(t *testing.T) {
	t.Parallel()
	b := &testBundle{env: map[string]string{"HERALD_ENV": "prod"}}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"NoRequests":       {[]string{"--requests", "0"}, "must be positive"},
		"NoRiverJobs":      {[]string{"--quick", "--river-jobs", "0"}, "must be positive"},
		"ZeroRate":         {[]string{"--rate", "0"}, "must be positive"},
		"NegativeDuration": {[]string{"--duration", "-1s"}, "durations must be positive"},
		"ZeroDrain":        {[]string{"--drain", "0s"}, "durations must be positive"},
		"StrayArgument":    {[]string{"now"}, "unexpected argument"},
		"UnknownFlag":      {[]string{"--fast"}, "flag provided but not defined"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := b.herald(t, append([]string{"bench"}, tc.args...)...)
			var ue usageError
			require.True(t, errors.As(err, &ue), "a usage error, got %v", err)
			require.True(t, strings.Contains(err.Error(), tc.want), "%q names the mistake (%q)", err, tc.want)
		})
	}
}
