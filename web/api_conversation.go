package web

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
)

// handleAPIConversationList lists the conversations passengers wrote in,
// unanswered first: ?status= (OPEN, SNOOZED, RESOLVED, ALL; default every
// one not resolved), ?trip_id=, ?booking_id=, ?unanswered=true.
func (s *Server) handleAPIConversationList(c *fiber.Ctx) error {
	f := app.InboxFilter{Status: c.Query("status"), TripID: c.Query("trip_id"), BookingID: c.Query("booking_id")}
	switch strings.ToLower(c.Query("unanswered")) {
	case "", "false":
	case "true":
		f.Unanswered = true
	default:
		return app.Invalid("invalid_unanswered", "unanswered", "unanswered is true or false.")
	}
	items, err := s.Inbox.List(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, f)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"conversations": items})
}

// handleAPIConversationGet returns a conversation with both sides of its
// thread and how it can be answered now.
func (s *Server) handleAPIConversationGet(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	d, err := s.Inbox.Get(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.JSON(d)
}

// handleAPIConversationReply answers a conversation: {"body": "..."} or
// {"template_id": "..."}, optionally "channel", and an idempotency key
// (the body's idempotency_key or the Idempotency-Key header).
func (s *Server) handleAPIConversationReply(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var in app.ReplyInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	if in.Key == "" {
		in.Key = c.Get("Idempotency-Key")
	}
	m, err := s.Inbox.Reply(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, id, in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"message": m})
}

// handleAPIConversationStatus snoozes, resolves or reopens a conversation:
// {"status": "RESOLVED"}.
func (s *Server) handleAPIConversationStatus(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var body struct {
		Status string `json:"status"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	conv, err := s.Inbox.SetStatus(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, id, body.Status)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"conversation": conv})
}
