package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// longSMS is a booking confirmation of seven GSM-7 parts, past the
// default limit of six.
var longSMS = "Ihre Buchung {{booking_reference}} ist bestätigt. " + strings.Repeat("Wir freuen uns auf Sie! ", 42)

// TestSMSParts_TemplateSave checks the tenant's SMS length limit when a
// template is saved: through the API (422 naming the template and its
// count) and the console's editor (the form again, with the message), with
// nothing stored, until an operator raises the limit.
func TestSMSParts_TemplateSave(t *testing.T) {
	t.Parallel()

	t.Run("API", func(t *testing.T) {
		t.Parallel()
		b := setupTemplateAPI(t)
		tpl := b.find(t, "BOOKING_CONFIRMED", "SMS", "de-DE")
		path := "/api/v1/templates/" + tpl.ID.String()
		var res apiErrorBody
		status, raw := call(t, b.Herald, b.manage, http.MethodPut, path, map[string]any{"body": longSMS, "base_version": 1}, &res)
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s", raw)
		require.Equal(t, app.ReasonSMSTooLong, res.Error.Code)
		require.Equal(t, "body", res.Error.Field)
		require.Contains(t, res.Error.Message, "SMS template BOOKING_CONFIRMED (de-DE)")
		require.Contains(t, res.Error.Message, "7 SMS parts long")
		require.Contains(t, res.Error.Message, "limit is 6 parts")
		require.Equal(t, 1, b.find(t, "BOOKING_CONFIRMED", "SMS", "de-DE").Version, "nothing stored")

		// A new SMS template is held to the same limit.
		status, raw = call(t, b.Herald, b.manage, http.MethodPost, "/api/v1/templates",
			map[string]any{"trigger_event": "BOOKING_CONFIRMED", "channel": "SMS", "locale": "fr", "body": longSMS}, &res)
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s", raw)
		require.Equal(t, app.ReasonSMSTooLong, res.Error.Code)

		require.NoError(t, b.Services.Limits.Set(b.Ctx, app.CLIActor, b.Tenant.ID, app.LimitInput{MaxSMSParts: "7"}))
		var saved apiTemplate
		status, raw = call(t, b.Herald, b.manage, http.MethodPut, path, map[string]any{"body": longSMS, "base_version": 1}, &saved)
		require.Equal(t, http.StatusOK, status, "%s", raw)
		require.Equal(t, 2, saved.Version)
	})

	t.Run("Console", func(t *testing.T) {
		t.Parallel()
		c := setupConsole(t, webtest.Options{NoWorkers: true})
		s := c.signIn(asManager)
		id := c.templateID(c.Tenant.ID, "BOOKING_CONFIRMED", app.SMS, "de-DE")
		path := "/t/acme/templates/" + id.String()
		s.page(path)
		doc, resp := s.postPage(path, url.Values{"version": {"1"}, "body": {longSMS}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		msg := text(doc.Find(`textarea[name=body] ~ .field-error`))
		require.Contains(t, msg, "SMS template BOOKING_CONFIRMED (de-DE)")
		require.Contains(t, msg, "7 SMS parts long")
		require.Equal(t, longSMS, doc.Find(`textarea[name=body]`).Text(), "the typed text is kept")
		// The preview beside it says the same, with the count.
		require.Contains(t, text(doc.Find(`#template-preview .sms-count`)), "7 parts, GSM-7")
		require.Contains(t, text(doc.Find(`#template-preview .preview-problem`)), "limit is 6 parts")
		require.Equal(t, 1, c.Count(`SELECT version FROM templates WHERE id = $1`, id), "nothing stored")
	})
}

// TestSMSParts_MessageViews checks that a sent SMS shows its parts and
// encoding on its page, in its booking's panel and in the API.
func TestSMSParts_MessageViews(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	req := map[string]any{
		"event_id": "evt-sms-parts", "trigger_event": "BOOKING_CONFIRMED", "channels": []string{"SMS"},
		"recipients": []map[string]any{{"name": "Łukasz Nowak", "phone": "+4915123456789", "locale": "de-DE"}},
		"context": map[string]any{"passenger_name": "Łukasz Nowak", "tour_name": "„Gardasee“", "departure_date": "2027-04-12",
			"booking_reference": "BK-SMS", "deposit_amount": "150,00\u00a0€"},
		"conversation_context": map[string]any{"type": "booking", "id": "BK-SMS"},
	}
	ms := c.routeNow(c.Tenant.ID, c.Submit(req))
	require.Len(t, ms, 1)
	m := ms[0]
	require.Equal(t, 1, *m.SMSParts)
	require.Equal(t, app.EncodingGSM7, *m.SMSEncoding)
	require.Contains(t, m.Body, `"Gardasee"`)

	s := c.signIn(asSupport)
	doc := s.page("/t/acme/messages/" + m.ID.String())
	require.Equal(t, "1 part · GSM-7", text(doc.Find(`.facts .sms-count`)))
	doc = s.page("/t/acme/bookings/booking/BK-SMS")
	require.Equal(t, "1 part · GSM-7", text(doc.Find(`#message-`+m.ID.String()+` .sms-count`)))

	key := keyWith(t, c.Herald, c.Tenant.ID, app.ScopeRead)
	var got struct {
		Messages []map[string]any `json:"messages"`
	}
	status, raw := call(t, c.Herald, key, http.MethodGet, "/api/v1/messages?booking_id=BK-SMS", nil, &got)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.Len(t, got.Messages, 1)
	require.EqualValues(t, 1, got.Messages[0]["sms_parts"])
	require.Equal(t, "GSM7", got.Messages[0]["sms_encoding"])
}

// TestBrowser_SMSPartsCount types into an SMS template in Chromium: the
// live preview counts the rendered sample's parts and encoding as the
// text grows, and says when it is past the limit.
func TestBrowser_SMSPartsCount(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	id := c.templateID(c.Tenant.ID, "BOOKING_CONFIRMED", app.SMS, "de-DE")
	ctx := newBrowser(t)
	login(t, ctx, c.base, c.users[asManager].Email, consolePassword)
	follow(t, ctx, chromedp.Navigate(c.base+"/t/acme/templates/"+id.String()))
	requireHeading(t, ctx, "BOOKING_CONFIRMED · SMS · de-DE")
	first := waitFor[string](t, ctx, "the preview counts the default text",
		`(() => { const e = document.querySelector('#template-preview .sms-count'); return e ? e.textContent : ''; })()`)
	require.Contains(t, first, "1 part, GSM-7")

	// A typographic apostrophe and enough text for a second part.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Focus(chromedp.CSS(`#template-form textarea[name=body]`)),
		chromedp.Evaluate[chromedp.Void](`(() => { const b = document.querySelector('#template-form textarea[name=body]'); b.setSelectionRange(b.value.length, b.value.length); })()`),
		chromedp.SendKeys(chromedp.CSS(`#template-form textarea[name=body]`), " Bis bald – wir freu’n uns!"),
	))
	counted := waitFor[string](t, ctx, "the preview counts two parts",
		`(() => { const e = document.querySelector('#template-preview .sms-count'); return e && e.textContent.includes('2 parts') ? e.textContent : ''; })()`)
	require.Contains(t, counted, "2 parts, GSM-7 (2 characters replaced)")
	require.Contains(t, evalString(t, ctx, `document.querySelector('#template-preview pre.preview').textContent`), "Bis bald - wir freu'n uns!")
	capture(t, ctx, "01-sms-count")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#template-form textarea[name=body]`), strings.Repeat(" Gute Reise!", 70)),
	))
	problem := waitFor[string](t, ctx, "the preview says the text is too long",
		`(() => { const e = document.querySelector('#template-preview .preview-problem'); return e ? e.textContent : ''; })()`)
	require.Contains(t, problem, "limit is 6 parts")
	requireNoPageErrors(t, ctx)
	capture(t, ctx, "02-sms-too-long")
}
