package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
)

// handleAPIConfirmWindowList lists the tenant's confirmation windows, with
// the defaults that apply to an event without one.
func (s *Server) handleAPIConfirmWindowList(c *fiber.Ctx) error {
	ws, err := s.ConfirmWindows.List(c.UserContext(), apiKeyOf(c).TenantID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{
		"confirmation_windows":   ws,
		"default_seconds":        int(app.DefaultConfirmWindow.Seconds()),
		"default_urgent_seconds": int(app.DefaultUrgentConfirmWindow.Seconds()),
	})
}

// handleAPIConfirmWindowSet sets one confirmation window,
// {"trigger_event", "seconds"}, or removes it, {"trigger_event",
// "remove": true}, and answers the list. Seconds 0 is a window (decide at
// once), so removing takes its own word rather than a zero.
func (s *Server) handleAPIConfirmWindowSet(c *fiber.Ctx) error {
	var body struct {
		TriggerEvent string `json:"trigger_event"`
		Seconds      *int   `json:"seconds"`
		Remove       bool   `json:"remove"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	ctx, actor, tenantID := c.UserContext(), apiActor(c), apiKeyOf(c).TenantID
	var err error
	switch {
	case body.Remove && body.Seconds != nil:
		err = app.FieldErrorf("seconds", "Send seconds to set the window, or \"remove\": true to remove it, not both.")
	case body.Remove:
		err = s.ConfirmWindows.Remove(ctx, actor, tenantID, body.TriggerEvent)
	case body.Seconds == nil:
		err = app.FieldErrorf("seconds", "seconds is required: 0 (decide at once) to %d; \"remove\": true removes the window instead.", app.MaxConfirmWindowSeconds)
	default:
		err = s.ConfirmWindows.Set(ctx, actor, tenantID, body.TriggerEvent, *body.Seconds)
	}
	if err != nil {
		return err
	}
	return s.handleAPIConfirmWindowList(c)
}
