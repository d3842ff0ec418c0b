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
	"github.com/heraldhq/herald/db"
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

// testClock is a clock the test moves by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: time.Now().Truncate(time.Second)} }

func (k *testClock) Now() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.now
}

func (k *testClock) Advance(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.now = k.now.Add(d)
}

// from returns a browser at client address ip.
func (c *consoleBundle) from(ip string) *session {
	s := c.anonymous()
	s.ip = ip
	return s
}

// loginPage signs in and parses the page that answers.
func (s *session) loginPage(email, password string) (*goquery.Document, *http.Response) {
	s.t.Helper()
	doc := s.page("/login")
	token, _ := doc.Find(`form[action="/login"] input[name=csrf]`).Attr("value")
	return s.postPage("/login", url.Values{"csrf": {token}, "email": {email}, "password": {password}})
}

// parallelLogins sends one sign-in per form at once, each from its own
// browser at ip, and returns how many got each status.
func (c *consoleBundle) parallelLogins(t *testing.T, ip string, forms []url.Values) map[int]int {
	reqs := make([]*http.Request, len(forms))
	for i, form := range forms {
		s := c.from(ip)
		doc := s.page("/login")
		token, _ := doc.Find(`input[name=csrf]`).Attr("value")
		form.Set("csrf", token)
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Client-IP", ip)
		for k, v := range s.cookies {
			req.AddCookie(&http.Cookie{Name: k, Value: v})
		}
		reqs[i] = req
	}
	codes := make([]int, len(reqs))
	errs := make([]error, len(reqs))
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
	for i := range reqs {
		require.NoError(t, errs[i])
		byCode[codes[i]]++
	}
	return byCode
}

