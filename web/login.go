package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/views"
)

// handleLoginPage shows the sign-in form.
func (s *Server) handleLoginPage(c *fiber.Ctx) error {
	return s.render(c, views.LoginPage(s.page(c, "Sign in"), views.LoginForm{Next: c.Query("next")}))
}
