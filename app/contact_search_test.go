package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func TestParseContactQuery(t *testing.T) {
	t.Parallel()

	t.Run("NationalNumbersInTheTenantsCountry", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ q, country, want string }{
			{"0151 23456789", "DE", "+4915123456789"},
			{"0049 151 23456789", "DE", "+4915123456789"},
			{"+49 151 23456789", "GB", "+4915123456789"},
			{"07400 123456", "GB", "+447400123456"},
			{"(07400) 123-456", "GB", "+447400123456"},
			{"0151 23456789", "GB", ""},
		} {
			q, err := app.ParseContactQuery(tc.q, tc.country)
			require.NoError(t, err, tc.q)
			require.Equal(t, tc.want, q.Phone, "%s in %s", tc.q, tc.country)
			require.Empty(t, q.Pattern, "a number is not looked for in names")
			require.Contains(t, q.References, tc.q, "a number may be a booking reference")
		}
	})

	t.Run("TenantCountry", func(t *testing.T) {
		t.Parallel()
		for locale, want := range map[string]string{"de-DE": "DE", "de-AT": "AT", "en-GB": "GB", "de": "DE", "fr": "FR", "": "DE", "x-garbage": "DE"} {
			require.Equal(t, want, app.TenantCountry(&app.Tenant{DefaultLocale: locale}), locale)
		}
		require.Equal(t, "Germany", app.CountryName("DE"))
	})

	t.Run("EmailsNamesAndReferences", func(t *testing.T) {
		t.Parallel()
		q, err := app.ParseContactQuery("  Anna@Example.COM ", "DE")
		require.NoError(t, err)
		require.Equal(t, "anna@example.com", q.Email)
		require.Equal(t, "%Anna@Example.COM%", q.Pattern)
		q, err = app.ParseContactQuery("bk-2027  0412", "DE")
		require.NoError(t, err)
		require.Equal(t, []string{"bk-2027 0412", "BK-2027 0412"}, q.References)
		q, err = app.ParseContactQuery(`50%_off\`, "DE")
		require.NoError(t, err)
		require.Equal(t, `%50\%\_off\\%`, q.Pattern)
	})

	t.Run("Refused", func(t *testing.T) {
		t.Parallel()
		for _, raw := range []string{"", "  \t ", "a\x00b", string(make([]rune, 201))} {
			_, err := app.ParseContactQuery(raw, "DE")
			require.Equal(t, app.EINVALID, app.ErrorCode(err), "%q", raw)
			require.Equal(t, "q", app.ErrorField(err))
		}
	})
}
