package app

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2027, 4, 12, 8, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		header string
		want   time.Duration
	}{
		"Seconds":  {"120", 2 * time.Minute},
		"HTTPDate": {now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		"PastDate": {now.Add(-time.Hour).Format(http.TimeFormat), 0},
		"Negative": {"-5", 0},
		"Missing":  {"", 0},
		"Garbage":  {"soon", 0},
		"Capped":   {"9999999", maxRetryAfter},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, parseRetryAfter(tc.header, now))
		})
	}
}

// FuzzParseRetryAfter: whatever a receiver answers, the wait is between
// nothing and a day.
func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2027, 4, 12, 8, 0, 0, 0, time.UTC)
	for _, seed := range []string{"120", "0", "-1", "", "soon", "9999999999999999999999", now.Add(time.Hour).Format(http.TimeFormat), "Mon, 02 Jan 2006"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d := parseRetryAfter(v, now)
		if d < 0 || d > maxRetryAfter {
			t.Fatalf("parseRetryAfter(%q) = %v", v, d)
		}
	})
}

// FuzzCallbackEndpointInput: what the API and the console accept as event
// types and description is a known, duplicate-free, ordered set and at most
// 200 characters.
func FuzzCallbackEndpointInput(f *testing.F) {
	f.Add("message.sent", "message.read", "CRM")
	f.Add("message.sent", "message.sent", "")
	f.Add("message.opened", "", "\x00")
	f.Add(" message.failed ", "message.fallback", "é")
	f.Fuzz(func(t *testing.T, a, b, desc string) {
		types, err := checkEventTypes([]string{a, b})
		if err == nil {
			require.NotEmpty(t, types)
			for i, ty := range types {
				require.Contains(t, CallbackEventTypes, ty)
				if i > 0 {
					require.Less(t, indexOf(CallbackEventTypes, types[i-1]), indexOf(CallbackEventTypes, ty), "ordered, no duplicates")
				}
			}
		}
		if d, err := checkDescription(desc); err == nil {
			require.LessOrEqual(t, len([]rune(d)), 200)
		}
	})
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
