package web

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// maxEntityID is the longest booking, trip or invoice id events may carry.
const maxEntityID = 200

// bookingPath is the stable URL of an entity's communications panel.
func bookingPath(c *fiber.Ctx, entityType, entityID string) string {
	return tenantPath(c, "/bookings/"+entityType+"/"+url.PathEscape(entityID))
}

// handleBookingSearch shows the panel's search form; a filled-in form goes
// to the entity's own page, so every panel has a URL to share.
func (s *Server) handleBookingSearch(c *fiber.Ctx) error {
	form := views.BookingSearch{Type: strings.TrimSpace(c.Query("type")), ID: strings.TrimSpace(c.Query("id"))}
	if form.Type == "" {
		form.Type = app.EntityBooking
	}
	if args := c.Context().QueryArgs(); args.Has("id") || args.Has("type") {
		form.Errs = views.FormErrors{}
		switch {
		case !console.IsEntityType(form.Type):
			form.Errs["type"] = "Choose booking, trip or invoice."
		case form.ID == "":
			form.Errs["id"] = "Type the " + form.Type + " id your booking system uses, such as BK-2027-0412."
		case len(form.ID) > maxEntityID:
			form.Errs["id"] = fmt.Sprintf("Ids are at most %d characters.", maxEntityID)
		default:
			return c.Redirect(bookingPath(c, form.Type, form.ID), fiber.StatusSeeOther)
		}
		c.Status(fiber.StatusUnprocessableEntity)
	}
	return s.render(c, views.BookingSearchPage(s.page(c, "Bookings"), form))
}

// entityOf reads the entity of a panel URL; an unknown type is not found.
func entityOf(c *fiber.Ctx) (string, string, error) {
	kind := c.Params("type")
	id, err := url.PathUnescape(c.Params("id"))
	if !console.IsEntityType(kind) || err != nil || id == "" || len(id) > maxEntityID {
		return "", "", fiber.ErrNotFound
	}
	return kind, id, nil
}

// handleBookingPanel shows everything Herald did for one booking, trip or
// invoice.
func (s *Server) handleBookingPanel(c *fiber.Ctx) error {
	kind, id, err := entityOf(c)
	if err != nil {
		return err
	}
	return s.renderPanel(c, kind, id, views.ResendForm{}, nil)
}

func (s *Server) renderPanel(c *fiber.Ctx, kind, id string, form views.ResendForm, errs views.FormErrors) error {
	n, req := pageOf(c)
	if c.Method() != fiber.MethodGet {
		// A refused resend shows the newest messages again.
		n, req = 1, console.PageRequest{Limit: req.Limit}
	}
	panel, err := s.MessageConsole.Panel(c.UserContext(), tenantOf(c).ID, kind, id, req)
	if err != nil {
		return err
	}
	u := userOf(c)
	title := strings.ToUpper(kind[:1]) + kind[1:] + " " + id
	path := bookingPath(c, kind, id)
	pager := pagerOf(c, n, len(panel.Messages), panel.More)
	if c.Method() != fiber.MethodGet && pager.NextHref != "" {
		pager.NextHref = path + "?page=2#messages"
	}
	return s.render(c, views.BookingPanelPage(s.page(c, title), views.BookingPanelView{
		Panel: panel, Base: tenantPath(c, ""), Path: path,
		CanResend: u.Can(app.PermResend), CanCancel: u.Can(app.PermCancelMessage),
		CanReply: u.Can(app.PermReply), ReplyKey: uuid.NewString(),
		Form: form, Errs: errs, Pager: pager,
	}))
}

