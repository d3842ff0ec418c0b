package app

import (
	"testing"

	"github.com/google/uuid"
)

func TestMatchContact(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	mother := &Contact{ID: uuid.New(), Name: "Maria", Phone: s("+4915112345678"), Email: s("family@example.com")}
	profiled := &Contact{ID: uuid.New(), Name: "Paul", PassengerProfileID: s("p-1"), Phone: s("+4915112340000"), Email: s("paul@example.com")}
	emailOnly := &Contact{ID: uuid.New(), Name: "Office", Email: s("office@example.com")}
	candidates := []*Contact{mother, profiled, emailOnly}

	cases := []struct {
		name string
		rc   Recipient
		want *Contact
	}{
		{"SamePhoneAndEmail", Recipient{Phone: "+4915112345678", Email: "family@example.com"}, mother},
		{"SharedEmailOtherPhoneIsSomeoneElse", Recipient{Phone: "+4915112349999", Email: "family@example.com"}, nil},
		{"SharedEmailWithoutPhoneMatches", Recipient{Email: "family@example.com"}, mother},
		{"ProfileIsAuthoritative", Recipient{PassengerProfileID: "p-1", Phone: "+4915112341111", Email: "new@example.com"}, profiled},
		{"OtherProfileConflicts", Recipient{PassengerProfileID: "p-2", Phone: "+4915112340000"}, nil},
		{"NewProfileFillsKnownAddress", Recipient{PassengerProfileID: "p-3", Email: "office@example.com"}, emailOnly},
		{"PhoneFillsEmailOnlyContact", Recipient{Phone: "+4915112342222", Email: "office@example.com"}, emailOnly},
		{"Nothing", Recipient{Phone: "+4915112343333"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := MatchContact(candidates, c.rc); got != c.want {
				t.Fatalf("MatchContact = %v, want %v", got, c.want)
			}
		})
	}
}

func TestAbsorb(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	t.Run("ProfileMatchReplacesPhone", func(t *testing.T) {
		t.Parallel()
		c := &Contact{Name: "Ada", PassengerProfileID: s("p-1"), Phone: s("+4915112345678")}
		changes := absorb(c, Recipient{PassengerProfileID: "p-1", Phone: "+4915112349999"}, true)
		if len(changes) != 1 || changes[0].Field != "phone" || *changes[0].OldValue != "+4915112345678" || *changes[0].NewValue != "+4915112349999" {
			t.Fatalf("changes = %+v", changes)
		}
		if *c.Phone != "+4915112349999" {
			t.Fatalf("phone = %s", *c.Phone)
		}
	})
	t.Run("AddressMatchNeverReplacesIdentifiers", func(t *testing.T) {
		t.Parallel()
		c := &Contact{Name: "Ada", PassengerProfileID: s("p-1"), Email: s("ada@example.com")}
		changes := absorb(c, Recipient{PassengerProfileID: "p-2", Email: "other@example.com", Phone: "+4915112345678", Locale: "en"}, false)
		if *c.PassengerProfileID != "p-1" || *c.Email != "ada@example.com" {
			t.Fatalf("identifiers replaced: %+v", c)
		}
		fields := map[string]bool{}
		for _, ch := range changes {
			fields[ch.Field] = true
		}
		if len(changes) != 2 || !fields["phone"] || !fields["locale"] {
			t.Fatalf("want the missing phone filled in and the locale, got %+v", changes)
		}
	})
	t.Run("EmptyFieldsChangeNothing", func(t *testing.T) {
		t.Parallel()
		c := &Contact{Name: "Ada", Phone: s("+4915112345678")}
		if changes := absorb(c, Recipient{Phone: "+4915112345678"}, false); len(changes) != 0 {
			t.Fatalf("changes = %+v", changes)
		}
	})
}
