package web

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
)

const (
	localRequestID = "request_id"
	localAPIKey    = "api_key"
)

// requestID gives every request an id, taken from X-Request-Id when a proxy
// set a sane one, and echoes it in the response.
func (s *Server) requestID(c *fiber.Ctx) error {
	id := c.Get(fiber.HeaderXRequestID)
	if id == "" || len(id) > 64 || strings.ContainsFunc(id, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		id = strings.ToLower(rand.Text()[:20])
	}
	c.Locals(localRequestID, id)
	c.Set(fiber.HeaderXRequestID, id)
	return c.Next()
}

func requestIDOf(c *fiber.Ctx) string {
	id, _ := c.Locals(localRequestID).(string)
	return id
}

// recoverPanic turns a panicking handler into a 500 with the stack in the
// log, so one bad request never takes the process down.
func (s *Server) recoverPanic(c *fiber.Ctx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			s.Log.Error("panic in handler", "path", loggedPath(c), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return c.Next()
}

// observe logs each request and records its metrics under the route
// pattern, so that ids in paths do not explode the label space.
func (s *Server) observe(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	if err != nil {
		// Run the error handler now so that the status is final before it
		// is logged and counted.
		if herr := c.App().ErrorHandler(c, err); herr != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
	}
	elapsed := time.Since(start)
	status := c.Response().StatusCode()
	route := c.Route().Path
	if status == fiber.StatusNotFound && (route == "/" || route == "/*" || route == "/api/*") && c.Path() != "/" {
		route = "unmatched"
	}
	s.metrics.observe(c.Method(), route, status, elapsed)

	s.Log.Log(c.UserContext(), requestLogLevel(s.Config.Dev(), route, status), "request",
		"method", c.Method(), "path", loggedPath(c), "route", route, "status", status,
		"duration_ms", float64(elapsed.Microseconds())/1000, "bytes", len(c.Response().Body()),
		"ip", c.IP(), "request_id", requestIDOf(c))
	return nil
}

// loggedPath is the request's path as logs keep it. A path token is a
// secret (an unsubscribe link's, a Meta account's webhook path), so only its
// first characters are kept: enough to tell requests apart, not to replay
// them.
func loggedPath(c *fiber.Ctx) string {
	// The fasthttp error handler's context has no route: Route stands in.
	if !slices.Contains(c.Route().Params, "token") {
		return c.Path()
	}
	p, token := c.Path(), c.Params("token")
	// The token is the path's last segment in every route that has one.
	i := strings.LastIndex(p, token)
	if token == "" || i < 0 {
		return p
	}
	return p[:i] + maskToken(token) + p[i+len(token):]
}

// maskToken keeps a token's first four characters.
func maskToken(token string) string {
	if r := []rune(token); len(r) > 8 {
		return string(r[:4]) + "…"
	}
	return "…"
}

// requestLogLevel is the level a request is logged at: errors as errors,
// probes and static files at debug, and in dev every request that did not
// fail at debug too, because each console page would otherwise push the
// credentials the dev task printed off the screen.
func requestLogLevel(dev bool, route string, status int) slog.Level {
	switch {
	case status >= 500:
		return slog.LevelError
	case route == "/healthz" || route == "/readyz" || route == "/metrics" || route == "/static/*":
		return slog.LevelDebug
	case dev && status < 400:
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// contentSecurityPolicy is every page's policy: the console loads nothing
// from other origins and runs no inline script or style.
const contentSecurityPolicy = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; " +
	"object-src 'none'; frame-ancestors 'none'; form-action 'self'; base-uri 'self'"

// emailPreviewPolicy is the policy of pages that show an e-mail in a
// sandboxed srcdoc frame. The frame inherits the page's policy, and e-mails
// are styled inline and show remote images, so the page allows inline
// styles and https images. Scripts stay the console's own, and the frame's
// sandbox runs none.
const emailPreviewPolicy = "default-src 'self'; img-src 'self' data: https:; style-src 'self' 'unsafe-inline'; script-src 'self'; " +
	"object-src 'none'; frame-ancestors 'none'; form-action 'self'; base-uri 'self'"

// allowEmailPreview gives the response emailPreviewPolicy.
func allowEmailPreview(c *fiber.Ctx) {
	c.Set("Content-Security-Policy", emailPreviewPolicy)
}

// securityHeaders sets the headers every response carries. The console loads
// nothing from other origins, so the content security policy is strict.
func (s *Server) securityHeaders(c *fiber.Ctx) error {
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("X-Frame-Options", "DENY")
	c.Set("Referrer-Policy", "same-origin")
	c.Set("Cross-Origin-Opener-Policy", "same-origin")
	c.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
	c.Set("Content-Security-Policy", contentSecurityPolicy)
	if !s.Config.Dev() {
		c.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
	}
	return c.Next()
}

// requireAPIKey authenticates /api requests by their Bearer key and puts the
// key, and so its tenant, into the request.
func (s *Server) requireAPIKey(c *fiber.Ctx) error {
	auth := c.Get(fiber.HeaderAuthorization)
	scheme, secret, ok := strings.Cut(auth, " ")
	if auth == "" || !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="herald"`)
		return app.Errorf(app.EUNAUTHORIZED, "Send your API key as `Authorization: Bearer <key>`.")
	}
	key, err := s.APIKeys.Authenticate(c.UserContext(), strings.TrimSpace(secret))
	if err != nil {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="herald", error="invalid_token"`)
		return err
	}
	c.Locals(localAPIKey, key)
	return c.Next()
}

// limitIntake takes a token from the bucket of the request's tenant and
// key, after the key is authenticated and before anything reads the body:
// a key past its rate gets 429 rate_limited with Retry-After, for the cost
// of one bucket update.
func (s *Server) limitIntake(c *fiber.Ctx) error {
	if s.Limits == nil {
		return c.Next()
	}
	if err := s.Limits.TakeIntakeToken(c.UserContext(), apiKeyOf(c)); err != nil {
		return err
	}
	return c.Next()
}

// limitPublic takes a token from the client address's bucket before a
// public link (no login) reads its token: a client past its rate gets 429
// rate_limited with Retry-After, and other clients are not slowed.
func (s *Server) limitPublic(c *fiber.Ctx) error {
	if err := s.PublicLimits.TakeClient(c.UserContext(), c.IP()); err != nil {
		return err
	}
	return c.Next()
}

// apiKeyOf returns the authenticated API key of an /api request.
func apiKeyOf(c *fiber.Ctx) *app.APIKey {
	k, _ := c.Locals(localAPIKey).(*app.APIKey)
	return k
}

// apiActor is the audit actor of an /api request.
func apiActor(c *fiber.Ctx) app.Actor {
	return apiKeyOf(c).Actor()
}

// APIRoute is one /api/v1 route with the scope an API key needs for it.
type APIRoute struct {
	Method string
	// Path is the route's pattern, such as /api/v1/templates/:id.
	Path  string
	Scope string
}

// APIRoutes returns every /api/v1 route registered with its scope.
func (s *Server) APIRoutes() []APIRoute {
	out := append([]APIRoute(nil), s.apiRoutes...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path+out[i].Method < out[j].Path+out[j].Method })
	return out
}

