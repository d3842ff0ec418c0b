package console

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Audit metadata reads as words: a changed setting as "old -> new", a
// secret as changed or removed (never its value), no Go or JSON syntax.
func TestDescribeMetadata(t *testing.T) {
	t.Parallel()
	pairs := DescribeMetadata(map[string]any{
		"config": map[string]any{
			"region":     map[string]any{"from": "eu-west-1", "to": "eu-central-1"},
			"from_email": map[string]any{"from": nil, "to": "Reisen <info@acme.example>"},
			"old_entry":  "only the new value",
		},
		"secrets_set":     []any{"secret_access_key"},
		"secrets_cleared": []any{"session_token"},
		"enabled":         true,
		"channels":        []any{"EMAIL", "SMS"},
		"limits":          map[string]any{"per_second": 5},
	})
	got := map[string]string{}
	for _, p := range pairs {
		got[p.Key] = p.Value
		require.NotContains(t, p.Value, "map[", p.Key)
		require.NotContains(t, p.Value, "{", p.Key)
	}
	require.Equal(t, "eu-west-1 -> eu-central-1", got["region"])
	require.Equal(t, "(none) -> Reisen <info@acme.example>", got["from_email"])
	require.Equal(t, "set to only the new value", got["old_entry"])
	require.Equal(t, "changed", got["secret_access_key"])
	require.Equal(t, "removed", got["session_token"])
	require.Equal(t, "yes", got["enabled"])
	require.Equal(t, "EMAIL, SMS", got["channels"])
	require.True(t, strings.Contains(got["limits"], "per_second") && strings.Contains(got["limits"], "5"), got["limits"])
	keys := make([]string, len(pairs))
	for i, p := range pairs {
		keys[i] = p.Key
	}
	require.IsIncreasing(t, keys, "sorted by key")
}
