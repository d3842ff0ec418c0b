package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far a signed timestamp may be from the receiver's
// clock when Verify is given no tolerance: wide enough for clock skew and a
// slow network, narrow enough that a captured request cannot be replayed
// much later.
const DefaultTolerance = 5 * time.Minute

// signatureVersion prefixes each signature so the scheme can change
// without breaking receivers that check for the version they know.
const signatureVersion = "v1"

// Sign returns the Herald-Signature header value for a body sent at ts (unix
// seconds): "v1=" and the hex HMAC-SHA256, keyed with secret, of
// "<ts>.<body>". The timestamp is inside the MAC so that a receiver that
// checks its age also knows it was not altered.
func Sign(secret string, ts int64, body []byte) string {
	return signatureVersion + "=" + hex.EncodeToString(mac(secret, ts, body))
}

// SignStandard returns the Standard Webhooks signature header value for a
// body sent as webhookID at ts: "v1," and the base64 HMAC-SHA256 of
// "<webhookID>.<ts>.<body>". The key is what Standard Webhooks libraries
// take from a "whsec_" secret: the base64 decoding of what follows the
// prefix. A secret that is not base64 there (one typed in by hand) is
// used as it is, and its receivers pass its base64 to such a library.
func SignStandard(secret, webhookID string, ts int64, body []byte) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		key = []byte(secret)
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte(webhookID + "." + strconv.FormatInt(ts, 10) + "."))
	h.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(h.Sum(nil))
}

func mac(secret string, ts int64, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(strconv.FormatInt(ts, 10)))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verify reports whether header (a Herald-Signature value) signs body with
// secret for the timestamp in tsHeader (a Herald-Timestamp value), and that
// timestamp lies within tolerance of now, in either direction; tolerance
// <= 0 means DefaultTolerance. The header may carry several comma-separated
// signatures, as during a secret rotation; one valid v1 signature suffices.
// Receivers must pass the raw request body, before any JSON parsing.
func Verify(secret string, header string, tsHeader string, body []byte, now time.Time, tolerance time.Duration) bool {
	if secret == "" {
		return false
	}
	ts, err := strconv.ParseInt(strings.TrimSpace(tsHeader), 10, 64)
	if err != nil {
		return false
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if age := now.Sub(time.Unix(ts, 0)); age > tolerance || age < -tolerance {
		return false
	}
	want := mac(secret, ts, body)
	ok := false
	for _, part := range strings.Split(header, ",") {
		version, sig, found := strings.Cut(strings.TrimSpace(part), "=")
		if !found || version != signatureVersion {
			continue
		}
		got, err := hex.DecodeString(sig)
		if err != nil {
			continue
		}
		// Check every candidate without stopping early, and compare in
		// constant time, so timing reveals nothing about the secret.
		if hmac.Equal(got, want) {
			ok = true
		}
	}
	return ok
}
