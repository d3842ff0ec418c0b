package web

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/views"
)

// handleMetaTemplates shows a WhatsApp account's Meta templates and
// Herald's WhatsApp templates with their review status.
func (s *Server) handleMetaTemplates(c *fiber.Ctx) error {
	id, err := accountID(c, "id")
	if err != nil {
		return err
	}
	p, err := s.MetaTemplateConsole.Page(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	return s.render(c, views.MetaTemplatePage(s.page(c, "WhatsApp templates · "+p.Account.Name),
		views.MetaTemplateProps{P: p, TemplatesBase: tenantPath(c, "/templates")}))
}

// handleMetaTemplateSync lists the account's templates from Meta now.
func (s *Server) handleMetaTemplateSync(c *fiber.Ctx) error {
	id, err := accountID(c, "id")
	if err != nil {
		return err
	}
	n, err := s.MetaTemplateConsole.Refresh(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	back := tenantPath(c, "/channels/"+id.String()+"/templates")
	switch {
	case app.ErrorCode(err) == app.EINVALID:
		s.flash(c, "error", app.ErrorMessage(err))
		return c.Redirect(back, fiber.StatusSeeOther)
	case err != nil:
		return err
	}
	s.flash(c, "success", fmt.Sprintf("Meta lists %d templates for this account.", n))
	return c.Redirect(back, fiber.StatusSeeOther)
}

// handleMetaTemplateSubmit submits one of Herald's WhatsApp templates to
// Meta for review.
func (s *Server) handleMetaTemplateSubmit(c *fiber.Ctx) error {
	id, err := accountID(c, "id")
	if err != nil {
		return err
	}
	back := tenantPath(c, "/channels/"+id.String()+"/templates")
	mt, err := s.MetaTemplateConsole.SubmitTemplate(c.UserContext(), userOf(c), tenantOf(c).ID, id, c.FormValue("template_id"))
	switch {
	case app.ErrorCode(err) == app.EINVALID:
		s.flash(c, "error", app.ErrorMessage(err))
		return c.Redirect(back, fiber.StatusSeeOther)
	case err != nil:
		return err
	}
	s.flash(c, "success", fmt.Sprintf("Meta has %s (%s) for review: %s.", mt.Name, mt.Language, mt.Status))
	return c.Redirect(back, fiber.StatusSeeOther)
}
