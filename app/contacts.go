package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// ContactFilter narrows a list of contacts; zero fields do not filter.
type ContactFilter struct {
	Phone              string
	Email              string
	PassengerProfileID string
}

// EntityRef is a booking, trip or invoice a contact's messages are about.
type EntityRef struct {
	EntityType string    `db:"entity_type" json:"entity_type"`
	EntityID   string    `db:"entity_id" json:"entity_id"`
	LastAt     time.Time `db:"last_at" json:"last_at"`
}

// ContactDetail is a contact with its history, newest change first.
type ContactDetail struct {
	*Contact
	History []*ContactChange `json:"history"`
}

// ContactsTx lists the statements Contacts runs.
type ContactsTx interface {
	Tx
	ContactByID(ctx context.Context, tenantID, id uuid.UUID) (*Contact, error)
	LockContact(ctx context.Context, tenantID, id uuid.UUID) (*Contact, error)
	LockContactKeys(ctx context.Context, tenantID uuid.UUID, keys []string) error
	ListContacts(ctx context.Context, tenantID uuid.UUID, f ContactFilter, limit, offset int) ([]*Contact, error)
	ContactChanges(ctx context.Context, tenantID, contactID uuid.UUID, limit int) ([]*ContactChange, error)
	ContactMessages(ctx context.Context, tenantID, contactID uuid.UUID, limit, offset int) ([]*Message, error)
	ContactEntities(ctx context.Context, tenantID, contactID uuid.UUID, limit int) ([]EntityRef, error)
	ContactOtherWith(ctx context.Context, tenantID, id uuid.UUID, phone string) (*Contact, error)
	SaveContact(ctx context.Context, c *Contact) error
	InsertContactChanges(ctx context.Context, changes []*ContactChange) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
	ContactErasureTx
}

// Contacts reads and changes a tenant's contacts for the API and the
// console: every change is checked against the matching rules, recorded
// in the contact's history and audited.
type Contacts struct {
	Store Store[ContactsTx]
	Now   Clock
}

// Limits of contact reads.
const (
	// ContactHistoryLimit caps the changes a contact's detail shows.
	ContactHistoryLimit = 200
	// ContactEntityLimit caps the bookings a contact page lists.
	ContactEntityLimit = 100
	// MaxContactPage is the largest page of contacts or messages.
	MaxContactPage = 200
)

// ParseContactFilter validates a filter as typed: phone numbers and e-mail
// addresses are normalised as routing stores them.
func ParseContactFilter(phone, email, profileID string) (ContactFilter, error) {
	var p problems
	var f ContactFilter
	if s := strings.TrimSpace(phone); s != "" {
		if ph, err := NormalizePhone(s); err != nil {
			p.add(Invalid("invalid_phone", "phone", "%q is not a valid international phone number (E.164, such as +4915112345678).", s))
		} else {
			f.Phone = ph
		}
	}
	if s := strings.TrimSpace(email); s != "" {
		if e, err := NormalizeEmail("email", s); err != nil {
			p.add(Invalid("invalid_email", "email", "%q is not a valid e-mail address.", s))
		} else {
			f.Email = e
		}
	}
	f.PassengerProfileID = strings.TrimSpace(profileID)
	if len(f.PassengerProfileID) > 200 {
		p.add(Invalid("invalid_passenger_profile_id", "passenger_profile_id", "Profile ids are at most 200 characters."))
	}
	return f, p.err()
}

