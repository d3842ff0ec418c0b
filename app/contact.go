package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Contact is a person a tenant sends to. Its identifiers are the passenger
// profile id, the phone number and the e-mail address; MatchContact says
// when a recipient is this contact.
type Contact struct {
	ID                 uuid.UUID  `db:"id" json:"id"`
	TenantID           uuid.UUID  `db:"tenant_id" json:"-"`
	PassengerProfileID *string    `db:"passenger_profile_id" json:"passenger_profile_id"`
	Name               string     `db:"name" json:"name"`
	Phone              *string    `db:"phone" json:"phone"`
	Email              *string    `db:"email" json:"email"`
	Locale             *string    `db:"locale" json:"locale"`
	EmailComplainedAt  *time.Time `db:"email_complained_at" json:"email_complained_at,omitempty"`
	// OptedOut lists the channels the contact asked not to be sent on.
	OptedOut StringList `db:"opted_out" json:"opted_out"`
	// OptOutAt holds, per channel, when the decision behind its current
	// opt-out state was made (RFC 3339), so that keywords delivered out
	// of order are decided by when they were sent.
	OptOutAt Attrs `db:"opt_out_at" json:"-"`
	// WhatsAppWindowUntil is when the 24-hour window the contact's last
	// WhatsApp message opened closes.
	WhatsAppWindowUntil *time.Time `db:"whatsapp_window_until" json:"-"`
	CreatedAt           time.Time  `db:"created_at" json:"created_at"`
	UpdatedAt           time.Time  `db:"updated_at" json:"updated_at"`
	// ErasedAt is when the contact's personal data was erased, on request
	// or by retention (Erasure says which); the contact keeps only its id.
	ErasedAt *time.Time `db:"erased_at" json:"erased_at,omitempty"`
	Erasure  *string    `db:"erasure" json:"erased_by,omitempty"`
}

// Recipient returns the contact as a template recipient.
func (c *Contact) Recipient() Recipient {
	r := Recipient{Name: c.Name, PassengerProfileID: deref(c.PassengerProfileID), Phone: deref(c.Phone), Email: deref(c.Email), Locale: deref(c.Locale)}
	return r
}

// Address returns the contact's current address on a channel, or "" (none,
// or an e-mail address the contact complained about). Messages do not use
// it: each goes to the address its event gave (Addressee).
func (c *Contact) Address(ch Channel) string {
	switch {
	case ch.Phone() && c.Phone != nil:
		return *c.Phone
	case ch == Email && c.Email != nil && c.EmailComplainedAt == nil:
		return *c.Email
	}
	return ""
}

// OptedOutOf reports whether the contact asked not to be sent to on ch.
func (c *Contact) OptedOutOf(ch Channel) bool {
	return c != nil && slices.Contains(c.OptedOut, string(ch))
}

// ContactChange is one change of a contact's details: which field went
// from what to what, and who changed it (the event that carried the new
// details, an API key or a console user).
type ContactChange struct {
	ID         int64      `db:"id" json:"id"`
	TenantID   uuid.UUID  `db:"tenant_id" json:"-"`
	ContactID  uuid.UUID  `db:"contact_id" json:"-"`
	Field      string     `db:"field" json:"field"`
	OldValue   *string    `db:"old_value" json:"old_value"`
	NewValue   *string    `db:"new_value" json:"new_value"`
	Source     string     `db:"source" json:"source"`
	EventID    *uuid.UUID `db:"event_id" json:"event_id,omitempty"`
	ActorType  string     `db:"actor_type" json:"actor_type"`
	ActorID    *uuid.UUID `db:"actor_id" json:"actor_id,omitempty"`
	ActorLabel string     `db:"actor_label" json:"actor_label"`
	At         time.Time  `db:"at" json:"at"`
}

// Sources of contact changes.
const (
	ChangeSourceEvent   = "event"
	ChangeSourceAPI     = "api"
	ChangeSourceConsole = "console"
	ChangeSourceInbound = "inbound"
)

// ChangeCreated is the field of the change that records a contact's creation.
const ChangeCreated = "created"

// OptOutChannels are the channels a contact can opt out of: those that
// reach a person.
var OptOutChannels = []Channel{WhatsApp, Email, SMS}

