package web

import (
	"bytes"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// handleAPIMessageList lists the messages about one booking, trip or
// invoice, newest first: ?booking_id=, ?trip_id= or ?invoice_id=; ?limit=
// and ?cursor= (the previous page's next_cursor) page by keyset.
func (s *Server) handleAPIMessageList(c *fiber.Ctx) error {
	for _, kind := range []string{app.EntityBooking, app.EntityTrip, app.EntityInvoice} {
		if id := c.Query(kind + "_id"); id != "" {
			req, err := apiCursorPageOf(c)
			if err != nil {
				return err
			}
			f := console.MessageFilter{EntityType: kind, EntityID: id}
			ms, more, err := s.MessageConsole.List(c.UserContext(), apiKeyOf(c).TenantID, f, req)
			if err != nil {
				return err
			}
			return c.JSON(fiber.Map{"messages": ms, "page": messagePageInfo(ms, more)})
		}
	}
	return app.Invalid("missing_filter", "booking_id", "Name a booking_id, trip_id or invoice_id.")
}

// handleAPIMessageGet returns a message with its timeline.
func (s *Server) handleAPIMessageGet(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	d, err := s.Messages.Get(c.UserContext(), apiKeyOf(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.JSON(d)
}

// handleAPIMessageRetry sends a failed message again as a new message,
// as the console's Retry button does: {"force": true} retries past
// app.MaxRetries, {"anyway": true} to an address the provider refused.
// The body is optional.
func (s *Server) handleAPIMessageRetry(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var opts app.RetryOptions
	if len(bytes.TrimSpace(c.Body())) > 0 {
		if err := decodeJSON(c, &opts); err != nil {
			return err
		}
	}
	m, err := s.MessageConsole.Retry(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, id, opts)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"message": m, "retry_count": m.RetryCount})
}

// handleAPIBookingResend resends a booking's latest notification on a
// channel: {"channel": "EMAIL", "template_id": "..."}.
func (s *Server) handleAPIBookingResend(c *fiber.Ctx) error {
	var body struct {
		Channel    string     `json:"channel"`
		TemplateID *uuid.UUID `json:"template_id"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	ms, err := s.Messages.Resend(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, app.ResendInput{
		EntityType: app.EntityBooking, EntityID: c.Params("id"), Channel: body.Channel, TemplateID: body.TemplateID,
	})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"messages": ms})
}
