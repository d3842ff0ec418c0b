package web

import (
	"github.com/gofiber/fiber/v2"
)

// handleAPILimits answers the tenant's limits (its own where an operator
// set them, the defaults elsewhere) and what today (UTC) used of them.
func (s *Server) handleAPILimits(c *fiber.Ctx) error {
	u, err := s.Limits.Usage(c.UserContext(), apiKeyOf(c).TenantID)
	if err != nil {
		return err
	}
	return c.JSON(u)
}

// handleAPIBudgets answers the tenant's monthly budget per priced channel
// with the month's spend and what remains, in the installation's currency.
func (s *Server) handleAPIBudgets(c *fiber.Ctx) error {
	u, err := s.Limits.Usage(c.UserContext(), apiKeyOf(c).TenantID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"budgets": u.Budgets})
}
