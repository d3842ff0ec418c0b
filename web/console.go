package web

import (
	"crypto/hmac"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

const (
	localUser    = "user"
	localClaims  = "session"
	localTenant  = "tenant"
	localFlashes = "flashes"
)

// ConsoleRoute is one console route and the permission it requires; the
// authorization tests walk this list, so no route escapes them.
type ConsoleRoute struct {
	Method string
	Path   string
	// Tenant is true for routes under /t/:tenant.
	Tenant bool
	Perm   app.Permission
}

// ConsoleRoutes returns every console route registered with a permission.
func (s *Server) ConsoleRoutes() []ConsoleRoute {
	out := append([]ConsoleRoute(nil), s.consoleRoutes...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path+out[i].Method < out[j].Path+out[j].Method })
	return out
}

// consoleGroup registers console routes under a prefix, each behind the
// group's middleware and the permission it names. (Not a fiber group: a
// group's middleware would run for every path under its prefix, unknown
// ones included.)
type consoleGroup struct {
	s      *Server
	r      fiber.Router
	prefix string
	tenant bool
	mw     []fiber.Handler
}

func (g consoleGroup) add(method, path string, perm app.Permission, h fiber.Handler) {
	g.s.consoleRoutes = append(g.s.consoleRoutes, ConsoleRoute{Method: method, Path: g.prefix + path, Tenant: g.tenant, Perm: perm})
	// Input with a NUL character is refused once the visitor may open
	// the page, before the handler reads it.
	handlers := append(append([]fiber.Handler(nil), g.mw...), g.s.allow(perm), g.s.refuseConsoleNUL, h)
	g.r.Add(method, g.prefix+path, handlers...)
}

func (g consoleGroup) get(path string, perm app.Permission, h fiber.Handler) {
	g.add(fiber.MethodGet, path, perm, h)
}

func (g consoleGroup) post(path string, perm app.Permission, h fiber.Handler) {
	g.add(fiber.MethodPost, path, perm, h)
}

// requireUser lets signed-in users through: it checks the session cookie
// and the user's session version (logout and password changes revoke
// sessions), renews a session past half its life, and checks the CSRF token
// of every state-changing request.
func (s *Server) requireUser(c *fiber.Ctx) error {
	claims, err := s.parseSession(c.Cookies(cookieSession))
	if err != nil {
		if c.Cookies(cookieSession) != "" {
			s.clearCookie(c, cookieSession)
		}
		return s.toLogin(c)
	}
	u, err := s.Sessions.User(c.UserContext(), uuid.MustParse(claims.Subject), claims.Version)
	if app.ErrorCode(err) == app.EUNAUTHORIZED {
		s.clearCookie(c, cookieSession)
		return s.toLogin(c)
	}
	if err != nil {
		return err
	}
	if time.Until(claims.ExpiresAt.Time) < console.SessionTTL/2 && time.Until(claims.AuthTime.Add(console.SessionMaxAge)) > time.Until(claims.ExpiresAt.Time) {
		// Renewal keeps the time of sign-in, so the session still ends
		// console.SessionMaxAge after it however busy it is.
		s.issueSession(c, u, claims.ID, claims.AuthTime.Time)
	}
	c.Locals(localUser, u)
	c.Locals(localClaims, claims)
	if u.MustChangePassword && c.Path() != "/account/password" && c.Path() != "/logout" {
		// A temporary password handed out by a manager: the user chooses
		// their own before anything else.
		s.flash(c, "warning", "You signed in with a temporary password. Choose your own password to continue.")
		return c.Redirect("/account/password", fiber.StatusSeeOther)
	}
	if u.NeedsTwoFactor() && !u.MustChangePassword && !strings.HasPrefix(c.Path(), "/account/two-factor") && c.Path() != "/logout" {
		// The tenant (or the platform) requires a second factor the user
		// has not set up: they set it up (an app or a key, whose routes
		// are under the page's) before anything else (the page says why).
		return c.Redirect("/account/two-factor", fiber.StatusSeeOther)
	}

	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
	default:
		token := c.Get("X-CSRF-Token")
		if token == "" {
			token = bodyCSRF(c)
		}
		if !hmac.Equal([]byte(token), []byte(s.csrfToken(claims))) {
			return app.Errorf(app.EFORBIDDEN, "This form has expired or did not come from this console. Reload the page and try again.")
		}
	}
	return c.Next()
}

