package console

import (
	"context"

	"github.com/heraldhq/herald/app"
)

// ContactSearchPage is what the console's search shows. For users who may
// not see addresses, every phone number and e-mail address in it is masked.
type ContactSearchPage struct {
	*app.ContactSearch
	// Country is the region national phone numbers were read in.
	Country string
	// Masked is true when the addresses shown are masked.
	Masked bool
}

// Search finds the tenant's bookings and people matching a search as
// typed: a booking reference, a name or part of one, an e-mail address or
// part of one, or a phone number in national (the tenant's country) or
// international format. A search that cannot be read is EINVALID with a
// message for people.
func (s *ContactConsole) Search(ctx context.Context, u *app.User, t *app.Tenant, raw string) (*ContactSearchPage, error) {
	if err := app.RequirePermission(u, app.PermMessages); err != nil {
		return nil, err
	}
	country := app.TenantCountry(t)
	q, err := app.ParseContactQuery(raw, country)
	if err != nil {
		return nil, err
	}
	res, err := s.Searcher.Search(ctx, t.ID, q)
	if err != nil {
		return nil, err
	}
	p := &ContactSearchPage{ContactSearch: res, Country: country}
	if !u.Can(app.PermAddresses) {
		p.mask()
	}
	return p, nil
}

// mask replaces every address on the page with its masked form, on copies.
// The search as typed stays: the user typed it.
func (p *ContactSearchPage) mask() {
	p.Masked = true
	for i, m := range p.People {
		c := *m.Contact
		known := []string{deref(c.Phone), deref(c.Email)}
		if c.Phone != nil {
			masked := MaskAddress(*c.Phone)
			c.Phone = &masked
		}
		if c.Email != nil {
			masked := MaskAddress(*c.Email)
			c.Email = &masked
		}
		cp := *m
		cp.Contact = &c
		cp.Recent = make([]*app.Message, len(m.Recent))
		for j, msg := range m.Recent {
			mc := *msg
			mc.Subject = MaskText(mc.Subject, append(known, mc.ToAddress)...)
			mc.Body = MaskText(mc.Body, append(known, mc.ToAddress)...)
			mc.ToAddress = MaskAddress(mc.ToAddress)
			cp.Recent[j] = &mc
		}
		p.People[i] = &cp
	}
}
