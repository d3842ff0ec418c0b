package web

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"runtime/debug"
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
			s.Log.Error("panic in handler", "path", c.Path(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
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
		"method", c.Method(), "path", c.Path(), "route", route, "status", status,
		"duration_ms", float64(elapsed.Microseconds())/1000, "bytes", len(c.Response().Body()),
		"ip", c.IP(), "request_id", requestIDOf(c))
	return nil
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

// securityHeaders sets the headers every response carries. The console loads
// nothing from other origins, so the content security policy is strict.
func (s *Server) securityHeaders(c *fiber.Ctx) error {
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("X-Frame-Options", "DENY")
	c.Set("Referrer-Policy", "same-origin")
	c.Set("Cross-Origin-Opener-Policy", "same-origin")
	c.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
	c.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "+
		"object-src 'none'; frame-ancestors 'none'; form-action 'self'; base-uri 'self'")
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

// apiKeyOf returns the authenticated API key of an /api request.
func apiKeyOf(c *fiber.Ctx) *app.APIKey {
	k, _ := c.Locals(localAPIKey).(*app.APIKey)
	return k
}

// apiActor is the audit actor of an /api request.
func apiActor(c *fiber.Ctx) app.Actor {
	k := apiKeyOf(c)
	return app.Actor{Type: app.ActorAPIKey, ID: &k.ID, Label: k.Name + " (" + k.Prefix + "…)"}
}
