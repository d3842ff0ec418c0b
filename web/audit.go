package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// auditFilterOf reads the audit filter of a request.
func auditFilterOf(c *fiber.Ctx) console.AuditFilter {
	return console.AuditFilter{Actor: c.Query("actor"), Action: c.Query("action"), From: c.Query("from"), To: c.Query("to"), Tenant: c.Query("tenant")}
}

// handleTenantAudit lists the tenant's audit log.
func (s *Server) handleTenantAudit(c *fiber.Ctx) error {
	u, t := userOf(c), tenantOf(c)
	ctx := c.UserContext()
	n, req := pageOf(c)
	f := auditFilterOf(c)
	f.Tenant = ""
	rows, more, err := s.AuditLog.TenantEntries(ctx, u, t.ID, f, tenantLocation(c), req)
	props := views.AuditProps{Rows: rows, Filter: f, Action: tenantPath(c, "/audit")}
	if app.ErrorCode(err) == app.EINVALID {
		props.Errors = views.FormErrorsOf(err)
		c.Status(fiber.StatusUnprocessableEntity)
	} else if err != nil {
		return err
	}
	if props.Actions, err = s.AuditLog.Actions(ctx, &t.ID); err != nil {
		return err
	}
	props.Pager = pagerOf(c, n, len(rows), more)
	return s.render(c, views.AuditPage(s.page(c, "Audit log"), props))
}

// handlePlatformAudit lists every chain of the audit log for operators and,
// when asked (?verify=1), verifies the hash chains: that reads the whole
// log, so it is not done on every page load.
func (s *Server) handlePlatformAudit(c *fiber.Ctx) error {
	u := userOf(c)
	ctx := c.UserContext()
	n, req := pageOf(c)
	f := auditFilterOf(c)
	rows, more, err := s.AuditLog.PlatformEntries(ctx, u, f, req)
	props := views.AuditProps{Rows: rows, Filter: f, Action: "/audit", Platform: true}
	if app.ErrorCode(err) == app.EINVALID {
		props.Errors = views.FormErrorsOf(err)
		c.Status(fiber.StatusUnprocessableEntity)
	} else if err != nil {
		return err
	}
	if props.Actions, err = s.AuditLog.Actions(ctx, nil); err != nil {
		return err
	}
	if props.Tenants, err = s.AuditLog.Tenants(ctx, u); err != nil {
		return err
	}
	if c.Query("verify") != "" {
		if props.Chain, err = s.AuditLog.Verify(ctx, u); err != nil {
			return err
		}
		props.TenantSlugs = map[string]string{}
		for _, t := range props.Tenants {
			props.TenantSlugs[t.ID.String()] = t.Slug
		}
	}
	props.Pager = pagerOf(c, n, len(rows), more)
	return s.render(c, views.AuditPage(s.page(c, "Audit log"), props))
}
