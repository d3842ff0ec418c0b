package main

import (
	"io"
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
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	appconsole "github.com/heraldhq/herald/app/console"
)

// console is Herald with the console's cast: an operator, a manager and a
// support user of tenant acme, and a manager of another tenant, globex.
type console struct {
	*pipeline
	other *app.Tenant
	users map[string]*app.User
}

// consolePassword is every test user's password.
const consolePassword = "correct horse battery"

// Console test users by the name tests sign in with.
const (
	asOperator     = "operator"
	asManager      = "manager"
	asSupport      = "support"
	asOtherManager = "other-manager"
)

func newConsole(t *testing.T, opts pipelineOpts) *console {
	t.Helper()
	if opts.env == nil {
		opts.env = map[string]string{}
	}
	// The tests play several client addresses through one in-process app,
	// as a proxy in front of Herald would report them.
	opts.env["HERALD_CLIENT_IP_HEADER"] = "X-Client-IP"
	p := newPipeline(t, opts)
	c := &console{pipeline: p, users: map[string]*app.User{}}
	var err error
	c.other, err = p.svc.Tenants.Create(p.ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex Travel"})
	require.NoError(t, err)
	for name, in := range map[string]app.UserInput{
		asOperator:     {Email: "ops@herald.test", Role: app.RoleOperator},
		asManager:      {Email: "manager@acme.test", Role: app.RoleManager, TenantSlug: "acme"},
		asSupport:      {Email: "support@acme.test", Role: app.RoleSupport, TenantSlug: "acme"},
		asOtherManager: {Email: "manager@globex.test", Role: app.RoleManager, TenantSlug: "globex"},
	} {
		in.Password, in.Name = consolePassword, name
		c.users[name], err = p.svc.Users.Create(p.ctx, app.CLIActor, in)
		require.NoError(t, err)
	}
	return c
}

// session is one browser: its cookies and the CSRF token of the last page
// it loaded.
type session struct {
	t       *testing.T
	c       *console
	cookies map[string]string
	csrf    string
	ip      string
}

// anonymous returns a browser that has not signed in.
func (c *console) anonymous() *session {
	return &session{t: c.t, c: c, cookies: map[string]string{}, ip: "192.0.2.10"}
}

// signIn returns a browser signed in as one of the console's users.
func (c *console) signIn(who string) *session {
	c.t.Helper()
	s := c.anonymous()
	resp := s.login(c.users[who].Email, consolePassword)
	require.Equal(c.t, http.StatusSeeOther, resp.StatusCode, "sign in as %s", who)
	return s
}

// login loads the sign-in form and submits it.
func (s *session) login(email, password string) *http.Response {
	s.t.Helper()
	doc, resp := s.get("/login")
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	token, ok := doc.Find(`form[action="/login"] input[name=csrf]`).Attr("value")
	require.True(s.t, ok, "sign-in form without CSRF token")
	return s.post("/login", url.Values{"csrf": {token}, "email": {email}, "password": {password}})
}

// do sends a request with the browser's cookies and keeps the ones set.
func (s *session) do(req *http.Request) *http.Response {
	s.t.Helper()
	for k, v := range s.cookies {
		req.AddCookie(&http.Cookie{Name: k, Value: v})
	}
	req.Header.Set("X-Client-IP", s.ip)
	resp, err := s.c.http.Test(req, -1)
	require.NoError(s.t, err)
	for _, ck := range resp.Cookies() {
		if ck.Value == "" || ck.MaxAge < 0 || (!ck.Expires.IsZero() && ck.Expires.Unix() <= 1) {
			delete(s.cookies, ck.Name)
		} else {
			s.cookies[ck.Name] = ck.Value
		}
	}
	return resp
}

// get loads a page and parses it; it remembers the page's CSRF token.
func (s *session) get(path string) (*goquery.Document, *http.Response) {
	s.t.Helper()
	resp := s.do(httptest.NewRequest(http.MethodGet, path, nil))
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	require.NoError(s.t, err)
	if token, ok := doc.Find(`meta[name=csrf-token]`).Attr("content"); ok {
		s.csrf = token
	}
	return doc, resp
}

// page loads a page that must answer 200.
func (s *session) page(path string) *goquery.Document {
	s.t.Helper()
	doc, resp := s.get(path)
	require.Equal(s.t, http.StatusOK, resp.StatusCode, "GET %s", path)
	return doc
}

// post submits a form. Unless the form carries its own csrf value, the
// token of the last page loaded is added, as the console's forms do.
func (s *session) post(path string, form url.Values) *http.Response {
	s.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok && s.csrf != "" {
		form.Set("csrf", s.csrf)
	}
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return s.do(req)
}

// postPage submits a form and parses the page that answers it.
func (s *session) postPage(path string, form url.Values) (*goquery.Document, *http.Response) {
	s.t.Helper()
	resp := s.post(path, form)
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	require.NoError(s.t, err)
	return doc, resp
}

// follow loads where a redirect points.
func (s *session) follow(resp *http.Response) *goquery.Document {
	s.t.Helper()
	require.Contains(s.t, []int{http.StatusFound, http.StatusSeeOther}, resp.StatusCode)
	return s.page(resp.Header.Get("Location"))
}

// text returns a selection's text with runs of white space collapsed.
func text(sel *goquery.Selection) string {
	return strings.Join(strings.Fields(sel.Text()), " ")
}

func TestConsole_SignIn(t *testing.T) {
	t.Parallel()
	c := newConsole(t, pipelineOpts{noWorkers: true})

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
		require.Equal(t, 2, c.count(`SELECT count(*) FROM audit_log WHERE action = 'session.login_failed' AND metadata->>'ip' = '192.0.2.20'`))
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
		u, err := c.svc.Users.Create(c.ctx, app.CLIActor, app.UserInput{Email: "gone@acme.test", Password: consolePassword, Role: app.RoleSupport, TenantSlug: "acme"})
		require.NoError(t, err)
		c.exec(`UPDATE users SET disabled_at = now() WHERE id = $1`, u.ID)
		require.Equal(t, http.StatusUnauthorized, c.anonymous().login("gone@acme.test", consolePassword).StatusCode)
	})

	t.Run("Audited", func(t *testing.T) {
		require.Positive(t, c.count(`SELECT count(*) FROM audit_log WHERE action = 'session.login' AND actor_id = $1`, c.users[asManager].ID))
	})
}