// List returns a page of the tenant's contacts matching f, newest first,
// and whether more follow.
func (s *Contacts) List(ctx context.Context, tenantID uuid.UUID, f ContactFilter, limit, offset int) ([]*Contact, bool, error) {
	if limit <= 0 || limit > MaxContactPage || offset < 0 {
		return nil, false, Invalid("invalid_page", "limit", "limit is 1 to %d and offset 0 or more.", MaxContactPage)
	}
	var cs []*Contact
	err := s.Store.InTenant(ctx, tenantID, func(tx ContactsTx) (err error) {
		cs, err = tx.ListContacts(ctx, tenantID, f, limit, offset)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	more := len(cs) > limit
	if more {
		cs = cs[:limit]
	}
	return cs, more, nil
}

// Get returns a contact with its history; another tenant's id is not found.
func (s *Contacts) Get(ctx context.Context, tenantID, id uuid.UUID) (*ContactDetail, error) {
	d := &ContactDetail{}
	err := s.Store.InTenant(ctx, tenantID, func(tx ContactsTx) (err error) {
		if d.Contact, err = tx.ContactByID(ctx, tenantID, id); err != nil {
			return err
		}
		d.History, err = tx.ContactChanges(ctx, tenantID, id, ContactHistoryLimit)
		return err
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Activity returns the bookings a contact's messages are about and a page
// of its messages, newest first, and whether more messages follow.
func (s *Contacts) Activity(ctx context.Context, tenantID, id uuid.UUID, limit, offset int) ([]EntityRef, []*Message, bool, error) {
	var refs []EntityRef
	var ms []*Message
	err := s.Store.InTenant(ctx, tenantID, func(tx ContactsTx) (err error) {
		if refs, err = tx.ContactEntities(ctx, tenantID, id, ContactEntityLimit); err != nil {
			return err
		}
		ms, err = tx.ContactMessages(ctx, tenantID, id, limit, offset)
		return err
	})
	if err != nil {
		return nil, nil, false, err
	}
	more := len(ms) > limit
	if more {
		ms = ms[:limit]
	}
	return refs, ms, more, nil
}

// ContactUpdate is a change of a contact's details; nil fields stay as they
// are, and an empty phone or e-mail address removes it.
type ContactUpdate struct {
	Name   *string `json:"name"`
	Locale *string `json:"locale"`
	Phone  *string `json:"phone"`
	Email  *string `json:"email"`
}

// Update changes a contact's details. A phone number another contact holds
// is refused (ECONFLICT, reason contact_conflict): a phone identifies one
// person, and merging two contacts is not something an edit does. An
// e-mail address may be shared (a family, a travel agency). A contact keeps
// at least one address. Each changed field is recorded in the contact's
// history and the audit log.
func (s *Contacts) Update(ctx context.Context, actor Actor, tenantID, id uuid.UUID, in ContactUpdate) (*ContactDetail, error) {
	up, err := normalizeContactUpdate(in)
	if err != nil {
		return nil, err
	}
	var out *ContactDetail
	err = s.Store.InTenant(ctx, tenantID, func(tx ContactsTx) error {
		// Routing locks the identifiers it looks up; so does an edit, so
		// that an event about the new number waits for it.
		var keys []string
		if up.Phone != nil && *up.Phone != "" {
			keys = append(keys, "phone:"+*up.Phone)
		}
		if up.Email != nil && *up.Email != "" {
			keys = append(keys, "email:"+*up.Email)
		}
		if err := tx.LockContactKeys(ctx, tenantID, keys); err != nil {
			return err
		}
		c, err := tx.LockContact(ctx, tenantID, id)
		if err != nil {
			return err
		}
		if err := notErased(c); err != nil {
			return err
		}
		if up.Phone != nil && *up.Phone != "" && (c.Phone == nil || *c.Phone != *up.Phone) {
			if other, err := tx.ContactOtherWith(ctx, tenantID, id, *up.Phone); err == nil {
				return &Error{Code: ECONFLICT, Reason: "contact_conflict", Field: "phone",
					Message: fmt.Sprintf("Contact %s already has phone number %s; a phone number belongs to one contact.", other.ID, *up.Phone)}
			} else if ErrorCode(err) != ENOTFOUND {
				return err
			}
		}
		changes := up.apply(c)
		if c.Phone == nil && c.Email == nil {
			return Invalid("contact_needs_address", "phone", "A contact keeps a phone number or an e-mail address; it would have neither.")
		}
		if err := s.record(ctx, tx, actor, c, changes, "contact.update"); err != nil {
			return err
		}
		out = &ContactDetail{Contact: c}
		out.History, err = tx.ContactChanges(ctx, tenantID, id, ContactHistoryLimit)
		return err
	})
	return out, err
}

// normalizeContactUpdate checks an update's fields and returns them
// normalized: nil is no change, an empty string removes the value. Every
// problem of the update is in the one error.
func normalizeContactUpdate(in ContactUpdate) (ContactUpdate, error) {
	var p problems
	norm := func(v *string, fn func(string) (string, error)) *string {
		if v == nil {
			return nil
		}
		t := strings.TrimSpace(*v)
		if t == "" {
			return &t
		}
		n, err := fn(t)
		if err != nil {
			p.add(err.(*Error))
			return nil
		}
		return &n
	}
	var out ContactUpdate
	out.Name = norm(in.Name, func(s string) (string, error) {
		if len(s) > 200 {
			return "", Invalid("invalid_name", "name", "Names are at most 200 characters.")
		}
		return s, nil
	})
	out.Locale = norm(in.Locale, func(s string) (string, error) {
		l, err := NormalizeLocale(s)
		if err != nil {
			return "", Invalid("invalid_locale", "locale", "%s", err.Error())
		}
		return l, nil
	})
	out.Phone = norm(in.Phone, func(s string) (string, error) {
		ph, err := NormalizePhone(s)
		if err != nil {
			return "", Invalid("invalid_phone", "phone", "%q is not a valid international phone number (E.164, such as +4915112345678).", s)
		}
		return ph, nil
	})
	out.Email = norm(in.Email, func(s string) (string, error) {
		e, err := NormalizeEmail("email", s)
		if err != nil {
			return "", Invalid("invalid_email", "email", "%q is not a valid e-mail address.", s)
		}
		return e, nil
	})
	if in.Name == nil && in.Locale == nil && in.Phone == nil && in.Email == nil {
		p.add(Invalid("nothing_to_change", "", "Name at least one of name, locale, phone and email."))
	}
	return out, p.err()
}

// apply makes a normalized update's changes to c and returns them, for
// the contact's history.
func (up ContactUpdate) apply(c *Contact) []*ContactChange {
	var changes []*ContactChange
	set := func(field string, dst **string, v *string) {
		if v == nil {
			return
		}
		var nv *string
		if *v != "" {
			nv = v
		}
		if deref(*dst) == deref(nv) {
			return
		}
		changes = append(changes, &ContactChange{Field: field, OldValue: *dst, NewValue: nv})
		*dst = nv
	}
	if up.Name != nil && *up.Name != c.Name {
		old := c.Name
		changes = append(changes, &ContactChange{Field: "name", OldValue: &old, NewValue: up.Name})
		c.Name = *up.Name
	}
	set("locale", &c.Locale, up.Locale)
	set("phone", &c.Phone, up.Phone)
	set("email", &c.Email, up.Email)
	return changes
}

// SetOptOut opts a contact out of channels (optOut) or back in; no channels
// means every channel that reaches a person. Optional events skip an
// opted-out channel with reason opted_out; transactional events are sent
// whatever the contact opted out of. The decision is the latest about its
// channels: a passenger's keyword sent before it and delivered after it
// does not undo it.
func (s *Contacts) SetOptOut(ctx context.Context, actor Actor, tenantID, id uuid.UUID, channels []string, optOut bool) (*ContactDetail, error) {
	var p problems
	var chosen []Channel
	for i, name := range channels {
		ch, ok := ParseChannel(name)
		if !ok || !slices.Contains(OptOutChannels, ch) {
			p.add(Invalid("unknown_channel", fmt.Sprintf("channels[%d]", i), "%q is not a channel a contact can opt out of (WHATSAPP, EMAIL, SMS).", name))
			continue
		}
		chosen = append(chosen, ch)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	if len(channels) == 0 {
		chosen = OptOutChannels
	}
	source := ChangeSourceAPI
	if actor.Type == ActorUser {
		source = ChangeSourceConsole
	}
	var out *ContactDetail
	err := s.Store.InTenant(ctx, tenantID, func(tx ContactsTx) error {
		c, err := tx.LockContact(ctx, tenantID, id)
		if err != nil {
			return err
		}
		if err := notErased(c); err != nil {
			return err
		}
		now := s.Now()
		change, _ := ApplyPreference(c, PreferenceChange{Channels: chosen, OptOut: optOut, At: now, Source: source, Actor: actor})
		// Saved even without a change: the decision's time is the
		// channels' latest.
		c.UpdatedAt = now
		if err := tx.SaveContact(ctx, c); err != nil {
			return err
		}
		if change != nil {
			if err := tx.InsertContactChanges(ctx, []*ContactChange{change}); err != nil {
				return err
			}
			action := "contact.opt_in"
			if optOut {
				action = "contact.opt_out"
			}
			if err := tx.InsertAudit(ctx, actor.Entry(&c.TenantID, action, "contact", c.ID.String(),
				map[string]any{"fields": []string{"opted_out"}, "channels": channelStrings(chosen)})); err != nil {
				return err
			}
		}
		out = &ContactDetail{Contact: c}
		out.History, err = tx.ContactChanges(ctx, tenantID, id, ContactHistoryLimit)
		return err
	})
	return out, err
}

// record saves a changed contact with its history entries and an audit
// entry; without changes it writes nothing.
func (s *Contacts) record(ctx context.Context, tx ContactsTx, actor Actor, c *Contact, changes []*ContactChange, action string) error {
	if len(changes) == 0 {
		return nil
	}
	now := s.Now()
	c.UpdatedAt = now
	if err := tx.SaveContact(ctx, c); err != nil {
		return err
	}
	source := ChangeSourceAPI
	if actor.Type == ActorUser {
		source = ChangeSourceConsole
	}
	fields := make([]string, len(changes))
	for i, ch := range changes {
		ch.TenantID, ch.ContactID, ch.Source, ch.At = c.TenantID, c.ID, source, now
		ch.ActorType, ch.ActorID, ch.ActorLabel = actor.Type, actor.ID, actor.Label
		fields[i] = ch.Field
	}
	if err := tx.InsertContactChanges(ctx, changes); err != nil {
		return err
	}
	return tx.InsertAudit(ctx, actor.Entry(&c.TenantID, action, "contact", c.ID.String(), map[string]any{"fields": fields}))
}

// notErased refuses a change to an erased contact: its details stay gone,
// and a passenger who comes back is a new contact.
func notErased(c *Contact) error {
	if c.ErasedAt == nil {
		return nil
	}
	return &Error{Code: ECONFLICT, Reason: "contact_erased",
		Message: fmt.Sprintf("Contact %s was erased on %s; its details cannot be changed.", c.ID, c.ErasedAt.UTC().Format(time.DateOnly))}
}
