package web

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/views"
)

// handleContactShow shows a contact: details, bookings, messages and the
// history of its details.
func (s *Server) handleContactShow(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	n, req := pageOf(c)
	p, err := s.ContactConsole.Page(c.UserContext(), userOf(c), tenantOf(c).ID, id, req)
	if err != nil {
		return err
	}
	title := p.Contact.Name
	if title == "" {
		title = "Contact"
	}
	return s.render(c, views.ContactPage(s.page(c, title), views.ContactView{
		Contact: p, Base: tenantPath(c, ""), Path: tenantPath(c, "/contacts/"+id.String()),
		Pager: pagerOf(c, n, len(p.Messages), p.More),
	}))
}

// handleContactOptOut opts the contact out of the checked channels (every
// channel when none is checked).
func (s *Server) handleContactOptOut(c *fiber.Ctx) error { return s.contactOpt(c, true) }

// handleContactOptIn opts the contact back in.
func (s *Server) handleContactOptIn(c *fiber.Ctx) error { return s.contactOpt(c, false) }

func (s *Server) contactOpt(c *fiber.Ctx, out bool) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var channels []string
	c.Request().PostArgs().VisitAll(func(k, v []byte) {
		if string(k) == "channels" {
			channels = append(channels, string(v))
		}
	})
	err = s.ContactConsole.SetOptOut(c.UserContext(), userOf(c), tenantOf(c).ID, id, channels, out)
	switch app.ErrorCode(err) {
	case "":
		if out {
			s.flash(c, "success", "Opted out: optional messages skip these channels for this contact; transactional ones are still sent.")
		} else {
			s.flash(c, "success", "Opted back in.")
		}
	case app.EINVALID:
		s.flash(c, "error", app.ErrorMessage(err))
	default:
		return err
	}
	return c.Redirect(tenantPath(c, "/contacts/"+id.String()), fiber.StatusSeeOther)
}

// handleContactErase erases the contact once the manager has typed the
// confirmation; without it nothing is erased and the page says why.
func (s *Server) handleContactErase(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	res, err := s.ContactConsole.Erase(c.UserContext(), userOf(c), tenantOf(c).ID, id, c.FormValue("confirm"))
	switch app.ErrorCode(err) {
	case "":
		if res.AlreadyErased {
			s.flash(c, "success", "This contact was already erased; nothing was left to remove.")
		} else {
			s.flash(c, "success", fmt.Sprintf("Contact erased: %d messages lost their address and text (their counts stay), "+
				"%d messages from the passenger and %d history entries were deleted.", res.Removed.Messages, res.Removed.Inbound, res.Removed.History))
		}
	case app.EINVALID:
		s.flash(c, "error", app.ErrorMessage(err))
	default:
		return err
	}
	return c.Redirect(tenantPath(c, "/contacts/"+id.String()), fiber.StatusSeeOther)
}
