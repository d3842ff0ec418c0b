package awsclient

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2027, time.March, 15, 9, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		header string
		want   time.Duration
	}{
		"Seconds":      {"7", 7 * time.Second},
		"HTTPDate":     {now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		"DatePassed":   {now.Add(-time.Minute).Format(http.TimeFormat), time.Second},
		"Missing":      {"", time.Second},
		"Garbage":      {"soon", time.Second},
		"CappedSecs":   {"86400", time.Hour},
		"CappedDate":   {now.Add(48 * time.Hour).Format(http.TimeFormat), time.Hour},
		"ZeroSeconds":  {"0", time.Second},
		"NegativeSecs": {"-5", time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			if tc.header != "" {
				h.Set("Retry-After", tc.header)
			}
			require.Equal(t, tc.want, retryAfterAt(h, time.Second, now))
		})
	}
}
