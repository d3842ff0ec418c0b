package app

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFirstDifference(t *testing.T) {
	t.Parallel()
	decode := func(s string) any {
		v, err := decodeLoose([]byte(s))
		require.NoError(t, err)
		return v
	}
	for name, tc := range map[string]struct{ a, b, want string }{
		"Same":            {`{"a": 1, "b": [1, {"c": "x"}]}`, `{"b": [1, {"c": "x"}], "a": 1}`, ""},
		"NumberSpelling":  {`{"a": 100}`, `{"a": 1e2}`, ""},
		"Value":           {`{"a": 1, "b": {"c": "x"}}`, `{"a": 1, "b": {"c": "y"}}`, "ctx.b.c"},
		"FirstSortedKey":  {`{"z": 1, "a": 1}`, `{"z": 2, "a": 2}`, "ctx.a"},
		"MissingKey":      {`{"a": 1}`, `{"a": 1, "b": null}`, "ctx.b"},
		"LongerArray":     {`{"r": [1]}`, `{"r": [1, 2]}`, "ctx.r[1]"},
		"ArrayElement":    {`{"r": [{"p": "1"}, {"p": "2"}]}`, `{"r": [{"p": "1"}, {"p": "3"}]}`, "ctx.r[1].p"},
		"TypeChange":      {`{"a": "1"}`, `{"a": 1}`, "ctx.a"},
		"ObjectForString": {`{"a": {"b": 1}}`, `{"a": "b"}`, "ctx.a"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, firstDifference("ctx", decode(tc.a), decode(tc.b)))
		})
	}
}
