package app_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// fileLinks returns the /f/ links of a text, in order.
func fileLinks(text string) []string {
	var out []string
	for _, w := range strings.Fields(text) {
		if strings.Contains(w, "/f/") {
			out = append(out, w)
		}
	}
	return out
}

// linkToken is the token of a /f/ link.
func linkToken(link string) string { return link[strings.LastIndex(link, "/f/")+3:] }

// sentDetail is the detail of the message's send on its timeline.
func (b *pipelineBundle) sentDetail(t *testing.T, m *app.Message) map[string]any {
	t.Helper()
	for _, e := range b.timeline(t, m.TenantID, m.ID) {
		if e.ToStatus != nil && *e.ToStatus == app.MessageSent {
			return e.Detail
		}
	}
	require.Fail(t, "no send on the timeline")
	return nil
}

// TestAttachments_SMS sends an SMS whose default template has {{files}}:
// the stored text carries one short link per file, its parts are counted
// with the links, SNS gets that text, and each link serves its file until
// it expires.
func TestAttachments_SMS(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	tn := b.tenant(t, "smsfiles")
	_, aws := b.useAWS(t, tn, app.SMS)
	aws.reply(t, "provider/sns/testdata/publish.http")

	req := booking("evt-sms-files", "GARDA-7", "+4915112345678", "SMS")
	req["attachments"] = []map[string]any{attachment("Rechnung.pdf", "application/pdf", pdfBytes)}
	req["recipients"].([]map[string]any)[0]["attachments"] = []map[string]any{attachment("reise.ics", "text/calendar", icsBytes)}
	m := b.routeOne(t, tn, req)

	links := fileLinks(m.Body)
	require.Len(t, links, 2, m.Body)
	require.True(t, strings.HasPrefix(m.Body, "Ihre Buchung GARDA-7 ist bestätigt"), m.Body)
	count := app.CountSMS(m.Body)
	require.Equal(t, count.Parts, *m.SMSParts, "the parts count the links at their real length")
	require.Greater(t, *m.SMSParts, 1)

	b.sendOK(t, m)
	require.Equal(t, m.Body, aws.lastForm(t).Get("Message"))
	detail := b.sentDetail(t, m)
	require.NotContains(t, detail, app.ReasonAttachmentsNotSent)

	// Each link serves its file's bytes, the event's first.
	for i, want := range [][]byte{pdfBytes, icsBytes} {
		f, err := b.svc.Files.Open(b.ctx, linkToken(links[i]))
		require.NoError(t, err)
		require.Equal(t, want, f.Content)
	}

	// A changed character, a token of no file, a link past its expiry:
	// the same not found.
	token := linkToken(links[0])
	tampered := token[:len(token)-2] + map[bool]string{true: "AA", false: "BA"}[strings.HasSuffix(token, "BA")]
	for _, bad := range []string{tampered, "x", strings.Repeat("A", 70), ""} {
		_, err := b.svc.Files.Open(b.ctx, bad)
		require.Equal(t, app.ENOTFOUND, app.ErrorCode(err), "token %q", bad)
	}
	b.clock.Advance(app.FileLinkTTL + time.Minute)
	_, err := b.svc.Files.Open(b.ctx, token)
	require.Equal(t, app.ENOTFOUND, app.ErrorCode(err), "an expired link")
}

// TestAttachments_SMSWithoutFiles leaves no trace of {{files}} in an SMS
// without files.
func TestAttachments_SMSWithoutFiles(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	tn := b.tenant(t, "smsnofiles")
	m := b.routeOne(t, tn, booking("evt-sms-nofiles", "GARDA-8", "+4915112345678", "SMS"))
	require.True(t, strings.HasSuffix(m.Body, "Wir freuen uns auf Sie!"), "%q", m.Body)
	require.NotContains(t, m.Body, "{{")
	require.Empty(t, fileLinks(m.Body))
}

