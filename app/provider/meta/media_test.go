package meta_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
)

const fileLink = "https://herald.example.com/f/AAAAtoken"

func pdfFile() provider.File {
	return provider.File{Filename: "Rechnung März.pdf", ContentType: "application/pdf", Content: []byte("%PDF-1.4"), Link: fileLink}
}

// TestProvider_SendMedia checks document, image and media-header payloads
// against Meta's documented shapes (Messages API: document and image
// messages; template messages with a media header parameter).
func TestProvider_SendMedia(t *testing.T) {
	t.Parallel()

	t.Run("Document", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
		m := outbound()
		m.Attachments = []provider.File{pdfFile()}
		_, err := b.prov.Send(context.Background(), m)
		require.NoError(t, err)
		require.JSONEq(t, `{
			"messaging_product": "whatsapp",
			"recipient_type": "individual",
			"to": "+4915112345678",
			"type": "document",
			"document": {"link": "`+fileLink+`", "filename": "Rechnung März.pdf", "caption": "Ihre Buchung ist bestätigt."},
			"biz_opaque_callback_data": "herald:`+m.MessageID.String()+`"
		}`, string(b.only(t).Body))
	})

	t.Run("UploadedDocument", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
		m := outbound()
		f := pdfFile()
		f.MediaID = "1013859600285441"
		m.Attachments = []provider.File{f}
		_, err := b.prov.Send(context.Background(), m)
		require.NoError(t, err)
		require.JSONEq(t, `{
			"messaging_product": "whatsapp",
			"recipient_type": "individual",
			"to": "+4915112345678",
			"type": "document",
			"document": {"id": "1013859600285441", "filename": "Rechnung März.pdf", "caption": "Ihre Buchung ist bestätigt."},
			"biz_opaque_callback_data": "herald:`+m.MessageID.String()+`"
		}`, string(b.only(t).Body), "an uploaded file goes by its id, not its link")
	})

	t.Run("Image", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
		m := outbound()
		m.Attachments = []provider.File{{Filename: "bus.png", ContentType: "image/png", Content: []byte("png"), Link: fileLink}}
		_, err := b.prov.Send(context.Background(), m)
		require.NoError(t, err)
		require.JSONEq(t, `{
			"messaging_product": "whatsapp",
			"recipient_type": "individual",
			"to": "+4915112345678",
			"type": "image",
			"image": {"link": "`+fileLink+`", "caption": "Ihre Buchung ist bestätigt."},
			"biz_opaque_callback_data": "herald:`+m.MessageID.String()+`"
		}`, string(b.only(t).Body))
	})

	t.Run("TemplateDocumentHeader", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
		m := outbound()
		f := pdfFile()
		m.Template = &provider.WhatsAppTemplate{Name: "booking_confirmed", Language: "de", Parameters: []string{"Ada"},
			HeaderFormat: "DOCUMENT", Header: &f}
		_, err := b.prov.Send(context.Background(), m)
		require.NoError(t, err)
		require.JSONEq(t, `{
			"messaging_product": "whatsapp",
			"recipient_type": "individual",
			"to": "+4915112345678",
			"type": "template",
			"template": {
				"name": "booking_confirmed",
				"language": {"policy": "deterministic", "code": "de"},
				"components": [
					{"type": "header", "parameters": [{"type": "document", "document": {"link": "`+fileLink+`", "filename": "Rechnung März.pdf"}}]},
					{"type": "body", "parameters": [{"type": "text", "text": "Ada"}]}
				]
			},
			"biz_opaque_callback_data": "herald:`+m.MessageID.String()+`"
		}`, string(b.only(t).Body))
	})

	t.Run("TemplateImageHeader", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
		m := outbound()
		m.Template = &provider.WhatsAppTemplate{Name: "trip_map", Language: "en", HeaderFormat: "IMAGE",
			Header: &provider.File{Filename: "map.jpg", ContentType: "image/jpeg", Content: []byte("jpg"), Link: fileLink}}
		_, err := b.prov.Send(context.Background(), m)
		require.NoError(t, err)
		require.JSONEq(t, `{
			"messaging_product": "whatsapp",
			"recipient_type": "individual",
			"to": "+4915112345678",
			"type": "template",
			"template": {
				"name": "trip_map",
				"language": {"policy": "deterministic", "code": "en"},
				"components": [{"type": "header", "parameters": [{"type": "image", "image": {"link": "`+fileLink+`"}}]}]
			},
			"biz_opaque_callback_data": "herald:`+m.MessageID.String()+`"
		}`, string(b.only(t).Body))
	})
}

// TestProvider_SendMediaRefused refuses, without a request, what Meta
// would refuse: a type it takes as no document or image, a document over
// 100 MB or an image over 5 MB, a caption over 1024 characters, a media
// header without its file, a file without link or id.
func TestProvider_SendMediaRefused(t *testing.T) {
	t.Parallel()

	big := func(n int) []byte { return make([]byte, n) }
	tests := []struct {
		name string
		edit func(m *provider.Outbound)
		code string
	}{
		{"CalendarEntry", func(m *provider.Outbound) {
			m.Attachments = []provider.File{{Filename: "reise.ics", ContentType: "text/calendar", Content: []byte("x"), Link: fileLink}}
		}, "unsupported_media"},
		{"WalletPass", func(m *provider.Outbound) {
			m.Attachments = []provider.File{{Filename: "ticket.pkpass", ContentType: "application/vnd.apple.pkpass", Content: []byte("x"), Link: fileLink}}
		}, "unsupported_media"},
		{"DocumentOver100MB", func(m *provider.Outbound) {
			f := pdfFile()
			f.Content = big(provider.MaxWhatsAppDocumentBytes + 1)
			m.Attachments = []provider.File{f}
		}, "media_too_large"},
		{"ImageOver5MB", func(m *provider.Outbound) {
			m.Attachments = []provider.File{{Filename: "bus.jpg", ContentType: "image/jpeg", Content: big(provider.MaxWhatsAppImageBytes + 1), Link: fileLink}}
		}, "media_too_large"},
		{"CaptionTooLong", func(m *provider.Outbound) {
			m.Attachments = []provider.File{pdfFile()}
			m.Body = string(big(1025))
		}, "caption_too_long"},
		{"TwoFiles", func(m *provider.Outbound) {
			m.Attachments = []provider.File{pdfFile(), pdfFile()}
		}, "too_many_files"},
		{"NoLink", func(m *provider.Outbound) {
			f := pdfFile()
			f.Link = ""
			m.Attachments = []provider.File{f}
		}, "media_without_link"},
		{"HeaderWithoutFile", func(m *provider.Outbound) {
			m.Template = &provider.WhatsAppTemplate{Name: "booking_confirmed", Language: "de", HeaderFormat: "DOCUMENT"}
		}, "missing_header_file"},
		{"ImageHeaderGivenPDF", func(m *provider.Outbound) {
			f := pdfFile()
			m.Template = &provider.WhatsAppTemplate{Name: "trip_map", Language: "de", HeaderFormat: "IMAGE", Header: &f}
		}, "unsupported_media"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
			m := outbound()
			tt.edit(&m)
			_, err := b.prov.Send(context.Background(), m)
			pe := requireProviderError(t, err)
			require.Equal(t, tt.code, pe.Code)
			require.Equal(t, provider.Permanent, pe.Class)
			require.NotEmpty(t, pe.Reason)
			require.Zero(t, b.count(), "nothing is sent")
		})
	}
}
