package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
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
	c.other, err = p.svc.tenants.Create(p.ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex Travel"})
	require.NoError(t, err)
	for name, in := range map[string]app.UserInput{
		asOperator:     {Email: "ops@herald.test", Role: app.RoleOperator},
		asManager:      {Email: "manager@acme.test", Role: app.RoleManager, TenantSlug: "acme"},
		asSupport:      {Email: "support@acme.test", Role: app.RoleSupport, TenantSlug: "acme"},
		asOtherManager: {Email: "manager@globex.test", Role: app.RoleManager, TenantSlug: "globex"},
	} {
		in.Password, in.Name = consolePassword, name
		c.users[name], err = p.svc.users.Create(p.ctx, app.CLIActor, in)
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
		u, err := c.svc.users.Create(c.ctx, app.CLIActor, app.UserInput{Email: "gone@acme.test", Password: consolePassword, Role: app.RoleSupport, TenantSlug: "acme"})
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