// toLogin sends a visitor without a valid session to the sign-in page,
// remembering where they were going.
func (s *Server) toLogin(c *fiber.Ctx) error {
	target := "/login"
	if c.Method() == fiber.MethodGet && c.Path() != "/" {
		target += "?next=" + url.QueryEscape(c.OriginalURL())
	}
	if c.Get("HX-Request") != "" {
		c.Set("HX-Redirect", target)
		return c.SendStatus(fiber.StatusUnauthorized)
	}
	return c.Redirect(target, fiber.StatusSeeOther)
}

// requireTenant resolves /t/:tenant. Operators may open any tenant; everyone
// else only their own, and another tenant answers 404 as if it did not exist.
func (s *Server) requireTenant(c *fiber.Ctx) error {
	u := userOf(c)
	t, err := s.Tenants.BySlug(c.UserContext(), c.Params("tenant"))
	switch {
	case app.ErrorCode(err) == app.ENOTFOUND || app.ErrorCode(err) == app.EINVALID:
		return fiber.ErrNotFound
	case err != nil:
		return err
	case u.Role != app.RoleOperator && (u.TenantID == nil || *u.TenantID != t.ID):
		return fiber.ErrNotFound
	case t.Status == app.TenantSuspended && u.Role != app.RoleOperator && changes(c):
		// A suspended tenant's console is read-only for its own users:
		// no settings, keys, accounts, templates or resends until an
		// operator reactivates it.
		return app.Errorf(app.EFORBIDDEN, "This tenant is suspended, so its console is read-only: nothing can be changed until your Herald operator reactivates it.")
	}
	c.Locals(localTenant, t)
	return c.Next()
}

// changes reports whether a console request changes something: every
// method but GET, HEAD and OPTIONS, except the template preview, which
// only renders what the editor holds.
func changes(c *fiber.Ctx) bool {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return false
	}
	return c.Route().Path != "/t/:tenant/templates/preview"
}

// allow refuses users whose role lacks perm.
func (s *Server) allow(perm app.Permission) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if !userOf(c).Can(perm) {
			return app.Errorf(app.EFORBIDDEN, "Your role cannot open this page.")
		}
		return c.Next()
	}
}

// userOf returns the signed-in user of a console request, nil elsewhere.
func userOf(c *fiber.Ctx) *app.User {
	u, _ := c.Locals(localUser).(*app.User)
	return u
}

// tenantOf returns the tenant of a /t/:tenant request.
func tenantOf(c *fiber.Ctx) *app.Tenant {
	t, _ := c.Locals(localTenant).(*app.Tenant)
	return t
}

// userActor is the audit actor of a console request.
func userActor(c *fiber.Ctx) app.Actor {
	return userOf(c).Actor()
}

// tenantPath returns a path inside the request's tenant: tenantPath(c,
// "/messages") is "/t/acme/messages".
func tenantPath(c *fiber.Ctx, path string) string {
	return "/t/" + tenantOf(c).Slug + path
}

// safeNext returns next when it is a path on this site, else fallback, so
// the sign-in form cannot send anyone elsewhere. Browsers drop tabs and
// line breaks from a Location and read a backslash as a slash, which would
// turn "/\t/evil.example" into "//evil.example": any control character or
// backslash, raw or percent-encoded, is refused outright.
func safeNext(next, fallback string) string {
	unsafe := func(s string) bool {
		return strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == '\\' }) >= 0
	}
	// "///x" parses as an empty host and the path /x, but browsers skip
	// every slash and take x for the host.
	if next == "" || unsafe(next) || strings.HasPrefix(next, "//") {
		return fallback
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") || unsafe(u.Path) {
		return fallback
	}
	return next
}

