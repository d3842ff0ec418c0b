package web

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// handleSettings shows the tenant's settings, delivery deadlines and
// confirmation windows.
func (s *Server) handleSettings(c *fiber.Ctx) error {
	t := tenantOf(c)
	return s.renderSettings(c, settingsForm(t), nil, views.DeadlineSettings{}, views.ConfirmWindowSettings{})
}

// renderSettings renders the settings page with the tenant's delivery
// deadlines and confirmation windows as stored.
func (s *Server) renderSettings(c *fiber.Ctx, f views.SettingsForm, errs views.FormErrors, d views.DeadlineSettings, w views.ConfirmWindowSettings) error {
	u, tenantID := userOf(c), tenantOf(c).ID
	rules, err := s.Deadlines.Rules(c.UserContext(), u, tenantID)
	if err != nil {
		return err
	}
	windows, err := s.ConfirmWindows.Windows(c.UserContext(), u, tenantID)
	if err != nil {
		return err
	}
	d.Rules, w.Windows = rules, windows
	if s.Limits != nil {
		if f.Limits, err = s.Limits.Usage(c.UserContext(), tenantID); err != nil {
			return err
		}
	}
	return s.render(c, views.SettingsPage(s.page(c, "Settings"), f, errs, d, w))
}

// handleSettingsUpdate saves the tenant's settings; bad input shows the
// form again and stores nothing.
func (s *Server) handleSettingsUpdate(c *fiber.Ctx) error {
	t := tenantOf(c)
	in := console.TenantSettings{DefaultLocale: c.FormValue("locale"), Timezone: c.FormValue("timezone"), Retention: c.FormValue("retention"),
		QuietStart: c.FormValue("quiet_start"), QuietEnd: c.FormValue("quiet_end")}
	_, changes, err := s.Tenants.UpdateSettings(c.UserContext(), userOf(c), t.ID, in)
	if err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			f := views.SettingsForm{Tenant: t, Locale: in.DefaultLocale, Timezone: in.Timezone, Retention: in.Retention,
				QuietStart: in.QuietStart, QuietEnd: in.QuietEnd}
			return s.renderSettings(c, f, errs, views.DeadlineSettings{}, views.ConfirmWindowSettings{})
		})
	}
	if len(changes) == 0 {
		s.flash(c, "info", "Nothing changed.")
	} else {
		s.flash(c, "success", "Settings saved.")
	}
	return c.Redirect(tenantPath(c, "/settings"), fiber.StatusSeeOther)
}

// handleDeadlineChange sets or removes one delivery deadline; bad input
// shows the page again with the form as typed and stores nothing.
func (s *Server) handleDeadlineChange(c *fiber.Ctx) error {
	t := tenantOf(c)
	in := console.DeadlineForm{TriggerEvent: c.FormValue("trigger_event"), Channel: c.FormValue("channel"), Stage: c.FormValue("stage"),
		Minutes: c.FormValue("minutes"), BeforeDeparture: c.FormValue("before_departure")}
	if err := s.Deadlines.Change(c.UserContext(), userOf(c), t.ID, in); err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			return s.renderSettings(c, settingsForm(t), nil, views.DeadlineSettings{Form: in, Errs: errs}, views.ConfirmWindowSettings{})
		})
	}
	m, _ := strconv.Atoi(in.Minutes)
	if b, _ := strconv.Atoi(in.BeforeDeparture); m == 0 && b == 0 {
		s.flash(c, "success", "Delivery deadline removed.")
	} else {
		s.flash(c, "success", "Delivery deadline saved.")
	}
	return c.Redirect(tenantPath(c, "/settings"), fiber.StatusSeeOther)
}

// handleConfirmWindowChange sets or removes one confirmation window; bad
// input shows the page again with the form as typed and stores nothing.
func (s *Server) handleConfirmWindowChange(c *fiber.Ctx) error {
	t := tenantOf(c)
	in := console.ConfirmWindowForm{TriggerEvent: c.FormValue("trigger_event"), Seconds: c.FormValue("seconds"), Remove: c.FormValue("remove") != ""}
	if err := s.ConfirmWindows.Change(c.UserContext(), userOf(c), t.ID, in); err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			return s.renderSettings(c, settingsForm(t), nil, views.DeadlineSettings{}, views.ConfirmWindowSettings{Form: in, Errs: errs})
		})
	}
	if in.Remove {
		s.flash(c, "success", "Confirmation window removed.")
	} else {
		s.flash(c, "success", "Confirmation window saved.")
	}
	return c.Redirect(tenantPath(c, "/settings"), fiber.StatusSeeOther)
}

// settingsForm is the settings form filled with the tenant's values.
func settingsForm(t *app.Tenant) views.SettingsForm {
	f := views.SettingsForm{Tenant: t, Locale: t.DefaultLocale, Timezone: t.Timezone,
		QuietStart: app.FormatClock(t.QuietStart), QuietEnd: app.FormatClock(t.QuietEnd)}
	if t.RetentionDays != nil {
		f.Retention = strconv.Itoa(*t.RetentionDays)
	}
	return f
}
