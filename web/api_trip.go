package web

import (
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// apiPassengerReach is one passenger of a trip reach in the API.
type apiPassengerReach struct {
	Name           string     `json:"name"`
	BookingID      string     `json:"booking_id,omitempty"`
	Phone          string     `json:"phone,omitempty"`
	Email          string     `json:"email,omitempty"`
	State          string     `json:"state"`
	Detail         string     `json:"detail,omitempty"`
	Reached        bool       `json:"reached"`
	Read           bool       `json:"read"`
	AcknowledgedAt *time.Time `json:"acknowledged_at,omitempty"`
	AckVia         string     `json:"ack_via,omitempty"`
	CallListed     bool       `json:"call_listed"`
}

func apiPassengers(ps []console.PassengerReach) []apiPassengerReach {
	out := make([]apiPassengerReach, len(ps))
	for i, p := range ps {
		out[i] = apiPassengerReach{Name: p.Name, BookingID: p.BookingID, Phone: p.Phone, Email: p.Email, State: p.State, Detail: p.Detail,
			Reached: p.Reached(), Read: p.State == console.ReachRead, AcknowledgedAt: p.AcknowledgedAt, AckVia: p.AckVia, CallListed: p.CallListed}
	}
	return out
}

// handleAPITripReach answers what the trip page shows of one notification
// to a trip (?event=, else the newest routed): each passenger's reach,
// read and acknowledgement, and the call list with the numbers to call.
func (s *Server) handleAPITripReach(c *fiber.Ctx) error {
	id, err := url.PathUnescape(c.Params("id"))
	if err != nil || id == "" || len(id) > maxEntityID {
		return app.FieldErrorf("id", "A trip id is 1 to %d characters.", maxEntityID)
	}
	var eventID *uuid.UUID
	if raw := c.Query("event"); raw != "" {
		e, err := uuid.Parse(raw)
		if err != nil {
			return app.FieldErrorf("event", "%q is not a notification id.", raw)
		}
		eventID = &e
	}
	trip, err := s.Trips.Page(c.UserContext(), apiKeyOf(c).TenantID, id, eventID)
	if err != nil {
		return err
	}
	r := trip.Reach
	if r == nil {
		return app.Errorf(app.ENOTFOUND, "No notification to trip %s was sent yet.", id)
	}
	return c.JSON(fiber.Map{
		"trip_id": id, "event_id": r.Event.ID, "trigger_event": r.Event.TriggerEvent, "asks_acknowledgement": r.AsksAck,
		"summary": r.Summary(), "passengers": apiPassengers(r.Passengers), "call_list": apiPassengers(r.ToCall()),
		"counts": fiber.Map{"passengers": len(r.Passengers), "notified": r.Notified, "delivered": r.Delivered, "read": r.Read,
			"acknowledged": r.Acknowledged, "failed": r.Failed},
	})
}