// TestFileLinks_OtherTenant refuses a link whose tenant was changed: the
// MAC covers the tenant, and the file is looked up in the link's tenant.
func TestFileLinks_OtherTenant(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	tn := b.tenant(t, "linka")
	other := b.tenant(t, "linkb")
	req := booking("evt-link-tenant", "GARDA-9", "+4915112345678", "SMS")
	req["attachments"] = []map[string]any{attachment("Rechnung.pdf", "application/pdf", pdfBytes)}
	m := b.routeOne(t, tn, req)
	f := b.files(t, m)[0]

	links := app.NewFileLinks("https://herald.example.com", b.cfg.SecretKey)
	good := links.Token(f, b.clock.Now().Add(time.Hour))
	_, err := b.svc.Files.Open(b.ctx, good)
	require.NoError(t, err)

	forged := *f
	forged.TenantID = other.ID
	_, err = b.svc.Files.Open(b.ctx, links.Token(&forged, b.clock.Now().Add(time.Hour)))
	require.Equal(t, app.ENOTFOUND, app.ErrorCode(err), "the file is not the other tenant's")

	// Another deployment's key signs nothing here.
	foreign := app.NewFileLinks("https://herald.example.com", []byte("another deployment's secret key!"))
	_, err = b.svc.Files.Open(b.ctx, foreign.Token(f, b.clock.Now().Add(time.Hour)))
	require.Equal(t, app.ENOTFOUND, app.ErrorCode(err))

	// Without its nonce (a guess from the ids alone) the MAC is wrong.
	guessed := *f
	guessed.TokenNonce = make([]byte, 16)
	_, err = b.svc.Files.Open(b.ctx, links.Token(&guessed, b.clock.Now().Add(time.Hour)))
	require.Equal(t, app.ENOTFOUND, app.ErrorCode(err))
}

