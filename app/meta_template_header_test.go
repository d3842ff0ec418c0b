package app_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// TestMetaTemplates_SubmitWithHeader submits a template with a DOCUMENT
// header through the real Meta adapter against the fake Graph API: the
// example file goes up through the app's Resumable Upload API, its handle
// into the template's header, and once Meta approves it, a booking's PDF
// rides in that header outside the 24-hour window.
func TestMetaTemplates_SubmitWithHeader(t *testing.T) {
	t.Parallel()

	withHeader := func(t *testing.T, b *pipelineBundle, tn *app.Tenant, header string) *app.Template {
		t.Helper()
		var tpl *app.Template
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
			tpl, err = tx.TemplateByKey(b.ctx, tn.ID, "BOOKING_CONFIRMED", app.WhatsApp, "de-DE")
			return err
		}))
		spec, err := tpl.Spec()
		require.NoError(t, err)
		spec.Header = header
		saved, _, err := b.svc.Templates.Save(b.ctx, app.CLIActor, tn.ID, tpl.ID, app.TemplateInput{Body: tpl.Body, WhatsAppTemplate: spec, IsActive: true})
		require.NoError(t, err)
		return saved
	}

	t.Run("UploadsTheExampleAndSendsTheFileInTheHeader", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "wasubmit")
		acct := b.useMeta(t, tn, app.Attrs{"app_id": "1234567890123456"})
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			return tx.ReplaceMetaTemplates(b.ctx, tn.ID, acct.ID, nil)
		}))
		tpl := withHeader(t, b, tn, app.MetaHeaderDocument)

		mt, err := b.svc.MetaTemplates.Submit(b.ctx, app.CLIActor, tn.ID, acct.ID, tpl.ID)
		require.NoError(t, err)
		require.Equal(t, app.MetaTemplatePending, mt.Status)
		require.Equal(t, app.MetaHeaderDocument, mt.HeaderFormat)

		b.meta.catalog.mu.Lock()
		uploads := append([]catalogUpload(nil), b.meta.catalog.uploads...)
		b.meta.catalog.mu.Unlock()
		require.Len(t, uploads, 1)
		require.Equal(t, "application/pdf", uploads[0].query.Get("file_type"))
		require.True(t, bytes.HasPrefix(uploads[0].body, []byte("%PDF-")), "the example is a PDF")
		require.True(t, bytes.Contains(uploads[0].body, []byte("Sample document")), "that says it is a sample")

		subs := b.meta.catalog.submissions()
		require.Len(t, subs, 1)
		components := subs[0]["components"].([]any)
		require.Len(t, components, 2)
		require.Equal(t, map[string]any{"type": "HEADER", "format": "DOCUMENT",
			"example": map[string]any{"header_handle": []any{metaUploadHandle}}}, components[0])
		require.Equal(t, "BODY", components[1].(map[string]any)["type"])
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'meta_template.submit' AND metadata->>'header' = 'DOCUMENT'`, tn.ID))

		// Meta approves it: its webhook says nothing of the header, which
		// stays as submitted.
		applied, err := b.svc.MetaTemplates.ApplyStatusUpdate(b.ctx, tn.ID, app.MetaTemplateUpdate{WABAID: "102290129340398",
			Event: "APPROVED", TemplateID: mt.MetaID, Name: mt.Name, Language: mt.Language, Category: "UTILITY"})
		require.NoError(t, err)
		require.True(t, applied)
		got := b.metaTemplates(t, tn, acct)[mt.Name+"/"+mt.Language]
		require.Equal(t, app.MetaTemplateApproved, got.Status)
		require.Equal(t, app.MetaHeaderDocument, got.HeaderFormat)

		// The tenant's other templates (English among them) are approved
		// as before the submission.
		b.approveDefaults(t, tn, acct)
		require.Equal(t, app.MetaHeaderDocument, b.metaTemplates(t, tn, acct)[mt.Name+"/"+mt.Language].HeaderFormat)
		req := booking("hd1", "GARDA-HD1", anna, "WHATSAPP")
		req["attachments"] = []map[string]any{attachment("Ticket.pdf", "application/pdf", pdfBytes)}
		m := b.routeOne(t, tn, req)
		b.sendOK(t, m)
		body := b.meta.received()[0].Body
		require.Equal(t, "template", body["type"])
		header := body["template"].(map[string]any)["components"].([]any)[0].(map[string]any)
		require.Equal(t, "header", header["type"])
		doc := header["parameters"].([]any)[0].(map[string]any)["document"].(map[string]any)
		require.Equal(t, "Ticket.pdf", doc["filename"])
	})

	t.Run("ImageHeaderUploadsAPicture", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "waimage")
		acct := b.useMeta(t, tn, app.Attrs{"app_id": "1234567890123456"})
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			return tx.ReplaceMetaTemplates(b.ctx, tn.ID, acct.ID, nil)
		}))
		mt, err := b.svc.MetaTemplates.Submit(b.ctx, app.CLIActor, tn.ID, acct.ID, withHeader(t, b, tn, app.MetaHeaderImage).ID)
		require.NoError(t, err)
		require.Equal(t, app.MetaHeaderImage, mt.HeaderFormat)
		b.meta.catalog.mu.Lock()
		defer b.meta.catalog.mu.Unlock()
		require.Len(t, b.meta.catalog.uploads, 1)
		require.Equal(t, "image/png", b.meta.catalog.uploads[0].query.Get("file_type"))
		require.True(t, bytes.HasPrefix(b.meta.catalog.uploads[0].body, []byte("\x89PNG")))
	})

	t.Run("WithoutAppIDNothingIsSubmitted", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "wanoapp")
		acct := b.useMeta(t, tn, nil)
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			return tx.ReplaceMetaTemplates(b.ctx, tn.ID, acct.ID, nil)
		}))
		_, err := b.svc.MetaTemplates.Submit(b.ctx, app.CLIActor, tn.ID, acct.ID, withHeader(t, b, tn, app.MetaHeaderDocument).ID)
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
		require.Contains(t, app.ErrorMessage(err), "app_id")
		require.Empty(t, b.meta.catalog.submissions())
		require.Empty(t, b.metaTemplates(t, tn, acct))
		require.Zero(t, b.count(t, `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'meta_template.submit'`, tn.ID))
	})

	t.Run("UnknownHeaderIsRefused", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "wavideo")
		var tpl *app.Template
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
			tpl, err = tx.TemplateByKey(b.ctx, tn.ID, "BOOKING_CONFIRMED", app.WhatsApp, "de-DE")
			return err
		}))
		spec, err := tpl.Spec()
		require.NoError(t, err)
		spec.Header = "VIDEO"
		_, _, err = b.svc.Templates.Save(b.ctx, app.CLIActor, tn.ID, tpl.ID, app.TemplateInput{Body: tpl.Body, WhatsAppTemplate: spec, IsActive: true})
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
		require.Equal(t, "whatsapp_template", app.ErrorField(err))
	})
}
