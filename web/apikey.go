package web

import (
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/views"
)

// apiKeyList renders the tenant's API keys with the create form; scopes
// are the form's choice (nil: the defaults, ticked for a new key).
func (s *Server) apiKeyList(c *fiber.Ctx, name string, scopes []string, errs views.FormErrors) error {
	page, req := pageOf(c)
	rows, more, err := s.APIKeys.List(c.UserContext(), userOf(c), tenantOf(c).ID, req)
	if err != nil {
		return err
	}
	return s.render(c, views.APIKeysPage(s.page(c, "API keys"), views.APIKeyList{
		Rows: rows, Pager: pagerOf(c, page, len(rows), more), Name: name, Errs: errs,
		Scopes: scopeChoices(scopes),
	}))
}

// handleAPIKeys lists the tenant's API keys, newest first.
func (s *Server) handleAPIKeys(c *fiber.Ctx) error {
	return s.apiKeyList(c, "", app.DefaultScopes, nil)
}

// scopeChoices is the create form's scope checkboxes, those in chosen
// ticked.
func scopeChoices(chosen []string) []views.ScopeChoice {
	out := make([]views.ScopeChoice, len(app.Scopes))
	for i, sc := range app.Scopes {
		out[i] = views.ScopeChoice{Name: sc, Description: app.ScopeDescriptions[sc], Checked: slices.Contains(chosen, sc)}
	}
	return out
}

// formValues returns every value the submitted form has for key, as
// checkboxes of one name send them.
func formValues(c *fiber.Ctx, key string) []string {
	var out []string
	for _, v := range c.Request().PostArgs().PeekMulti(key) {
		out = append(out, string(v))
	}
	return out
}

// handleAPIKeyCreate makes a key and shows its secret in this answer only:
// no redirect, no flash cookie, not cacheable.
func (s *Server) handleAPIKeyCreate(c *fiber.Ctx) error {
	name, scopes := c.FormValue("name"), formValues(c, "scopes")
	k, secret, err := s.APIKeys.CreateAs(c.UserContext(), userOf(c), tenantOf(c).ID, name, scopes)
	if err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			return s.apiKeyList(c, name, scopes, errs)
		})
	}
	c.Set("Pragma", "no-cache")
	return s.render(c, views.APIKeyCreatedPage(s.page(c, "API key created"), views.APIKeyCreated{
		Name: k.Name, Prefix: k.Prefix, Secret: secret, Scopes: k.Scopes,
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
