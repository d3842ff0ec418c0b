package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChaos_BadFlags checks that herald chaos refuses a bad call before it
// touches any database: each mistake is a usage error (exit 2) naming it.
func TestChaos_BadFlags(t *testing.T) {
	t.Parallel()
	// No DATABASE_URL and a prod environment that would fail to load: the
	// flags are checked first.
	b := &testBundle{env: map[string]string{"HERALD_ENV": "prod"}}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"NoMessages":      {[]string{"--messages", "0"}, "must be positive"},
		"NegativeKills":   {[]string{"--kills", "-1"}, "must be positive"},
		"ZeroRate":        {[]string{"--rate", "0"}, "must be positive"},
		"NegativeStorm":   {[]string{"--storm", "-1s"}, "--storm and --throttle"},
		"UnknownLetter":   {[]string{"--experiments", "abz"}, "letters from abcdef"},
		"NoExperiments":   {[]string{"--experiments", ""}, "letters from abcdef"},
		"UnknownRestart":  {[]string{"--pg-restart", "somewhere"}, "local, throwaway or off"},
		"StrayArgument":   {[]string{"now"}, "unexpected argument"},
		"UnknownFlag":     {[]string{"--fast"}, "flag provided but not defined"},
		"NotADuration":    {[]string{"--throttle", "soon"}, "invalid value"},
		"NegativeTimeout": {[]string{"--timeout", "-5m"}, "must be positive"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := b.herald(t, append([]string{"chaos"}, tc.args...)...)
			var ue usageError
			require.True(t, errors.As(err, &ue), "a usage error, got %v", err)
			require.True(t, strings.Contains(err.Error(), tc.want), "%q names the mistake (%q)", err, tc.want)
		})
	}
}
