package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/web/webtest"
)

func TestConsole_SignIn(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})

	t.Run("FormAndStartPages", func(t *testing.T) {
		s := c.anonymous()
		doc := s.page("/login")
		require.Equal(t, 1, doc.Find(`input[name=email][type=email]`).Length())
		require.Equal(t, 1, doc.Find(`input[name=password][type=password]`).Length())

		resp := s.login("manager@acme.test", consolePassword)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/t/acme/", resp.Header.Get("Location"))
		doc = s.follow(resp)
		require.Contains(t, text(doc.Find(".userbox")), "manager@acme.test")
		require.Contains(t, text(doc.Find(".tenant-badge")), "Acme Tours")

		resp = c.anonymous().login("ops@herald.test", consolePassword)
		require.Equal(t, "/tenants", resp.Header.Get("Location"))
	})

	t.Run("CookieFlags", func(t *testing.T) {
		resp := c.anonymous().login("support@acme.test", consolePassword)
		var found bool
		for _, ck := range resp.Cookies() {
			if ck.Name == "herald_session" {
				found = true
				require.True(t, ck.HttpOnly)
				require.Equal(t, http.SameSiteLaxMode, ck.SameSite)
				require.False(t, ck.Expires.IsZero(), "session cookie must expire")
			}
		}
		require.True(t, found)
	})

	t.Run("GoesWhereItWasSent", func(t *testing.T) {
		s := c.anonymous()
		_, resp := s.get("/t/acme/?tab=week")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/login?next=%2Ft%2Facme%2F%3Ftab%3Dweek", resp.Header.Get("Location"))
		doc := s.page(resp.Header.Get("Location"))
		next, _ := doc.Find(`input[name=next]`).Attr("value")
		require.Equal(t, "/t/acme/?tab=week", next)
		token, _ := doc.Find(`input[name=csrf]`).Attr("value")
		resp = s.post("/login", url.Values{"csrf": {token}, "email": {"manager@acme.test"}, "password": {consolePassword}, "next": {next}})
		require.Equal(t, "/t/acme/?tab=week", resp.Header.Get("Location"))
	})

	t.Run("NeverSendsElsewhere", func(t *testing.T) {
		for _, next := range []string{"https://evil.example/", "//evil.example/", "/\\evil.example"} {
			s := c.anonymous()
			doc := s.page("/login?next=" + url.QueryEscape(next))
			token, _ := doc.Find(`input[name=csrf]`).Attr("value")
			resp := s.post("/login", url.Values{"csrf": {token}, "email": {"manager@acme.test"}, "password": {consolePassword}, "next": {next}})
			require.Equal(t, "/t/acme/", resp.Header.Get("Location"), "next %q", next)
		}
	})

	t.Run("NeverSendsElsewhereDisguised", func(t *testing.T) {
		// Browsers drop tabs and line breaks from a Location and read a
		// backslash as a slash: "/\t/x" would land on //x, another site.
		// Each is written as it arrives in the query string of a link.
		for _, raw := range []string{"/%09/x", "/%0a/x", "/%0d%0a/x", "/%5Cx", "/%5C/x", "//x", "https://x", "https:x", "/%00/x", "%09//x", "javascript:alert(1)", "x/y", "///x"} {
			next, err := url.QueryUnescape(raw)
			require.NoError(t, err)
			doc := c.anonymous().page("/login?next=" + raw)
			kept, _ := doc.Find(`input[name=next]`).Attr("value")
			require.Empty(t, kept, "the form must not carry next %q", raw)
			// The decoded value as a crafted form would post it, and the
			// still-encoded one.
			var s *session
			for _, v := range []string{next, raw} {
				s = c.anonymous()
				doc := s.page("/login")
				token, _ := doc.Find(`input[name=csrf]`).Attr("value")
				resp := s.post("/login", url.Values{"csrf": {token}, "email": {"manager@acme.test"}, "password": {consolePassword}, "next": {v}})
				require.Equal(t, http.StatusSeeOther, resp.StatusCode)
				require.Equal(t, "/t/acme/", resp.Header.Get("Location"), "next %q", v)
			}
			// A signed-in browser sent to the sign-in page goes home too.
			_, resp := s.get("/login?next=" + raw)
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
			require.Equal(t, "/t/acme/", resp.Header.Get("Location"), "signed in, next %q", raw)
		}

		// A path on this site with a query still works.
		s := c.anonymous()
		doc := s.page("/login?next=" + url.QueryEscape("/t/acme/?a=b"))
		kept, _ := doc.Find(`input[name=next]`).Attr("value")
		require.Equal(t, "/t/acme/?a=b", kept)
		token, _ := doc.Find(`input[name=csrf]`).Attr("value")
		resp := s.post("/login", url.Values{"csrf": {token}, "email": {"manager@acme.test"}, "password": {consolePassword}, "next": {kept}})
		require.Equal(t, "/t/acme/?a=b", resp.Header.Get("Location"))
		_, resp = s.get("/login?next=" + url.QueryEscape("/t/acme/messages?a=b"))
		require.Equal(t, "/t/acme/messages?a=b", resp.Header.Get("Location"))
	})

	t.Run("WrongPassword", func(t *testing.T) {
		s := c.anonymous()
		s.ip = "192.0.2.20"
		doc, resp := func() (*goquery.Document, *http.Response) {
			d := s.page("/login")
			token, _ := d.Find(`input[name=csrf]`).Attr("value")
			return s.postPage("/login", url.Values{"csrf": {token}, "email": {"manager@acme.test"}, "password": {"wrong password"}})
		}()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Equal(t, "E-mail address or password is wrong.", text(doc.Find(".auth-card [role=alert]")))
		email, _ := doc.Find(`input[name=email]`).Attr("value")
		require.Equal(t, "manager@acme.test", email, "the address typed stays in the form")
		require.NotContains(t, s.cookies, "herald_session")

		// An unknown address answers exactly the same.
		resp = s.login("nobody@acme.test", "wrong password")
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Equal(t, 2, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login_failed' AND metadata->>'ip' = '192.0.2.20'`))
	})

	t.Run("WithoutCSRFTokenRefused", func(t *testing.T) {
		s := c.anonymous()
		s.page("/login")
		resp := s.post("/login", url.Values{"csrf": {"forged"}, "email": {"manager@acme.test"}, "password": {consolePassword}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.NotContains(t, s.cookies, "herald_session")

		// A token from another browser does not fit this browser's cookie.
		other := c.anonymous()
		doc := other.page("/login")
		token, _ := doc.Find(`input[name=csrf]`).Attr("value")
		resp = s.post("/login", url.Values{"csrf": {token}, "email": {"manager@acme.test"}, "password": {consolePassword}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	})

	t.Run("DisabledUserCannotSignIn", func(t *testing.T) {
		u, err := c.Services.Users.Create(c.Ctx, app.CLIActor, app.UserInput{Email: "gone@acme.test", Password: consolePassword, Role: app.RoleSupport, TenantSlug: "acme"})
		require.NoError(t, err)
		c.Exec(`UPDATE users SET disabled_at = now() WHERE id = $1`, u.ID)
		require.Equal(t, http.StatusUnauthorized, c.anonymous().login("gone@acme.test", consolePassword).StatusCode)
	})

	t.Run("Audited", func(t *testing.T) {
		require.Positive(t, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login' AND actor_id = $1`, c.users[asManager].ID))
	})
}

func TestConsole_Throttling(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	c.Server.Sessions.AccountLimit, c.Server.Sessions.AddressLimit = 3, 6

	t.Run("PerAccount", func(t *testing.T) {
		for i := range 3 {
			s := c.anonymous()
			s.ip = "198.51.100." + string(rune('1'+i))
			require.Equal(t, http.StatusUnauthorized, s.login("support@acme.test", "guess "+s.ip).StatusCode)
		}
		// Locked, even with the right password and from a new address.
		s := c.anonymous()
		s.ip = "198.51.100.9"
		resp := s.login("support@acme.test", consolePassword)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.NotContains(t, s.cookies, "herald_session")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login_throttled'`))

		// Other accounts are not affected.
		require.Equal(t, http.StatusSeeOther, c.anonymous().login("manager@acme.test", consolePassword).StatusCode)
	})

	t.Run("PerAddress", func(t *testing.T) {
		s := c.anonymous()
		s.ip = "203.0.113.7"
		for i := range 6 {
			require.Equal(t, http.StatusUnauthorized, s.login("probe"+string(rune('a'+i))+"@acme.test", "guess").StatusCode)
		}
		resp := s.login("manager@acme.test", consolePassword)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	})

	t.Run("WindowPasses", func(t *testing.T) {
		c.Exec(`UPDATE login_failures SET window_start = window_start - interval '1 hour'`)
		require.Equal(t, http.StatusSeeOther, c.anonymous().login("support@acme.test", consolePassword).StatusCode)
	})

	t.Run("SuccessResetsAccount", func(t *testing.T) {
		login := func(ip, password string) int {
			s := c.anonymous()
			s.ip = ip
			return s.login("manager@acme.test", password).StatusCode
		}
		c.Exec(`DELETE FROM login_failures`)
		require.Equal(t, http.StatusUnauthorized, login("198.51.100.21", "guess one"))
		require.Equal(t, http.StatusUnauthorized, login("198.51.100.22", "guess two"))
		// The third attempt is within the limit: it succeeds and starts the
		// account's count again.
		require.Equal(t, http.StatusSeeOther, login("198.51.100.23", consolePassword))
		for i := range 3 {
			require.Equal(t, http.StatusUnauthorized, login("198.51.100.3"+string(rune('1'+i)), "guess again"), "failure %d after the reset", i+1)
		}
		// The limit is reached again: the right password is refused.
		require.Equal(t, http.StatusTooManyRequests, login("198.51.100.40", consolePassword))
	})

	t.Run("SuccessesDoNotLockAddress", func(t *testing.T) {
		// Many people signing in from one office address: successes do not
		// use up the address's budget.
		c.Exec(`DELETE FROM login_failures`)
		for i := range 10 {
			s := c.anonymous()
			s.ip = "198.51.100.50"
			require.Equal(t, http.StatusSeeOther, s.login("ops@herald.test", consolePassword).StatusCode, "sign-in %d", i+1)
		}
	})

	t.Run("ParallelGuessesAreCounted", func(t *testing.T) {
		// Twenty guesses sent at once from twenty addresses: only as many
		// as the account's limit may reach the password check; the rest
		// are refused before it.
		c.Exec(`DELETE FROM login_failures`)
		const n = 20
		reqs := make([]*http.Request, n)
		for i := range reqs {
			s := c.anonymous()
			s.ip = "198.18.0." + strconv.Itoa(i+1)
			doc := s.page("/login")
			token, _ := doc.Find(`input[name=csrf]`).Attr("value")
			form := url.Values{"csrf": {token}, "email": {"ops@herald.test"}, "password": {"parallel guess " + strconv.Itoa(i)}}
			req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Client-IP", s.ip)
			for k, v := range s.cookies {
				req.AddCookie(&http.Cookie{Name: k, Value: v})
			}
			reqs[i] = req
		}
		codes := make([]int, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, req := range reqs {
			wg.Go(func() {
				<-start
				resp, err := c.App.Test(req, -1)
				if errs[i] = err; err == nil {
					codes[i] = resp.StatusCode
					resp.Body.Close()
				}
			})
		}
		close(start)
		wg.Wait()
		byCode := map[int]int{}
		for i := range n {
			require.NoError(t, errs[i])
			byCode[codes[i]]++
		}
		limit := c.Server.Sessions.AccountLimit
		require.Equal(t, map[int]int{http.StatusUnauthorized: limit, http.StatusTooManyRequests: n - limit}, byCode)
		require.Equal(t, limit, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login_failed' AND metadata->>'email' = 'ops@herald.test'`),
			"only %d guesses may reach the password check", limit)
		require.Equal(t, n-limit, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login_throttled' AND metadata->>'email' = 'ops@herald.test'`))
	})

	t.Run("BogusAddressHeader", func(t *testing.T) {
		// A client address header that is not an IP address is not a
		// throttling key of its own: every made-up value counts against
		// the same peer address.
		c.Exec(`DELETE FROM login_failures`)
		for i := range 6 {
			s := c.anonymous()
			s.ip = "made-up-" + strconv.Itoa(i)
			require.Equal(t, http.StatusUnauthorized, s.login("bogus"+strconv.Itoa(i)+"@acme.test", "guess").StatusCode)
		}
		s := c.anonymous()
		s.ip = "made-up-again"
		require.Equal(t, http.StatusTooManyRequests, s.login("support@acme.test", consolePassword).StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM login_failures WHERE key LIKE 'address:made-up%'`))
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE metadata->>'ip' LIKE 'made-up%'`))

		// A valid address in the header is still taken as it is.
		s = c.anonymous()
		s.ip = "2001:db8::7"
		require.Equal(t, http.StatusUnauthorized, s.login("probe@acme.test", "guess").StatusCode)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM login_failures WHERE key = 'address:2001:db8::7'`))
	})

	t.Run("UnknownAddressThrottlesAccountOnly", func(t *testing.T) {
		c.Exec(`DELETE FROM login_failures`)
		_, err := c.Server.Sessions.Login(c.Ctx, "nobody@acme.test", "guess", "")
		require.Equal(t, app.EUNAUTHORIZED, app.ErrorCode(err))
		require.Zero(t, c.Count(`SELECT count(*) FROM login_failures WHERE key LIKE 'address:%'`))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM login_failures WHERE key = 'account:nobody@acme.test'`))
	})
}

func TestConsole_SessionRevocation(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})

	t.Run("LogoutEndsEverySession", func(t *testing.T) {
		laptop, phone := c.signIn(asManager), c.signIn(asManager)
		laptop.page("/t/acme/")
		phone.page("/t/acme/")

		resp := laptop.post("/logout", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/login", resp.Header.Get("Location"))
		require.Contains(t, text(laptop.follow(resp).Find(".flash")), "signed out")

		_, resp = phone.get("/t/acme/")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the other device's session ended too")
		require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/login"))
		require.NotContains(t, phone.cookies, "herald_session", "the dead cookie is cleared")
	})

	t.Run("LogoutNeedsCSRF", func(t *testing.T) {
		s := c.signIn(asSupport)
		s.page("/t/acme/")
		resp := s.post("/logout", url.Values{"csrf": {"nope"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		s.page("/t/acme/")
	})

	t.Run("PasswordChange", func(t *testing.T) {
		s, other := c.signIn(asSupport), c.signIn(asSupport)
		s.page("/account/password")

		doc, resp := s.postPage("/account/password", url.Values{"current": {"wrong one"}, "new": {"a brand new secret"}, "confirm": {"a brand new secret"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Equal(t, "The current password is wrong.", text(doc.Find(`input[name=current] ~ .field-error`)))
		doc, _ = s.postPage("/account/password", url.Values{"current": {consolePassword}, "new": {"short"}, "confirm": {"short"}})
		require.Contains(t, text(doc.Find(`input[name=new] ~ .field-error`)), "at least 10 characters")
		doc, _ = s.postPage("/account/password", url.Values{"current": {consolePassword}, "new": {"a brand new secret"}, "confirm": {"a brand new secreT"}})
		require.Equal(t, "The two new passwords differ.", text(doc.Find(`input[name=confirm] ~ .field-error`)))

		resp = s.post("/account/password", url.Values{"current": {consolePassword}, "new": {"a brand new secret"}, "confirm": {"a brand new secret"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(s.follow(resp).Find(".flash")), "Password changed")
		s.page("/t/acme/")

		_, resp = other.get("/t/acme/")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "every other session ended")
		require.Equal(t, http.StatusUnauthorized, c.anonymous().login("support@acme.test", consolePassword).StatusCode)
		require.Equal(t, http.StatusSeeOther, c.anonymous().login("support@acme.test", "a brand new secret").StatusCode)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.password_change' AND actor_id = $1`, c.users[asSupport].ID))
	})

	t.Run("ForgedOrExpiredCookie", func(t *testing.T) {
		s := c.anonymous()
		s.cookies["herald_session"] = "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0."
		_, resp := s.get("/t/acme/")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	})

	// sessionToken signs a session cookie for the manager as the server
	// would, signed in at authTime and expiring at expires.
	sessionToken := func(authTime, expires time.Time, withAuthTime bool) string {
		u := c.users[asManager]
		claims := jwt.MapClaims{
			"iss": "herald", "sub": u.ID.String(), "jti": "hand-made-session",
			"iat": time.Now().Unix(), "exp": expires.Unix(),
			"sv": c.Count(`SELECT session_version FROM users WHERE id = $1`, u.ID),
		}
		if withAuthTime {
			claims["auth_time"] = authTime.Unix()
		}
		token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(c.Config.SessionKey)
		require.NoError(t, err)
		return token
	}

	t.Run("AbsoluteLifetime", func(t *testing.T) {
		// Signed in eight days ago and renewed ever since: the session
		// has ended, though its cookie has not expired.
		s := c.anonymous()
		s.cookies["herald_session"] = sessionToken(time.Now().Add(-8*24*time.Hour), time.Now().Add(6*time.Hour), true)
		_, resp := s.get("/t/acme/")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/login"))
		require.NotContains(t, s.cookies, "herald_session", "the dead cookie is cleared")
		s.page("/login") // the sign-in form, not a redirect home

		// A session without the time of sign-in is not trusted either.
		s = c.anonymous()
		s.cookies["herald_session"] = sessionToken(time.Time{}, time.Now().Add(6*time.Hour), false)
		_, resp = s.get("/t/acme/")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/login"))

		// Within the lifetime the session works, and renewing it keeps the
		// time of sign-in and never reaches past the lifetime.
		authTime := time.Now().Add(-console.SessionMaxAge + 4*time.Hour).Truncate(time.Second)
		s = c.anonymous()
		s.cookies["herald_session"] = sessionToken(authTime, time.Now().Add(time.Hour), true)
		s.page("/t/acme/")
		renewed := s.cookies["herald_session"]
		var claims jwt.MapClaims
		_, err := jwt.ParseWithClaims(renewed, &claims, func(*jwt.Token) (any, error) { return c.Config.SessionKey, nil })
		require.NoError(t, err)
		require.EqualValues(t, authTime.Unix(), claims["auth_time"])
		require.EqualValues(t, authTime.Add(console.SessionMaxAge).Unix(), claims["exp"])
		require.Equal(t, "hand-made-session", claims["jti"])

		// A fresh sign-in carries its time of sign-in.
		s = c.signIn(asManager)
		claims = jwt.MapClaims{}
		_, err = jwt.ParseWithClaims(s.cookies["herald_session"], &claims, func(*jwt.Token) (any, error) { return c.Config.SessionKey, nil })
		require.NoError(t, err)
		require.InDelta(t, float64(time.Now().Unix()), claims["auth_time"], 60)
	})

	t.Run("PasswordChangeThrottled", func(t *testing.T) {
		// Guessing the current password through a session counts like
		// failed sign-ins of the account.
		s := c.signIn(asOperator)
		s.page("/account/password")
		change := func(current, confirm string) (*goquery.Document, int) {
			doc, resp := s.postPage("/account/password", url.Values{"current": {current}, "new": {"another new secret"}, "confirm": {confirm}})
			return doc, resp.StatusCode
		}
		_, code := change("guess 1", "another new secret")
		require.Equal(t, http.StatusUnprocessableEntity, code)
		// The right current password resets the count, even if the form
		// has another mistake.
		doc, code := change(consolePassword, "another new secreT")
		require.Equal(t, http.StatusUnprocessableEntity, code)
		require.Equal(t, "The two new passwords differ.", text(doc.Find(`input[name=confirm] ~ .field-error`)))
		for i := range console.LoginAccountFailures {
			doc, code = change("guess again", "another new secret")
			require.Equal(t, http.StatusUnprocessableEntity, code, "guess %d", i+1)
			require.Equal(t, "The current password is wrong.", text(doc.Find(`input[name=current] ~ .field-error`)))
		}
		// Over the limit: refused even with the right password.
		doc, code = change(consolePassword, "another new secret")
		require.Equal(t, http.StatusTooManyRequests, code)
		require.Contains(t, text(doc.Find(`[role=alert]`)), "Too many failed sign-ins")
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.password_change' AND actor_id = $1`, c.users[asOperator].ID))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.password_change_throttled' AND actor_id = $1`, c.users[asOperator].ID))
		// The same count guards signing in.
		require.Equal(t, http.StatusTooManyRequests, c.anonymous().login("ops@herald.test", consolePassword).StatusCode)
		s.page("/tenants") // the session itself goes on

		// Once the window has passed the change goes through.
		c.Exec(`UPDATE login_failures SET window_start = window_start - interval '1 hour' WHERE key = 'account:ops@herald.test'`)
		_, code = change(consolePassword, "another new secret")
		require.Equal(t, http.StatusSeeOther, code, "changed, on to the start page")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.password_change' AND actor_id = $1`, c.users[asOperator].ID))
	})
}