// handleBookingResend sends the entity's latest notification again on a
// channel, as new messages; the originals stay as they were.
func (s *Server) handleBookingResend(c *fiber.Ctx) error {
	kind, id, err := entityOf(c)
	if err != nil {
		return err
	}
	form := views.ResendForm{Channel: c.FormValue("channel"), TemplateID: strings.TrimSpace(c.FormValue("template_id"))}
	in := app.ResendInput{EntityType: kind, EntityID: id, Channel: form.Channel}
	if form.TemplateID != "" {
		tid, err := uuid.Parse(form.TemplateID)
		if err != nil {
			c.Status(fiber.StatusUnprocessableEntity)
			return s.renderPanel(c, kind, id, form, views.FormErrors{"template_id": "Choose a template from the list."})
		}
		in.TemplateID = &tid
	}
	ms, err := s.MessageConsole.Resend(c.UserContext(), userOf(c), tenantOf(c).ID, in)
	switch code := app.ErrorCode(err); code {
	case "":
	case app.EINVALID, app.ECONFLICT, app.ENOTFOUND:
		// The panel exists whatever was wrong with the form: show the
		// reason next to the form, keeping what was chosen.
		errs := views.FormErrorsOf(err)
		if msg, ok := errs["id"]; ok {
			errs = views.FormErrors{"": msg}
		}
		c.Status(statusOf[code])
		return s.renderPanel(c, kind, id, form, errs)
	default:
		return err
	}
	s.flash(c, "success", fmt.Sprintf("Resent on %s: %d new message(s) queued. The original messages are unchanged.", strings.ToUpper(form.Channel), len(ms)))
	return c.Redirect(bookingPath(c, kind, id)+"#messages", fiber.StatusSeeOther)
}

// handleMessageList is the messages explorer. It pages by keyset:
// ?cursor= (from the page's own links) names the row the page starts next
// to, so a deep page costs what the first does and rows arriving between
// two pages neither repeat nor vanish.
func (s *Server) handleMessageList(c *fiber.Ctx) error {
	p := s.page(c, "Messages")
	in := console.MessageFilterInput{
		Status: c.Query("status"), Channel: c.Query("channel"), Event: c.Query("event"), EventID: c.Query("event_id"),
		From: c.Query("from"), To: c.Query("to"), Address: c.Query("address"), Stale: c.Query("stale"),
		Reason: c.Query("reason"),
	}
	filter, errs := console.ParseMessageFilter(in, p.Location)
	req := console.PageRequest{Limit: PerPage + 1}
	if v := c.Query("cursor"); v != "" {
		cur, err := console.ParseCursor("cursor", v)
		if err != nil {
			errs["cursor"] = "That page link is not valid any more; showing the newest messages."
		}
		req.Cursor = cur
	}
	ms, more, err := s.MessageConsole.List(c.UserContext(), tenantOf(c).ID, filter, req)
	if err != nil {
		return err
	}
	return s.render(c, views.MessageListPage(p, views.MessageListView{
		Base: tenantPath(c, ""), Messages: ms, Pager: keysetPagerOf(c, req.Cursor, ms, more),
		Input: in, Errs: errs, Filtered: filter != (console.MessageFilter{}),
	}))
}

// keysetPagerOf links the pages next to a keyset page of messages, keeping
// the list's filters: "older" starts after the last row shown, "newer" ends
// before the first. ?page= only numbers the pages for people; the cursor
// says where a page starts.
func keysetPagerOf(c *fiber.Ctx, cur *console.Cursor, ms []*app.Message, more bool) views.Pager {
	return keysetPager(c, cur, ms, more, func(m *app.Message) (time.Time, uuid.UUID) { return m.CreatedAt, m.ID })
}

