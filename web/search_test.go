package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/web/webtest"
)

// searchPath is the search page's URL for a search as typed.
func searchPath(tenant, q string) string {
	return "/t/" + tenant + "/search?q=" + url.QueryEscape(q)
}

// people returns the names of the people a search page lists, with how each
// matched.
func people(doc *goquery.Document) map[string]string {
	out := map[string]string{}
	doc.Find("article.search-person").Each(func(_ int, s *goquery.Selection) {
		out[text(s.Find("h2"))] = text(s.Find(".search-person-head .badge"))
	})
	return out
}

func TestConsoleSearch(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	annaID, _ := c.annaContact("evt-search-anna", "BK-ANNA-7")
	c.routeNow(c.Tenant.ID, c.Submit(webtest.WithRecipient("evt-search-bob", "BK-BOB-9", map[string]any{
		"name": "Bob Weber", "phone": "+49 30 901820", "email": "bob.weber@example.com", "locale": "de-DE",
	})))
	// Globex knows a passenger with Anna's phone and e-mail address: acme's
	// search never shows her, nor her booking.
	c.routeNow(c.other.ID, c.submitOther(webtest.WithRecipient("evt-search-globex", "BK-GLOBEX-1", map[string]any{
		"name": "Anna Globex", "phone": annaPhone, "email": annaEmail, "locale": "de-DE",
	})))
	annaPath := "/t/acme/contacts/" + annaID.String()

	requireOnlyAnna := func(t *testing.T, doc *goquery.Document, matched string) {
		t.Helper()
		require.Equal(t, map[string]string{"Anna Schmidt": matched}, people(doc))
		person := doc.Find("article.search-person")
		require.Equal(t, annaPath, person.Find("h2 a").AttrOr("href", ""))
		require.Equal(t, "/t/acme/bookings/booking/BK-ANNA-7", person.Find(".search-refs a").AttrOr("href", ""))
		require.Positive(t, person.Find("table.search-messages tbody tr").Length(), "her recent messages")
		require.Contains(t, text(person.Find("table.search-messages")), "BOOKING_CONFIRMED")
		html, err := doc.Html()
		require.NoError(t, err)
		require.NotContains(t, html, "BK-GLOBEX-1")
		require.NotContains(t, html, "Anna Globex")
	}

	t.Run("PhoneNationalAndInternational", func(t *testing.T) {
		s := c.signIn(asManager)
		for _, q := range []string{"0151 23456789", "0151/234 567 89", "+49 151 23456789", "+4915123456789", "0049 151 23456789", "(0151) 2345-6789"} {
			doc := s.page(searchPath("acme", q))
			requireOnlyAnna(t, doc, "phone number matches")
			require.Contains(t, text(doc.Find(".search-person dl")), annaPhone, "managers see the number")
		}
	})

	t.Run("EmailAnyCase", func(t *testing.T) {
		doc := c.signIn(asManager).page(searchPath("acme", "  Anna@Example.COM "))
		requireOnlyAnna(t, doc, "e-mail address matches")
	})

	t.Run("PartOfNameOrAddress", func(t *testing.T) {
		s := c.signIn(asManager)
		for _, q := range []string{"schmi", "ANNA s", "anna@exam"} {
			requireOnlyAnna(t, s.page(searchPath("acme", q)), "name or address matches")
		}
		both := people(s.page(searchPath("acme", "example.com")))
		require.Equal(t, map[string]string{"Anna Schmidt": "name or address matches", "Bob Weber": "name or address matches"}, both)
	})

	t.Run("BookingReferenceAnyCase", func(t *testing.T) {
		s := c.signIn(asManager)
		for _, q := range []string{"BK-ANNA-7", "bk-anna-7"} {
			doc := s.page(searchPath("acme", q))
			require.Equal(t, "/t/acme/bookings/booking/BK-ANNA-7", doc.Find(".search-bookings a").AttrOr("href", ""))
			requireOnlyAnna(t, doc, "on this booking")
		}
		// Another tenant's booking is not found.
		doc := s.page(searchPath("acme", "BK-GLOBEX-1"))
		require.Zero(t, doc.Find(".search-bookings").Length())
		require.Empty(t, people(doc))
		require.Contains(t, text(doc.Find(".empty")), "No one found")
	})

	t.Run("SupportSeesMaskedAddresses", func(t *testing.T) {
		doc := c.signIn(asSupport).page(searchPath("acme", "0151 23456789"))
		require.Equal(t, map[string]string{"Anna Schmidt": "phone number matches"}, people(doc))
		facts := text(doc.Find(".search-person dl"))
		require.Contains(t, facts, "+49 ••• ••• 6789")
		require.Contains(t, facts, "a•••@example.com")
		html, err := doc.Html()
		require.NoError(t, err)
		require.NotContains(t, html, annaPhone)
		require.NotContains(t, html, annaEmail)
	})

	t.Run("OperatorInTenant", func(t *testing.T) {
		requireOnlyAnna(t, c.signIn(asOperator).page(searchPath("acme", "Anna Schmidt")), "name or address matches")
	})

	t.Run("OtherTenantFindsItsOwn", func(t *testing.T) {
		s := c.signIn(asOtherManager)
		doc := s.page(searchPath("globex", annaEmail))
		require.Equal(t, map[string]string{"Anna Globex": "e-mail address matches"}, people(doc))
		html, err := doc.Html()
		require.NoError(t, err)
		require.NotContains(t, html, "BK-ANNA-7")
		// And cannot open acme's search.
		_, resp := s.get(searchPath("acme", "Anna"))
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	t.Run("FormBeforeSearching", func(t *testing.T) {
		doc, resp := c.signIn(asSupport).get("/t/acme/search")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, 1, doc.Find(`form[role=search] input[name=q]`).Length())
		require.Contains(t, text(doc.Find("#search-hint")), "Germany")
		require.Zero(t, doc.Find(".search-error, .empty, article.search-person").Length())
		require.Equal(t, "Search", text(doc.Find(`nav.mainnav a[aria-current=page]`)))
	})

	t.Run("BadSearches", func(t *testing.T) {
		s := c.signIn(asManager)
		for _, tc := range []struct{ q, want string }{
			{"", "Type a booking reference, a name, an e-mail address or a phone number."},
			{"   ", "Type a booking reference, a name, an e-mail address or a phone number."},
			{strings.Repeat("a", 201), "Searches are at most 200 characters."},
		} {
			doc, resp := s.get(searchPath("acme", tc.q))
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "%q", tc.q)
			require.Contains(t, text(doc.Find(".search-error")), tc.want, "%q", tc.q)
			require.Zero(t, doc.Find("article.search-person").Length())
			require.Equal(t, 1, doc.Find(`form[role=search] input[name=q]`).Length(), "the form stays to try again")
		}
		// A NUL character is refused before the page reads the search, as
		// on every console page.
		doc, resp := s.get(searchPath("acme", "anna\x00"))
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Contains(t, text(doc.Find(".error-card h1")), "q contains a NUL character")
		for _, tc := range []struct{ q, note string }{
			{"an", "at least 3 characters"},
			{"1234567", "1234567 is not a phone number in Germany"},
		} {
			doc, resp := s.get(searchPath("acme", tc.q))
			require.Equal(t, http.StatusOK, resp.StatusCode, "%q", tc.q)
			require.Contains(t, text(doc.Find(".search-note")), tc.note)
			require.Empty(t, people(doc))
		}
		// LIKE's wildcards are searched for literally, not as "anything".
		require.Empty(t, people(s.page(searchPath("acme", "%%%"))))
		require.Empty(t, people(s.page(searchPath("acme", "___"))))
	})
}
