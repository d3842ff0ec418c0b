package web_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/web/webtest"
)

func TestAPI_Branding(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const path = "/api/v1/branding"
	type branding struct {
		LogoURL    string `json:"logo_url"`
		BrandColor string `json:"brand_color"`
		FooterText string `json:"footer_text"`
		SenderName string `json:"sender_name"`
	}

	t.Run("EmptyThenSet", func(t *testing.T) {
		var got branding
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, path, nil, &got))
		require.Equal(t, branding{}, got, "no branding: the neutral layout")
		want := branding{LogoURL: "https://cdn.example/logo.png", BrandColor: "#1d70b8", FooterText: "Acme Travel, Berlin", SenderName: "Acme Travel"}
		require.Equal(t, http.StatusOK, b.Request(http.MethodPut, path, map[string]any{
			"logo_url": want.LogoURL, "brand_color": "#1D70B8", "footer_text": want.FooterText, "sender_name": " Acme Travel ",
		}, &got))
		require.Equal(t, want, got, "stored tidied")
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, path, nil, &got))
		require.Equal(t, want, got)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'branding.update' AND actor_type = 'api_key'`, b.Tenant.ID))
	})

	t.Run("BadInputChangesNothing", func(t *testing.T) {
		before := b.Count(`SELECT count(*) FROM audit_log WHERE action = 'branding.update'`)
		for _, tc := range []struct {
			name   string
			body   map[string]any
			status int
			code   string
			field  string
		}{
			{"HTTPLogo", map[string]any{"logo_url": "http://cdn.example/logo.png"}, 422, "invalid", "logo_url"},
			{"LowContrast", map[string]any{"brand_color": "#ffdd00"}, 422, "invalid", "brand_color"},
			{"NotAColour", map[string]any{"brand_color": "red"}, 422, "invalid", "brand_color"},
			{"LongFooter", map[string]any{"footer_text": strings.Repeat("a", 501)}, 422, "invalid", "footer_text"},
			{"HeaderInjection", map[string]any{"sender_name": "Acme\r\nBcc: all@example.com"}, 422, "invalid", "sender_name"},
			{"SpoofedAddress", map[string]any{"sender_name": `"ceo@acme.example"`}, 422, "invalid", "sender_name"},
			{"UnknownField", map[string]any{"colour": "#000000"}, 422, "unknown_field", "colour"},
			{"WrongType", map[string]any{"brand_color": 123}, 400, "malformed_json", "brand_color"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var res apiErrorBody
				require.Equal(t, tc.status, b.Request(http.MethodPut, path, tc.body, &res), "%+v", res)
				require.Equal(t, tc.code, res.Error.Code)
				require.Equal(t, tc.field, res.Error.Field, res.Error.Message)
				require.NotEmpty(t, res.Error.Message)
			})
		}
		require.Equal(t, before, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'branding.update'`))
		var got branding
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, path, nil, &got))
		require.Equal(t, "#1d70b8", got.BrandColor, "kept as EmptyThenSet stored it")
	})
}

