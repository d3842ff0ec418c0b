package awsclient

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
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

// TestByCode_Credentials: a credential code refuses the account's own keys
// (the tenant's to fix: the account is flagged) or the server's default
// credentials (the operator's: retried, and marked so the dispatcher
// raises the alarm), never both.
func TestByCode_Credentials(t *testing.T) {
	t.Parallel()
	rule := func(code, _ string) (Rule, bool) {
		r, ok := common[code]
		return r, ok
	}
	for _, code := range []string{"UnrecognizedClientException", "InvalidClientTokenId", "SignatureDoesNotMatch",
		"AccessDeniedException", "ExpiredToken", "ExpiredTokenException", "NotAuthorized"} {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			own, known := byCode(code, "refused", 403, http.Header{}, true, rule)
			require.True(t, known)
			require.Equal(t, provider.Permanent, own.Class)
			require.True(t, own.Account)
			require.False(t, own.ServerCredentials)

			server, known := byCode(code, "refused", 403, http.Header{}, false, rule)
			require.True(t, known)
			require.Equal(t, provider.Transient, server.Class)
			require.False(t, server.Account)
			require.True(t, server.ServerCredentials)
		})
	}
}