// MatchContact picks the contact a recipient is, among candidates (the
// tenant's contacts sharing an identifier with it, oldest first), or nil
// when the recipient is a new contact. The rules:
//
//   - a passenger profile id is authoritative: the contact with it is the
//     recipient, whatever its phone or e-mail address;
//   - otherwise a contact matches when it shares an identifier with the
//     recipient and none conflicts: no identifier both have differs (a
//     contact with another profile id, phone or e-mail is someone else). So
//     two recipients with different phones are two contacts even when they
//     share an e-mail address;
//   - among several matches, the one sharing the most identifiers wins (a
//     phone beats an e-mail address), then the oldest.
func MatchContact(candidates []*Contact, rc Recipient) *Contact {
	if rc.PassengerProfileID != "" {
		for _, c := range candidates {
			if c.PassengerProfileID != nil && *c.PassengerProfileID == rc.PassengerProfileID {
				return c
			}
		}
	}
	var best *Contact
	bestScore := 0
	for _, c := range candidates {
		score, ok := matchScore(c, rc)
		if ok && score > bestScore {
			best, bestScore = c, score
		}
	}
	return best
}

// matchScore rates a candidate without a profile-id match: a shared phone
// counts 2 and a shared e-mail address 1; ok is false on any conflict or
// when nothing is shared.
func matchScore(c *Contact, rc Recipient) (int, bool) {
	conflict := func(stored *string, given string) bool { return given != "" && stored != nil && *stored != given }
	same := func(stored *string, given string) bool { return given != "" && stored != nil && *stored == given }
	if conflict(c.PassengerProfileID, rc.PassengerProfileID) || conflict(c.Phone, rc.Phone) || conflict(c.Email, rc.Email) {
		return 0, false
	}
	score := 0
	if same(c.Phone, rc.Phone) {
		score += 2
	}
	if same(c.Email, rc.Email) {
		score++
	}
	return score, score > 0
}

// ContactKeys are the names of a recipient's identifiers that routing locks
// before it looks contacts up, so that two transactions never create the
// same new contact twice nor lose an identifier one of them adds.
func ContactKeys(rc Recipient) []string {
	var keys []string
	if rc.PassengerProfileID != "" {
		keys = append(keys, "profile:"+rc.PassengerProfileID)
	}
	if rc.Phone != "" {
		keys = append(keys, "phone:"+rc.Phone)
	}
	if rc.Email != "" {
		keys = append(keys, "email:"+rc.Email)
	}
	return keys
}

// NewContact is the contact made from a recipient no contact matches.
func NewContact(tenantID uuid.UUID, rc Recipient, now time.Time) *Contact {
	c := &Contact{ID: NewID(), TenantID: tenantID, Name: rc.Name, OptedOut: StringList{}, CreatedAt: now, UpdatedAt: now}
	set := func(dst **string, v string) {
		if v != "" {
			*dst = &v
		}
	}
	set(&c.PassengerProfileID, rc.PassengerProfileID)
	set(&c.Phone, rc.Phone)
	set(&c.Email, rc.Email)
	set(&c.Locale, rc.Locale)
	return c
}

// absorb brings a matched contact up to date with what a recipient says,
// and returns the changes (field, old, new). Empty fields never change
// anything. Name and locale follow the recipient. An identifier the contact
// lacks is filled in; a different phone or e-mail address replaces the
// stored one only when the profile id matched (the profile is
// authoritative), since otherwise MatchContact allows no conflict. A
// profile id is never replaced.
func absorb(c *Contact, rc Recipient, byProfile bool) []*ContactChange {
	var out []*ContactChange
	change := func(field string, dst **string, v string, replace bool) {
		if v == "" || (*dst != nil && **dst == v) || (*dst != nil && !replace) {
			return
		}
		ch := &ContactChange{Field: field, OldValue: *dst, NewValue: &v}
		*dst = &v
		out = append(out, ch)
	}
	if rc.Name != "" && rc.Name != c.Name {
		old := c.Name
		out = append(out, &ContactChange{Field: "name", OldValue: &old, NewValue: &rc.Name})
		c.Name = rc.Name
	}
	change("passenger_profile_id", &c.PassengerProfileID, rc.PassengerProfileID, false)
	change("phone", &c.Phone, rc.Phone, byProfile)
	change("email", &c.Email, rc.Email, byProfile)
	change("locale", &c.Locale, rc.Locale, true)
	return out
}

// ContactResolveTx lists the statements resolving recipients to contacts
// runs.
type ContactResolveTx interface {
	Tx
	// LockContactKeys takes a transaction lock on each key (ContactKeys), in
	// one order for every caller.
	LockContactKeys(ctx context.Context, tenantID uuid.UUID, keys []string) error
	// ContactCandidates returns the tenant's contacts with one of the
	// profile ids, phone numbers or e-mail addresses, oldest first.
	ContactCandidates(ctx context.Context, tenantID uuid.UUID, profileIDs, phones, emails []string) ([]*Contact, error)
	// InsertContacts stores new contacts and contact changes (their
	// creations and other contacts') with one statement.
	InsertContacts(ctx context.Context, cs []*Contact, changes []*ContactChange) error
	SaveContact(ctx context.Context, c *Contact) error
	InsertContactChanges(ctx context.Context, changes []*ContactChange) error
}

