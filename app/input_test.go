package app_test

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

// nested is a JSON document nesting objects depth levels deep:
// {"a":{"a":...1...}}.
func nested(depth int) []byte {
	return []byte(strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth))
}

func TestCheckJSONDepth(t *testing.T) {
	t.Parallel()

	t.Run("Bound", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, app.CheckJSONDepth(nested(app.MaxJSONDepth)))
		require.NoError(t, app.CheckJSONDepth([]byte(strings.Repeat("[", app.MaxJSONDepth)+strings.Repeat("]", app.MaxJSONDepth))))
		for _, body := range [][]byte{
			nested(app.MaxJSONDepth + 1),
			[]byte(strings.Repeat("[", app.MaxJSONDepth+1)),
			[]byte(`{"a":[` + strings.Repeat(`{"b":[`, app.MaxJSONDepth/2) + `]}`),
		} {
			err := app.CheckJSONDepth(body)
			var ae *app.Error
			require.True(t, errors.As(err, &ae), "%s", body)
			require.Equal(t, app.EMALFORMED, ae.Code)
			require.Equal(t, "body_too_deep", ae.Reason)
			require.Contains(t, ae.Message, "32 levels")
		}
	})

	t.Run("SiblingsDoNotAddUp", func(t *testing.T) {
		t.Parallel()
		wide := "[" + strings.Repeat(`{"a":[1]},`, 10_000) + "1]"
		require.NoError(t, app.CheckJSONDepth([]byte(wide)))
	})

	t.Run("BracketsInStringsDoNotCount", func(t *testing.T) {
		t.Parallel()
		deep := strings.Repeat("[{", 100)
		for _, body := range []string{
			`{"note":"` + deep + `"}`,
			`{"` + deep + `":1}`,
			// An escaped quote does not end the string.
			`{"note":"say \"` + deep + `\" twice \\"}`,
		} {
			require.NoError(t, app.CheckJSONDepth([]byte(body)), body)
		}
		// After an escaped backslash, the quote does end it.
		require.Error(t, app.CheckJSONDepth([]byte(`{"note":"\\"`+strings.Repeat("[", 40)+`}`)))
	})

	t.Run("NotJSONIsLeftToTheDecoder", func(t *testing.T) {
		t.Parallel()
		for _, body := range []string{"", "name=Anna&phone=%2B49", "]]]]}}}}", `"unterminated`} {
			require.NoError(t, app.CheckJSONDepth([]byte(body)), body)
		}
	})

	t.Run("NotificationRefusedBeforeDecoding", func(t *testing.T) {
		t.Parallel()
		body := []byte(`{"event_id":"deep","trigger_event":"BOOKING_CONFIRMED","context":` + string(nested(100)) + `}`)
		_, err := app.ParseNotificationRequest(body, fuzzNow, app.BuiltIn)
		require.Equal(t, "body_too_deep", app.ErrorReason(err))
		require.Equal(t, "body_too_deep", app.ErrorReason(app.CheckJSONText([]byte(`{"a":"\u0000","b":`+string(nested(100))+`}`))),
			"the NUL check decodes a body with an escaped NUL only within the bound")
	})
}

// TestCheckJSONDepth_Allocations: the scan is the whole cost of a refused
// body, so it must not grow with the body: nothing allocated for a body it
// passes, only the error for one it refuses, however deep (the body of the
// report: 8,000 levels, 48 KB). Not parallel: AllocsPerRun counts every
// allocation of the process.
func TestCheckJSONDepth_Allocations(t *testing.T) {
	deep, ok := nested(8000), nested(app.MaxJSONDepth)
	require.Greater(t, len(deep), 48_000)
	require.Zero(t, testing.AllocsPerRun(20, func() { _ = app.CheckJSONDepth(ok) }))
	require.LessOrEqual(t, testing.AllocsPerRun(20, func() { _ = app.CheckJSONDepth(deep) }), 3.0)
}

// FuzzCheckJSONDepth: for any valid JSON document, the scan refuses exactly
// the documents whose nesting, as a decoder sees it, is deeper than
// MaxJSONDepth.
func FuzzCheckJSONDepth(f *testing.F) {
	for _, seed := range []string{`{"a":[1,{"b":"[[["}]}`, `"\\"`, `["\"]"]`, string(nested(33)), string(nested(32)), `[[],[[]]]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		dec := json.NewDecoder(strings.NewReader(string(body)))
		depth, deepest := 0, 0
		for {
			tok, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			switch tok {
			case json.Delim('{'), json.Delim('['):
				depth++
				deepest = max(deepest, depth)
			case json.Delim('}'), json.Delim(']'):
				depth--
			}
		}
		err := app.CheckJSONDepth(body)
		require.Equal(t, deepest > app.MaxJSONDepth, err != nil, "depth %d: %v", deepest, err)
	})
}