// TestAttachments_WhatsApp sends files through the real Meta adapter
// against the fake Graph API: inside the window as one document message
// with the text as caption and the other file's link below it; outside it
// as the approved template with a DOCUMENT header.
func TestAttachments_WhatsApp(t *testing.T) {
	t.Parallel()

	withFiles := func(id string) map[string]any {
		req := booking(id, "GARDA-"+id, anna, "WHATSAPP")
		req["attachments"] = []map[string]any{attachment("Rechnung.pdf", "application/pdf", pdfBytes)}
		req["recipients"].([]map[string]any)[0]["attachments"] = []map[string]any{attachment("reise.ics", "text/calendar", icsBytes)}
		return req
	}

	t.Run("InsideWindowDocument", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "wadoc")
		acct := b.useMeta(t, tn, nil)
		b.inbound(t, tn, acct, anna, b.clock.Now().Add(-time.Hour))
		m := b.routeOne(t, tn, withFiles("1"))
		b.sendOK(t, m)

		sends := b.meta.received()
		require.Len(t, sends, 1, "one Meta message carries the text and the files")
		body := sends[0].Body
		require.Equal(t, "document", body["type"])
		require.NotContains(t, body, "text")
		doc := body["document"].(map[string]any)
		require.Equal(t, "Rechnung.pdf", doc["filename"])
		require.Contains(t, doc["link"], "/f/")
		require.NotContains(t, doc, "id")
		caption := doc["caption"].(string)
		require.True(t, strings.HasPrefix(caption, m.Body), caption)
		require.Len(t, fileLinks(caption), 1, "the calendar entry, which Meta takes as no document, goes as its link")

		// Meta fetches the document from its link: the PDF's bytes.
		f, err := b.svc.Files.Open(b.ctx, linkToken(doc["link"].(string)))
		require.NoError(t, err)
		require.Equal(t, pdfBytes, f.Content)
		f, err = b.svc.Files.Open(b.ctx, linkToken(fileLinks(caption)[0]))
		require.NoError(t, err)
		require.Equal(t, "text/calendar", f.ContentType)
		listed, _ := json.Marshal(b.sentDetail(t, m)["attachments"])
		require.Contains(t, string(listed), app.SHA256Hex(pdfBytes))
		require.Contains(t, string(listed), app.SHA256Hex(icsBytes))
	})

	t.Run("OutsideWindowDocumentHeader", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "wahead")
		acct := b.useMeta(t, tn, nil)
		name, lang := defaultMetaTemplate(t, "BOOKING_CONFIRMED", "de-DE")
		b.metaHeader(t, tn, acct, name, lang, "DOCUMENT")
		m := b.routeOne(t, tn, withFiles("2"))
		b.sendOK(t, m)

		body := b.meta.received()[0].Body
		require.Equal(t, "template", body["type"])
		components := body["template"].(map[string]any)["components"].([]any)
		header := components[0].(map[string]any)
		require.Equal(t, "header", header["type"])
		param := header["parameters"].([]any)[0].(map[string]any)
		require.Equal(t, "document", param["type"])
		doc := param["document"].(map[string]any)
		require.Equal(t, "Rechnung.pdf", doc["filename"])
		require.Contains(t, doc["link"], "/f/")
		require.Equal(t, "body", components[1].(map[string]any)["type"])

		// The template's text is fixed: the calendar entry could not go.
		notSent, _ := json.Marshal(b.sentDetail(t, m)[app.ReasonAttachmentsNotSent])
		require.Contains(t, string(notSent), "reise.ics")
		require.NotContains(t, string(notSent), "Rechnung.pdf")
	})

	t.Run("InsideWindowNoDocumentGoesAsLinks", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "walinks")
		acct := b.useMeta(t, tn, nil)
		b.inbound(t, tn, acct, anna, b.clock.Now().Add(-time.Hour))
		req := booking("4", "GARDA-4", anna, "WHATSAPP")
		// A calendar entry and a GIF: Meta takes neither as a document
		// or image message.
		req["attachments"] = []map[string]any{attachment("reise.ics", "text/calendar", icsBytes),
			attachment("bus.gif", "image/gif", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))}
		m := b.routeOne(t, tn, req)
		b.sendOK(t, m)

		body := b.meta.received()[0].Body
		require.Equal(t, "text", body["type"])
		text := body["text"].(map[string]any)["body"].(string)
		require.True(t, strings.HasPrefix(text, m.Body), text)
		links := fileLinks(text)
		require.Len(t, links, 2, "each file as its link")
		f, err := b.svc.Files.Open(b.ctx, linkToken(links[1]))
		require.NoError(t, err)
		require.Equal(t, "image/gif", f.ContentType)
		require.NotContains(t, b.sentDetail(t, m), app.ReasonAttachmentsNotSent)
	})

	t.Run("OutsideWindowTemplateWithoutHeader", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "wanohead")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, withFiles("3"))
		b.sendOK(t, m)

		body := b.meta.received()[0].Body
		require.Equal(t, "template", body["type"])
		components := body["template"].(map[string]any)["components"].([]any)
		require.Len(t, components, 1)
		detail := b.sentDetail(t, m)
		notSent, _ := json.Marshal(detail[app.ReasonAttachmentsNotSent])
		require.Contains(t, string(notSent), "Rechnung.pdf")
		require.Contains(t, string(notSent), "reise.ics")
		require.Contains(t, string(notSent), "no document or image header")
		require.NotContains(t, detail, "attachments")
	})
}

// defaultMetaTemplate is the Meta template name and language of an
// event's default WhatsApp template.
func defaultMetaTemplate(t *testing.T, event, locale string) (string, string) {
	t.Helper()
	for _, d := range app.DefaultTemplates() {
		if d.Event == event && d.Channel == app.WhatsApp && d.Locale == locale && d.WhatsApp != nil {
			return d.WhatsApp.Name, d.WhatsApp.Language
		}
	}
	require.Fail(t, "no default WhatsApp template", "%s %s", event, locale)
	return "", ""
}

// metaHeader records an approved Meta template with a header of format.
func (b *pipelineBundle) metaHeader(t *testing.T, tn *app.Tenant, acct *app.ChannelAccount, name, language, format string) {
	t.Helper()
	require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
		return tx.UpsertMetaTemplate(b.ctx, &app.MetaTemplate{TenantID: tn.ID, ChannelAccountID: acct.ID, Name: name, Language: language,
			Status: app.MetaTemplateApproved, Category: app.MetaCategoryUtility, HeaderFormat: format, SyncedAt: b.clock.Now()})
	}))
}