func TestConsole_Throttling(t *testing.T) {
	t.Parallel()
	c := newConsole(t, pipelineOpts{noWorkers: true})
	c.server.Sessions.AccountLimit, c.server.Sessions.AddressLimit = 3, 6

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
		require.Equal(t, 1, c.count(`SELECT count(*) FROM audit_log WHERE action = 'session.login_throttled'`))

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
		c.exec(`UPDATE login_failures SET window_start = window_start - interval '1 hour'`)
		require.Equal(t, http.StatusSeeOther, c.anonymous().login("support@acme.test", consolePassword).StatusCode)
	})

	t.Run("SuccessResetsAccount", func(t *testing.T) {
		login := func(ip, password string) int {
			s := c.anonymous()
			s.ip = ip
			return s.login("manager@acme.test", password).StatusCode
		}
		c.exec(`DELETE FROM login_failures`)
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
		c.exec(`DELETE FROM login_failures`)
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
		c.exec(`DELETE FROM login_failures`)
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
				resp, err := c.http.Test(req, -1)
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
		limit := c.server.Sessions.AccountLimit
		require.Equal(t, map[int]int{http.StatusUnauthorized: limit, http.StatusTooManyRequests: n - limit}, byCode)
		require.Equal(t, limit, c.count(`SELECT count(*) FROM audit_log WHERE action = 'session.login_failed' AND metadata->>'email' = 'ops@herald.test'`),
			"only %d guesses may reach the password check", limit)
		require.Equal(t, n-limit, c.count(`SELECT count(*) FROM audit_log WHERE action = 'session.login_throttled' AND metadata->>'email' = 'ops@herald.test'`))
	})

	t.Run("BogusAddressHeader", func(t *testing.T) {
		// A client address header that is not an IP address is not a
		// throttling key of its own: every made-up value counts against
		// the same peer address.
		c.exec(`DELETE FROM login_failures`)
		for i := range 6 {
			s := c.anonymous()
			s.ip = "made-up-" + strconv.Itoa(i)
			require.Equal(t, http.StatusUnauthorized, s.login("bogus"+strconv.Itoa(i)+"@acme.test", "guess").StatusCode)
		}
		s := c.anonymous()
		s.ip = "made-up-again"
		require.Equal(t, http.StatusTooManyRequests, s.login("support@acme.test", consolePassword).StatusCode)
		require.Zero(t, c.count(`SELECT count(*) FROM login_failures WHERE key LIKE 'address:made-up%'`))
		require.Zero(t, c.count(`SELECT count(*) FROM audit_log WHERE metadata->>'ip' LIKE 'made-up%'`))

		// A valid address in the header is still taken as it is.
		s = c.anonymous()
		s.ip = "2001:db8::7"
		require.Equal(t, http.StatusUnauthorized, s.login("probe@acme.test", "guess").StatusCode)
		require.Equal(t, 1, c.count(`SELECT count(*) FROM login_failures WHERE key = 'address:2001:db8::7'`))
	})

	t.Run("UnknownAddressThrottlesAccountOnly", func(t *testing.T) {
		c.exec(`DELETE FROM login_failures`)
		_, err := c.server.Sessions.Login(c.ctx, "nobody@acme.test", "guess", "")
		require.Equal(t, app.EUNAUTHORIZED, app.ErrorCode(err))
		require.Zero(t, c.count(`SELECT count(*) FROM login_failures WHERE key LIKE 'address:%'`))
		require.Equal(t, 1, c.count(`SELECT count(*) FROM login_failures WHERE key = 'account:nobody@acme.test'`))
	})
}

