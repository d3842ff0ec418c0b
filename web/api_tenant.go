package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
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
	// QuietHours are the tenant's, in each recipient's zone.
	QuietHours quietHoursJSON `json:"quiet_hours"`
}

// quietHoursJSON is a tenant's quiet hours as times of day.
type quietHoursJSON struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// handleAPITenant answers which tenant the API key belongs to, so that an
// integration can check its key before sending anything.
func (s *Server) handleAPITenant(c *fiber.Ctx) error {
	t, err := s.Tenants.ByID(c.UserContext(), apiKeyOf(c).TenantID)
	if err != nil {
		return err
	}
	return c.JSON(tenantView(t))
}

func tenantView(t *app.Tenant) tenantJSON {
	return tenantJSON{
		ID: t.ID.String(), Slug: t.Slug, Name: t.Name, Plan: t.Plan,
		DefaultLocale: t.DefaultLocale, Timezone: t.Timezone, RetentionDays: t.Retention(), Status: t.Status,
		QuietHours: quietHoursJSON{Start: app.FormatClock(t.QuietStart), End: app.FormatClock(t.QuietEnd)},
	}
}

// handleAPITenantUpdate changes the tenant's settings the API may change:
// its quiet hours.
func (s *Server) handleAPITenantUpdate(c *fiber.Ctx) error {
	var body struct {
		QuietHours *quietHoursJSON `json:"quiet_hours"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if body.QuietHours == nil {
		return app.Invalid("missing_quiet_hours", "quiet_hours", `quiet_hours is required: {"start": "21:00", "end": "08:00"}.`)
	}
	q, err := app.ParseQuietHours(body.QuietHours.Start, body.QuietHours.End)
	if err != nil {
		return err
	}
	t, _, err := s.Tenants.SetQuietHours(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, q)
	if err != nil {
		return err
	}
	return c.JSON(tenantView(t))
}
