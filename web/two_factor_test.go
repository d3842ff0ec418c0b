package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// twoFactorBundle is the console's cast on a clock the test moves, so
// that TOTP codes are computed for known time steps.
type twoFactorBundle struct {
	*consoleBundle
	clock *testClock
}

func setupTwoFactor(t *testing.T) *twoFactorBundle {
	t.Helper()
	clock := newTestClock()
	return &twoFactorBundle{consoleBundle: setupConsole(t, webtest.Options{NoWorkers: true, Now: clock.Now}), clock: clock}
}

// code is the TOTP code of secret at the test's clock, plus steps steps.
func (b *twoFactorBundle) code(t *testing.T, secret string, steps int) string {
	t.Helper()
	code, err := totp.GenerateCodeCustom(secret, b.clock.Now().Add(time.Duration(steps)*30*time.Second),
		totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	require.NoError(t, err)
	return code
}

// enrol sets up a second factor for the signed-in browser and returns the
// secret and the recovery codes.
func (b *twoFactorBundle) enrol(t *testing.T, s *session) (string, []string) {
	t.Helper()
	doc := s.page("/account/two-factor")
	secret := text(doc.Find(".totp-secret"))
	require.NotEmpty(t, secret)
	doc, resp := s.postPage("/account/two-factor", url.Values{"code": {b.code(t, secret, 0)}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	codes := doc.Find(".recovery-codes code").Map(func(_ int, s *goquery.Selection) string { return s.Text() })
	require.Len(t, codes, 10)
	return secret, codes
}

// passwordStep signs in with the password of a user with a second factor
// and returns the second step's CSRF token.
func passwordStep(t *testing.T, s *session, email string) string {
	t.Helper()
	resp := s.login(email, consolePassword)
	require.Equal(t, http.StatusOK, resp.StatusCode, "a second factor asks for a code")
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	token, ok := doc.Find(`form[action="/login/two-factor"] input[name=csrf]`).Attr("value")
	require.True(t, ok)
	_, signedIn := s.cookies["herald_session"]
	require.False(t, signedIn, "the password alone gives no session")
	return token
}

func (b *twoFactorBundle) audits(action, email string) int {
	return b.Count(`SELECT count(*) FROM audit_log WHERE action = $1 AND (metadata->>'email' = $2 OR target_id IN (SELECT id::text FROM users WHERE email = $2))`, action, email)
}

func TestTwoFactor_Enrol(t *testing.T) {
	t.Parallel()
	b := setupTwoFactor(t)
	s := b.signIn(asSupport)

	doc := s.page("/account/two-factor")
	src, _ := doc.Find("img.qr").Attr("src")
	require.True(t, strings.HasPrefix(src, "data:image/png;base64,"), "QR code as a PNG data URL, got %.40q", src)
	secret := text(doc.Find(".totp-secret"))
	require.Equal(t, secret, text(s.page("/account/two-factor").Find(".totp-secret")), "reloading shows the same key")

	// Sealed at rest: the secret is not in the row.
	require.Equal(t, 0, b.Count(`SELECT count(*) FROM user_second_factors WHERE position(convert_to($1, 'UTF8') IN secret) > 0`, secret))

	doc, resp := s.postPage("/account/two-factor", url.Values{"code": {"000000"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, text(doc.Find("body")), "That code is wrong")

	doc, resp = s.postPage("/account/two-factor", url.Values{"code": {b.code(t, secret, 0)}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Equal(t, 10, doc.Find(".recovery-codes code").Length())
	require.Equal(t, 10, b.Count(`SELECT count(*) FROM user_recovery_codes WHERE user_id = $1 AND used_at IS NULL`, b.users[asSupport].ID))

	doc = s.page("/account/two-factor")
	require.Empty(t, doc.Find(".totp-secret").Nodes, "the key is never shown after enrolment")
	require.NotContains(t, doc.Text(), secret)
	require.Equal(t, "10", text(doc.Find(".recovery-left")))
	require.Equal(t, 1, b.audits("user.two_factor_enrol", "support@acme.test"))
}

func TestTwoFactor_SignIn(t *testing.T) {
	t.Parallel()
	b := setupTwoFactor(t)
	secret, recovery := b.enrol(t, b.signIn(asManager))
	email := "manager@acme.test"

	t.Run("CodeAfterPassword", func(t *testing.T) {
		b.clock.Advance(30 * time.Second)
		s := b.anonymous()
		token := passwordStep(t, s, email)
		resp := s.post("/login/two-factor", url.Values{"csrf": {token}, "code": {"123456"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		resp = s.post("/login/two-factor", url.Values{"csrf": {token}, "code": {b.code(t, secret, 0)}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/t/acme/", resp.Header.Get("Location"))
		s.follow(resp)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login' AND metadata->>'second_factor' = 'totp'`))

		// The same code again, from another browser: refused.
		s = b.anonymous()
		token = passwordStep(t, s, email)
		resp = s.post("/login/two-factor", url.Values{"csrf": {token}, "code": {b.code(t, secret, 0)}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a code works once")
		// Nor an older one within the window.
		resp = s.post("/login/two-factor", url.Values{"csrf": {token}, "code": {b.code(t, secret, -1)}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	})

	t.Run("ConcurrentSameCode", func(t *testing.T) {
		b.clock.Advance(30 * time.Second)
		code := b.code(t, secret, 0)
		const n = 6
		var sessions [n]*session
		var tokens [n]string
		for i := range sessions {
			sessions[i] = b.from("198.51.100." + string(rune('1'+i)))
			tokens[i] = passwordStep(t, sessions[i], email)
		}
		var wg sync.WaitGroup
		var statuses [n]int
		for i := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = sessions[i].post("/login/two-factor", url.Values{"csrf": {tokens[i]}, "code": {code}}).StatusCode
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
		require.Equal(t, 1, passed, "of %d attempts with one code exactly one signs in: %v", n, statuses)
	})

	t.Run("RecoveryCode", func(t *testing.T) {
		s := b.from("203.0.113.7")
		token := passwordStep(t, s, email)
		resp := s.post("/login/two-factor", url.Values{"csrf": {token}, "code": {strings.ToLower(recovery[0])}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, 1, b.audits("user.two_factor_recovery_used", email))

		s = b.from("203.0.113.7")
		token = passwordStep(t, s, email)
		resp = s.post("/login/two-factor", url.Values{"csrf": {token}, "code": {recovery[0]}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a recovery code works once")
	})

	t.Run("WrongCodesAreThrottled", func(t *testing.T) {
		s := b.from("203.0.113.99")
		token := passwordStep(t, s, email)
		var last *http.Response
		for range 6 {
			last = s.post("/login/two-factor", url.Values{"csrf": {token}, "code": {"000000"}})
		}
		require.Equal(t, http.StatusTooManyRequests, last.StatusCode)
		require.NotEmpty(t, last.Header.Get("Retry-After"))
		// Even the right code waits.
		resp := s.post("/login/two-factor", url.Values{"csrf": {token}, "code": {b.code(t, secret, 1)}})
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	})

	t.Run("PasswordChangeVoidsStep", func(t *testing.T) {
		s := b.from("203.0.113.50")
		token := passwordStep(t, s, email)
		b.Exec(`UPDATE users SET session_version = session_version + 1 WHERE email = $1`, email)
		doc, resp := s.postPage("/login/two-factor", url.Values{"csrf": {token}, "code": {b.code(t, secret, 3)}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Equal(t, 1, doc.Find(`form[action="/login"] input[name=password]`).Length(), "back to the password")
		_, stepping := s.cookies["herald_login_second"]
		require.False(t, stepping)
	})

	t.Run("PasswordAgainKeepsCodeFailures", func(t *testing.T) {
		// Whoever knows the password cannot start the count of wrong
		// codes again by typing the password again.
		s := b.from("203.0.113.77")
		token := passwordStep(t, s, email)
		for range 5 {
			require.Equal(t, http.StatusUnauthorized, s.post("/login/two-factor", url.Values{"csrf": {token}, "code": {"000000"}}).StatusCode)
		}
		b.clock.Advance(2 * time.Second)
		token = passwordStep(t, s, email)
		resp := s.post("/login/two-factor", url.Values{"csrf": {token}, "code": {"000000"}})
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	})

	t.Run("NoCookieNoStep", func(t *testing.T) {
		s := b.anonymous()
		doc := s.page("/login")
		token, _ := doc.Find(`input[name=csrf]`).Attr("value")
		resp := s.post("/login/two-factor", url.Values{"csrf": {token}, "code": {b.code(t, secret, 2)}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		_, signedIn := s.cookies["herald_session"]
		require.False(t, signedIn)
	})

	t.Run("ChoiceThenCode", func(t *testing.T) {
		// Last: from here the address has accounts in two tenants.
		_, err := b.Services.Users.Create(b.Ctx, app.CLIActor, app.UserInput{Email: email, Password: consolePassword, Role: app.RoleSupport, TenantSlug: "globex"})
		require.NoError(t, err)
		s := b.from("203.0.113.60")
		doc, resp := s.postPage("/login", url.Values{"csrf": {loginToken(t, s)}, "email": {email}, "password": {consolePassword}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		token, _ := doc.Find(`form.login-choice input[name=csrf]`).Attr("value")
		doc, resp = s.postPage("/login", url.Values{"csrf": {token}, "account": {b.users[asManager].ID.String()}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		token, ok := doc.Find(`form[action="/login/two-factor"] input[name=csrf]`).Attr("value")
		require.True(t, ok, "the chosen account has a second factor: a code is asked for")
		_, signedIn := s.cookies["herald_session"]
		require.False(t, signedIn)
		b.clock.Advance(30 * time.Second)
		resp = s.post("/login/two-factor", url.Values{"csrf": {token}, "code": {b.code(t, secret, 0)}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/t/acme/", resp.Header.Get("Location"))
	})
}

// loginToken loads the sign-in form and returns its CSRF token.
func loginToken(t *testing.T, s *session) string {
	t.Helper()
	token, ok := s.page("/login").Find(`form[action="/login"] input[name=csrf]`).Attr("value")
	require.True(t, ok)
	return token
}

func TestTwoFactor_Requirement(t *testing.T) {
	t.Parallel()
	b := setupTwoFactor(t)

	t.Run("Tenant", func(t *testing.T) {
		m := b.signIn(asManager)
		m.page("/t/acme/users")
		resp := m.post("/t/acme/users/two-factor", url.Values{"required": {"on"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'tenant.two_factor_requirement' AND metadata->>'required' = 'true'`))

		s := b.anonymous()
		resp = s.login("support@acme.test", consolePassword)
		require.Equal(t, "/account/two-factor", resp.Header.Get("Location"), "sent to enrol right after the password")
		_, resp = s.get("/t/acme/messages")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/account/two-factor", resp.Header.Get("Location"), "nothing else until enrolled")
		_, resp = s.get("/account/two-factor")
		require.Equal(t, http.StatusOK, resp.StatusCode)

		b.enrol(t, s)
		_, resp = s.get("/t/acme/messages")
		require.Equal(t, http.StatusOK, resp.StatusCode)

		// Another tenant's users are not held.
		_, resp = b.signIn(asOtherManager).get("/t/globex/")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		// Support may not change the rule.
		s.page("/t/acme/")
		require.Equal(t, http.StatusForbidden, s.post("/t/acme/users/two-factor", nil).StatusCode)
	})

	t.Run("Operators", func(t *testing.T) {
		op := b.signIn(asOperator)
		op.page("/operators")
		resp := op.post("/operators/two-factor", url.Values{"required": {"on"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		_, resp = op.get("/tenants")
		require.Equal(t, "/account/two-factor", resp.Header.Get("Location"))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'platform.two_factor_requirement' AND tenant_id IS NULL`))
		// Tenant users are not held by the operators' rule.
		_, resp = b.signIn(asOtherManager).get("/t/globex/")
		require.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

func TestTwoFactor_LostDevice(t *testing.T) {
	t.Parallel()
	b := setupTwoFactor(t)
	b.enrol(t, b.signIn(asSupport))
	support := b.users[asSupport]

	t.Run("ManagerResets", func(t *testing.T) {
		m := b.signIn(asManager)
		doc := m.page("/t/acme/users/" + support.ID.String())
		require.Equal(t, 1, doc.Find(`form[action$="/reset-two-factor"]`).Length())
		require.Contains(t, text(m.page("/t/acme/users").Find(`tr[data-user="`+support.ID.String()+`"] .two-factor`)), "enrolled")
		resp := m.post("/t/acme/users/"+support.ID.String()+"/reset-two-factor", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.two_factor_reset' AND target_id = $1 AND actor_id = $2`,
			support.ID.String(), b.users[asManager].ID))
		require.Equal(t, 0, b.Count(`SELECT count(*) FROM user_recovery_codes WHERE user_id = $1`, support.ID))

		// The password alone signs in again.
		resp = b.anonymous().login("support@acme.test", consolePassword)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	})

	t.Run("OtherTenantCannotReset", func(t *testing.T) {
		other := b.signIn(asOtherManager)
		other.page("/t/globex/")
		resp := other.post("/t/acme/users/"+support.ID.String()+"/reset-two-factor", nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	t.Run("OperatorResetsOperator", func(t *testing.T) {
		other, err := b.Services.Users.Create(b.Ctx, b.users[asOperator].Actor(), app.UserInput{Email: "ops2@herald.test", Password: consolePassword, Role: app.RoleOperator})
		require.NoError(t, err)
		s := b.anonymous()
		require.Equal(t, http.StatusSeeOther, s.login("ops2@herald.test", consolePassword).StatusCode)
		b.clock.Advance(30 * time.Second)
		b.enrol(t, s)

		op := b.signIn(asOperator)
		op.page("/operators")
		resp := op.post("/operators/"+other.ID.String()+"/reset-two-factor", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.two_factor_reset' AND target_id = $1 AND tenant_id IS NULL`, other.ID.String()))
		// A manager cannot.
		m := b.signIn(asManager)
		m.page("/t/acme/")
		resp = m.post("/operators/"+other.ID.String()+"/reset-two-factor", nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	})

	t.Run("CommandResetsLoneOperator", func(t *testing.T) {
		s := b.signIn(asOperator)
		b.clock.Advance(30 * time.Second)
		b.enrol(t, s)
		require.NoError(t, b.Services.Console.TwoFactor.ResetByEmail(b.Ctx, app.CLIActor, "OPS@herald.test", ""))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.two_factor_reset' AND actor_type = 'cli' AND target_id = $1`,
			b.users[asOperator].ID.String()))
		resp := b.anonymous().login("ops@herald.test", consolePassword)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the password alone signs in again")
	})

	t.Run("DisableNeedsProof", func(t *testing.T) {
		s := b.signIn(asOtherManager)
		b.clock.Advance(30 * time.Second)
		b.enrol(t, s)
		s.page("/account/two-factor")
		_, resp := s.postPage("/account/two-factor/disable", url.Values{"proof": {"guess"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		resp = s.post("/account/two-factor/disable", url.Values{"proof": {consolePassword}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, 1, b.audits("user.two_factor_disable", "manager@globex.test"))
	})
}
