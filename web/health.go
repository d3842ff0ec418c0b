package web

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
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

// handleMetrics serves the Prometheus registry on the public listener,
// but only to whom it is meant for: with HERALD_METRICS_ADDR it lives on its
// own listener instead (404 here); with HERALD_METRICS_TOKEN a scraper sends
// that token as a bearer token; with neither, only a dev Herald shows it.
func (s *Server) handleMetrics(c *fiber.Ctx) error {
	switch {
	case s.Config.MetricsAddr != "":
		return fiber.ErrNotFound
	case s.Config.MetricsToken != "":
		token, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.Config.MetricsToken)) != 1 {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="metrics"`)
			return fiber.ErrUnauthorized
		}
	case !s.Config.Dev():
		return fiber.ErrNotFound
	}
	return adaptor.HTTPHandler(MetricsHandler(s.Registry))(c)
}

// MetricsHandler serves a registry as Prometheus scrapes it; herald serves
// it on HERALD_METRICS_ADDR.
func MetricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
