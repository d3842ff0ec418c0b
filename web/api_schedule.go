package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// scheduledJSON is a notification not sent yet, as the API lists it: the
// notification with the number of people it goes to, and whether its time
// has passed (it waits for the scheduler, or for approval).
type scheduledJSON struct {
	*app.Event
	RecipientCount int  `json:"recipient_count"`
	Due            bool `json:"due"`
}

func scheduledOut(e *console.ScheduledEvent) scheduledJSON {
	return scheduledJSON{Event: &e.Event, RecipientCount: e.RecipientCount, Due: e.Due}
}

// scheduleFieldNames maps the schedule list's filter names to the API's.
func scheduleFieldNames(field string) string {
	switch field {
	case "event":
		return "trigger_event"
	case "entity":
		return "entity_id"
	}
	return field
}

// handleAPIScheduledList lists the tenant's notifications that are not sent
// yet and can still be rescheduled or cancelled (PATCH and DELETE
// /api/v1/notifications/{id}): SCHEDULED ones and those AWAITING_APPROVAL,
// soonest first, those without a time last. ?trigger_event= and
// ?entity_id= (a booking, trip or invoice) filter; ?limit= and ?offset=
// page.
func (s *Server) handleAPIScheduledList(c *fiber.Ctx) error {
	req, err := apiPageOf(c)
	if err != nil {
		return err
	}
	f := console.ScheduleFilter{TriggerEvent: c.Query("trigger_event"), EntityID: c.Query("entity_id")}
	rows, more, err := s.Schedules.Upcoming(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, f, req)
	if err != nil {
		return apiFields(err, scheduleFieldNames)
	}
	out := make([]scheduledJSON, len(rows))
	for i, e := range rows {
		out[i] = scheduledOut(e)
	}
	return c.JSON(fiber.Map{"scheduled_notifications": out, "page": pageInfo(req, len(rows), more)})
}
