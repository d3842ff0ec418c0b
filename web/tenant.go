package web

import (
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// suspendedBanner is the notice every console page of a suspended tenant
// shows.
func suspendedBanner(t *app.Tenant) string {
	msg := "This tenant is suspended: Herald refuses requests from its API keys, so no new notifications are accepted."
	if t.SuspendedReason != "" {
		msg += " Reason: " + strings.TrimRight(t.SuspendedReason, ".") + "."
	}
	return msg + " Contact your Herald operator to reactivate it."
}

// formFailure answers a form whose input a service refused: the page again
// with the errors, under the status the error's code maps to. Other errors
// (not found, internal) go to the error page.
func (s *Server) formFailure(c *fiber.Ctx, err error, render func(views.FormErrors) error) error {
	switch app.ErrorCode(err) {
	case app.EINVALID, app.ECONFLICT:
		c.Status(statusOf[app.ErrorCode(err)])
		return render(views.FormErrorsOf(err))
	}
	return err
}

// idParam reads a uuid path parameter; anything else is a page that does
// not exist.
func idParam(c *fiber.Ctx, name string) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Params(name))
	if err != nil {
		return uuid.Nil, fiber.ErrNotFound
	}
	return id, nil
}

// handleTenants lists every tenant (operators), newest first, filtered by
// name or slug.
func (s *Server) handleTenants(c *fiber.Ctx) error {
	page, req := pageOf(c)
	search := c.Query("q")
	if len(search) > 100 {
		search = search[:100]
	}
	rows, more, err := s.Tenants.List(c.UserContext(), userOf(c), search, req)
	if err != nil {
		return err
	}
	promise, err := s.Promise.Platform(c.UserContext(), userOf(c))
	if err != nil {
		return err
	}
	var refusals []*app.CredentialRefusal
	if s.Credentials != nil {
		if refusals, err = s.Credentials.Refusals(c.UserContext()); err != nil {
			return err
		}
	}
	return s.render(c, views.TenantsPage(s.page(c, "Tenants"), views.TenantList{
		Rows: rows, Search: search, Pager: pagerOf(c, page, len(rows), more), Promise: promise, Refusals: refusals,
	}))
}

// handleTenantNew shows the create-tenant form with the CLI's defaults.
func (s *Server) handleTenantNew(c *fiber.Ctx) error {
	f := views.TenantForm{Plan: app.PlanFree, Locale: "de-DE", Timezone: "Europe/Berlin"}
	return s.render(c, views.TenantNewPage(s.page(c, "New tenant"), f, nil))
}

// handleTenantCreate creates and provisions a tenant; bad input shows the
// form again and stores nothing.
func (s *Server) handleTenantCreate(c *fiber.Ctx) error {
	f := views.TenantForm{
		Slug: c.FormValue("slug"), Name: c.FormValue("name"), Plan: c.FormValue("plan"),
		Locale: c.FormValue("locale"), Timezone: c.FormValue("timezone"), Retention: c.FormValue("retention"),
	}
	fail := func(err error) error {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			return s.render(c, views.TenantNewPage(s.page(c, "New tenant"), f, errs))
		})
	}
	days, err := console.ParseRetention(f.Retention)
	if err != nil {
		return fail(err)
	}
	// The CLI's rules: an empty plan, locale or timezone takes the default,
	// but the form always sends them, so empty means the field was cleared.
	switch {
	case f.Locale == "":
		return fail(app.FieldErrorf("locale", "Default locale is required (a language tag such as de-DE)."))
	case f.Timezone == "":
		return fail(app.FieldErrorf("timezone", "Time zone is required (an IANA name such as Europe/Berlin)."))
	}
	t, err := s.Tenants.CreateAs(c.UserContext(), userOf(c), app.TenantInput{
		Slug: f.Slug, Name: f.Name, Plan: f.Plan, DefaultLocale: f.Locale, Timezone: f.Timezone, RetentionDays: days,
	})
	if err != nil {
		return fail(err)
	}
	s.flash(c, "success", "Tenant "+t.Name+" created with default templates and sandbox accounts for WhatsApp, e-mail and SMS. Next: open it and add its first manager under Users.")
	return c.Redirect("/tenants/"+t.ID.String(), fiber.StatusSeeOther)
}

// tenantDetail renders an operator's tenant page.
func (s *Server) tenantDetail(c *fiber.Ctx, v views.TenantDetail) error {
	if v.Plan == "" {
		v.Plan = v.Tenant.Plan
	}
	if s.Limits != nil {
		u, err := s.Limits.Usage(c.UserContext(), v.Tenant.ID)
		if err != nil {
			return err
		}
		v.Limits = u
		if v.LimitForm.Errs == nil {
			if v.LimitForm.In, err = s.Limits.Input(c.UserContext(), v.Tenant.ID); err != nil {
				return err
			}
		}
	}
	p := s.page(c, v.Tenant.Name)
	// The tenant's own times read in its time zone, as its users see them.
	if loc, err := time.LoadLocation(v.Tenant.Timezone); err == nil {
		p.Location = loc
	}
	return s.render(c, views.TenantPage(p, v))
}

