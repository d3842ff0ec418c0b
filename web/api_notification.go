package web

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// pathID parses the :id parameter. A malformed id cannot name anything of
// the tenant's, so it is a 404 like another tenant's id.
func pathID(c *fiber.Ctx) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Params("id"))
	if err != nil {
		return uuid.Nil, app.Errorf(app.ENOTFOUND, "Not found.")
	}
	return id, nil
}

// decodeJSON reads a small JSON body into v, refusing unknown fields.
func decodeJSON(c *fiber.Ctx, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(c.Body())))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return app.DecodeJSONError(err)
	}
	return nil
}

// handleAPINotificationCreate accepts a notification request: 202 with the
// new event, or 200 with the original one for a repeated event_id.
func (s *Server) handleAPINotificationCreate(c *fiber.Ctx) error {
	res, err := s.Intake.Submit(c.UserContext(), apiKeyOf(c), c.Body())
	if err != nil {
		return err
	}
	status := fiber.StatusAccepted
	if res.Duplicate {
		status = fiber.StatusOK
		c.Locals(localDuplicate, true)
	}
	c.Location("/api/v1/notifications/" + res.ID.String())
	return c.Status(status).JSON(res)
}

// handleAPINotificationGet returns an event with its messages.
func (s *Server) handleAPINotificationGet(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	d, err := s.Intake.Get(c.UserContext(), apiKeyOf(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.JSON(d)
}

// handleAPINotificationFind finds an event by the caller's own id:
// GET /api/v1/notifications?event_id=..., answered like GET by Herald's id.
func (s *Server) handleAPINotificationFind(c *fiber.Ctx) error {
	sourceID := strings.TrimSpace(c.Query("event_id"))
	if sourceID == "" {
		return app.Invalid("missing_event_id", "event_id", "Name the notification by ?event_id=, the id your system submitted it with.")
	}
	d, err := s.Intake.GetBySourceID(c.UserContext(), apiKeyOf(c).TenantID, sourceID)
	if err != nil {
		return err
	}
	return c.JSON(d)
}

// handleAPINotificationReschedule moves a scheduled event: {"send_at": ...}.
func (s *Server) handleAPINotificationReschedule(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var body struct {
		SendAt *time.Time `json:"send_at"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if body.SendAt == nil {
		return app.Invalid("missing_send_at", "send_at", "send_at is required: the new time, such as 2027-04-12T07:15:00+02:00.")
	}
	e, err := s.Intake.Reschedule(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, id, *body.SendAt)
	if err != nil {
		return err
	}
	return c.JSON(e)
}

// handleAPINotificationCancel cancels an event that has not gone out.
func (s *Server) handleAPINotificationCancel(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	e, err := s.Intake.Cancel(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.JSON(e)
}

// handleAPINotificationApprove releases an event awaiting approval.
func (s *Server) handleAPINotificationApprove(c *fiber.Ctx) error {
	return s.decide(c, true)
}

// handleAPINotificationReject rejects an event awaiting approval: {"reason": ...}.
func (s *Server) handleAPINotificationReject(c *fiber.Ctx) error {
	return s.decide(c, false)
}

func (s *Server) decide(c *fiber.Ctx, approve bool) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if len(c.Body()) > 0 {
		if err := decodeJSON(c, &body); err != nil {
			return err
		}
	}
	e, err := s.Intake.Decide(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, id, approve, body.Reason)
	if err != nil {
		return err
	}
	return c.JSON(e)
}
