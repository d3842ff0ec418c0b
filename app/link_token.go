package app

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/google/uuid"
)

// A link token is what an expiring public link (a file's short link, an
// acknowledgement link) carries: a tenant, one of its rows and the
// expiry, signed. Before base64 it is the two ids, the expiry (Unix
// seconds, 32 bits) and the first 16 bytes of the HMAC-SHA256 under the
// kind's own key (linkKey): 70 characters, which an SMS pays for each of.
const (
	linkTokenPayload = 16 + 16 + 4
	linkTokenMAC     = 16
	// linkTokenLen is a token's length in text: base64url without padding.
	linkTokenLen = ((linkTokenPayload+linkTokenMAC)*8 + 5) / 6
)

// linkToken is a link token read from its text: what it names, and the
// MAC it came with, checked by signedBy.
type linkToken struct {
	TenantID uuid.UUID
	ID       uuid.UUID
	Expires  time.Time
	mac      []byte
}

// payload is what the token's MAC covers, besides the extra bytes a kind
// binds it to.
func (t linkToken) payload() []byte {
	p := make([]byte, 0, linkTokenPayload+linkTokenMAC)
	p = append(p, t.TenantID[:]...)
	p = append(p, t.ID[:]...)
	return binary.BigEndian.AppendUint32(p, uint32(t.Expires.Unix()))
}

// seal is the token's text, signed under key over its payload and extra
// (a file's nonce, which only the database knows).
func (t linkToken) seal(key []byte, extra ...[]byte) string {
	p := t.payload()
	mac := linkMAC(key, append([][]byte{p}, extra...)...)[:linkTokenMAC]
	return base64.RawURLEncoding.EncodeToString(append(p, mac...))
}

// openLinkToken reads a token's form: false for anything that is not
// base64url of the right length naming two ids. The MAC is not checked:
// signedBy does, once the kind has what the token is bound to.
func openLinkToken(token string) (linkToken, bool) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(raw) != linkTokenPayload+linkTokenMAC {
		return linkToken{}, false
	}
	var t linkToken
	copy(t.TenantID[:], raw[0:16])
	copy(t.ID[:], raw[16:32])
	t.Expires = time.Unix(int64(binary.BigEndian.Uint32(raw[32:36])), 0)
	t.mac = raw[linkTokenPayload:]
	return t, t.TenantID != uuid.Nil && t.ID != uuid.Nil
}

// signedBy reports whether the token was sealed under key with extra,
// comparing in constant time.
func (t linkToken) signedBy(key []byte, extra ...[]byte) bool {
	want := linkMAC(key, append([][]byte{t.payload()}, extra...)...)[:linkTokenMAC]
	return hmac.Equal(t.mac, want)
}
