package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/views"
)

// apiKeyList renders the tenant's API keys with the create form.
func (s *Server) apiKeyList(c *fiber.Ctx, name string, errs views.FormErrors) error {
	page, req := pageOf(c)
	rows, more, err := s.APIKeys.List(c.UserContext(), userOf(c), tenantOf(c).ID, req)
	if err != nil {
		return err
	}
	return s.render(c, views.APIKeysPage(s.page(c, "API keys"), views.APIKeyList{
		Rows: rows, Pager: pagerOf(c, page, len(rows), more), Name: name, Errs: errs,
	}))
}

// handleAPIKeys lists the tenant's API keys, newest first.
func (s *Server) handleAPIKeys(c *fiber.Ctx) error {
	return s.apiKeyList(c, "", nil)
}

// handleAPIKeyCreate makes a key and shows its secret in this answer only:
// no redirect, no flash cookie, not cacheable.
func (s *Server) handleAPIKeyCreate(c *fiber.Ctx) error {
	name := c.FormValue("name")
	k, secret, err := s.APIKeys.CreateAs(c.UserContext(), userOf(c), tenantOf(c).ID, name)
	if err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			return s.apiKeyList(c, name, errs)
		})
	}
	c.Set("Pragma", "no-cache")
	return s.render(c, views.APIKeyCreatedPage(s.page(c, "API key created"), views.APIKeyCreated{
		Name: k.Name, Prefix: k.Prefix, Secret: secret,
	}))
}

// handleAPIKeyRevoke revokes one of the tenant's keys; another tenant's is
// 404.
func (s *Server) handleAPIKeyRevoke(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	k, err := s.APIKeys.Revoke(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	s.flash(c, "success", "API key “"+k.Name+"” is revoked: the API refuses it from now on.")
	return c.Redirect(tenantPath(c, "/api-keys"), fiber.StatusSeeOther)
}
