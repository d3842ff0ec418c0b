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

// TestRun_BadFlags checks that the suite refuses a bad call before it
// looks for herald or touches any database: each mistake is a usage error
// (exit 2) naming it.
func TestRun_BadFlags(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"NoMessages":      {[]string{"--messages", "0"}, "must be positive"},
		"NegativeKills":   {[]string{"--kills", "-1"}, "must be positive"},
		"ZeroRate":        {[]string{"--rate", "0"}, "must be positive"},
		"NegativeStorm":   {[]string{"--storm", "-1s"}, "--storm and --throttle"},
		"UnknownLetter":   {[]string{"--experiments", "abz"}, "letters from abcdefghi"},
		"NoExperiments":   {[]string{"--experiments", ""}, "letters from abcdefghi"},
		"LatencyBackward": {[]string{"--latency", "3s-1s"}, "invalid value"},
		"LatencyNoUnit":   {[]string{"--latency", "1-3"}, "invalid value"},
		"ZeroSlowFor":     {[]string{"--slow-for", "0s"}, "must be positive"},
		"ZeroLockHold":    {[]string{"--lock-hold", "0s"}, "must be positive"},
		"ShortSendTime":   {[]string{"--send-timeout", "500ms"}, "--send-timeout is 0 or from 1s to 5m"},
		"MetaFailTooHigh": {[]string{"--meta-fail", "0.9"}, "--meta-fail is a share"},
		"UnknownRestart":  {[]string{"--pg-restart", "somewhere"}, "local, throwaway or off"},
		"StrayArgument":   {[]string{"now"}, "unexpected argument"},
		"UnknownFlag":     {[]string{"--fast"}, "flag provided but not defined"},
		"NotADuration":    {[]string{"--throttle", "soon"}, "invalid value"},
		"NegativeTimeout": {[]string{"--timeout", "-5m"}, "must be positive"},
		"ConfirmWindow":   {[]string{"--confirm-window", "1500ms"}, "--confirm-window is 0 or whole seconds"},
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
	require.Contains(t, out, "go tool task chaos -- [--messages N]")
	for _, f := range []string{"-herald", "-messages", "-kills", "-pg-restart", "-experiments", "-latency", "-slow-latency", "-slow-for", "-send-timeout", "-meta-fail", "-lock-hold", "-confirm-window"} {
		require.Contains(t, out, f)
	}
}

// TestRun_NoHerald checks that a run without the herald binary it starts
// says where it looked and how to build one.
func TestRun_NoHerald(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "herald"), dir} {
		_, _, err := tool.Run(run, "--herald", path)
		require.Error(t, err)
		var ue tool.UsageError
		require.False(t, errors.As(err, &ue), "no usage error: %v", err)
		require.True(t, strings.HasPrefix(err.Error(), "no herald binary at "+path+": build one"), err.Error())
	}
}