func TestConsole_SessionRevocation(t *testing.T) {
	t.Parallel()
	c := newConsole(t, pipelineOpts{noWorkers: true})

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
		require.Equal(t, 1, c.count(`SELECT count(*) FROM audit_log WHERE action = 'user.password_change' AND actor_id = $1`, c.users[asSupport].ID))
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
			"sv": c.count(`SELECT session_version FROM users WHERE id = $1`, u.ID),
		}
		if withAuthTime {
			claims["auth_time"] = authTime.Unix()
		}
		token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(c.cfg.SessionKey)
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
		authTime := time.Now().Add(-appconsole.SessionMaxAge + 4*time.Hour).Truncate(time.Second)
		s = c.anonymous()
		s.cookies["herald_session"] = sessionToken(authTime, time.Now().Add(time.Hour), true)
		s.page("/t/acme/")
		renewed := s.cookies["herald_session"]
		var claims jwt.MapClaims
		_, err := jwt.ParseWithClaims(renewed, &claims, func(*jwt.Token) (any, error) { return c.cfg.SessionKey, nil })
		require.NoError(t, err)
		require.EqualValues(t, authTime.Unix(), claims["auth_time"])
		require.EqualValues(t, authTime.Add(appconsole.SessionMaxAge).Unix(), claims["exp"])
		require.Equal(t, "hand-made-session", claims["jti"])

		// A fresh sign-in carries its time of sign-in.
		s = c.signIn(asManager)
		claims = jwt.MapClaims{}
		_, err = jwt.ParseWithClaims(s.cookies["herald_session"], &claims, func(*jwt.Token) (any, error) { return c.cfg.SessionKey, nil })
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
		for i := range appconsole.LoginAccountFailures {
			doc, code = change("guess again", "another new secret")
			require.Equal(t, http.StatusUnprocessableEntity, code, "guess %d", i+1)
			require.Equal(t, "The current password is wrong.", text(doc.Find(`input[name=current] ~ .field-error`)))
		}
		// Over the limit: refused even with the right password.
		doc, code = change(consolePassword, "another new secret")
		require.Equal(t, http.StatusTooManyRequests, code)
		require.Contains(t, text(doc.Find(`[role=alert]`)), "Too many failed sign-ins")
		require.Zero(t, c.count(`SELECT count(*) FROM audit_log WHERE action = 'user.password_change' AND actor_id = $1`, c.users[asOperator].ID))
		require.Equal(t, 1, c.count(`SELECT count(*) FROM audit_log WHERE action = 'user.password_change_throttled' AND actor_id = $1`, c.users[asOperator].ID))
		// The same count guards signing in.
		require.Equal(t, http.StatusTooManyRequests, c.anonymous().login("ops@herald.test", consolePassword).StatusCode)
		s.page("/tenants") // the session itself goes on

		// Once the window has passed the change goes through.
		c.exec(`UPDATE login_failures SET window_start = window_start - interval '1 hour' WHERE key = 'account:ops@herald.test'`)
		_, code = change(consolePassword, "another new secret")
		require.Equal(t, http.StatusSeeOther, code, "changed, on to the start page")
		require.Equal(t, 1, c.count(`SELECT count(*) FROM audit_log WHERE action = 'user.password_change' AND actor_id = $1`, c.users[asOperator].ID))
	})
}

