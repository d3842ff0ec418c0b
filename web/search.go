package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/views"
)

// handleSearch finds passengers by booking reference, name, e-mail address
// or phone number. The form alone until a search is typed; a search that
// cannot run (empty, too long) answers 422 with the reason on the form.
func (s *Server) handleSearch(c *fiber.Ctx) error {
	t := tenantOf(c)
	v := views.SearchView{Base: tenantPath(c, ""), Query: c.Query("q"), Country: app.CountryName(app.TenantCountry(t))}
	if c.Context().QueryArgs().Has("q") {
		res, err := s.ContactConsole.Search(c.UserContext(), userOf(c), t, v.Query)
		switch {
		case app.ErrorCode(err) == app.EINVALID:
			v.Error = app.ErrorMessage(err)
			c.Status(fiber.StatusUnprocessableEntity)
		case err != nil:
			return err
		default:
			v.Result = res
		}
	}
	return s.render(c, views.SearchPage(s.page(c, "Search"), v))
}
