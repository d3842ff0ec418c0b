package web_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// The console says things plainly: timeline times to the second with the
// full time on hover, settings changes as old -> new with no Go values,
// placeholders that fit the form, and counts that say what they count.
func TestConsole_PlainWords(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})
	manager := c.signIn(asManager)

	t.Run("TimelineToTheSecond", func(t *testing.T) {
		id := c.Submit(webtest.Notification("plain-words-1", "BK-PW"))
		ms := c.WaitMessages(id, "delivered", delivered)
		doc := manager.page("/t/acme/messages/" + ms[0].ID.String())
		times := doc.Find(".timeline time")
		require.Positive(t, times.Length())
		seconds := regexp.MustCompile(`\d{2}:\d{2}:\d{2}`)
		for i := range times.Length() {
			tm := times.Eq(i)
			require.Regexp(t, seconds, tm.Text(), "to the second")
			title, _ := tm.Attr("title")
			require.Regexp(t, seconds, title, "the full time on hover")
			require.Contains(t, title, "2026", "with the year")
			_, ok := tm.Attr("datetime")
			require.True(t, ok)
		}
	})

	t.Run("SettingsChangesOldToNew", func(t *testing.T) {
		manage := keyWith(t, c.Herald, c.Tenant.ID, app.ScopeManage)
		var acct struct{ ID string }
		require.Equal(t, http.StatusCreated, c.RequestWithKey(manage, http.MethodPost, "/api/v1/channel-accounts", metaAccount("WhatsApp plain"), &acct))
		var answer map[string]any
		require.Equal(t, http.StatusOK, c.RequestWithKey(manage, http.MethodPatch, "/api/v1/channel-accounts/"+acct.ID,
			map[string]any{"config": map[string]any{"messaging_tier": "TIER_1"}, "secrets": map[string]any{"access_token": "EAAGm0PX4ZCpsBAnewTokenForThePlainWordsTest0123456789abcdefXYZ"}}, &answer), "%v", answer)
		page := text(manager.page("/t/acme/audit").Find("main"))
		require.Contains(t, page, "messaging_tier")
		require.Contains(t, page, "TIER_2 -> TIER_1")
		require.Contains(t, page, "access_token")
		require.NotContains(t, page, "EAAGm0PX4ZCpsBAnewTokenForThePlainWordsTest0123456789abcdefXYZ", "a secret's value is never shown")
		require.NotContains(t, page, "map[")
	})

	t.Run("PlaceholdersFitTheProvider", func(t *testing.T) {
		for provider, want := range map[string]string{"webhook": "Booking system webhook", "ses": "Bookings e-mail", "sns": "Booking SMS"} {
			ph, ok := manager.page("/t/acme/channels/new?provider=" + provider).Find(`input[name="name"]`).Attr("placeholder")
			require.True(t, ok, provider)
			require.Equal(t, want, ph, provider)
		}
	})

	t.Run("CountsSayWhatTheyCount", func(t *testing.T) {
		doc := manager.page("/t/acme/")
		require.Contains(t, text(doc.Find(".totals-counts")), "Every message created in this period")
		quota := text(doc.Find(".quota-counts"))
		require.Contains(t, quota, "accepted this calendar month")
		require.True(t, strings.Contains(quota, "failed and queued messages do not count"), quota)
	})
}
