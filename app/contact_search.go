package app

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/nyaruka/phonenumbers"
	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
)

// Limits of the contact search.
const (
	// MaxSearchLength caps a search as typed, in characters.
	MaxSearchLength = 200
	// MinSearchText is the shortest part of a name or e-mail address the
	// search looks for: shorter ones match too many people to be useful,
	// and each reads the whole of the tenant's contacts.
	MinSearchText = 3
	// SearchPeopleLimit caps the people one search shows.
	SearchPeopleLimit = 20
	// SearchBookingLimit caps the bookings and the recent messages shown per
	// person, and the bookings whose reference matched.
	SearchBookingLimit = 5
)

// Ways a contact matched a search, strongest first.
const (
	MatchPhone   = "phone"
	MatchEmail   = "email"
	MatchBooking = "booking"
	MatchName    = "name"
)

// ContactQuery is a search as Herald reads it: each part is looked up, and
// a contact matching any of them is found.
type ContactQuery struct {
	// Text is the search as typed, trimmed.
	Text string
	// Phone is the number in E.164 when the search reads as a valid phone
	// number (national numbers in the tenant's country).
	Phone string
	// Email is the address when the search is a complete e-mail address.
	Email string
	// References are the booking, trip or invoice ids to match exactly:
	// the search as typed, upper-case and lower-case.
	References []string
	// Pattern is an ILIKE pattern for a part of a name or e-mail address,
	// empty when the search is a phone number or too short.
	Pattern string
	// Notes say how the search was read where that may surprise: a
	// number that is not a valid phone number, a search too short for
	// names.
	Notes []string
}

// phoneLike is what people type for a phone number: digits with an
// optional leading + and the usual separators.
var phoneLike = regexp.MustCompile(`^\+?[0-9 ()./-]*[0-9][0-9 ()./-]*$`)

// ParseContactQuery reads a search typed into the console. country is the
// ISO 3166 region national phone numbers belong to (TenantCountry).
func ParseContactQuery(raw, country string) (ContactQuery, error) {
	s := strings.Join(strings.Fields(raw), " ")
	q := ContactQuery{Text: s}
	switch {
	case s == "":
		return q, Invalid("empty_search", "q", "Type a booking reference, a name, an e-mail address or a phone number.")
	case !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0:
		return q, Invalid("invalid_search", "q", "The search holds characters no name, address or reference has. Type it again without them.")
	case utf8.RuneCountInString(s) > MaxSearchLength:
		return q, Invalid("search_too_long", "q", "Searches are at most %d characters.", MaxSearchLength)
	}
	for _, ref := range []string{s, strings.ToUpper(s), strings.ToLower(s)} {
		if !slices.Contains(q.References, ref) {
			q.References = append(q.References, ref)
		}
	}
	if phoneLike.MatchString(s) {
		if num, err := phonenumbers.Parse(s, country); err == nil && phonenumbers.IsValidNumber(num) {
			q.Phone = phonenumbers.Format(num, phonenumbers.E164)
		} else if digitCount(s) >= 6 {
			q.Notes = append(q.Notes, fmt.Sprintf("%s is not a phone number in %s. A number from another country needs + and its country code, such as +44 20 7946 0958.", s, CountryName(country)))
		}
		return q, nil
	}
	if strings.Contains(s, "@") {
		if email, err := NormalizeEmail("q", s); err == nil {
			q.Email = email
		}
	}
	if utf8.RuneCountInString(s) >= MinSearchText {
		q.Pattern = "%" + likeEscaper.Replace(s) + "%"
	} else {
		q.Notes = append(q.Notes, fmt.Sprintf("Names and parts of e-mail addresses need at least %d characters; %q was looked up as a booking reference only.", MinSearchText, s))
	}
	return q, nil
}

// digitCount counts the decimal digits of s.
func digitCount(s string) int {
	n := 0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			n++
		}
	}
	return n
}

