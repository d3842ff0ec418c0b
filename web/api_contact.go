package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
)

// handleAPIContactList lists the tenant's contacts, newest first:
// ?phone=, ?email=, ?passenger_profile_id= filter, ?limit= and ?offset= page.
func (s *Server) handleAPIContactList(c *fiber.Ctx) error {
	f, err := app.ParseContactFilter(c.Query("phone"), c.Query("email"), c.Query("passenger_profile_id"))
	if err != nil {
		return err
	}
	req, err := apiPageOf(c)
	if err != nil {
		return err
	}
	// apiPageOf asks for one row more than the limit; List does that itself.
	cs, more, err := s.Contacts.List(c.UserContext(), apiKeyOf(c).TenantID, f, req.Limit-1, req.Offset)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"contacts": cs, "page": pageInfo(req, len(cs), more)})
}

// handleAPIContactGet returns a contact with its history.
func (s *Server) handleAPIContactGet(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	d, err := s.Contacts.Get(c.UserContext(), apiKeyOf(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.JSON(d)
}

// handleAPIContactUpdate changes a contact's name, locale, phone or e-mail
// address: {"name": ..., "phone": ...}; absent fields stay as they are.
func (s *Server) handleAPIContactUpdate(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var in app.ContactUpdate
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	d, err := s.Contacts.Update(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, id, in)
	if err != nil {
		return err
	}
	return c.JSON(d)
}

// handleAPIContactOptOut and handleAPIContactOptIn take {"channels":
// ["SMS", ...]}; an empty body or no channels means every channel.
func (s *Server) handleAPIContactOptOut(c *fiber.Ctx) error { return s.apiContactOpt(c, true) }

// handleAPIContactOptIn undoes an opt-out; see handleAPIContactOptOut.
func (s *Server) handleAPIContactOptIn(c *fiber.Ctx) error { return s.apiContactOpt(c, false) }

func (s *Server) apiContactOpt(c *fiber.Ctx, out bool) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var in struct {
		Channels []string `json:"channels"`
	}
	if len(c.Body()) > 0 {
		if err := decodeJSON(c, &in); err != nil {
			return err
		}
	}
	d, err := s.Contacts.SetOptOut(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, id, in.Channels, out)
	if err != nil {
		return err
	}
	return c.JSON(d)
}

// handleAPIContactErase erases a contact on request: its details, history,
// what it wrote and the personal data of its messages, keeping their facts.
// It takes no body; erasing again answers with already_erased and nothing
// removed.
func (s *Server) handleAPIContactErase(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if len(c.Body()) > 0 {
		return app.Invalid("unexpected_body", "", "An erasure takes no body: POST it empty.")
	}
	res, err := s.Contacts.Erase(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.JSON(res)
}
