package app_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider/ses"
)

func TestRenderEmailBody_Markdown(t *testing.T) {
	t.Parallel()
	body := "# Hello {{passenger_name}}\n\nYour trip:\n\n- **{{tour_name}}**\n- [Manage]({{booking_url}})\n\n> Bring your passport.\n"
	vars := map[string]string{"passenger_name": "Anna", "tour_name": "Garda_see *lake*", "booking_url": "https://x.example/b?id=1&a=(2)"}
	out, missing := app.RenderEmailBody(body, app.BodyMarkdown, vars)
	require.Empty(t, missing)
	require.Equal(t, `<h1>Hello Anna</h1>
<p>Your trip:</p>
<ul>
<li><strong>Garda_see *lake*</strong></li>
<li><a href="https://x.example/b?id=1&amp;a=(2)">Manage</a></li>
</ul>
<blockquote style="margin:24px 0;padding:12px 16px;border-left:8px solid #b1b4b6;">
<p>Bring your passport.</p>
</blockquote>
`, out)
}

func TestRenderEmailBody_MarkdownSafety(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, want string }{
		{"RawHTML", "<script>alert(1)</script>\n\nHi <b>x</b> <img src=x onerror=y>", "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n<p>Hi &lt;b&gt;x&lt;/b&gt; &lt;img src=x onerror=y&gt;</p>\n"},
		{"JavascriptLink", "[click](javascript:alert(1)) [d](data:text/html,x) [rel](/path)", "<p>click d rel</p>\n"},
		{"Image", "![logo](https://x.example/a.png)", "<p>logo</p>\n"},
		{"MailtoLink", "[mail](mailto:a@x.example)", "<p><a href=\"mailto:a@x.example\">mail</a></p>\n"},
		{"NoCode", "    indented <b>\n\n`code`\n\n```\nfenced\n```", "<p>indented &lt;b&gt;</p>\n<p>`code`</p>\n<p>fenced</p>\n"},
		{"InjectedVariable", "Dear {{passenger_name}}", "<p>Dear # Head [x](javascript:alert(1)) &lt;b&gt;bold&lt;/b&gt; &amp;amp;  - item</p>\n"},
		{"VariableStartsLine", "{{passenger_name}}", "<p># Head [x](javascript:alert(1)) &lt;b&gt;bold&lt;/b&gt; &amp;amp;  - item</p>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"passenger_name": "# Head [x](javascript:alert(1)) <b>bold</b> &amp;\n\n- item"}
			out, _ := app.RenderEmailBody(tc.body, app.BodyMarkdown, vars)
			require.Equal(t, tc.want, out)
		})
	}
}

func TestRenderEmailBody_HTMLUnchanged(t *testing.T) {
	t.Parallel()
	body := "<p>Hi {{passenger_name}}</p>\n# not a heading\n<p>*stays*</p>"
	vars := map[string]string{"passenger_name": "A&B"}
	out, _ := app.RenderEmailBody(body, app.BodyHTML, vars)
	old, _ := app.Render(body, vars, true)
	require.Equal(t, old, out, "an HTML body renders exactly as before formats existed")
	out, _ = app.RenderEmailBody(body, "", vars)
	require.Equal(t, old, out, "a body without a format is HTML")
}

