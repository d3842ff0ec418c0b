package web

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/views"
)

// handleInbox lists the tenant's conversations passengers wrote in, or a
// trip's (?trip=), unanswered first; ?status= picks SNOOZED, RESOLVED or
// ALL instead of every one not resolved.
func (s *Server) handleInbox(c *fiber.Ctx) error {
	f := app.InboxFilter{Status: c.Query("status"), TripID: strings.TrimSpace(c.Query("trip"))}
	if len(f.TripID) > maxEntityID {
		return fiber.ErrNotFound
	}
	items, err := s.Inbox.List(c.UserContext(), userOf(c), tenantOf(c).ID, f)
	if app.ErrorCode(err) == app.EINVALID {
		// An unknown status in a hand-made link shows the default list.
		f.Status = ""
		items, err = s.Inbox.List(c.UserContext(), userOf(c), tenantOf(c).ID, f)
	}
	if err != nil {
		return err
	}
	f.Status = strings.ToUpper(f.Status)
	title := "Inbox"
	if f.TripID != "" {
		title = "Inbox · trip " + f.TripID
	}
	return s.render(c, views.InboxPage(s.page(c, title), views.InboxView{Items: items, Filter: f, TripID: f.TripID, Base: tenantPath(c, "")}))
}

// handleConversation shows one conversation with its thread and the forms
// that answer it.
func (s *Server) handleConversation(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	d, err := s.Inbox.Get(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	title := "Conversation"
	if d.Contact.Name != "" {
		title = "Conversation with " + d.Contact.Name
	}
	return s.render(c, views.ConversationPage(s.page(c, title), views.ConversationView{
		Detail: d, Base: tenantPath(c, ""), Key: uuid.NewString(), CanReply: userOf(c).Can(app.PermReply),
	}))
}

// handleConversationReply sends an answer written in the inbox or the
// booking panel (back= returns there): the form's key makes a double
// click send once.
func (s *Server) handleConversationReply(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	in := app.ReplyInput{Channel: c.FormValue("channel"), Body: c.FormValue("body"), Key: c.FormValue("key")}
	if raw := c.FormValue("template_id"); raw != "" {
		t, err := uuid.Parse(raw)
		if err != nil {
			return app.Invalid("unknown_template", "template_id", "Choose one of the templates offered.")
		}
		in.TemplateID = &t
	}
	back := conversationBack(c, id)
	m, err := s.Inbox.Reply(c.UserContext(), userOf(c), tenantOf(c).ID, id, in)
	if code := app.ErrorCode(err); code == app.ECONFLICT || code == app.EINVALID {
		s.flash(c, "error", app.ErrorMessage(err))
		return c.Redirect(tenantPath(c, back), fiber.StatusSeeOther)
	}
	if err != nil {
		return err
	}
	s.flash(c, "success", "Your answer is on its way by "+string(m.Channel)+".")
	return c.Redirect(tenantPath(c, back), fiber.StatusSeeOther)
}

// conversationBack is where a conversation form returns: the booking panel
// it came from (back=/bookings/...), else the conversation.
func conversationBack(c *fiber.Ctx, id uuid.UUID) string {
	if b := c.FormValue("back"); strings.HasPrefix(b, "/bookings/") && !strings.Contains(b, "//") {
		return b
	}
	return "/inbox/" + id.String()
}

// handleConversationStatus snoozes, resolves or reopens a conversation.
func (s *Server) handleConversationStatus(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	conv, err := s.Inbox.SetStatus(c.UserContext(), userOf(c), tenantOf(c).ID, id, c.FormValue("status"))
	if code := app.ErrorCode(err); code == app.ECONFLICT || code == app.EINVALID {
		s.flash(c, "error", app.ErrorMessage(err))
		return c.Redirect(tenantPath(c, "/inbox/"+id.String()), fiber.StatusSeeOther)
	}
	if err != nil {
		return err
	}
	s.flash(c, "success", "The conversation is "+strings.ToLower(conv.Status)+".")
	return c.Redirect(tenantPath(c, "/inbox/"+id.String()), fiber.StatusSeeOther)
}

// handleConversationAssign gives a conversation to one of the tenant's
// users, or to nobody.
func (s *Server) handleConversationAssign(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var user *uuid.UUID
	if raw := c.FormValue("user_id"); raw != "" {
		u, err := uuid.Parse(raw)
		if err != nil {
			s.flash(c, "error", "Choose one of this tenant's active users.")
			return c.Redirect(tenantPath(c, "/inbox/"+id.String()), fiber.StatusSeeOther)
		}
		user = &u
	}
	_, err = s.Inbox.Assign(c.UserContext(), userOf(c), tenantOf(c).ID, id, user)
	if code := app.ErrorCode(err); code == app.ECONFLICT || code == app.EINVALID {
		s.flash(c, "error", app.ErrorMessage(err))
		return c.Redirect(tenantPath(c, "/inbox/"+id.String()), fiber.StatusSeeOther)
	}
	if err != nil {
		return err
	}
	s.flash(c, "success", "Assignment saved.")
	return c.Redirect(tenantPath(c, "/inbox/"+id.String()), fiber.StatusSeeOther)
}