// tenantParam loads the tenant an operator page names.
func (s *Server) tenantParam(c *fiber.Ctx) (*app.Tenant, error) {
	id, err := idParam(c, "id")
	if err != nil {
		return nil, err
	}
	return s.Tenants.Get(c.UserContext(), userOf(c), id)
}

// handleTenantShow shows one tenant to an operator.
func (s *Server) handleTenantShow(c *fiber.Ctx) error {
	t, err := s.tenantParam(c)
	if err != nil {
		return err
	}
	return s.tenantDetail(c, views.TenantDetail{Tenant: t, Retention: retentionField(t)})
}

func retentionField(t *app.Tenant) string {
	if t.RetentionDays == nil {
		return ""
	}
	return strconv.Itoa(*t.RetentionDays)
}

// handleTenantUpdate changes a tenant's plan and retention.
func (s *Server) handleTenantUpdate(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	plan, retention := c.FormValue("plan"), c.FormValue("retention")
	t, changes, err := s.Tenants.ChangePlan(c.UserContext(), userOf(c), id, plan, retention)
	if err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			t, err := s.Tenants.Get(c.UserContext(), userOf(c), id)
			if err != nil {
				return err
			}
			return s.tenantDetail(c, views.TenantDetail{Tenant: t, Plan: plan, Retention: retention, Errs: errs})
		})
	}
	if len(changes) == 0 {
		s.flash(c, "info", "Nothing changed.")
	} else {
		s.flash(c, "success", "Plan and retention of "+t.Name+" saved.")
	}
	return c.Redirect("/tenants/"+t.ID.String(), fiber.StatusSeeOther)
}

// handleTenantSuspend suspends a tenant; a reason is required.
func (s *Server) handleTenantSuspend(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	reason := c.FormValue("reason")
	t, err := s.Tenants.Suspend(c.UserContext(), userOf(c), id, reason)
	if err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			t, err := s.Tenants.Get(c.UserContext(), userOf(c), id)
			if err != nil {
				return err
			}
			return s.tenantDetail(c, views.TenantDetail{Tenant: t, Retention: retentionField(t), Reason: reason, Errs: errs})
		})
	}
	s.flash(c, "success", t.Name+" is suspended: its API keys are refused from now on.")
	return c.Redirect("/tenants/"+t.ID.String(), fiber.StatusSeeOther)
}

// handleTenantReactivate lifts a tenant's suspension.
func (s *Server) handleTenantReactivate(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	t, err := s.Tenants.Reactivate(c.UserContext(), userOf(c), id)
	if err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			t, err := s.Tenants.Get(c.UserContext(), userOf(c), id)
			if err != nil {
				return err
			}
			return s.tenantDetail(c, views.TenantDetail{Tenant: t, Retention: retentionField(t), Errs: errs})
		})
	}
	s.flash(c, "success", t.Name+" is active again: its API keys work.")
	return c.Redirect("/tenants/"+t.ID.String(), fiber.StatusSeeOther)
}

// handleLimitsOverview lists every tenant's limits and day's usage.
func (s *Server) handleLimitsOverview(c *fiber.Ctx) error {
	if s.Limits == nil {
		return app.Errorf(app.ENOTFOUND, "Limits are not set up on this Herald.")
	}
	rows, err := s.Limits.Overview(c.UserContext())
	if err != nil {
		return err
	}
	return s.render(c, views.LimitsOverviewPage(s.page(c, "Limits"), rows))
}

// handleTenantLimits sets a tenant's limits at intake (an empty field
// restores the default); the change is audited.
func (s *Server) handleTenantLimits(c *fiber.Ctx) error {
	t, err := s.tenantParam(c)
	if err != nil {
		return err
	}
	in := app.LimitInput{
		IntakePerMinute: c.FormValue("intake_per_minute"), DailyEmail: c.FormValue("daily_email"),
		DailySMS: c.FormValue("daily_sms"), DailyWhatsApp: c.FormValue("daily_whatsapp"), DailyWebhook: c.FormValue("daily_webhook"),
		SMSCountries: c.FormValue("sms_countries"), SMSInternationalDaily: c.FormValue("sms_international_daily"),
		SMSRecipientDaily: c.FormValue("sms_recipient_daily"), MaxSMSParts: c.FormValue("max_sms_parts"),
		BudgetEmail: c.FormValue("budget_email"), BudgetSMS: c.FormValue("budget_sms"), BudgetWhatsApp: c.FormValue("budget_whatsapp"),
	}
	if err := s.Limits.Set(c.UserContext(), userOf(c).Actor(), t.ID, in); err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			return s.tenantDetail(c, views.TenantDetail{Tenant: t, Retention: retentionField(t), LimitForm: views.LimitForm{In: in, Errs: errs}})
		})
	}
	s.flash(c, "success", "Limits of "+t.Name+" saved.")
	return c.Redirect("/tenants/"+t.ID.String()+"#limits", fiber.StatusSeeOther)
}
