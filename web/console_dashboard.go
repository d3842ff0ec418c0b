package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/views"
)

// handleDashboard shows the tenant's dashboard.
func (s *Server) handleDashboard(c *fiber.Ctx) error {
	return s.render(c, views.DashboardPage(s.page(c, "Dashboard")))
}