// apiGroup registers /api/v1 routes, each behind the scope it names, so
// that no route can be added without saying which keys may call it. The
// router it adds to already authenticates the key.
type apiGroup struct {
	s      *Server
	r      fiber.Router
	prefix string
}

func (g apiGroup) add(method, path, scope string, h fiber.Handler) {
	if !slices.Contains(app.Scopes, scope) {
		panic("api route " + method + " " + path + ": unknown scope " + scope)
	}
	g.s.apiRoutes = append(g.s.apiRoutes, APIRoute{Method: method, Path: g.prefix + path, Scope: scope})
	if method == fiber.MethodGet {
		// Get answers HEAD too, as fiber's own routes do.
		g.r.Get(path, g.s.requireScope(scope), h)
		return
	}
	g.r.Add(method, path, g.s.requireScope(scope), h)
}

func (g apiGroup) get(path, scope string, h fiber.Handler)  { g.add(fiber.MethodGet, path, scope, h) }
func (g apiGroup) post(path, scope string, h fiber.Handler) { g.add(fiber.MethodPost, path, scope, h) }
func (g apiGroup) put(path, scope string, h fiber.Handler)  { g.add(fiber.MethodPut, path, scope, h) }
func (g apiGroup) patch(path, scope string, h fiber.Handler) {
	g.add(fiber.MethodPatch, path, scope, h)
}
func (g apiGroup) delete(path, scope string, h fiber.Handler) {
	g.add(fiber.MethodDelete, path, scope, h)
}

// requireScope lets a request through only when its API key holds scope:
// otherwise 403 insufficient_scope, naming the scope the route needs (and,
// as RFC 6750 has it, in WWW-Authenticate).
func (s *Server) requireScope(scope string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if k := apiKeyOf(c); !k.HasScope(scope) {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="herald", error="insufficient_scope", scope="`+scope+`"`)
			return &app.Error{Code: app.EFORBIDDEN, Reason: "insufficient_scope", Message: fmt.Sprintf(
				"This API key does not have the %q scope, which %s %s needs. Its scopes: %s. A manager creates a key with the scope in the console (API keys).",
				scope, c.Method(), c.Route().Path, strings.Join(k.Scopes, ", "))}
		}
		return c.Next()
	}
}
