package web_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"
	"github.com/stretchr/testify/require"
)

// softKey is a security key in software: an ES256 key pair and a
// signature counter, answering the console's challenges as a USB key would
// (no attestation), so that the server's checks run on real WebAuthn
// messages.
type softKey struct {
	priv   *ecdsa.PrivateKey
	id     []byte
	count  uint32
	rpID   string
	origin string
}

// newSoftKey returns a key for the tests' console (base URL
// http://localhost:8080).
func newSoftKey(t *testing.T) *softKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	id := make([]byte, 32)
	_, _ = rand.Read(id)
	return &softKey{priv: priv, id: id, rpID: "localhost", origin: "http://localhost:8080"}
}

var b64 = base64.RawURLEncoding

// answer is what the test changes in an answer to make it wrong.
type answer struct {
	origin    string
	challenge []byte
	count     *uint32
}

func (k *softKey) clientData(t *testing.T, typ string, challenge []byte, a answer) []byte {
	t.Helper()
	origin := k.origin
	if a.origin != "" {
		origin = a.origin
	}
	if a.challenge != nil {
		challenge = a.challenge
	}
	data, err := json.Marshal(map[string]any{"type": typ, "challenge": b64.EncodeToString(challenge), "origin": origin, "crossOrigin": false})
	require.NoError(t, err)
	return data
}

// authData is the authenticator data: the relying party's hash, flags and
// the counter, raised by one unless a says otherwise.
func (k *softKey) authData(flags byte, a answer) []byte {
	if a.count != nil {
		k.count = *a.count
	} else {
		k.count++
	}
	rp := sha256.Sum256([]byte(k.rpID))
	out := append(rp[:], flags)
	return binary.BigEndian.AppendUint32(out, k.count)
}

// register answers the creation options the console sent (JSON).
func (k *softKey) register(t *testing.T, options []byte, a answer) string {
	t.Helper()
	var cc protocol.CredentialCreation
	require.NoError(t, json.Unmarshal(options, &cc))
	require.Equal(t, k.rpID, cc.Response.RelyingParty.ID)
	cdj := k.clientData(t, "webauthn.create", cc.Response.Challenge, a)
	cose, err := webauthncbor.Marshal(webauthncose.EC2PublicKeyData{
		PublicKeyData: webauthncose.PublicKeyData{KeyType: int64(webauthncose.EllipticKey), Algorithm: int64(webauthncose.AlgES256)},
		Curve:         1, XCoord: k.priv.X.FillBytes(make([]byte, 32)), YCoord: k.priv.Y.FillBytes(make([]byte, 32)),
	})
	require.NoError(t, err)
	// User present, attested credential data; a zero AAGUID.
	auth := k.authData(0x41, answer{count: new(uint32)})
	auth = append(auth, make([]byte, 16)...)
	auth = binary.BigEndian.AppendUint16(auth, uint16(len(k.id)))
	auth = append(append(auth, k.id...), cose...)
	att, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": auth})
	require.NoError(t, err)
	return k.credential(t, map[string]any{"clientDataJSON": b64.EncodeToString(cdj), "attestationObject": b64.EncodeToString(att), "transports": []string{"usb"}})
}

// assert answers the request options the console sent (JSON).
func (k *softKey) assert(t *testing.T, options []byte, a answer) string {
	t.Helper()
	var ca protocol.CredentialAssertion
	require.NoError(t, json.Unmarshal(options, &ca))
	cdj := k.clientData(t, "webauthn.get", ca.Response.Challenge, a)
	auth := k.authData(0x01, a)
	cdHash := sha256.Sum256(cdj)
	digest := sha256.Sum256(append(append([]byte{}, auth...), cdHash[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, k.priv, digest[:])
	require.NoError(t, err)
	return k.credential(t, map[string]any{"clientDataJSON": b64.EncodeToString(cdj), "authenticatorData": b64.EncodeToString(auth),
		"signature": b64.EncodeToString(sig)})
}

func (k *softKey) credential(t *testing.T, response map[string]any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"id": b64.EncodeToString(k.id), "rawId": b64.EncodeToString(k.id), "type": "public-key",
		"response": response, "clientExtensionResults": map[string]any{}})
	require.NoError(t, err)
	return string(data)
}

// options posts to a route answering JSON and returns the status and body.
func (s *session) options(path, csrf string) (int, []byte) {
	s.t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp := s.do(req)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp.StatusCode, body
}

