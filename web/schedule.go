package web

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// previewRecipients is how many recipients the approvals list renders per
// event; an event's own page renders up to maxPreviewRecipients.
const (
	previewRecipients    = 3
	maxPreviewRecipients = 100
	// approvalsPerPage is smaller than other lists: each event is a card
	// with its rendered messages.
	approvalsPerPage = 10
)

// eventParam reads the :id of an event route; a malformed id is as unknown
// as a missing one.
func eventParam(c *fiber.Ctx) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Params("id"))
	if err != nil {
		return uuid.Nil, fiber.ErrNotFound
	}
	return id, nil
}

// tenantLocation is the request's tenant timezone (UTC if it is unknown).
func tenantLocation(c *fiber.Ctx) *time.Location {
	if loc, err := time.LoadLocation(tenantOf(c).Timezone); err == nil {
		return loc
	}
	return time.UTC
}

func registryNames() []string {
	evs := app.Events()
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Name
	}
	return out
}

// handleScheduledList lists the tenant's scheduled notifications.
func (s *Server) handleScheduledList(c *fiber.Ctx) error {
	u, t := userOf(c), tenantOf(c)
	n, req := pageOf(c)
	f := console.ScheduleFilter{TriggerEvent: c.Query("event"), EntityID: c.Query("entity")}
	rows, more, err := s.Schedules.Upcoming(c.UserContext(), u, t.ID, f, req)
	props := views.ScheduledProps{
		Rows: rows, Filter: f, Events: registryNames(), CanManage: u.Can(app.PermManageSchedules),
		Base: tenantPath(c, ""), Min: time.Now().In(tenantLocation(c)).Format(console.DateTimeLocalLayout),
	}
	if app.ErrorCode(err) == app.EINVALID {
		props.Errors = views.FormErrorsOf(err)
		c.Status(fiber.StatusUnprocessableEntity)
	} else if err != nil {
		return err
	}
	props.Pager = pagerOf(c, n, len(rows), more)
	return s.render(c, views.ScheduledPage(s.page(c, "Scheduled"), props))
}

// scheduledEventPage renders one notification with its reschedule form;
// after a refused reschedule (errs set) the field keeps what was typed.
func (s *Server) scheduledEventPage(c *fiber.Ctx, e *app.Event, value string, errs views.FormErrors) error {
	rs, err := e.DecodeRecipients()
	if err != nil {
		return err
	}
	p := s.page(c, e.TriggerEvent)
	if errs == nil {
		value = views.LocalInput(p, e)
	}
	return s.render(c, views.ScheduledEventPage(p, views.ScheduledEventProps{
		Event: e, Recipients: rs, Value: value, Errors: errs, CanManage: userOf(c).Can(app.PermManageSchedules),
		Base: tenantPath(c, ""), Min: time.Now().In(tenantLocation(c)).Format(console.DateTimeLocalLayout),
	}))
}