// ResolveContacts finds or creates the contact of each recipient, under
// MatchContact's rules, and records every creation and change with who made
// it. The recipients' identifiers are locked first, so concurrent events
// about the same new person make one contact.
func ResolveContacts(ctx context.Context, tx ContactResolveTx, tenantID uuid.UUID, rs []Recipient, actor Actor, source string, eventID *uuid.UUID, now time.Time) ([]*Contact, error) {
	var keys, profiles, phones, emails []string
	for _, rc := range rs {
		keys = append(keys, ContactKeys(rc)...)
		if rc.PassengerProfileID != "" {
			profiles = append(profiles, rc.PassengerProfileID)
		}
		if rc.Phone != "" {
			phones = append(phones, rc.Phone)
		}
		if rc.Email != "" {
			emails = append(emails, rc.Email)
		}
	}
	candidates, err := tx.ContactCandidates(ctx, tenantID, profiles, phones, emails)
	if err != nil {
		return nil, err
	}
	// Most events are about people Herald knows, with nothing new to
	// record: their contacts are read without a lock, as nothing is
	// written. Only a creation or a change takes the locks, and reads again
	// under them.
	if out, ok := matchUnchanged(candidates, rs); ok {
		return out, nil
	}
	if err := tx.LockContactKeys(ctx, tenantID, keys); err != nil {
		return nil, err
	}
	if candidates, err = tx.ContactCandidates(ctx, tenantID, profiles, phones, emails); err != nil {
		return nil, err
	}
	out := make([]*Contact, len(rs))
	var created []*Contact
	var changes []*ContactChange
	for i, rc := range rs {
		c := MatchContact(candidates, rc)
		var cs []*ContactChange
		if c == nil {
			// Stored with the changes, below; a later recipient who is the
			// same person finds it among the candidates.
			c = NewContact(tenantID, rc, now)
			created = append(created, c)
			candidates = append(candidates, c)
			cs = []*ContactChange{{Field: ChangeCreated, NewValue: strPtr(contactSummary(c))}}
		} else {
			byProfile := rc.PassengerProfileID != "" && c.PassengerProfileID != nil && *c.PassengerProfileID == rc.PassengerProfileID
			if cs = absorb(c, rc, byProfile); len(cs) > 0 {
				c.UpdatedAt = now
				if err := tx.SaveContact(ctx, c); err != nil {
					return nil, err
				}
			}
		}
		for _, ch := range cs {
			ch.TenantID, ch.ContactID, ch.Source, ch.EventID, ch.At = tenantID, c.ID, source, eventID, now
			ch.ActorType, ch.ActorID, ch.ActorLabel = actor.Type, actor.ID, actor.Label
		}
		changes = append(changes, cs...)
		out[i] = c
	}
	if len(created)+len(changes) > 0 {
		if err := tx.InsertContacts(ctx, created, changes); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// matchUnchanged returns each recipient's existing contact when every
// recipient has one that the recipient would not change; ok is false
// otherwise.
func matchUnchanged(candidates []*Contact, rs []Recipient) ([]*Contact, bool) {
	out := make([]*Contact, len(rs))
	for i, rc := range rs {
		c := MatchContact(candidates, rc)
		if c == nil {
			return nil, false
		}
		byProfile := rc.PassengerProfileID != "" && c.PassengerProfileID != nil && *c.PassengerProfileID == rc.PassengerProfileID
		trial := *c
		if len(absorb(&trial, rc, byProfile)) > 0 {
			return nil, false
		}
		out[i] = c
	}
	return out, true
}

// contactSummary describes a new contact's identifiers for its history.
func contactSummary(c *Contact) string {
	var parts []string
	add := func(k string, v *string) {
		if v != nil {
			parts = append(parts, k+"="+*v)
		}
	}
	add("passenger_profile_id", c.PassengerProfileID)
	add("phone", c.Phone)
	add("email", c.Email)
	return strings.Join(parts, " ")
}

func strPtr(s string) *string { return &s }

// eventActor is who a change carried by an event is made by: the API key
// that submitted it, named after the event.
func eventActor(e *Event) Actor {
	return Actor{Type: ActorAPIKey, ID: e.APIKeyID, Label: fmt.Sprintf("event %s", e.SourceEventID)}
}
