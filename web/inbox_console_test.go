package web_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// passengerWrites records a WhatsApp message from phone to the tenant's
// active WhatsApp account, as the Meta webhook does.
func passengerWrites(t *testing.T, h *webtest.Herald, phone, text string) {
	t.Helper()
	passengerWroteAt(t, h, phone, text, time.Now())
}

// passengerWroteAt is passengerWrites with the provider's time of the
// message.
func passengerWroteAt(t *testing.T, h *webtest.Herald, phone, text string, at time.Time) {
	t.Helper()
	acct := h.ActiveAccount(app.WhatsApp)
	_, err := h.Services.Inbound.Record(h.Ctx, h.Tenant.ID, app.InboundMessage{ChannelAccountID: &acct.ID, Channel: app.WhatsApp,
		Provider: acct.Provider, ExternalID: "wamid." + uuid.NewString(), From: phone, Kind: "text", Body: text, ReceivedAt: at})
	require.NoError(t, err)
}

func TestInbox_Console(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})
	h := c.Herald
	bookTrip(t, h, "T-INBOX", []tripPassenger{
		{booking: "BK-C1", name: "Anna Schmidt", phone: "+4915123450001", locale: "en"},
		{booking: "BK-C2", name: "Ben Meyer", phone: "+4915123450002", locale: "en"},
	})
	passengerWrites(t, h, "+4915123450001", "Can I bring a bike?")
	passengerWrites(t, h, "+4915123450002", "Thanks, see you!")
	support := c.signIn(asSupport)

	t.Run("UnansweredCountForAlerts", func(t *testing.T) {
		n, err := h.Services.Inbox.Unanswered(h.Ctx, h.Tenant.ID, 0)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		n, err = h.Services.Inbox.Unanswered(h.Ctx, h.Tenant.ID, time.Hour)
		require.NoError(t, err)
		require.Zero(t, n, "none has waited an hour yet")
	})

	t.Run("ListUnansweredFirstPerTenantAndTrip", func(t *testing.T) {
		doc := support.page("/t/acme/inbox")
		items := doc.Find(".inbox-item")
		require.Equal(t, 2, items.Length())
		require.Equal(t, 2, doc.Find(".inbox-item [data-unanswered]").Length())
		require.Contains(t, text(items.First()), "Anna Schmidt", "the longest waiting first")
		require.Contains(t, text(items.First()), "booking BK-C1")
		require.Equal(t, 2, support.page("/t/acme/inbox?trip=T-INBOX").Find(".inbox-item").Length())
		require.Zero(t, support.page("/t/acme/inbox?trip=T-OTHER").Find(".inbox-item").Length())
		require.Zero(t, support.page("/t/acme/inbox?status=RESOLVED").Find(".inbox-item").Length())
	})

	// Anna's conversation, first in the list.
	href, _ := support.page("/t/acme/inbox").Find(".inbox-item .inbox-who").First().Attr("href")
	convID := href[len("/t/acme/inbox/"):]

	t.Run("ReplyOnceFromTheConversation", func(t *testing.T) {
		page := support.page(href)
		require.Contains(t, text(page.Find(".reply-option[data-channel=WHATSAPP] [data-why]")), "free text until")
		key, _ := page.Find(".reply-option[data-channel=WHATSAPP] input[name=key]").Attr("value")
		form := url.Values{"key": {key}, "channel": {"WHATSAPP"}, "body": {"Yes, bikes travel free."}}
		resp := support.post(href+"/reply", form)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		resp = support.post(href+"/reply", form)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM messages WHERE conversation_id = $1 AND trigger_event = $2`, convID, app.ReplyTrigger),
			"a double click sends once")
		after := support.follow(resp)
		require.Contains(t, text(after.Find(".inbox-thread")), "Yes, bikes travel free.")
		require.Zero(t, after.Find("[data-unanswered]").Length())
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM audit_log WHERE action = 'conversation.reply' AND target_id = $1 AND actor_label = 'support@acme.test'`, convID))
	})

	t.Run("BadInputStoresNothing", func(t *testing.T) {
		support.page(href)
		resp := support.post(href+"/reply", url.Values{"key": {"k-empty"}, "channel": {"WHATSAPP"}, "body": {"   "}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(support.follow(resp).Find(".flash")), "Write an answer")
		resp = support.post(href+"/reply", url.Values{"key": {"k-bad"}, "channel": {"WHATSAPP"}, "template_id": {"not-a-uuid"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM messages WHERE conversation_id = $1 AND trigger_event = $2`, convID, app.ReplyTrigger))
		resp = support.post(href+"/assign", url.Values{"user_id": {c.users[asOtherManager].ID.String()}})
		require.Contains(t, text(support.follow(resp).Find(".flash")), "active users")
		require.Zero(t, h.Count(`SELECT count(*) FROM conversations WHERE assigned_to IS NOT NULL`))
	})

	t.Run("AssignSnoozeResolveReopen", func(t *testing.T) {
		support.page(href)
		resp := support.post(href+"/assign", url.Values{"user_id": {c.users[asSupport].ID.String()}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM conversations WHERE id = $1 AND assigned_to = $2`, convID, c.users[asSupport].ID))
		for _, to := range []string{"SNOOZED", "RESOLVED"} {
			support.page(href)
			resp = support.post(href+"/status", url.Values{"status": {to}})
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		}
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM conversations WHERE id = $1 AND status = 'RESOLVED'`, convID))
		// Resolved cannot be snoozed.
		support.page(href)
		resp = support.post(href+"/status", url.Values{"status": {"SNOOZED"}})
		require.Contains(t, text(support.follow(resp).Find(".flash")), "cannot become snoozed")
		passengerWrites(t, h, "+4915123450001", "And a second bike?")
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM conversations WHERE id = $1 AND status = 'OPEN'`, convID), "the passenger reopened it")
	})

	t.Run("ReplyFromTheBookingPanel", func(t *testing.T) {
		panel := support.page("/t/acme/bookings/booking/BK-C2")
		form := panel.Find("form[data-panel-reply]")
		require.Equal(t, 1, form.Length())
		action, _ := form.Attr("action")
		key, _ := form.Find("input[name=key]").Attr("value")
		back, _ := form.Find("input[name=back]").Attr("value")
		resp := support.post(action, url.Values{"key": {key}, "channel": {"WHATSAPP"}, "back": {back}, "body": {"See you on Monday."}})
		require.Equal(t, "/t/acme/bookings/booking/BK-C2", resp.Header.Get("Location"))
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM messages WHERE entity_id = 'BK-C2' AND trigger_event = $1 AND body = 'See you on Monday.'`, app.ReplyTrigger))
	})

	t.Run("AnotherTenantSeesNothing", func(t *testing.T) {
		other := c.signIn(asOtherManager)
		_, resp := other.get("/t/acme/inbox/" + convID)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Zero(t, other.page("/t/globex/inbox").Find(".inbox-item").Length())
		_, resp = other.get("/t/globex/inbox/" + convID)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}
