package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
)

// handleAPIDeadlineList lists the tenant's delivery deadlines: messages of
// an event ("*": every event) on a channel that are not DELIVERED within
// the minutes continue their fallback chain.
func (s *Server) handleAPIDeadlineList(c *fiber.Ctx) error {
	ds, err := s.Deadlines.List(c.UserContext(), apiKeyOf(c).TenantID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"delivery_deadlines": ds})
}

// handleAPIDeadlineSet sets one delivery deadline,
// {"trigger_event", "channel", "stage", "minutes"} (0 removes it; stage
// DELIVERED, READ or ACKNOWLEDGED, DELIVERED when absent), and answers the
// list.
func (s *Server) handleAPIDeadlineSet(c *fiber.Ctx) error {
	var body struct {
		TriggerEvent string      `json:"trigger_event"`
		Channel      app.Channel `json:"channel"`
		Stage        string      `json:"stage"`
		Minutes      int         `json:"minutes"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if err := s.Deadlines.SetStage(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, body.TriggerEvent, body.Channel, body.Stage, body.Minutes); err != nil {
		return err
	}
	return s.handleAPIDeadlineList(c)
}
