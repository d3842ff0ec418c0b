package app

import "testing"

func TestContactChanged(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	stored := &Contact{Name: "Ada", Phone: s("+4915112345678"), Email: s("ada@example.com"), Locale: s("de-DE"), PassengerProfileID: s("p-1")}

	cases := []struct {
		name string
		rc   Recipient
		want bool
	}{
		{"Same", Recipient{Name: "Ada", Phone: "+4915112345678", Email: "ada@example.com", Locale: "de-DE", PassengerProfileID: "p-1"}, false},
		{"EmptyFieldsKeepStored", Recipient{Phone: "+4915112345678"}, false},
		{"NewName", Recipient{Name: "Ada L."}, true},
		{"NewPhone", Recipient{Phone: "+4915112345679"}, true},
		{"NewEmail", Recipient{Email: "ada@example.org"}, true},
		{"NewLocale", Recipient{Locale: "en"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := contactChanged(stored, c.rc); got != c.want {
				t.Fatalf("contactChanged = %v, want %v", got, c.want)
			}
		})
	}

	bare := &Contact{Name: "Ada"}
	if !contactChanged(bare, Recipient{Email: "ada@example.com"}) {
		t.Fatal("an email for a contact without one is a change")
	}
	if !contactChanged(bare, Recipient{PassengerProfileID: "p-9"}) {
		t.Fatal("a profile id for a contact without one is a change")
	}
}
