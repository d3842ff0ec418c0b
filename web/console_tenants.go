package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/views"
)

// handleTenants lists every tenant (operators).
func (s *Server) handleTenants(c *fiber.Ctx) error {
	return s.render(c, views.TenantsPage(s.page(c, "Tenants")))
}
