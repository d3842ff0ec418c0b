package web_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// createCallbackInConsole submits the create form and returns the secret
// page.
func createCallbackInConsole(t *testing.T, s *session, form url.Values) (*goquery.Document, *http.Response) {
	t.Helper()
	s.page("/t/acme/settings/callbacks")
	resp := s.post("/t/acme/settings/callbacks", form)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	require.NoError(t, err)
	return doc, resp
}

func TestConsoleCallbacks(t *testing.T) {
	t.Parallel()
	const hookURL = "https://hooks.acme.example/herald"

	t.Run("ManagerCreatesAndSeesTheSecretOnce", func(t *testing.T) {
		t.Parallel()
		c := setupConsole(t, webtest.Options{NoWorkers: true})
		manager := c.signIn(asManager)

		doc := manager.page("/t/acme/settings")
		require.Equal(t, "/t/acme/settings/callbacks", doc.Find(`a.button:contains("Callbacks")`).AttrOr("href", ""))
		doc = manager.page("/t/acme/settings/callbacks")
		require.Contains(t, text(doc.Find(".empty")), "No callback endpoints yet")
		require.Equal(t, len(app.CallbackEventTypes), doc.Find(`input[name=event_types]:checked`).Length(), "every event is checked to start with")

		doc, resp := createCallbackInConsole(t, manager, url.Values{
			"url": {hookURL}, "description": {"CRM"}, "event_types": {"message.delivered", "message.failed"},
		})
		require.Equal(t, http.StatusOK, resp.StatusCode, "the secret is in this answer, not behind a redirect")
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		for _, ck := range resp.Cookies() {
			require.NotEqual(t, "herald_flash", ck.Name, "the secret never travels in a cookie")
		}
		secret := doc.Find("input.secret-value").AttrOr("value", "")
		require.True(t, strings.HasPrefix(secret, "whsec_"), "secret %q", secret)
		require.Contains(t, text(doc.Find(".secret-note")), "only time it is shown")

		doc = manager.page("/t/acme/settings/callbacks")
		row := doc.Find("table.callback-list tbody tr")
		require.Equal(t, 1, row.Length())
		require.Equal(t, hookURL, text(row.Find("td").Eq(0)))
		require.Equal(t, "message.delivered, message.failed", text(row.Find("td").Eq(2)))
		require.Equal(t, "ACTIVE", text(row.Find("td").Eq(3)))
		endpoint := row.AttrOr("data-endpoint", "")
		doc = manager.page("/t/acme/settings/callbacks/" + endpoint)
		require.NotContains(t, doc.Text(), secret)
		require.NotContains(t, doc.Text(), strings.TrimPrefix(secret, "whsec_"))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'callback_endpoint.create' AND actor_type = 'user'`))
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE metadata::text LIKE '%' || $1 || '%'`, strings.TrimPrefix(secret, "whsec_")))
	})

	t.Run("BadInputStoresNothing", func(t *testing.T) {
		t.Parallel()
		c := setupConsole(t, webtest.Options{NoWorkers: true})
		manager := c.signIn(asManager)
		for _, tc := range []struct {
			form  url.Values
			field string
			want  string
		}{
			{url.Values{"url": {""}, "event_types": {"message.sent"}}, "url", "The URL is required"},
			{url.Values{"url": {"http://127.0.0.1/hook"}, "event_types": {"message.sent"}}, "url", "loopback"},
			{url.Values{"url": {"https://169.254.169.254/latest"}, "event_types": {"message.sent"}}, "url", "metadata"},
			{url.Values{"url": {hookURL}}, "event_types", "Choose at least one event type"},
			{url.Values{"url": {hookURL}, "event_types": {"message.opened"}}, "event_types", "not an event type"},
		} {
			doc, resp := createCallbackInConsole(t, manager, tc.form)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			var msg string
			if tc.field == "url" {
				msg = fieldError(doc, "input[name=url]")
				require.Equal(t, tc.form.Get("url"), doc.Find("input[name=url]").AttrOr("value", ""), "the form keeps what was typed")
			} else {
				msg = text(doc.Find("fieldset.callback-events .field-error"))
			}
			require.Contains(t, msg, tc.want)
		}
		require.Zero(t, c.Count(`SELECT count(*) FROM callback_endpoints`))
	})

	t.Run("EndpointActionsAndDeliveryLog", func(t *testing.T) {
		t.Parallel()
		c := setupConsole(t, webtest.Options{NoWorkers: true})
		manager := c.signIn(asManager)
		e, _, err := c.Services.Callbacks.Create(c.Ctx, app.CLIActor, c.Tenant.ID, app.CallbackEndpointInput{
			URL: hookURL, EventTypes: []string{app.CallbackMessageSent},
		})
		require.NoError(t, err)
		base := "/t/acme/settings/callbacks/" + e.ID.String()

		// Send test event: a pending delivery at the top of the log.
		doc := manager.page(base)
		require.Contains(t, text(doc.Find(".empty")), "No deliveries yet")
		doc = manager.follow(manager.post(base+"/test", nil))
		require.Contains(t, text(doc.Find(".flash-success")), "Test event queued")
		row := doc.Find("table.callback-deliveries tbody tr")
		require.Equal(t, 1, row.Length())
		require.Equal(t, "callback.test", text(row.Find("td").Eq(0)))
		require.Equal(t, "pending", text(row.Find("td").Eq(2)))
		require.Zero(t, row.Find(`form[action$="/replay"]`).Length(), "a pending delivery is not replayed")
		delivery := row.AttrOr("data-delivery", "")

		// As if the receiver had refused it three times.
		c.Exec(`UPDATE callback_deliveries SET status = 'failed', attempts = 3, last_status = 500, last_error = 'HTTP 500: boom',
			last_attempt_at = now(), next_attempt_at = NULL WHERE id = $1`, delivery)
		doc = manager.page(base)
		row = doc.Find("table.callback-deliveries tbody tr")
		require.Equal(t, "failed", text(row.Find("td").Eq(2)))
		require.Equal(t, "3", text(row.Find("td").Eq(3)))
		require.Equal(t, "500", text(row.Find("td").Eq(4)))
		require.Equal(t, "HTTP 500: boom", text(row.Find("td").Eq(5)))
		replay := row.Find(`form[action$="/replay"]`)
		require.Equal(t, 1, replay.Length())
		doc = manager.follow(manager.post(replay.AttrOr("action", ""), nil))
		require.Contains(t, text(doc.Find(".flash-success")), "same webhook-id")
		require.Equal(t, "pending", text(doc.Find("table.callback-deliveries tbody tr td").Eq(2)))
		// Replaying it again while it is pending is refused, readably.
		doc = manager.follow(manager.post(replay.AttrOr("action", ""), nil))
		require.Contains(t, text(doc.Find(".flash-error")), "still being attempted")
		require.Equal(t, 2, c.Count(`SELECT count(*) FROM river_job WHERE kind = 'callback' AND args->>'delivery_id' = $1`, delivery))

		// Disable, enable.
		doc = manager.follow(manager.post(base+"/disable", nil))
		require.Contains(t, text(doc.Find("dl.facts")), "DISABLED")
		require.Contains(t, text(doc.Find("dl.facts")), "Disabled by manager@acme.test")
		require.Zero(t, doc.Find(`form[action$="/test"]`).Length(), "a disabled endpoint gets no test event")
		doc = manager.follow(manager.post(base+"/enable", nil))
		require.Contains(t, text(doc.Find("dl.facts")), "ACTIVE")

		// Rotate: a new secret, shown once, the old one signing beside it.
		manager.page(base)
		resp := manager.post(base+"/rotate", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		rotated, err := goquery.NewDocumentFromReader(resp.Body)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(rotated.Find("input.secret-value").AttrOr("value", ""), "whsec_"))
		require.Contains(t, text(rotated.Find(".one-time-secret")), "signed with the old secret too")
		require.Contains(t, text(manager.page(base).Find("dl.facts")), "Old secret signs until")

		// Delete.
		doc = manager.follow(manager.post(base+"/delete", nil))
		require.Contains(t, text(doc.Find(".flash-success")), "deleted")
		require.Zero(t, c.Count(`SELECT count(*) FROM callback_endpoints`))
		require.Zero(t, c.Count(`SELECT count(*) FROM callback_deliveries`))
		_, resp = manager.get(base)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)

		for _, action := range []string{"callback_endpoint.test", "callback_delivery.replay", "callback_endpoint.update",
			"callback_endpoint.rotate_secret", "callback_endpoint.delete"} {
			require.Positive(t, c.Count(`SELECT count(*) FROM audit_log WHERE action = $1 AND actor_type = 'user' AND actor_label = 'manager@acme.test'`, action), action)
		}
	})

	t.Run("SupportAndOtherTenantsCannot", func(t *testing.T) {
		t.Parallel()
		c := setupConsole(t, webtest.Options{NoWorkers: true})
		e, _, err := c.Services.Callbacks.Create(c.Ctx, app.CLIActor, c.Tenant.ID, app.CallbackEndpointInput{
			URL: hookURL, EventTypes: []string{app.CallbackMessageSent},
		})
		require.NoError(t, err)
		base := "/t/acme/settings/callbacks/" + e.ID.String()

		support := c.signIn(asSupport)
		for _, path := range []string{"/t/acme/settings/callbacks", base} {
			_, resp := support.get(path)
			require.Equal(t, http.StatusForbidden, resp.StatusCode, path)
		}
		support.page("/t/acme/")
		require.Equal(t, http.StatusForbidden, support.post(base+"/disable", nil).StatusCode)

		other := c.signIn(asOtherManager)
		_, resp := other.get(base)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		// In its own tenant, acme's endpoint id is nobody's.
		doc := other.page("/t/globex/settings/callbacks")
		require.NotContains(t, doc.Text(), hookURL)
		_, resp = other.get("/t/globex/settings/callbacks/" + e.ID.String())
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		for _, action := range []string{"/disable", "/rotate", "/test", "/delete"} {
			require.Equal(t, http.StatusNotFound, other.post("/t/globex/settings/callbacks/"+e.ID.String()+action, nil).StatusCode, action)
		}
		require.Equal(t, http.StatusNotFound, other.post("/t/globex/settings/callbacks/"+e.ID.String()+"/deliveries/"+uuid.NewString()+"/replay", nil).StatusCode)

		got, err := c.Services.Callbacks.Get(c.Ctx, c.Tenant.ID, e.ID)
		require.NoError(t, err)
		require.True(t, got.Enabled)
		require.Nil(t, got.PreviousExpiresAt)
		require.Zero(t, c.Count(`SELECT count(*) FROM callback_deliveries`))
	})
}