// likeEscaper makes a search match literally inside a LIKE pattern (the
// default escape character is the backslash).
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// TenantCountry is the region whose national phone numbers the tenant's
// staff type without a country code: the region of the tenant's default
// locale (de-DE: DE), or the region its language is most spoken in when the
// locale names none (de: DE, en: US).
func TenantCountry(t *Tenant) string {
	tag, err := language.Parse(t.DefaultLocale)
	if err != nil {
		return "DE"
	}
	region, _ := tag.Region()
	if !region.IsCountry() {
		return "DE"
	}
	return region.String()
}

// CountryName names a region in English ("Germany"), or returns its code.
func CountryName(code string) string {
	region, err := language.ParseRegion(code)
	if err != nil {
		return code
	}
	if name := display.English.Regions().Name(region); name != "" {
		return name
	}
	return code
}

// ContactMatch is one person a search found, with what the console shows
// beside them.
type ContactMatch struct {
	Contact *Contact
	// MatchedBy says how the contact matched (MatchPhone...).
	MatchedBy string
	// Bookings are the contact's most recent bookings, trips and invoices.
	Bookings []EntityRef
	// Recent are the contact's newest messages.
	Recent []*Message
}

// ContactSearch is the answer to a search.
type ContactSearch struct {
	Query ContactQuery
	// References are the bookings, trips and invoices whose id matched.
	References []EntityRef
	// People are the contacts found, strongest match first.
	People []*ContactMatch
	// More says that more people matched than are shown.
	More bool
}

// ContactSearchTx lists the statements a contact search runs.
type ContactSearchTx interface {
	Tx
	// SearchEntities returns the bookings, trips and invoices with one of
	// the ids, most recent first.
	SearchEntities(ctx context.Context, tenantID uuid.UUID, ids []string, limit int) ([]EntityRef, error)
	// SearchContacts returns up to limit contacts matching q, strongest
	// match first, each with how it matched.
	SearchContacts(ctx context.Context, tenantID uuid.UUID, q ContactQuery, limit int) ([]*ContactMatch, error)
	// ContactsEntities returns, per contact, its most recent bookings,
	// trips and invoices.
	ContactsEntities(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, perContact int) (map[uuid.UUID][]EntityRef, error)
	// ContactsRecentMessages returns, per contact, its newest messages.
	ContactsRecentMessages(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, perContact int) (map[uuid.UUID][]*Message, error)
}

// ContactSearcher finds a tenant's passengers for the console.
type ContactSearcher struct {
	Store Store[ContactSearchTx]
}

// Search finds the bookings and people matching q in the tenant, with each
// person's recent bookings and messages. Four statements, whatever the
// number of people found.
func (s *ContactSearcher) Search(ctx context.Context, tenantID uuid.UUID, q ContactQuery) (*ContactSearch, error) {
	out := &ContactSearch{Query: q}
	err := s.Store.InTenant(ctx, tenantID, func(tx ContactSearchTx) (err error) {
		if out.References, err = tx.SearchEntities(ctx, tenantID, q.References, SearchBookingLimit); err != nil {
			return err
		}
		people, err := tx.SearchContacts(ctx, tenantID, q, SearchPeopleLimit+1)
		if err != nil {
			return err
		}
		if out.More = len(people) > SearchPeopleLimit; out.More {
			people = people[:SearchPeopleLimit]
		}
		out.People = people
		if len(people) == 0 {
			return nil
		}
		ids := make([]uuid.UUID, len(people))
		for i, p := range people {
			ids[i] = p.Contact.ID
		}
		bookings, err := tx.ContactsEntities(ctx, tenantID, ids, SearchBookingLimit)
		if err != nil {
			return err
		}
		recent, err := tx.ContactsRecentMessages(ctx, tenantID, ids, SearchBookingLimit)
		if err != nil {
			return err
		}
		for _, p := range people {
			p.Bookings, p.Recent = bookings[p.Contact.ID], recent[p.Contact.ID]
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("search contacts: %w", err)
	}
	return out, nil
}
