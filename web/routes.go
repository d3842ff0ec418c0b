package web

import (
	"github.com/gofiber/fiber/v2"
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

	a.Get("/", func(c *fiber.Ctx) error { return c.Redirect("/login") })
	a.Get("/login", s.handleLoginPage)
}