// TestBrowser_Callbacks walks a manager through the Callbacks pages in
// Chromium: create an endpoint with the form, copy its secret, send a test
// event, and read the delivery log, with screenshots of each page.
func TestBrowser_Callbacks(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	ctx := newBrowser(t)
	dialogs := acceptDialogs(t, ctx)

	login(t, ctx, c.base, c.users[asManager].Email, consolePassword)
	clickNav(t, ctx, "Settings")
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.page-head a[href$="/settings/callbacks"]`)))
	requireHeading(t, ctx, "Callbacks")
	capture(t, ctx, "01-callbacks-empty")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`form input[name=url]`), "https://hooks.acme.example/herald"),
		chromedp.SendKeys(chromedp.CSS(`form input[name=description]`), "CRM"),
		// Everything but read receipts.
		chromedp.Click(chromedp.CSS(`input[name=event_types][value="message.read"]`)),
	))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`form button[type=submit].primary`)))
	requireHeading(t, ctx, "Callback endpoint created")
	secret := evalString(t, ctx, `document.querySelector('input.secret-value').value`)
	require.True(t, strings.HasPrefix(secret, "whsec_"), "secret %q", secret)
	capture(t, ctx, "02-callback-secret")

	follow(t, ctx, chromedp.Click(chromedp.CSS(`.one-time-secret a.button.primary`)))
	requireHeading(t, ctx, "Callback endpoint")
	requireText(t, ctx, "message.sent, message.delivered, message.failed, message.fallback")
	require.NotContains(t, evalString(t, ctx, `document.documentElement.outerHTML`), secret)

	asked := dialogs.count()
	follow(t, ctx, chromedp.Click(chromedp.CSS(`form[action$="/test"] button`)))
	require.Equal(t, asked+1, dialogs.count(), "sending a test event asks first")
	requireText(t, ctx, "Test event queued")
	rows := textsOf(t, ctx, `table.callback-deliveries tbody tr`)
	require.Len(t, rows, 1)
	require.Contains(t, rows[0], "callback.test")
	capture(t, ctx, "03-callback-endpoint")
}
