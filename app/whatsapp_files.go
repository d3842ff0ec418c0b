package app

import (
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/app/provider"
)

// ReasonAttachmentsNotSent names the files a channel could not carry, on
// the timeline entry of the message's send: a file is never dropped
// without a word.
const ReasonAttachmentsNotSent = "attachments_not_sent"

// WhatsApp's limits of a message's text: a caption, and a text message.
const (
	maxWhatsAppCaption = 1024
	maxWhatsAppText    = 4096
)

// notSentFile is a file a send did not carry, and why.
type notSentFile struct {
	file   provider.File
	reason string
}

// fitWhatsApp shapes a WhatsApp message with files into what Meta delivers
// as ONE message, and returns the files it could not carry.
//
// A Herald message is sent exactly once because it is one Meta message:
// the send guard marks its one call, and an unknown outcome is reconciled
// through the biz_opaque_callback_data of that call's status webhooks
// (send_guard.go). Sending the text and each file as separate Meta
// messages would need a guard and a reconciliation per extra message, and
// a send that failed halfway would leave the passenger with half of it.
// So the files ride on the one message:
//
//   - Inside the customer service window, the first file Meta takes as a
//     document (PDF) or image (JPEG, PNG, within Meta's size limits) goes
//     as a document or image message whose caption is the text, with the
//     short links of the other files below it. When that caption would
//     pass Meta's 1024 characters, the message goes as text with a link
//     for every file instead.
//   - Outside it, the approved Meta template's DOCUMENT or IMAGE header
//     carries the first file that fits it; the template's text is fixed,
//     so the other files cannot travel and are named as not sent.
func fitWhatsApp(out *provider.Outbound) []notSentFile {
	files := out.Attachments
	out.Attachments = nil
	if len(files) == 0 {
		return nil
	}
	if t := out.Template; t != nil {
		return templateFiles(t, files)
	}
	media := -1
	for i, f := range files {
		if whatsAppCarries(f) {
			media = i
			break
		}
	}
	var notSent []notSentFile
	text := func(skip int) string {
		var b strings.Builder
		b.WriteString(strings.TrimRight(out.Body, " \t\n"))
		notSent = notSent[:0]
		for i, f := range files {
			switch {
			case i == skip:
			case f.Link == "":
				notSent = append(notSent, notSentFile{f, "this server makes no file links"})
			default:
				b.WriteString("\n" + f.Link)
			}
		}
		return b.String()
	}
	if media >= 0 {
		if caption := text(media); utf8.RuneCountInString(caption) <= maxWhatsAppCaption {
			out.Body, out.Attachments = caption, []provider.File{files[media]}
			return notSent
		}
	}
	out.Body = text(-1)
	return notSent
}

// whatsAppCarries reports whether Meta takes f as a document or image.
func whatsAppCarries(f provider.File) bool {
	switch provider.WhatsAppMedia(f.ContentType) {
	case "document":
		return len(f.Content) <= provider.MaxWhatsAppDocumentBytes && (f.Link != "" || f.MediaID != "")
	case "image":
		return len(f.Content) <= provider.MaxWhatsAppImageBytes && (f.Link != "" || f.MediaID != "")
	}
	return false
}

// templateFiles gives a Meta template with a document or image header the
// first file that fits it, and returns the others.
func templateFiles(t *provider.WhatsAppTemplate, files []provider.File) []notSentFile {
	kind := strings.ToLower(t.HeaderFormat)
	var notSent []notSentFile
	for _, f := range files {
		switch {
		case t.Header == nil && (kind == "document" || kind == "image") && provider.WhatsAppMedia(f.ContentType) == kind && whatsAppCarries(f):
			header := f
			t.Header = &header
		case kind != "document" && kind != "image":
			notSent = append(notSent, notSentFile{f, "the Meta template " + t.Name + " has no document or image header to carry a file"})
		default:
			notSent = append(notSent, notSentFile{f, "a Meta template carries one file, in its " + strings.ToLower(t.HeaderFormat) + " header"})
		}
	}
	return notSent
}

// notSentDetail is the timeline's list of files a send did not carry.
func notSentDetail(list []notSentFile) []map[string]any {
	out := make([]map[string]any, len(list))
	for i, n := range list {
		out[i] = map[string]any{"filename": n.file.Filename, "content_type": n.file.ContentType, "sha256": n.file.SHA256, "reason": n.reason}
	}
	return out
}