// handleScheduledShow shows one notification.
func (s *Server) handleScheduledShow(c *fiber.Ctx) error {
	id, err := eventParam(c)
	if err != nil {
		return err
	}
	e, err := s.Schedules.Event(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	return s.scheduledEventPage(c, e, "", nil)
}

// handleScheduledReschedule moves a notification to a new time; a refused
// time comes back on the notification's page under the field.
func (s *Server) handleScheduledReschedule(c *fiber.Ctx) error {
	id, err := eventParam(c)
	if err != nil {
		return err
	}
	u, t := userOf(c), tenantOf(c)
	ctx := c.UserContext()
	e, err := s.Schedules.Event(ctx, u, t.ID, id)
	if err != nil {
		return err
	}
	value := c.FormValue("send_at")
	updated, err := s.Schedules.Reschedule(ctx, u, t.ID, id, value, tenantLocation(c))
	switch app.ErrorCode(err) {
	case "":
	case app.EINVALID, app.ECONFLICT:
		c.Status(statusOf[app.ErrorCode(err)])
		return s.scheduledEventPage(c, e, value, views.FormErrorsOf(err))
	default:
		return err
	}
	at := views.FormatTime(views.Page{Location: tenantLocation(c)}, *updated.SendAt)
	s.flash(c, "success", e.TriggerEvent+" now goes out at "+at+" (version "+strconv.Itoa(updated.Version)+").")
	return c.Redirect(tenantPath(c, "/scheduled"), fiber.StatusSeeOther)
}

// handleScheduledCancel cancels a notification before it goes out.
func (s *Server) handleScheduledCancel(c *fiber.Ctx) error {
	id, err := eventParam(c)
	if err != nil {
		return err
	}
	u, t := userOf(c), tenantOf(c)
	e, err := s.Schedules.Cancel(c.UserContext(), u, t.ID, id)
	if app.ErrorCode(err) == app.ECONFLICT {
		s.flash(c, "error", app.ErrorMessage(err))
		return c.Redirect(tenantPath(c, "/scheduled"), fiber.StatusSeeOther)
	} else if err != nil {
		return err
	}
	s.flash(c, "success", e.TriggerEvent+" ("+e.SourceEventID+") is cancelled; nothing will be sent.")
	return c.Redirect(tenantPath(c, "/scheduled"), fiber.StatusSeeOther)
}

// handleApprovalList lists the events awaiting approval with what they
// would send.
func (s *Server) handleApprovalList(c *fiber.Ctx) error {
	u, t := userOf(c), tenantOf(c)
	n, _ := pageOf(c)
	req := console.PageRequest{Limit: approvalsPerPage + 1, Offset: (n - 1) * approvalsPerPage}
	items, more, err := s.Schedules.Pending(c.UserContext(), u, t.ID, req, previewRecipients)
	if err != nil {
		return err
	}
	return s.render(c, views.ApprovalsPage(s.page(c, "Approvals"), views.ApprovalsProps{
		Items: items, Pager: pagerOf(c, n, len(items), more), CanDecide: u.Can(app.PermApprove), Base: tenantPath(c, ""),
	}))
}

// approvalPage renders one event with every recipient's messages.
func (s *Server) approvalPage(c *fiber.Ctx, id uuid.UUID, reason string, errs views.FormErrors) error {
	u := userOf(c)
	it, err := s.Schedules.Preview(c.UserContext(), u, tenantOf(c).ID, id, maxPreviewRecipients)
	if err != nil {
		return err
	}
	return s.render(c, views.ApprovalPage(s.page(c, "Approval"), views.ApprovalProps{
		Item: it, Errors: errs, Reason: reason, CanDecide: u.Can(app.PermApprove), Base: tenantPath(c, ""),
	}))
}

// handleApprovalShow shows one event awaiting approval.
func (s *Server) handleApprovalShow(c *fiber.Ctx) error {
	id, err := eventParam(c)
	if err != nil {
		return err
	}
	return s.approvalPage(c, id, "", nil)
}

// handleApprovalApprove approves an event, which routes it.
func (s *Server) handleApprovalApprove(c *fiber.Ctx) error {
	return s.decideApproval(c, true)
}

// handleApprovalReject rejects an event with the reason given.
func (s *Server) handleApprovalReject(c *fiber.Ctx) error {
	return s.decideApproval(c, false)
}

// decideApproval approves or rejects; a refused decision comes back on the event's page.
func (s *Server) decideApproval(c *fiber.Ctx, approve bool) error {
	id, err := eventParam(c)
	if err != nil {
		return err
	}
	u, t := userOf(c), tenantOf(c)
	ctx := c.UserContext()
	// An unknown id is a 404 before any form error.
	if _, err := s.Schedules.Event(ctx, u, t.ID, id); err != nil {
		return err
	}
	reason := c.FormValue("reason")
	e, err := s.Schedules.Decide(ctx, u, t.ID, id, approve, reason)
	switch app.ErrorCode(err) {
	case "":
	case app.EINVALID, app.ECONFLICT:
		c.Status(statusOf[app.ErrorCode(err)])
		return s.approvalPage(c, id, reason, views.FormErrorsOf(err))
	default:
		return err
	}
	msg := e.TriggerEvent + " (" + e.SourceEventID + ") is approved and on its way."
	if e.Status == app.EventScheduled {
		msg = e.TriggerEvent + " (" + e.SourceEventID + ") is approved; it goes out at " + views.FormatTime(views.Page{Location: tenantLocation(c)}, *e.SendAt) + "."
	}
	if !approve {
		msg = e.TriggerEvent + " (" + e.SourceEventID + ") is rejected; nothing will be sent."
	}
	s.flash(c, "success", msg)
	return c.Redirect(tenantPath(c, "/approvals"), fiber.StatusSeeOther)
}
