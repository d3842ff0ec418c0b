package webhook_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider/webhook"
)

// The vector in testdata was computed outside Go, so receivers in any
// language can check their implementation against it:
//
//	(printf '1767225600.'; cat payload.json) | openssl dgst -sha256 -hmac whsec_test_secret
func TestSign(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("testdata/payload.json")
	require.NoError(t, err)
	want, err := os.ReadFile("testdata/signature.txt")
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(want)), webhook.Sign(testSecret, testNow.Unix(), body))
}

// The Standard Webhooks vectors were computed outside Go too. For a
// console-made secret (whsec_ and 64 hex digits, valid base64 as Standard
// Webhooks libraries read it) the key is its base64 decoding:
//
//	KEY=$(printf 0123...cdef | base64 -d | xxd -p | tr -d '\n')
//	(printf 'msg_<id>.1767225600.'; cat payload.json) | openssl dgst -sha256 -mac HMAC -macopt hexkey:$KEY -binary | base64
//
// and for a secret that is not base64 after whsec_ it is the secret as it is:
//
//	(printf 'msg_<id>.1767225600.'; cat payload.json) | openssl dgst -sha256 -hmac whsec_test_secret -binary | base64
func TestSignStandard(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("testdata/payload.json")
	require.NoError(t, err)
	want, err := os.ReadFile("testdata/standard_signature.txt")
	require.NoError(t, err)
	id := webhook.WebhookID(testMessageID)
	require.Equal(t, "msg_0195f3a4-7b1c-7c3e-9a51-2f6d8e4b1c01", id)
	require.Equal(t, strings.TrimSpace(string(want)), webhook.SignStandard(testSecret, id, testNow.Unix(), body))
	console := "whsec_" + strings.Repeat("0123456789abcdef", 4)
	require.Equal(t, "v1,ANlWJo23EBdXHl0hG/ZIQL6TZA/re8xdIdQCPrXk878=", webhook.SignStandard(console, id, testNow.Unix(), body))
}

func TestVerify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":"0195f3a4-7b1c-7c3e-9a51-2f6d8e4b1c01","body":"hello"}`)
	ts := testNow.Unix()
	good := webhook.Sign(testSecret, ts, body)
	tsHeader := "1767225600"

	tests := []struct {
		name      string
		secret    string
		header    string
		ts        string
		body      []byte
		now       time.Time
		tolerance time.Duration
		want      bool
	}{
		{name: "Good", header: good, want: true},
		{name: "GoodWithinTolerance", header: good, now: testNow.Add(4 * time.Minute), want: true},
		{name: "GoodClockBehind", header: good, now: testNow.Add(-4 * time.Minute), want: true},
		{name: "GoodCustomTolerance", header: good, now: testNow.Add(time.Hour), tolerance: 2 * time.Hour, want: true},
		{name: "Rotation", header: "v1=" + strings.Repeat("00", 32) + ", " + good, want: true},
		{name: "UnknownVersionSkipped", header: "v2=abc," + good, want: true},
		{name: "BadSignature", header: "v1=" + strings.Repeat("ab", 32)},
		{name: "WrongSecret", secret: "whsec_other", header: good},
		{name: "EmptySecret", secret: "-", header: good},
		{name: "TamperedBody", header: good, body: []byte(`{"id":"0195f3a4-7b1c-7c3e-9a51-2f6d8e4b1c01","body":"hellO"}`)},
		{name: "TamperedTimestamp", header: good, ts: "1767225601"},
		{name: "Stale", header: good, now: testNow.Add(6 * time.Minute)},
		{name: "StaleCustomTolerance", header: good, now: testNow.Add(31 * time.Second), tolerance: 30 * time.Second},
		{name: "FromTheFuture", header: good, now: testNow.Add(-6 * time.Minute)},
		{name: "MalformedEmpty", header: ""},
		{name: "MalformedNoVersion", header: strings.TrimPrefix(good, "v1=")},
		{name: "MalformedNoValue", header: "v1="},
		{name: "MalformedHex", header: "v1=" + strings.Repeat("zz", 32)},
		{name: "MalformedOtherScheme", header: "sha256=" + strings.TrimPrefix(good, "v1=")},
		{name: "TruncatedSignature", header: good[:len(good)-2]},
		{name: "MalformedTimestamp", header: good, ts: "yesterday"},
		{name: "MissingTimestamp", header: good, ts: "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			secret, tsh, b, now := testSecret, tsHeader, body, testNow
			switch tt.secret {
			case "":
			case "-":
				secret = ""
			default:
				secret = tt.secret
			}
			switch tt.ts {
			case "":
			case "-":
				tsh = ""
			default:
				tsh = tt.ts
			}
			if tt.body != nil {
				b = tt.body
			}
			if !tt.now.IsZero() {
				now = tt.now
			}
			require.Equal(t, tt.want, webhook.Verify(secret, tt.header, tsh, b, now, tt.tolerance))
		})
	}
}
