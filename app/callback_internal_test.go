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