// pathFor fills a console route's parameters: the tenant, and a random id
// for anything else (the page then answers 404 to whoever may open it).
func pathFor(route, tenant string) string {
	parts := strings.Split(route, "/")
	for i, p := range parts {
		switch {
		case p == ":tenant":
			parts[i] = tenant
		case strings.HasPrefix(p, ":"):
			parts[i] = uuid.NewString()
		case p == "*":
			parts[i] = "x"
		}
	}
	return strings.Join(parts, "/")
}

// TestConsole_Authorization walks every console route the server registers
// with every role: the role table decides who gets in (403 for a role that
// lacks the permission), another tenant's users get 404, visitors without a
// session are sent to sign in, and every change needs the CSRF token.
func TestConsole_Authorization(t *testing.T) {
	t.Parallel()
	c := newConsole(t, pipelineOpts{noWorkers: true})
	routes := c.server.ConsoleRoutes()
	require.NotEmpty(t, routes)

	sessions := map[string]*session{}
	for _, who := range []string{asOperator, asManager, asSupport, asOtherManager} {
		s := c.signIn(who)
		_, resp := s.get("/")
		s.follow(resp)
		sessions[who] = s
	}
	roles := map[string]string{asOperator: app.RoleOperator, asManager: app.RoleManager, asSupport: app.RoleSupport}

	for _, r := range routes {
		path := pathFor(r.Path, "acme")
		t.Run(r.Method+" "+r.Path, func(t *testing.T) {
			send := func(s *session, form url.Values) *http.Response {
				if r.Method == http.MethodGet {
					_, resp := s.get(path)
					return resp
				}
				return s.post(path, form)
			}
			for who, role := range roles {
				resp := send(sessions[who], nil)
				if app.Can(role, r.Perm) {
					require.NotEqual(t, http.StatusForbidden, resp.StatusCode, "%s may %s %s", who, r.Method, path)
					require.Less(t, resp.StatusCode, 500, "%s %s as %s", r.Method, path, who)
				} else {
					require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s may not %s %s", who, r.Method, path)
				}
			}

			resp := send(c.anonymous(), nil)
			if r.Method == http.MethodGet {
				require.Equal(t, http.StatusSeeOther, resp.StatusCode)
				require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/login"))
			} else {
				require.NotEqual(t, http.StatusOK, resp.StatusCode)
				require.Less(t, resp.StatusCode, 500)
			}

			if r.Tenant {
				resp = send(sessions[asOtherManager], nil)
				require.Equal(t, http.StatusNotFound, resp.StatusCode, "another tenant's manager must not learn acme exists")
			}
			if r.Method != http.MethodGet {
				resp = send(sessions[asOperator], url.Values{"csrf": {"forged"}})
				require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s without a valid CSRF token", path)
			}
		})
	}

	t.Run("UnknownTenant", func(t *testing.T) {
		_, resp := sessions[asOperator].get("/t/no-such-tenant/")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	t.Run("NavigationFollowsRole", func(t *testing.T) {
		labels := func(who, path string) []string {
			return sessions[who].page(path).Find(".mainnav a").Map(func(_ int, s *goquery.Selection) string { return s.Text() })
		}
		require.Equal(t, []string{"Dashboard", "Bookings", "Messages", "Scheduled", "Approvals"}, labels(asSupport, "/t/acme/"))
		require.Contains(t, labels(asManager, "/t/acme/"), "Channels")
		require.Equal(t, []string{"Tenants", "Queues", "Audit"}, labels(asOperator, "/tenants"))
		require.Contains(t, labels(asOperator, "/t/globex/"), "Templates", "operators work inside any tenant")
	})
}
