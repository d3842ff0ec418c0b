package web

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// handleSettings shows the tenant's settings.
func (s *Server) handleSettings(c *fiber.Ctx) error {
	t := tenantOf(c)
	f := views.SettingsForm{Tenant: t, Locale: t.DefaultLocale, Timezone: t.Timezone}
	if t.RetentionDays != nil {
		f.Retention = strconv.Itoa(*t.RetentionDays)
	}
	return s.render(c, views.SettingsPage(s.page(c, "Settings"), f, nil))
}

// handleSettingsUpdate saves the tenant's settings; bad input shows the
// form again and stores nothing.
func (s *Server) handleSettingsUpdate(c *fiber.Ctx) error {
	t := tenantOf(c)
	in := console.TenantSettings{DefaultLocale: c.FormValue("locale"), Timezone: c.FormValue("timezone"), Retention: c.FormValue("retention")}
	_, changes, err := s.Tenants.UpdateSettings(c.UserContext(), userOf(c), t.ID, in)
	if err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			f := views.SettingsForm{Tenant: t, Locale: in.DefaultLocale, Timezone: in.Timezone, Retention: in.Retention}
			return s.render(c, views.SettingsPage(s.page(c, "Settings"), f, errs))
		})
	}
	if len(changes) == 0 {
		s.flash(c, "info", "Nothing changed.")
	} else {
		s.flash(c, "success", "Settings saved.")
	}
	return c.Redirect(tenantPath(c, "/settings"), fiber.StatusSeeOther)
}