func TestConsoleBranding(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	manager := c.signIn(asManager)
	const path = "/t/acme/settings/branding"

	t.Run("PreviewSaveAndShow", func(t *testing.T) {
		doc := manager.page(path)
		frame := doc.Find("iframe.email-preview")
		require.Equal(t, "allow-same-origin", frame.AttrOr("sandbox", "missing"), "the preview runs sandboxed: no scripts, no forms; only its height is read")
		require.Contains(t, frame.AttrOr("srcdoc", ""), `content="light dark"`, "the preview is the layout e-mails are sent in")

		form := url.Values{"logo_url": {"https://cdn.example/acme.png"}, "brand_color": {"#0b0c0c"}, "footer_text": {"Acme <Travel>"}, "sender_name": {"Acme"}}
		form.Set("action", "preview")
		doc, resp := manager.postPage(path, form)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		srcdoc := doc.Find("iframe.email-preview").AttrOr("srcdoc", "")
		require.Contains(t, srcdoc, `<img src="https://cdn.example/acme.png"`)
		require.Contains(t, srcdoc, html.EscapeString("Acme <Travel>"), "the footer is text")
		require.Zero(t, c.Count(`SELECT count(*) FROM tenant_branding WHERE tenant_id = $1`, c.Tenant.ID), "a preview saves nothing")

		form.Set("action", "save")
		resp = manager.post(path, form)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc = manager.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "Branding saved")
		require.Equal(t, "https://cdn.example/acme.png", doc.Find(`input[name=logo_url]`).AttrOr("value", ""))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'branding.update' AND actor_id = $2`,
			c.Tenant.ID, c.users[asManager].ID))
	})

	t.Run("BadInputStoresNothing", func(t *testing.T) {
		before := c.Count(`SELECT count(*) FROM audit_log WHERE action = 'branding.update'`)
		manager.page(path)
		doc, resp := manager.postPage(path, url.Values{"brand_color": {"#ffdd00"}, "action": {"save"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, text(doc.Find(".field-error")), "contrast of 1.34:1")
		require.Equal(t, "#ffdd00", doc.Find(`input[name=brand_color]`).AttrOr("value", ""), "the form keeps what was typed")
		require.Equal(t, before, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'branding.update'`))
	})

	t.Run("NoCSRF", func(t *testing.T) {
		manager.page(path)
		resp := manager.post(path, url.Values{"csrf": {"forged"}, "sender_name": {"Forged"}, "action": {"save"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM tenant_branding WHERE sender_name = 'Forged'`))
	})

	t.Run("SupportMayNot", func(t *testing.T) {
		support := c.signIn(asSupport)
		_, resp := support.get(path)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
}

// TestBrowser_Branding walks a manager through the branding page in
// Chromium: type the branding, preview it, save it, and see the saved
// preview in the light and the dark colour scheme.
func TestBrowser_Branding(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	ctx := newBrowser(t)

	login(t, ctx, c.base, c.users[asManager].Email, consolePassword)
	clickNav(t, ctx, "Settings")
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.page-head a[href$="/settings/branding"]`)))
	requireHeading(t, ctx, "E-mail branding")
	capture(t, ctx, "01-branding-neutral")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`input[name=sender_name]`), "Acme Reisen"),
		chromedp.SendKeys(chromedp.CSS(`input[name=brand_color]`), "#1d70b8"),
		chromedp.SendKeys(chromedp.CSS(`textarea[name=footer_text]`), "Acme Travel GmbH, Hauptstraße 1, 10115 Berlin"),
	))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`button[value=preview]`)))
	requireText(t, ctx, "Not saved yet")
	require.Contains(t, evalString(t, ctx, `document.querySelector('iframe.email-preview').getAttribute('srcdoc')`), "background:#1d70b8")
	capture(t, ctx, "02-branding-preview")

	follow(t, ctx, chromedp.Click(chromedp.CSS(`button[value=save]`)))
	requireText(t, ctx, "Branding saved")
	b, err := c.Services.Brandings.Get(c.Ctx, c.Tenant.ID)
	require.NoError(t, err)
	require.Equal(t, "#1d70b8", b.BrandColor)
	require.Equal(t, "Acme Reisen", b.SenderName)
	// The preview is as tall as the e-mail: its footer is on the page,
	// not cut off inside the frame.
	waitFor[bool](t, ctx, "the preview frame fits its e-mail", `(() => {
		const f = document.querySelector('iframe.email-preview'), d = f.contentDocument;
		return !!d && d.body.innerText.includes('Hauptstraße 1') && f.clientHeight + 2 >= d.documentElement.scrollHeight;
	})()`)
	screenshot(t, ctx, "03-branding-saved-light")

	_, err = chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
	require.NoError(t, err)
	require.Equal(t, "true", evalString(t, ctx, `String(matchMedia('(prefers-color-scheme: dark)').matches)`))
	screenshot(t, ctx, "04-branding-saved-dark")
}
