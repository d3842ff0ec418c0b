package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/views"
)

// handleAckPage shows the page behind a message's acknowledgement link,
// with the one button that acknowledges. Opening it changes nothing: link
// previews and mail scanners fetch every URL, and must not tell staff a
// passenger read a safety notice.
func (s *Server) handleAckPage(c *fiber.Ctx) error {
	page, err := s.Acks.LookupLink(c.UserContext(), c.Params("token"))
	return s.renderAck(c, page, err)
}

// handleAck acknowledges the link's message: the page's button, without a
// session or a CSRF token (the signed link is the authority, and it can
// only acknowledge the message it names). Confirming twice shows the
// first confirmation.
func (s *Server) handleAck(c *fiber.Ctx) error {
	page, err := s.Acks.FromLink(c.UserContext(), c.Params("token"))
	return s.renderAck(c, page, err)
}

// renderAck renders the page, or for a link that is not valid or has
// expired a page that says so (401), instead of the console's error page.
func (s *Server) renderAck(c *fiber.Ctx, page *app.AckPage, err error) error {
	if app.ErrorCode(err) == app.EUNAUTHORIZED || app.ErrorCode(err) == app.ENOTFOUND {
		c.Status(fiber.StatusUnauthorized)
		if app.ErrorCode(err) == app.ENOTFOUND {
			c.Status(fiber.StatusNotFound)
		}
		return s.render(c, views.AckPage(s.page(c, "Confirmation link"), views.AckView{Problem: app.ErrorMessage(err)}))
	}
	if err != nil {
		return err
	}
	return s.render(c, views.AckPage(s.page(c, "Please confirm"), views.AckView{Action: c.Path(), Ack: page}))
}
