package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/views"
)

// handleUnsubscribePage shows the page behind an optional e-mail's
// unsubscribe link, with the button that unsubscribes. Opening it changes
// nothing: link scanners that fetch every URL of an e-mail must not
// unsubscribe anyone.
func (s *Server) handleUnsubscribePage(c *fiber.Ctx) error {
	u, err := s.Preferences.Lookup(c.UserContext(), c.Params("token"))
	if err != nil {
		return err
	}
	return s.render(c, views.UnsubscribePage(s.page(c, "Unsubscribe"),
		views.UnsubscribeView{Action: c.Path(), TenantName: u.TenantName, Done: u.OptedOut}))
}

// handleUnsubscribe unsubscribes the link's contact from e-mail: the
// page's button, and the one-click POST of RFC 8058 that mail clients make
// with the body List-Unsubscribe=One-Click, without a session or a CSRF
// token (the signed link is the authority, and it can only unsubscribe the
// person it names). It answers 200 with the confirmation page.
func (s *Server) handleUnsubscribe(c *fiber.Ctx) error {
	u, err := s.Preferences.Unsubscribe(c.UserContext(), c.Params("token"))
	if err != nil {
		return err
	}
	return s.render(c, views.UnsubscribePage(s.page(c, "Unsubscribed"),
		views.UnsubscribeView{Action: c.Path(), TenantName: u.TenantName, Done: true}))
}
