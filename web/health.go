package web

import (
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heraldhq/herald/app"
)

// handleHealthz answers as long as the process serves HTTP; it checks nothing
// else, so a database outage never gets healthy processes restarted.
func (s *Server) handleHealthz(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

// handleReadyz reports whether Herald can do its work: 200 when healthy or
// degraded, 503 when unhealthy.
func (s *Server) handleReadyz(c *fiber.Ctx) error {
	r := s.Health.Check(c.UserContext())
	c.Set(fiber.HeaderCacheControl, "no-store")
	status := fiber.StatusOK
	if r.Status == app.Unhealthy {
		status = fiber.StatusServiceUnavailable
	}
	return c.Status(status).JSON(r)
}

// handleMetrics serves the Prometheus registry.
func (s *Server) handleMetrics(c *fiber.Ctx) error {
	return adaptor.HTTPHandler(promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{Registry: s.Registry}))(c)
}
