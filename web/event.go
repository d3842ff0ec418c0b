package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/views"
)

// handleEventShow shows one event with its route decisions and messages.
func (s *Server) handleEventShow(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	v, err := s.MessageConsole.Event(c.UserContext(), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	return s.render(c, views.EventPage(s.page(c, v.Event.TriggerEvent), views.EventPageView{
		Base: tenantPath(c, ""), View: v, CanTemplates: userOf(c).Can(app.PermTemplates),
	}))
}
