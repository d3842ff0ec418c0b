package web

import (
	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/views"
)

// render writes a templ component as the HTML response.
func (s *Server) render(c *fiber.Ctx, comp templ.Component) error {
	c.Type("html", "utf-8")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return comp.Render(c.UserContext(), c.Response().BodyWriter())
}

// page returns the layout properties shared by every console page.
func (s *Server) page(c *fiber.Ctx, title string) views.Page {
	return views.Page{Title: title, Version: s.Version}
}
