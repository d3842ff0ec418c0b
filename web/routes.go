package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
)

// routes lists every route Herald serves, so the whole surface reads in one
// screen.
func (s *Server) routes(a *fiber.App) {
	a.Use(s.requestID, s.observe, s.recoverPanic, s.securityHeaders)

	a.Get("/healthz", s.handleHealthz)
	a.Get("/readyz", s.handleReadyz)
	a.Get("/metrics", s.handleMetrics)
	a.Get("/static/*", s.handleStatic)
	a.Get("/favicon.ico", func(c *fiber.Ctx) error { return c.Redirect("/static/favicon.svg", fiber.StatusMovedPermanently) })

	api := a.Group("/api/v1", s.requireAPIKey)
	api.Get("/tenant", s.handleAPITenant)
	api.Get("/events", s.handleAPIEvents)
	api.Post("/notifications", s.handleAPINotificationCreate)
	api.Get("/notifications/:id", s.handleAPINotificationGet)
	api.Patch("/notifications/:id", s.handleAPINotificationReschedule)
	api.Delete("/notifications/:id", s.handleAPINotificationCancel)
	api.Post("/notifications/:id/approve", s.handleAPINotificationApprove)
	api.Post("/notifications/:id/reject", s.handleAPINotificationReject)
	api.Get("/messages", s.handleAPIMessageList)
	api.Get("/messages/:id", s.handleAPIMessageGet)
	api.Post("/bookings/:id/resend", s.handleAPIBookingResend)
	a.All("/api/*", func(c *fiber.Ctx) error { return fiber.ErrNotFound })

	a.Get("/webhooks/meta/:tenant", s.handleWebhookMetaVerify)
	a.Post("/webhooks/meta/:tenant", s.handleWebhookMeta)
	a.Post("/webhooks/ses", s.handleWebhookSES)
	a.Post("/webhooks/sns-sms", s.handleWebhookSMS)

	s.consoleRoutesOn(a)
}

// consoleRoutesOn registers the console. Every route but sign-in requires a
// session (and a CSRF token on changes); routes under /t/:tenant require
// access to that tenant; each route names the permission it requires.
// Areas are kept in separate blocks.
func (s *Server) consoleRoutesOn(a *fiber.App) {
	a.Get("/login", s.handleLoginPage)
	a.Post("/login", s.handleLogin)
	a.Get("/", s.requireUser, s.handleHome)
	a.Post("/logout", s.requireUser, s.handleLogout)
	a.Get("/account/password", s.requireUser, s.handlePasswordPage)
	a.Post("/account/password", s.requireUser, s.handlePassword)

	// Operator pages: every tenant, River's queues, the platform audit log.
	op := consoleGroup{s: s, r: a, mw: []fiber.Handler{s.requireUser}}
	op.get("/tenants", app.PermPlatform, s.handleTenants)

	// Queues.

	// Platform audit log.

	// Tenant pages.
	t := consoleGroup{s: s, r: a, prefix: "/t/:tenant", tenant: true, mw: []fiber.Handler{s.requireUser, s.requireTenant}}

	// Dashboard.
	t.get("/", app.PermDashboard, s.handleDashboard)

	// Channel accounts.

	// Templates.

	// Booking panel and messages.
	t.get("/bookings", app.PermMessages, s.handleBookingSearch)
	t.get("/bookings/:type/:id", app.PermMessages, s.handleBookingPanel)
	t.post("/bookings/:type/:id/resend", app.PermResend, s.handleBookingResend)
	t.get("/messages", app.PermMessages, s.handleMessageList)
	t.get("/messages/:id", app.PermMessages, s.handleMessageShow)
	t.post("/messages/:id/retry", app.PermResend, s.handleMessageRetry)
	t.post("/messages/:id/cancel", app.PermCancelMessage, s.handleMessageCancel)

	// Scheduled notifications, approvals and the tenant's audit log.

	// Settings, users and API keys.

}
