package web

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
)

// defaultContactPage is the page size of GET /api/v1/contacts without ?limit.
const defaultContactPage = 50

// handleAPIContactList lists the tenant's contacts, newest first:
// ?phone=, ?email=, ?passenger_profile_id= filter, ?limit= and ?offset= page.
func (s *Server) handleAPIContactList(c *fiber.Ctx) error {
	f, err := app.ParseContactFilter(c.Query("phone"), c.Query("email"), c.Query("passenger_profile_id"))
	if err != nil {
		return err
	}
	limit, offset, err := apiPage(c, defaultContactPage)
	if err != nil {
		return err
	}
	cs, more, err := s.Contacts.List(c.UserContext(), apiKeyOf(c).TenantID, f, limit, offset)
	if err != nil {
		return err
	}
	res := fiber.Map{"contacts": cs, "has_more": more}
	if more {
		res["next_offset"] = offset + limit
	}
	return c.JSON(res)
}

// apiPage reads ?limit= (1 to app.MaxContactPage, def when absent) and
// ?offset= (0 or more).
func apiPage(c *fiber.Ctx, def int) (int, int, error) {
	limit, offset := def, 0
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > app.MaxContactPage {
			return 0, 0, app.Invalid("invalid_page", "limit", "limit must be a number from 1 to %d.", app.MaxContactPage)
		}
		limit = n
	}
	if v := c.Query("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, 0, app.Invalid("invalid_page", "offset", "offset must be a number, 0 or more.")
		}
		offset = n
	}
	return limit, offset, nil
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
