package web

import (
	"net/url"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/views"
)

// handleTripPage shows a trip's bookings and passengers, and the reach of
// a notification to it (?event=, else the newest sent): who was reached,
// and whom to call.
func (s *Server) handleTripPage(c *fiber.Ctx) error {
	id, err := url.PathUnescape(c.Params("id"))
	if err != nil || id == "" || len(id) > maxEntityID {
		return fiber.ErrNotFound
	}
	var eventID *uuid.UUID
	if raw := c.Query("event"); raw != "" {
		e, err := uuid.Parse(raw)
		if err != nil {
			return fiber.ErrNotFound
		}
		eventID = &e
	}
	trip, err := s.Trips.Page(c.UserContext(), tenantOf(c).ID, id, eventID)
	if err != nil {
		return err
	}
	return s.render(c, views.TripPage(s.page(c, "Trip "+id), views.TripView{
		Trip: trip, Base: tenantPath(c, ""), Path: tenantPath(c, "/trips/"+url.PathEscape(id)),
	}))
}
