package console

import (
	"context"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// ContactConsole serves the console's contact page: a contact's details,
// the bookings its messages are about, its messages with the exact address
// each went to, and the history of its details. Opt-outs go through
// app.Contacts, as they do for the API.
type ContactConsole struct {
	Contacts *app.Contacts
	// Searcher finds people by booking reference, name, e-mail address
	// or phone number (the console's search).
	Searcher *app.ContactSearcher
}

// ContactPage is what the contact page shows. For users who may not see
// addresses, every phone number and e-mail address in it is masked.
type ContactPage struct {
	Contact  *app.Contact
	History  []*app.ContactChange
	Bookings []app.EntityRef
	// Messages is one page of the contact's messages, newest first; More
	// says whether older ones follow.
	Messages []*app.Message
	More     bool
	// Masked is true when the addresses shown are masked.
	Masked bool
	// CanOptOut is true when the user may opt the contact out or in.
	CanOptOut bool
	// CanErase is true when the user may erase the contact (managers).
	CanErase bool
}

// Page gathers a contact's page; another tenant's contact is not found.
func (s *ContactConsole) Page(ctx context.Context, u *app.User, tenantID, id uuid.UUID, page PageRequest) (*ContactPage, error) {
	if err := app.RequirePermission(u, app.PermMessages); err != nil {
		return nil, err
	}
	d, err := s.Contacts.Get(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	limit := max(page.Limit-1, 1)
	refs, ms, more, err := s.Contacts.Activity(ctx, tenantID, id, limit, page.Offset)
	if err != nil {
		return nil, err
	}
	p := &ContactPage{Contact: d.Contact, History: d.History, Bookings: refs, Messages: ms, More: more,
		CanOptOut: u.Can(app.PermContacts) && d.Contact.ErasedAt == nil, CanErase: u.Can(app.PermEraseContacts)}
	if !u.Can(app.PermAddresses) {
		p.mask()
	}
	return p, nil
}

// mask replaces every address on the page with its masked form, on copies:
// the contact's own, each message's, and those in the history.
func (p *ContactPage) mask() {
	p.Masked = true
	c := *p.Contact
	known := []string{deref(c.Phone), deref(c.Email)}
	maskPtr := func(v *string) *string {
		if v == nil {
			return nil
		}
		m := MaskText(*v, known...)
		return &m
	}
	c.Phone, c.Email = maskPtr(c.Phone), maskPtr(c.Email)
	p.Contact = &c
	for i, m := range p.Messages {
		cp := *m
		cp.Subject = MaskText(cp.Subject, append(known, cp.ToAddress)...)
		cp.Body = MaskText(cp.Body, append(known, cp.ToAddress)...)
		cp.ToAddress = MaskAddress(cp.ToAddress)
		p.Messages[i] = &cp
	}
	for i, h := range p.History {
		cp := *h
		cp.OldValue, cp.NewValue = maskPtr(cp.OldValue), maskPtr(cp.NewValue)
		p.History[i] = &cp
	}
}

// SetOptOut opts the contact out of channels (or back in, with optOut
// false); no channels means every channel. Managers only.
func (s *ContactConsole) SetOptOut(ctx context.Context, u *app.User, tenantID, id uuid.UUID, channels []string, optOut bool) error {
	if err := app.RequirePermission(u, app.PermContacts); err != nil {
		return err
	}
	_, err := s.Contacts.SetOptOut(ctx, u.Actor(), tenantID, id, channels, optOut)
	return err
}

// EraseConfirmation is what the erase form's confirmation field must hold.
const EraseConfirmation = "ERASE"

// Erase erases the contact on request (app.Contacts.Erase), once the user
// has typed EraseConfirmation: an erasure cannot be undone. Managers only.
func (s *ContactConsole) Erase(ctx context.Context, u *app.User, tenantID, id uuid.UUID, confirm string) (*app.ErasureResult, error) {
	if err := app.RequirePermission(u, app.PermEraseContacts); err != nil {
		return nil, err
	}
	if strings.TrimSpace(confirm) != EraseConfirmation {
		return nil, app.Invalid("erase_not_confirmed", "confirm",
			"Type %s to confirm: erasing removes this person's details, history and the text of their messages for good.", EraseConfirmation)
	}
	return s.Contacts.Erase(ctx, u.Actor(), tenantID, id)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