// homeOf is where a user lands after signing in.
func (s *Server) homeOf(c *fiber.Ctx, u *app.User) (string, error) {
	if u.Role == app.RoleOperator {
		return "/tenants", nil
	}
	t, err := s.Tenants.ByID(c.UserContext(), *u.TenantID)
	if err != nil {
		return "", err
	}
	return "/t/" + t.Slug + "/", nil
}

// navItem is one entry of the navigation with the permission it needs.
type navItem struct {
	label string
	path  string
	perm  app.Permission
}

var tenantNav = []navItem{
	{"Dashboard", "/", app.PermDashboard},
	{"Inbox", "/inbox", app.PermMessages},
	{"Search", "/search", app.PermMessages},
	{"Bookings", "/bookings", app.PermMessages},
	{"Messages", "/messages", app.PermMessages},
	{"Requests", "/requests", app.PermMessages},
	{"Scheduled", "/scheduled", app.PermSchedules},
	{"Approvals", "/approvals", app.PermSchedules},
	{"Uploads", "/uploads", app.PermSchedules},
	{"Templates", "/templates", app.PermTemplates},
	{"Channels", "/channels", app.PermChannels},
	{"API keys", "/api-keys", app.PermAPIKeys},
	{"API reference", "/api-reference", app.PermAPIKeys},
	{"Users", "/users", app.PermUsers},
	{"Audit", "/audit", app.PermAudit},
	{"Settings", "/settings", app.PermSettings},
}

var platformNav = []navItem{
	{"Tenants", "/tenants", app.PermPlatform},
	{"Queues", "/queues", app.PermQueues},
	{"Prices", "/prices", app.PermPlatform},
	{"Audit", "/audit", app.PermPlatform},
}

// nav builds the navigation the user may use, marking the current page.
func nav(c *fiber.Ctx, u *app.User, t *app.Tenant) []views.NavItem {
	items, prefix := platformNav, ""
	if t != nil {
		items, prefix = tenantNav, "/t/"+t.Slug
	}
	path := c.Path()
	var out []views.NavItem
	best, bestLen := -1, 0
	for _, it := range items {
		if !u.Can(it.perm) {
			continue
		}
		href := prefix + it.path
		out = append(out, views.NavItem{Label: it.label, Href: href})
		match := strings.TrimSuffix(href, "/")
		if (path == match || path == match+"/" || strings.HasPrefix(path, match+"/") && it.path != "/") && len(match) >= bestLen {
			best, bestLen = len(out)-1, len(match)
		}
	}
	if best >= 0 {
		out[best].Active = true
	}
	return out
}

// page returns the layout properties of a console page: the user, the
// tenant, the navigation, pending notices and the CSRF token.
func (s *Server) page(c *fiber.Ctx, title string) views.Page {
	p := views.Page{Title: title, Version: s.Version, Location: time.UTC, Currency: s.currency()}
	u := userOf(c)
	if u == nil {
		return p
	}
	t := tenantOf(c)
	p.User = u.Email
	p.Role = u.Role
	p.Nav = nav(c, u, t)
	p.Flash = s.flashes(c)
	p.ShowAddresses = u.Can(app.PermAddresses)
	if claims, ok := c.Locals(localClaims).(*sessionClaims); ok {
		p.CSRF = s.csrfToken(claims)
	}
	if t != nil {
		p.Tenant = t.Name
		p.TenantSlug = t.Slug
		if loc, err := time.LoadLocation(t.Timezone); err == nil {
			p.Location = loc
		}
		if t.Status == app.TenantSuspended {
			p.Flash = append(append([]views.Flash(nil), p.Flash...), views.Flash{Kind: "warning", Message: suspendedBanner(t)})
		}
	}
	p.Operator = u.Role == app.RoleOperator
	if p.Operator {
		for _, w := range s.Health.Warnings {
			p.Flash = append(append([]views.Flash(nil), p.Flash...), views.Flash{Kind: "error", Message: w})
		}
	}
	return p
}

// flashes takes the pending notices once per request, so that a page and
// its error page do not both consume them.
func (s *Server) flashes(c *fiber.Ctx) []views.Flash {
	if f, ok := c.Locals(localFlashes).([]views.Flash); ok {
		return f
	}
	f := s.takeFlash(c)
	c.Locals(localFlashes, f)
	return f
}
