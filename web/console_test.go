package web_test

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
	"github.com/heraldhq/herald/web/webtest"
)

// consoleBundle is Herald (webtest) with the console's cast: an operator, a
// manager and a support user of tenant acme, and a manager of another
// tenant, globex.
type consoleBundle struct {
	*webtest.Herald
	// other is the tenant globex.
	other *app.Tenant
	// users are the cast by the name tests sign in with (asOperator, ...).
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

// setupConsole builds Herald for t with opts (webtest.New) and adds the
// console's cast.
func setupConsole(t *testing.T, opts webtest.Options) *consoleBundle {
	t.Helper()
	adjust := opts.Config
	opts.Config = func(cfg *app.Config) {
		// The tests play several client addresses through one in-process
		// app, as a proxy in front of Herald would report them.
		cfg.ClientIPHeader = "X-Client-IP"
		if adjust != nil {
			adjust(cfg)
		}
	}
	h := webtest.New(t, opts)
	c := &consoleBundle{Herald: h, users: map[string]*app.User{}}
	var err error
	c.other, err = h.Services.Tenants.Create(h.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex Travel"})
	require.NoError(t, err)
	for name, in := range map[string]app.UserInput{
		asOperator:     {Email: "ops@herald.test", Role: app.RoleOperator},
		asManager:      {Email: "manager@acme.test", Role: app.RoleManager, TenantSlug: "acme"},
		asSupport:      {Email: "support@acme.test", Role: app.RoleSupport, TenantSlug: "acme"},
		asOtherManager: {Email: "manager@globex.test", Role: app.RoleManager, TenantSlug: "globex"},
	} {
		in.Password, in.Name = consolePassword, name
		c.users[name], err = h.Services.Users.Create(h.Ctx, app.CLIActor, in)
		require.NoError(t, err)
	}
	return c
}

// session is one browser: its cookies and the CSRF token of the last page
// it loaded.
type session struct {
	t       *testing.T
	c       *consoleBundle
	cookies map[string]string
	csrf    string
	ip      string
}

// anonymous returns a browser that has not signed in.
func (c *consoleBundle) anonymous() *session {
	return &session{t: c.T, c: c, cookies: map[string]string{}, ip: "192.0.2.10"}
}

// signIn returns a browser signed in as one of the console's users.
func (c *consoleBundle) signIn(who string) *session {
	c.T.Helper()
	s := c.anonymous()
	resp := s.login(c.users[who].Email, consolePassword)
	require.Equal(c.T, http.StatusSeeOther, resp.StatusCode, "sign in as %s", who)
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
	resp, err := s.c.App.Test(req, -1)
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
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	routes := c.Server.ConsoleRoutes()
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
		require.Equal(t, []string{"Dashboard", "Inbox", "Search", "Bookings", "Messages", "Requests", "Scheduled", "Approvals", "Uploads"}, labels(asSupport, "/t/acme/"))
		require.Contains(t, labels(asManager, "/t/acme/"), "Channels")
		require.Equal(t, []string{"Tenants", "Queues", "Prices", "Audit"}, labels(asOperator, "/tenants"))
		require.Contains(t, labels(asOperator, "/t/globex/"), "Templates", "operators work inside any tenant")
	})
}