// addKey registers k under name for the signed-in browser s and returns
// the answer's status and the recovery codes shown, if any.
func addKey(t *testing.T, s *session, k *softKey, name string, a answer) (int, []string) {
	t.Helper()
	s.page("/account/two-factor")
	status, opts := s.options("/account/two-factor/keys/options", s.csrf)
	require.Equal(t, http.StatusOK, status, "%s", opts)
	doc, resp := s.postPage("/account/two-factor/keys", url.Values{"name": {name}, "credential": {k.register(t, opts, a)}})
	return resp.StatusCode, doc.Find(".recovery-codes code").Map(func(_ int, sel *goquery.Selection) string { return sel.Text() })
}

// keyStep signs in as email up to the second step and returns the
// browser, the step's CSRF token and the options of a key sign-in.
func keyStep(t *testing.T, b *twoFactorBundle, ip, email string) (*session, string, []byte) {
	t.Helper()
	s := b.from(ip)
	token := passwordStep(t, s, email)
	status, opts := s.options("/login/two-factor/key/options", token)
	require.Equal(t, http.StatusOK, status, "%s", opts)
	return s, token, opts
}

func (b *twoFactorBundle) refusals(email, reason string) int {
	return b.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.security_key_refused'
		AND target_id IN (SELECT id::text FROM users WHERE email = $1) AND metadata->>'reason' LIKE $2`, email, reason)
}

func TestSecurityKey_Register(t *testing.T) {
	t.Parallel()
	b := setupTwoFactor(t)
	s := b.signIn(asManager)
	// A second session of the manager, signed in while the password alone
	// sufficed.
	other := b.signIn(asManager)
	manager := b.users[asManager]

	t.Run("FirstKeyBringsRecoveryCodes", func(t *testing.T) {
		status, codes := addKey(t, s, newSoftKey(t), "YubiKey blue", answer{})
		require.Equal(t, http.StatusOK, status)
		require.Len(t, codes, 10)
		require.Equal(t, 10, b.Count(`SELECT count(*) FROM user_recovery_codes WHERE user_id = $1 AND used_at IS NULL`, manager.ID))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM user_security_keys WHERE user_id = $1 AND tenant_id = $2 AND name = 'YubiKey blue'`, manager.ID, b.Tenant.ID))
		require.Equal(t, 1, b.audits("user.security_key_add", manager.Email))

		doc := s.page("/account/two-factor")
		require.Equal(t, "YubiKey blue", text(doc.Find(".security-key-list .key-name")))
		require.Equal(t, "10", text(doc.Find(".recovery-left")))
		require.Equal(t, 1, doc.Find(`script[src="/static/security-key.js"]`).Length())
	})

	t.Run("SecondKeyKeepsCodes", func(t *testing.T) {
		status, codes := addKey(t, s, newSoftKey(t), "YubiKey red", answer{})
		require.Equal(t, http.StatusSeeOther, status)
		require.Empty(t, codes)
		require.Equal(t, 2, b.Count(`SELECT count(*) FROM user_security_keys WHERE user_id = $1`, manager.ID))
	})

	t.Run("BadInput", func(t *testing.T) {
		keys := func() int { return b.Count(`SELECT count(*) FROM user_security_keys WHERE user_id = $1`, manager.ID) }
		before := keys()

		status, _ := addKey(t, s, newSoftKey(t), "  ", answer{})
		require.Equal(t, http.StatusUnprocessableEntity, status, "a key needs a name")
		status, _ = addKey(t, s, newSoftKey(t), "wrong challenge", answer{challenge: []byte("not the challenge at all, no")})
		require.Equal(t, http.StatusUnprocessableEntity, status)
		status, _ = addKey(t, s, newSoftKey(t), "wrong origin", answer{origin: "https://evil.example"})
		require.Equal(t, http.StatusUnprocessableEntity, status)
		require.Equal(t, before, keys(), "nothing stored")

		// An answer without a challenge asked for, and one given twice.
		k := newSoftKey(t)
		s.page("/account/two-factor")
		_, opts := s.options("/account/two-factor/keys/options", s.csrf)
		cred := k.register(t, opts, answer{})
		doc, resp := s.postPage("/account/two-factor/keys", url.Values{"name": {"garbage"}, "credential": {"{not json"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%s", text(doc.Find("body")))
		_, resp = s.postPage("/account/two-factor/keys", url.Values{"name": {"replayed"}, "credential": {cred}})
		require.Equal(t, http.StatusConflict, resp.StatusCode, "the garbage used the challenge up")
		require.Equal(t, before, keys())

		// The same credential twice: the second is refused.
		k = newSoftKey(t)
		status, _ = addKey(t, s, k, "first", answer{})
		require.Equal(t, http.StatusSeeOther, status)
		status, _ = addKey(t, b.signIn(asSupport), k, "same key, other user", answer{})
		require.Equal(t, http.StatusConflict, status)
		require.Equal(t, 0, b.Count(`SELECT count(*) FROM user_security_keys WHERE user_id = $1`, b.users[asSupport].ID))

		// Without a CSRF token: refused, as JSON.
		status, body := s.options("/account/two-factor/keys/options", "forged")
		require.Equal(t, http.StatusForbidden, status)
		require.Contains(t, string(body), `"error"`)
	})

	t.Run("ChallengeExpires", func(t *testing.T) {
		s.page("/account/two-factor")
		_, opts := s.options("/account/two-factor/keys/options", s.csrf)
		b.clock.Advance(6 * time.Minute)
		_, resp := s.postPage("/account/two-factor/keys", url.Values{"name": {"late"}, "credential": {newSoftKey(t).register(t, opts, answer{})}})
		require.Equal(t, http.StatusConflict, resp.StatusCode)
	})

	t.Run("OtherSessionCannotFinish", func(t *testing.T) {
		s.page("/account/two-factor")
		_, opts := s.options("/account/two-factor/keys/options", s.csrf)
		other.page("/account/two-factor")
		_, resp := other.postPage("/account/two-factor/keys", url.Values{"name": {"stolen"}, "credential": {newSoftKey(t).register(t, opts, answer{})}})
		require.Equal(t, http.StatusConflict, resp.StatusCode, "the challenge is bound to the session that asked")
	})
}

func TestSecurityKey_SignIn(t *testing.T) {
	t.Parallel()
	b := setupTwoFactor(t)
	email := b.users[asManager].Email
	key := newSoftKey(t)
	status, _ := addKey(t, b.signIn(asManager), key, "YubiKey blue", answer{})
	require.Equal(t, http.StatusOK, status)
	supportKey := newSoftKey(t)
	status, _ = addKey(t, b.signIn(asSupport), supportKey, "support's", answer{})
	require.Equal(t, http.StatusOK, status)

	t.Run("Key", func(t *testing.T) {
		s, token, opts := keyStep(t, b, "198.51.100.1", email)
		resp := s.post("/login/two-factor/key", url.Values{"csrf": {token}, "credential": {key.assert(t, opts, answer{})}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/t/acme/", resp.Header.Get("Location"))
		s.follow(resp)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login' AND metadata->>'second_factor' = 'security_key' AND metadata->>'key_name' = 'YubiKey blue'`))
		require.Equal(t, int(key.count), b.Count(`SELECT sign_count FROM user_security_keys WHERE credential_id = $1`, key.id))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM user_security_keys WHERE credential_id = $1 AND last_used_at IS NOT NULL`, key.id))
	})

	refused := func(t *testing.T, s *session, token, cred string) {
		t.Helper()
		doc, resp := s.postPage("/login/two-factor/key", url.Values{"csrf": {token}, "credential": {cred}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.NotEmpty(t, text(doc.Find(".flash-error")))
		_, signedIn := s.cookies["herald_session"]
		require.False(t, signedIn)
	}

	t.Run("WrongChallenge", func(t *testing.T) {
		s, token, opts := keyStep(t, b, "198.51.100.2", email)
		refused(t, s, token, key.assert(t, opts, answer{challenge: []byte("another challenge, thirty-two b")}))
		require.Equal(t, 1, b.refusals(email, "assertion:%"))
	})

	t.Run("WrongOrigin", func(t *testing.T) {
		s, token, opts := keyStep(t, b, "198.51.100.3", email)
		refused(t, s, token, key.assert(t, opts, answer{origin: "https://herald.evil.example"}))
		require.Equal(t, 2, b.refusals(email, "assertion:%"))
	})

	t.Run("ReplayedChallenge", func(t *testing.T) {
		s, token, opts := keyStep(t, b, "198.51.100.4", email)
		cred := key.assert(t, opts, answer{})
		resp := s.post("/login/two-factor/key", url.Values{"csrf": {token}, "credential": {cred}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		// The same answer from another browser at its second step.
		s2, token2, _ := keyStep(t, b, "198.51.100.5", email)
		refused(t, s2, token2, cred)
		// And on the first browser's step again, whose challenge is spent.
		s3 := b.from("198.51.100.4")
		token3 := passwordStep(t, s3, email)
		refused(t, s3, token3, cred)
		require.Equal(t, 1, b.refusals(email, "challenge_ended"))
	})

	t.Run("UnknownCredential", func(t *testing.T) {
		s, token, opts := keyStep(t, b, "198.51.100.6", email)
		refused(t, s, token, newSoftKey(t).assert(t, opts, answer{}))
		require.Equal(t, 1, b.refusals(email, "unknown_credential"))
	})

	t.Run("AnotherUsersCredential", func(t *testing.T) {
		s, token, opts := keyStep(t, b, "198.51.100.7", email)
		refused(t, s, token, supportKey.assert(t, opts, answer{}))
		require.Equal(t, 2, b.refusals(email, "unknown_credential"))
	})

	t.Run("CounterGoingBack", func(t *testing.T) {
		s, token, opts := keyStep(t, b, "198.51.100.8", email)
		stored := uint32(b.Count(`SELECT sign_count FROM user_security_keys WHERE credential_id = $1`, key.id))
		back := stored - 1
		refused(t, s, token, key.assert(t, opts, answer{count: &back}))
		require.Equal(t, 1, b.refusals(email, "counter_not_increased"))
		require.Equal(t, int(stored), b.Count(`SELECT sign_count FROM user_security_keys WHERE credential_id = $1`, key.id), "the counter stays")
		key.count = stored
	})

	t.Run("ConcurrentAnswers", func(t *testing.T) {
		// One challenge answered by several requests at once: one passes.
		s, token, opts := keyStep(t, b, "198.51.100.9", email)
		cred := key.assert(t, opts, answer{})
		const n = 5
		var statuses [n]int
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := &session{t: t, c: s.c, cookies: maps.Clone(s.cookies), ip: s.ip}
				statuses[i] = c.post("/login/two-factor/key", url.Values{"csrf": {token}, "credential": {cred}}).StatusCode
			}()
		}
		wg.Wait()
		passed := 0
		for _, st := range statuses {
			if st == http.StatusSeeOther {
				passed++
			} else {
				require.Equal(t, http.StatusUnauthorized, st)
			}
		}
		require.Equal(t, 1, passed, "%v", statuses)
	})

	t.Run("NoAppNoSixDigitCode", func(t *testing.T) {
		s := b.from("198.51.100.10")
		doc, resp := s.loginPage(email, consolePassword)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, 1, doc.Find(`form.security-key-signin`).Length(), "the key is offered")
		require.Contains(t, text(doc.Find(".auth-card")), "recovery codes")
		resp = s.post("/login/two-factor", url.Values{"csrf": {formCSRF(doc, "/login/two-factor")}, "code": {"123456"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no authenticator app: no six-digit code is right")
	})

	t.Run("Operator", func(t *testing.T) {
		op := b.users[asOperator]
		k := newSoftKey(t)
		status, _ := addKey(t, b.signIn(asOperator), k, "operator key", answer{})
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM user_security_keys WHERE user_id = $1 AND tenant_id IS NULL`, op.ID))
		s, token, opts := keyStep(t, b, "198.51.100.11", op.Email)
		resp := s.post("/login/two-factor/key", url.Values{"csrf": {token}, "credential": {k.assert(t, opts, answer{})}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	})

	t.Run("OptionsNeedTheSecondStep", func(t *testing.T) {
		s := b.from("198.51.100.12")
		doc := s.page("/login")
		status, body := s.options("/login/two-factor/key/options", formCSRF(doc, "/login"))
		require.Equal(t, http.StatusUnauthorized, status)
		require.Contains(t, string(body), "no longer valid")
	})
}

// formCSRF is the CSRF token of the form posting to action.
func formCSRF(doc *goquery.Document, action string) string {
	token, _ := doc.Find(`form[action="` + action + `"] input[name=csrf]`).Attr("value")
	return token
}

func TestSecurityKey_Remove(t *testing.T) {
	t.Parallel()
	b := setupTwoFactor(t)
	s := b.signIn(asSupport)
	support := b.users[asSupport]
	status, _ := addKey(t, s, newSoftKey(t), "YubiKey blue", answer{})
	require.Equal(t, http.StatusOK, status)
	keyID, ok := s.page("/account/two-factor").Find(".security-key-list tr[data-key]").Attr("data-key")
	require.True(t, ok, "the key is listed")
	doc, resp := s.postPage("/account/two-factor/keys/"+keyID+"/remove", url.Values{"proof": {"guess"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, text(doc.Find(".security-keys")), "neither a current code")
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM user_security_keys WHERE user_id = $1`, support.ID))

	// Another user cannot remove it, whatever their proof.
	m := b.signIn(asManager)
	m.page("/account/two-factor")
	resp = m.post("/account/two-factor/keys/"+keyID+"/remove", url.Values{"proof": {consolePassword}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp = s.post("/account/two-factor/keys/"+keyID+"/remove", url.Values{"proof": {consolePassword}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, 0, b.Count(`SELECT count(*) FROM user_security_keys WHERE user_id = $1`, support.ID))
	require.Equal(t, 0, b.Count(`SELECT count(*) FROM user_recovery_codes WHERE user_id = $1`, support.ID), "no second factor left: no codes")
	require.Equal(t, 1, b.audits("user.security_key_remove", support.Email))
	// The password alone signs in again.
	require.Equal(t, http.StatusSeeOther, b.anonymous().login(support.Email, consolePassword).StatusCode)
}

func TestTwoFactor_NewRecoveryCodes(t *testing.T) {
	t.Parallel()
	b := setupTwoFactor(t)
	s := b.signIn(asManager)
	secret, old := b.enrol(t, s)
	email := b.users[asManager].Email

	s.page("/account/two-factor")
	_, resp := s.postPage("/account/two-factor/recovery-codes", url.Values{"proof": {"guess"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)

	b.clock.Advance(30 * time.Second)
	doc, resp := s.postPage("/account/two-factor/recovery-codes", url.Values{"proof": {b.code(t, secret, 0)}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	codes := doc.Find(".recovery-codes code").Map(func(_ int, sel *goquery.Selection) string { return sel.Text() })
	require.Len(t, codes, 10)
	require.NotContains(t, codes, old[0])
	require.Equal(t, 1, b.audits("user.two_factor_recovery_codes_replaced", email))
	require.Empty(t, s.page("/account/two-factor").Find(".recovery-codes code").Nodes, "shown once")

	// The old codes stop working; the new ones work.
	a := b.from("203.0.113.20")
	token := passwordStep(t, a, email)
	require.Equal(t, http.StatusUnauthorized, a.post("/login/two-factor", url.Values{"csrf": {token}, "code": {old[1]}}).StatusCode)
	require.Equal(t, http.StatusSeeOther, a.post("/login/two-factor", url.Values{"csrf": {token}, "code": {codes[0]}}).StatusCode)

	// Someone without a second factor has none to renew.
	o := b.signIn(asOtherManager)
	o.page("/account/two-factor")
	_, resp = o.postPage("/account/two-factor/recovery-codes", url.Values{"proof": {consolePassword}})
	require.Equal(t, http.StatusConflict, resp.StatusCode)
}

func TestTwoFactor_ResetEndsSessions(t *testing.T) {
	t.Parallel()
	b := setupTwoFactor(t)
	support := b.users[asSupport]
	s := b.signIn(asSupport)
	b.enrol(t, s)
	status, _ := addKey(t, s, newSoftKey(t), "YubiKey blue", answer{})
	require.Equal(t, http.StatusSeeOther, status)
	_, resp := s.get("/t/acme/messages")
	require.Equal(t, http.StatusOK, resp.StatusCode)

	m := b.signIn(asManager)
	m.page("/t/acme/users/" + support.ID.String())
	resp = m.post("/t/acme/users/"+support.ID.String()+"/reset-two-factor", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	_, resp = s.get("/t/acme/messages")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the reset ends the user's sessions")
	require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/login"), resp.Header.Get("Location"))
	require.Equal(t, 0, b.Count(`SELECT count(*) FROM user_security_keys WHERE user_id = $1`, support.ID))
	require.Equal(t, 0, b.Count(`SELECT count(*) FROM user_second_factors WHERE user_id = $1 AND confirmed_at IS NOT NULL`, support.ID))
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.two_factor_reset' AND target_id = $1 AND metadata->>'security_keys' = '1'`, support.ID.String()))
	// The manager's own session goes on.
	_, resp = m.get("/t/acme/messages")
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
