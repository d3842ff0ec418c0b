package app_test

import (
	"mime"
	"net/mail"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider/ses"
	"github.com/heraldhq/herald/db"
)

// TestBranding_SESWire sends a Markdown e-mail of a branded tenant through
// the real SES adapter to SES's wire fake and reads the MIME message SES
// received: the From display name is the branding's (RFC 2047 encoded),
// and both parts carry the layout, the content and the footer.
func TestBranding_SESWire(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	tn := b.tenant(t, "marke")
	rec := b.useSES(t, tn)

	_, err := b.svc.Brandings.Save(b.ctx, app.SystemActor, tn.ID, app.BrandingInput{
		LogoURL: "https://cdn.example/marke.png", BrandColor: "#1d70b8", FooterText: "Alpen Reisen GmbH, Berlin", SenderName: "Größe Reisen",
	})
	require.NoError(t, err)
	var tp *app.Template
	require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
		tp, err = tx.FindTemplate(b.ctx, tn.ID, "BOOKING_CONFIRMED", app.Email, []string{"de-DE"})
		return err
	}))
	require.Equal(t, app.BodyMarkdown, tp.BodyFormat, "a provisioned e-mail template is Markdown")
	_, _, err = b.svc.Templates.Save(b.ctx, app.SystemActor, tn.ID, tp.ID, app.TemplateInput{
		Subject: "Bestätigung {{booking_reference}}", BodyFormat: app.BodyMarkdown, IsActive: true,
		Body: "## Hallo {{passenger_name}}\n\n{{#if seat}}Platz: {{seat}}{{else}}Freie Platzwahl.{{/if}}\n\n> Reise: **{{tour_name}}**\n",
	})
	require.NoError(t, err)

	req := booking("evt-brand-1", "GARDA-9", "+4915112345678", "EMAIL")
	req["context"].(map[string]any)["passenger_name"] = "<b>Anna</b> [x](javascript:alert(1))"
	req["attachments"] = []map[string]any{attachment("plan.ics", "text/calendar", icsBytes)}
	m := b.routeOne(t, tn, req)
	require.Contains(t, m.Body, "<h2>Hallo &lt;b&gt;Anna&lt;/b&gt; [x](javascript:alert(1))</h2>", "the stored body is the content, its values inert")
	sent := b.sendOK(t, m)

	reqs := rec.requests()
	require.Len(t, reqs, 1)
	header, parts := parseRaw(t, reqs[0])
	from, err := mail.ParseAddress(header.Get("From"))
	require.NoError(t, err)
	require.Equal(t, "Größe Reisen", from.Name)
	require.Contains(t, header.Get("From"), "=?utf-8?q?", "a non-ASCII display name travels as an encoded word")
	subject, err := new(mime.WordDecoder).DecodeHeader(header.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "Bestätigung GARDA-9", subject)

	crlf := func(b []byte) string { return strings.ReplaceAll(string(b), "\r\n", "\n") }
	require.Equal(t, "text/plain", parts[0].contentType)
	require.Equal(t, "text/html", parts[1].contentType)
	htmlPart, text := crlf(parts[1].body), crlf(parts[0].body)
	require.Equal(t, app.EmailLayout(app.EmailFrame{Branding: mustBranding(t, b, tn.ID), TenantName: tn.Name, Locale: "de-DE"}, sent.Subject, sent.Body), htmlPart,
		"the sent HTML is the stored content in the tenant's layout")
	for _, want := range []string{`lang="de-DE"`, `content="light dark"`, "background:#1d70b8", `alt="` + tn.Name + `"`,
		"Freie Platzwahl.", "<strong>Gardasee</strong>", "Alpen Reisen GmbH, Berlin"} {
		require.Contains(t, htmlPart, want)
	}
	require.NotContains(t, htmlPart, "<b>Anna")
	require.NotContains(t, htmlPart, `href="javascript`)
	require.Equal(t, ses.PlainText(htmlPart), text)
	require.Contains(t, text, "Hallo <b>Anna</b>")
	require.Contains(t, text, "Alpen Reisen GmbH, Berlin")
}

func mustBranding(t *testing.T, b *pipelineBundle, tenantID uuid.UUID) app.Branding {
	t.Helper()
	br, err := b.svc.Brandings.Get(b.ctx, tenantID)
	require.NoError(t, err)
	return *br
}