// keysetPager is keysetPagerOf for any list ordered newest first by the
// (time, id) key returns.
func keysetPager[T any](c *fiber.Ctx, cur *console.Cursor, rows []T, more bool, key func(T) (time.Time, uuid.UUID)) views.Pager {
	n, err := strconv.Atoi(c.Query("page"))
	if err != nil || n < 1 || cur == nil {
		n = 1
	}
	link := func(next *console.Cursor, page int) string {
		q, _ := url.ParseQuery(string(c.Request().URI().QueryString()))
		q.Del("cursor")
		q.Del("page")
		if next != nil {
			q.Set("cursor", next.String())
			q.Set("page", strconv.Itoa(max(page, 1)))
		}
		if enc := q.Encode(); enc != "" {
			return c.Path() + "?" + enc
		}
		return c.Path()
	}
	pg := views.Pager{Page: n, Shown: len(rows)}
	if len(rows) == 0 {
		if cur != nil {
			pg.PrevHref = link(nil, 1)
		}
		return pg
	}
	firstAt, firstID := key(rows[0])
	lastAt, lastID := key(rows[len(rows)-1])
	backward := cur != nil && cur.Before
	if backward && !more {
		// Nothing is newer than this page: it is the first one.
		pg.Page = 1
	}
	if (cur != nil && !backward) || (backward && more) {
		pg.PrevHref = link(console.BeforeRow(firstAt, firstID), pg.Page-1)
	}
	if more || backward {
		pg.NextHref = link(console.After(lastAt, lastID), pg.Page+1)
	}
	return pg
}

// handleMessageShow shows one message with its content and timeline.
func (s *Server) handleMessageShow(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	v, err := s.MessageConsole.Detail(c.UserContext(), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	u := userOf(c)
	allowEmailPreview(c)
	return s.render(c, views.MessagePage(s.page(c, "Message"), views.MessageDetailView{
		View: v, Base: tenantPath(c, ""), CanResend: u.Can(app.PermResend), CanCancel: u.Can(app.PermCancelMessage),
	}))
}

// handleMessageRetry sends a failed message again as a new message and
// opens it.
func (s *Server) handleMessageRetry(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	// The retry button of a message whose address the provider refused
	// carries anyway=1 behind a warning, that of a message retried
	// MaxRetries times force=1; a form without them is refused.
	m, err := s.MessageConsole.Retry(c.UserContext(), userOf(c), tenantOf(c).ID, id,
		app.RetryOptions{Anyway: c.FormValue("anyway") == "1", Force: c.FormValue("force") == "1"})
	if app.ErrorCode(err) == app.ECONFLICT {
		s.flash(c, "error", app.ErrorMessage(err))
		return c.Redirect(tenantPath(c, "/messages/"+id.String()), fiber.StatusSeeOther)
	}
	if err != nil {
		return err
	}
	s.flash(c, "success", "Retry queued as this new message; the failed one stays as it was.")
	return c.Redirect(tenantPath(c, "/messages/"+m.ID.String()), fiber.StatusSeeOther)
}

// handleMessageFileSend sends one file of a message again, alone, as a
// new message on the same channel to the same address.
func (s *Server) handleMessageFileSend(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	fileID, err := uuid.Parse(c.Params("file"))
	if err != nil {
		return app.Errorf(app.ENOTFOUND, "No such file.")
	}
	m, err := s.MessageConsole.ResendFile(c.UserContext(), userOf(c), tenantOf(c).ID, id, fileID)
	if app.ErrorCode(err) == app.ECONFLICT {
		s.flash(c, "error", app.ErrorMessage(err))
		return c.Redirect(tenantPath(c, "/messages/"+id.String()), fiber.StatusSeeOther)
	}
	if err != nil {
		return err
	}
	if m == nil {
		s.flash(c, "success", "This file is on its way already.")
		return c.Redirect(tenantPath(c, "/messages/"+id.String()), fiber.StatusSeeOther)
	}
	s.flash(c, "success", "The file is sent again as this new message, alone.")
	return c.Redirect(tenantPath(c, "/messages/"+m.ID.String()), fiber.StatusSeeOther)
}

// handleMessageCancel stops a queued message.
func (s *Server) handleMessageCancel(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	_, err = s.MessageConsole.Cancel(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	switch app.ErrorCode(err) {
	case "":
		s.flash(c, "success", "Message cancelled: it will not be sent.")
	case app.ECONFLICT:
		s.flash(c, "error", app.ErrorMessage(err))
	default:
		return err
	}
	return c.Redirect(tenantPath(c, "/messages/"+id.String()), fiber.StatusSeeOther)
}
