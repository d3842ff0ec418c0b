package web

import (
	"github.com/gofiber/fiber/v2"
)

// tenantJSON is the API's view of a tenant.
type tenantJSON struct {
	ID            string `json:"id"`
	Slug          string `json:"slug"`
	Name          string `json:"name"`
	Plan          string `json:"plan"`
	DefaultLocale string `json:"default_locale"`
	Timezone      string `json:"timezone"`
	RetentionDays int    `json:"retention_days"`
	Status        string `json:"status"`
}

// handleAPITenant answers which tenant the API key belongs to, so that an
// integration can check its key before sending anything.
func (s *Server) handleAPITenant(c *fiber.Ctx) error {
	t, err := s.Tenants.ByID(c.UserContext(), apiKeyOf(c).TenantID)
	if err != nil {
		return err
	}
	return c.JSON(tenantJSON{
		ID: t.ID.String(), Slug: t.Slug, Name: t.Name, Plan: t.Plan,
		DefaultLocale: t.DefaultLocale, Timezone: t.Timezone, RetentionDays: t.Retention(), Status: t.Status,
	})
}
