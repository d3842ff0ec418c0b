package app

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestLinkToken: a sealed token opens to what it names and verifies under
// its kind's key and bound bytes only; any changed bit, another kind's key
// or another nonce fails, and malformed text does not open.
func TestLinkToken(t *testing.T) {
	t.Parallel()
	secret := []byte("deployment secret")
	files, acks := linkKey(secret, "herald file links v1"), linkKey(secret, "herald acknowledgement links v1")
	want := linkToken{TenantID: uuid.New(), ID: uuid.New(), Expires: time.Unix(1_900_000_000, 0)}
	nonce := []byte("row nonce")
	text := want.seal(files, nonce)
	require.Len(t, text, 70, "an SMS pays for each character")
	require.Equal(t, len(text), linkTokenLen)

	got, ok := openLinkToken(text)
	require.True(t, ok)
	require.Equal(t, want.TenantID, got.TenantID)
	require.Equal(t, want.ID, got.ID)
	require.True(t, want.Expires.Equal(got.Expires))
	require.True(t, got.signedBy(files, nonce))
	require.False(t, got.signedBy(acks, nonce), "another kind's key")
	require.False(t, got.signedBy(files, []byte("other nonce")), "another row's nonce")
	require.False(t, got.signedBy(files), "without the nonce")

	raw, _ := base64.RawURLEncoding.DecodeString(text)
	for i := range raw {
		flipped := append([]byte(nil), raw...)
		flipped[i] ^= 1
		t2, ok := openLinkToken(base64.RawURLEncoding.EncodeToString(flipped))
		require.False(t, ok && t2.signedBy(files, nonce), "byte %d changed", i)
	}
	for _, bad := range []string{"", "x", text + "A", text[:69], "!" + text[1:], base64.RawURLEncoding.EncodeToString(make([]byte, 52))} {
		_, ok := openLinkToken(bad)
		require.False(t, ok, "%q", bad)
	}
}