func TestConsole_Throttling(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	rules := console.Throttle{PairFree: 3, AddressFree: 6, AccountFree: 10, MaxWait: 10 * time.Second, AccountMaxWait: 4 * time.Second}
	// setup gives each subtest empty counts, the rules above and a clock
	// of its own.
	setup := func(t *testing.T) *testClock {
		c.Exec(`DELETE FROM login_throttle`)
		c.Exec(`DELETE FROM login_failure_windows`)
		clock := newTestClock()
		c.Server.Sessions.Now, c.Server.Sessions.Throttle = clock.Now, rules
		return clock
	}
	alert := func(doc *goquery.Document) string { return text(doc.Find(".auth-card [role=alert]")) }

	t.Run("AttackerCannotLockOutVictim", func(t *testing.T) {
		setup(t)
		attacker := c.from("198.51.100.1")
		for i := range 3 {
			require.Equal(t, http.StatusUnauthorized, attacker.login("support@acme.test", "guess "+strconv.Itoa(i)).StatusCode)
		}
		// The attacker's client waits, even with the right password...
		doc, resp := attacker.loginPage("support@acme.test", consolePassword)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Equal(t, "Too many failed sign-ins. Wait 1 second and try again.", alert(doc))
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		require.NotContains(t, attacker.cookies, "herald_session")
		// ...while the person signs in from their own address at once.
		require.Equal(t, http.StatusSeeOther, c.from("198.51.100.2").login("support@acme.test", consolePassword).StatusCode)
		// Their success does not clear the attacker's count.
		_, resp = attacker.loginPage("support@acme.test", "guess again")
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	})

	t.Run("PairBackoffDoubles", func(t *testing.T) {
		clock := setup(t)
		s := c.from("198.51.100.3")
		for range 3 {
			require.Equal(t, http.StatusUnauthorized, s.login("manager@acme.test", "guess").StatusCode)
		}
		// After the third failure each further attempt waits 1, 2, 4, 8
		// seconds, then at most MaxWait (10 s).
		for _, wait := range []int{1, 2, 4, 8, 10, 10} {
			_, resp := s.loginPage("manager@acme.test", "guess")
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			require.Equal(t, strconv.Itoa(wait), resp.Header.Get("Retry-After"))
			clock.Advance(time.Duration(wait-1) * time.Second)
			_, resp = s.loginPage("manager@acme.test", consolePassword)
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "one second early")
			require.Equal(t, "1", resp.Header.Get("Retry-After"))
			clock.Advance(time.Second)
			require.Equal(t, http.StatusUnauthorized, s.login("manager@acme.test", "guess").StatusCode, "checked after %d s", wait)
		}
		// Once the wait is over the right password signs in and the pair
		// starts again from nothing.
		clock.Advance(10 * time.Second)
		require.Equal(t, http.StatusSeeOther, s.login("manager@acme.test", consolePassword).StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM login_throttle WHERE key = 'pair:manager@acme.test|198.51.100.3'`))
	})

	t.Run("CredentialStuffingSlowsTheClient", func(t *testing.T) {
		clock := setup(t)
		s := c.from("203.0.113.7")
		for i := range 6 {
			require.Equal(t, http.StatusUnauthorized, s.login("probe"+strconv.Itoa(i)+"@acme.test", "guess").StatusCode)
		}
		// Six failures across accounts: the client waits, whatever it
		// tries.
		_, resp := s.loginPage("manager@acme.test", consolePassword)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		// A client that has not failed is not affected.
		require.Equal(t, http.StatusSeeOther, c.from("203.0.113.8").login("manager@acme.test", consolePassword).StatusCode)
		// It is a backoff, not a lock: once the wait is over, the right
		// password signs in.
		clock.Advance(time.Second)
		require.Equal(t, http.StatusSeeOther, s.login("manager@acme.test", consolePassword).StatusCode)
	})

	t.Run("DistributedGuessingSlowsOnlyFailedClients", func(t *testing.T) {
		clock := setup(t)
		// Eleven clients guess once each: every first attempt of a client
		// is checked, and the account passes its ceiling of ten.
		for i := range 11 {
			require.Equal(t, http.StatusUnauthorized, c.from("198.18.1."+strconv.Itoa(i+1)).login("support@acme.test", "guess").StatusCode)
		}
		// A client that failed before now waits for the account's
		// backoff, which never exceeds AccountMaxWait...
		_, resp := c.from("198.18.1.1").loginPage("support@acme.test", "guess again")
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		require.NoError(t, err)
		require.LessOrEqual(t, wait, 4)
		// ...and a client that has not failed is never refused.
		require.Equal(t, http.StatusSeeOther, c.from("198.18.1.99").login("support@acme.test", consolePassword).StatusCode)
		clock.Advance(time.Duration(wait) * time.Second)
		require.Equal(t, http.StatusUnauthorized, c.from("198.18.1.1").login("support@acme.test", "guess again").StatusCode)
	})

	t.Run("ParallelGuessesFromOneClient", func(t *testing.T) {
		// Twenty guesses for one account sent at once from one client:
		// exactly as many as the pair's free failures reach the password
		// check; the rest are refused before it.
		setup(t)
		forms := make([]url.Values, 20)
		for i := range forms {
			forms[i] = url.Values{"email": {"ops@herald.test"}, "password": {"parallel guess " + strconv.Itoa(i)}}
		}
		byCode := c.parallelLogins(t, "198.18.0.1", forms)
		require.Equal(t, map[int]int{http.StatusUnauthorized: 3, http.StatusTooManyRequests: 17}, byCode)
		require.Equal(t, 3, c.Count(`SELECT failures FROM login_throttle WHERE key = 'pair:ops@herald.test|198.18.0.1'`))
		// The audit log has one entry for the window and one for the
		// start of throttling, not twenty.
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login_failed' AND metadata->>'email' = 'ops@herald.test'`))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login_throttled' AND metadata->>'email' = 'ops@herald.test'`))
		require.Equal(t, 17, c.Count(`SELECT refused FROM login_failure_windows WHERE email = 'ops@herald.test' AND client = '198.18.0.1'`))
	})

	t.Run("ParallelStuffingFromOneClient", func(t *testing.T) {
		setup(t)
		forms := make([]url.Values, 20)
		for i := range forms {
			forms[i] = url.Values{"email": {"stuffed" + strconv.Itoa(i) + "@acme.test"}, "password": {"guess"}}
		}
		byCode := c.parallelLogins(t, "198.18.0.2", forms)
		require.Equal(t, map[int]int{http.StatusUnauthorized: 6, http.StatusTooManyRequests: 14}, byCode)
	})

	t.Run("FailuresAuditedPerWindow", func(t *testing.T) {
		// Sixty failed sign-ins for an unknown address, thirty in each of
		// two windows, write four audit entries: each window's opening and
		// its summary.
		clock := setup(t)
		c.Server.Sessions.Throttle = console.Throttle{PairFree: 1000, AddressFree: 1000, AccountFree: 1000}
		const email = "nobody@acme.test"
		rows := func(action string) int {
			return c.Count(`SELECT count(*) FROM audit_log WHERE action = $1 AND metadata->>'email' = $2`, action, email)
		}
		for range 30 {
			_, err := c.Server.Sessions.Login(c.Ctx, email, "guess", "192.0.2.77")
			require.Equal(t, console.ErrBadCredentials, err)
			clock.Advance(time.Minute)
		}
		require.Equal(t, 1, rows("session.login_failed"))
		require.Zero(t, rows("session.login_failed_summary"))
		first := clock.Now().Add(-30 * time.Minute)

		clock.Advance(console.DefaultThrottle.AuditWindow)
		for range 30 {
			_, err := c.Server.Sessions.Login(c.Ctx, email, "guess", "192.0.2.77")
			require.Equal(t, console.ErrBadCredentials, err)
		}
		require.Equal(t, 2, rows("session.login_failed"))
		require.Equal(t, 1, rows("session.login_failed_summary"))
		var meta struct {
			Failures int
			FirstAt  string
			LastAt   string
			Tenant   *string
		}
		require.NoError(t, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(c.Ctx, `
				SELECT (metadata->>'failures')::int, metadata->>'first_at', metadata->>'last_at', tenant_id::text
				FROM audit_log WHERE action = 'session.login_failed_summary' AND metadata->>'email' = $1`, email).
				Scan(&meta.Failures, &meta.FirstAt, &meta.LastAt, &meta.Tenant)
		}))
		require.Equal(t, 30, meta.Failures)
		require.Equal(t, first.UTC().Format(time.RFC3339), meta.FirstAt)
		require.Equal(t, first.Add(29*time.Minute).UTC().Format(time.RFC3339), meta.LastAt)
		require.Nil(t, meta.Tenant, "an unknown address is the platform's business")

		// A window nobody tries again from ends with the next sign-in of
		// anyone.
		clock.Advance(2 * console.DefaultThrottle.AuditWindow)
		_, err := c.Server.Sessions.Login(c.Ctx, "somebody-else@acme.test", "guess", "192.0.2.78")
		require.Equal(t, console.ErrBadCredentials, err)
		require.Equal(t, 2, rows("session.login_failed_summary"))
		require.Equal(t, 4, c.Count(`SELECT count(*) FROM audit_log WHERE metadata->>'email' = $1`, email))
	})

	t.Run("FailuresOfAUserInTheirTenantsLog", func(t *testing.T) {
		setup(t)
		s := c.from("192.0.2.79")
		require.Equal(t, http.StatusUnauthorized, s.login("support@acme.test", "guess").StatusCode)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login_failed' AND tenant_id = $1 AND metadata->>'ip' = '192.0.2.79'`, *c.users[asSupport].TenantID))
		// Success closes the window with its summary.
		require.Equal(t, http.StatusSeeOther, s.login("support@acme.test", consolePassword).StatusCode)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'session.login_failed_summary' AND tenant_id = $1 AND metadata->>'ip' = '192.0.2.79'`, *c.users[asSupport].TenantID))
		require.Zero(t, c.Count(`SELECT count(*) FROM login_failure_windows WHERE client = '192.0.2.79'`))
	})

	t.Run("QuietPeriodStartsAgain", func(t *testing.T) {
		clock := setup(t)
		s := c.from("198.51.100.60")
		for range 3 {
			require.Equal(t, http.StatusUnauthorized, s.login("manager@acme.test", "guess").StatusCode)
		}
		clock.Advance(console.DefaultThrottle.Quiet)
		for range 3 {
			require.Equal(t, http.StatusUnauthorized, s.login("manager@acme.test", "guess").StatusCode)
		}
	})

	t.Run("BogusAddressHeader", func(t *testing.T) {
		// A client address header that is not an IP address is not a
		// throttling key of its own: every made-up value counts against
		// the same peer address.
		setup(t)
		for i := range 6 {
			require.Equal(t, http.StatusUnauthorized, c.from("made-up-"+strconv.Itoa(i)).login("bogus"+strconv.Itoa(i)+"@acme.test", "guess").StatusCode)
		}
		require.Equal(t, http.StatusTooManyRequests, c.from("made-up-again").login("support@acme.test", consolePassword).StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM login_throttle WHERE key LIKE '%made-up%'`))
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE metadata->>'ip' LIKE 'made-up%'`))

		// A valid address in the header is still taken as it is.
		require.Equal(t, http.StatusUnauthorized, c.from("2001:db8::7").login("probe@acme.test", "guess").StatusCode)
		require.Equal(t, 1, c.Count(`SELECT failures FROM login_throttle WHERE key = 'address:2001:db8::7'`))
	})

	t.Run("UnknownClientAddress", func(t *testing.T) {
		setup(t)
		_, err := c.Server.Sessions.Login(c.Ctx, "nobody@acme.test", "guess", "")
		require.Equal(t, app.EUNAUTHORIZED, app.ErrorCode(err))
		require.Zero(t, c.Count(`SELECT count(*) FROM login_throttle WHERE key LIKE 'address:%'`))
		require.Equal(t, 1, c.Count(`SELECT failures FROM login_throttle WHERE key = 'pair:nobody@acme.test|'`))
		require.Equal(t, 1, c.Count(`SELECT failures FROM login_throttle WHERE key = 'account:nobody@acme.test'`))
	})

	t.Run("JunkAddressTyped", func(t *testing.T) {
		// Whatever is typed as the address, the answer is the usual one.
		setup(t)
		for _, email := range []string{"nul\x00@acme.test", strings.Repeat("x", 5000) + "@acme.test", "\xff\xfe"} {
			_, err := c.Server.Sessions.Login(c.Ctx, email, "guess", "192.0.2.80")
			require.Equal(t, console.ErrBadCredentials, err)
		}
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

		// A fresh sign-in carries its time of sign-in, which is between
		// these two readings of the clock, however long it took.
		before := time.Now().Unix()
		s = c.signIn(asManager)
		after := time.Now().Unix()
		claims = jwt.MapClaims{}
		_, err = jwt.ParseWithClaims(s.cookies["herald_session"], &claims, func(*jwt.Token) (any, error) { return c.Config.SessionKey, nil })
		require.NoError(t, err)
		require.GreaterOrEqual(t, claims["auth_time"], float64(before))
		require.LessOrEqual(t, claims["auth_time"], float64(after))
	})

	t.Run("PasswordChangeThrottled", func(t *testing.T) {
		// Guessing the current password through a session counts like
		// failed sign-ins from the client.
		clock := newTestClock()
		c.Server.Sessions.Now = clock.Now
		s := c.signIn(asOperator)
		s.page("/account/password")
		change := func(current, confirm string) (*goquery.Document, *http.Response) {
			return s.postPage("/account/password", url.Values{"current": {current}, "new": {"another new secret"}, "confirm": {confirm}})
		}
		_, resp := change("guess 1", "another new secret")
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		// The right current password resets the count, even if the form
		// has another mistake.
		doc, resp := change(consolePassword, "another new secreT")
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Equal(t, "The two new passwords differ.", text(doc.Find(`input[name=confirm] ~ .field-error`)))
		for i := range console.DefaultThrottle.PairFree {
			doc, resp = change("guess again", "another new secret")
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "guess %d", i+1)
			require.Equal(t, "The current password is wrong.", text(doc.Find(`input[name=current] ~ .field-error`)))
		}
		// Over the limit: refused even with the right password.
		doc, resp = change(consolePassword, "another new secret")
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
		require.Contains(t, text(doc.Find(`[role=alert]`)), "Too many failed sign-ins. Wait 1 second")
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.password_change' AND actor_id = $1`, c.users[asOperator].ID))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.password_change_throttled' AND actor_id = $1`, c.users[asOperator].ID))
		// The same count guards signing in from that client.
		require.Equal(t, http.StatusTooManyRequests, c.from(s.ip).login("ops@herald.test", consolePassword).StatusCode)
		s.page("/tenants") // the session itself goes on

		// Once the wait is over the change goes through.
		clock.Advance(time.Second)
		_, resp = change(consolePassword, "another new secret")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "changed, on to the start page")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'user.password_change' AND actor_id = $1`, c.users[asOperator].ID))
	})
}