func TestEmailLayout(t *testing.T) {
	t.Parallel()
	f := app.EmailFrame{
		Branding:   app.Branding{LogoURL: "https://cdn.example/logo.png?a=1&b=2", BrandColor: "#1d70b8", FooterText: "Alpen Reisen GmbH\nHauptstr. 1 <Berlin>", SenderName: "Alpen"},
		TenantName: "Alpen & Co", Locale: "en-GB", UnsubscribeURL: "https://herald.example/unsubscribe/tok",
	}
	out := app.EmailLayout(f, "Your <trip>", "<p>Hello</p>")
	for _, want := range []string{
		`<html lang="en-GB">`, `<meta name="color-scheme" content="light dark">`, `@media (prefers-color-scheme: dark)`,
		`role="presentation"`, `<title>Your &lt;trip&gt;</title>`, `background:#1d70b8;`,
		`<img src="https://cdn.example/logo.png?a=1&amp;b=2" alt="Alpen &amp; Co"`, "<p>Hello</p>",
		`<p>Alpen Reisen GmbH<br>Hauptstr. 1 &lt;Berlin&gt;</p>`, `<a href="https://herald.example/unsubscribe/tok"`,
	} {
		require.Contains(t, out, want)
	}
	text := ses.PlainText(out)
	require.Equal(t, "Alpen & Co\n\nHello\n\nAlpen Reisen GmbH\nHauptstr. 1 <Berlin>\n\nUnsubscribe from these e-mails (https://herald.example/unsubscribe/tok)", text,
		"the plain-text part reads in order: who writes (the logo's alt text), the content, the footer")

	neutral := app.EmailLayout(app.EmailFrame{TenantName: "T"}, "S", "<p>x</p>")
	require.Contains(t, neutral, `lang="de-DE"`)
	require.Contains(t, neutral, "background:"+app.DefaultBrandColor)
	require.NotContains(t, neutral, "<img")
	require.NotContains(t, neutral, "nsubscribe")

	doc := "<html><body><p>own layout</p></body></html>"
	require.Equal(t, doc, app.EmailLayout(f, "S", doc), "a body that is a document of its own keeps its layout")
}

func TestValidateBranding(t *testing.T) {
	t.Parallel()
	ok, err := app.ValidateBranding(app.BrandingInput{LogoURL: " https://x.example/l.png ", BrandColor: "#1D70B8", FooterText: "a\r\nb", SenderName: " Alpen Reisen "})
	require.NoError(t, err)
	require.Equal(t, app.BrandingInput{LogoURL: "https://x.example/l.png", BrandColor: "#1d70b8", FooterText: "a\nb", SenderName: "Alpen Reisen"}, ok)
	_, err = app.ValidateBranding(app.BrandingInput{})
	require.NoError(t, err, "no branding is the neutral layout")

	for _, tc := range []struct {
		name  string
		in    app.BrandingInput
		field string
		msg   string
	}{
		{"HTTPLogo", app.BrandingInput{LogoURL: "http://x.example/l.png"}, "logo_url", "https://"},
		{"JavascriptLogo", app.BrandingInput{LogoURL: "javascript:alert(1)"}, "logo_url", "https://"},
		{"LongLogo", app.BrandingInput{LogoURL: "https://x.example/" + strings.Repeat("a", 500)}, "logo_url", "at most 500"},
		{"QuoteInLogo", app.BrandingInput{LogoURL: `https://x.example/a"onerror="x`}, "logo_url", "https://"},
		{"NotAColour", app.BrandingInput{BrandColor: "blue"}, "brand_color", "hex colour"},
		{"LowContrast", app.BrandingInput{BrandColor: "#ffdd00"}, "brand_color", "White text on #ffdd00 has a contrast of 1.34:1"},
		{"JustBelowAA", app.BrandingInput{BrandColor: "#2b8cc4"}, "brand_color", "at least 4.5:1"},
		{"LongFooter", app.BrandingInput{FooterText: strings.Repeat("ä", 501)}, "footer_text", "at most 500"},
		{"ControlFooter", app.BrandingInput{FooterText: "a\x07b"}, "footer_text", "control"},
		{"NewlineSender", app.BrandingInput{SenderName: "Alpen\r\nBcc: x@y"}, "sender_name", "one line"},
		{"AddressSender", app.BrandingInput{SenderName: `"bank@example.com" <x>`}, "sender_name", `must not contain`},
		{"LongSender", app.BrandingInput{SenderName: strings.Repeat("a", 101)}, "sender_name", "at most 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := app.ValidateBranding(tc.in)
			require.Error(t, err)
			require.Equal(t, tc.field, app.ErrorField(err))
			require.Contains(t, app.ErrorMessage(err), tc.msg)
		})
	}
	require.InDelta(t, 5.17, app.ContrastWithWhite("#1d70b8"), 0.01)
	require.InDelta(t, 21, app.ContrastWithWhite("#000000"), 0.001)
}
