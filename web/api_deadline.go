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
// {"trigger_event", "channel", "stage", "minutes" | "before_departure_minutes"}
// (exactly one of the two; 0 removes the stage's rule; stage DELIVERED,
// READ or ACKNOWLEDGED, DELIVERED when absent; only an ACKNOWLEDGED one
// counts back from the departure), and answers the list.
func (s *Server) handleAPIDeadlineSet(c *fiber.Ctx) error {
	var body struct {
		TriggerEvent           string      `json:"trigger_event"`
		Channel                app.Channel `json:"channel"`
		Stage                  string      `json:"stage"`
		Minutes                *int        `json:"minutes"`
		BeforeDepartureMinutes *int        `json:"before_departure_minutes"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if (body.Minutes == nil) == (body.BeforeDepartureMinutes == nil) {
		return app.FieldErrorf("minutes", "Give exactly one of minutes (after the send) and before_departure_minutes (before the departure).")
	}
	d := &app.DeliveryDeadline{TenantID: apiKeyOf(c).TenantID, TriggerEvent: body.TriggerEvent, Channel: body.Channel, Stage: body.Stage}
	if body.Minutes != nil {
		d.Minutes = *body.Minutes
	} else {
		d.BeforeDepartureMinutes = *body.BeforeDepartureMinutes
	}
	if err := s.Deadlines.SetRule(c.UserContext(), apiActor(c), d); err != nil {
		return err
	}
	return s.handleAPIDeadlineList(c)
}
