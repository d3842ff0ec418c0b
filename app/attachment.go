package app

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/gabriel-vasile/mimetype"
	"github.com/google/uuid"
)

// Attachment limits: per message (the event's files and its recipient's
// own together), per file and in all. Files given inline also count
// towards the request's size (MaxRequestBytes); larger ones are given by
// URL and fetched at send time.
const (
	MaxAttachments          = 5
	MaxAttachmentBytes      = 5 << 20
	MaxAttachmentTotalBytes = 10 << 20
	// MaxRequestBytes caps a request body with its inline files; the
	// rest of the request stays within MaxPayloadBytes.
	MaxRequestBytes = 1 << 20
	// DefaultFetchTimeout bounds the fetching of a message's files by URL,
	// all of them, in a dispatch run that makes no provider call.
	DefaultFetchTimeout = 2 * DefaultSendTimeout
)

// AttachmentTypes are the content types a file may have, each with the
// type the bytes must be sniffed as: a wallet pass (.pkpass) is a ZIP
// archive.
var AttachmentTypes = map[string]string{
	"application/pdf":              "application/pdf",
	"image/jpeg":                   "image/jpeg",
	"image/png":                    "image/png",
	"image/gif":                    "image/gif",
	"image/webp":                   "image/webp",
	"text/calendar":                "text/calendar",
	"application/vnd.apple.pkpass": "application/zip",
}

// Reasons of files that cannot be sent.
const (
	ReasonAttachmentUnavailable = "attachment_unavailable"
)

// AttachmentInput is one file of a request, as sent: its bytes inline
// (Content, base64) or a URL Herald fetches when it sends.
type AttachmentInput struct {
	URL         string `json:"url,omitempty"`
	Content     string `json:"content,omitempty"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	SHA256      string `json:"sha256,omitempty"`

	// data is Content decoded, once validated.
	data []byte
}

// Attachment is a stored file of an event, for all its recipients
// (RecipientIndex nil) or for one. Content, Size and SHA256 are set once
// the bytes are known (at intake for inline files, at the first send for
// files by URL) and never change; FetchError, instead, says why a URL
// gave no file.
type Attachment struct {
	ID             uuid.UUID  `db:"id"`
	TenantID       uuid.UUID  `db:"tenant_id"`
	EventID        uuid.UUID  `db:"event_id"`
	RecipientIndex *int       `db:"recipient_index"`
	Position       int        `db:"position"`
	Filename       string     `db:"filename"`
	ContentType    string     `db:"content_type"`
	SourceURL      *string    `db:"source_url"`
	DeclaredSHA256 *string    `db:"declared_sha256"`
	Content        []byte     `db:"content"`
	Size           *int64     `db:"size_bytes"`
	SHA256         *string    `db:"sha256"`
	FetchedAt      *time.Time `db:"fetched_at"`
	FetchError     *string    `db:"fetch_error"`
	CreatedAt      time.Time  `db:"created_at"`
	// TokenNonce is the file's random nonce, which its short links'
	// signature covers (FileLinks); the database sets it.
	TokenNonce []byte `db:"token_nonce"`
}

// Ready reports whether the file's bytes are stored.
func (a *Attachment) Ready() bool { return a.SHA256 != nil }

// validateAttachments checks a list of files under field: each one's
// source, name and type, its bytes against its type and hash, and the
// count and size limits with the files already counted for the same
// message (others, inline bytes).
func validateAttachments(p *problems, field string, list []AttachmentInput, others int, otherBytes int64) {
	if len(list) == 0 {
		return
	}
	if others+len(list) > MaxAttachments {
		p.add(Invalid("too_many_attachments", field, "A message carries at most %d files; %s makes it %d.", MaxAttachments, field, others+len(list)))
		return
	}
	total := otherBytes
	for i := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := list[i].validate(f); err != nil {
			p.add(err)
			continue
		}
		total += int64(len(list[i].data))
	}
	if total > MaxAttachmentTotalBytes {
		p.add(Invalid("attachments_too_large", field, "The files of one message may have %d bytes in all (10 MiB); these have %d.", MaxAttachmentTotalBytes, total))
	}
}

// validate checks one file under field and decodes its inline bytes.
func (a *AttachmentInput) validate(field string) *Error {
	a.Filename = strings.TrimSpace(a.Filename)
	a.URL = strings.TrimSpace(a.URL)
	switch {
	case a.Filename == "" || len(a.Filename) > 255:
		return Invalid("invalid_filename", field+".filename", "%s.filename is required (at most 255 bytes).", field)
	case strings.ContainsAny(a.Filename, `/\`) || strings.IndexFunc(a.Filename, unicode.IsControl) >= 0:
		return Invalid("invalid_filename", field+".filename", "%s.filename must be a plain file name, without slashes or control characters.", field)
	}
	mediaType, _, err := mime.ParseMediaType(a.ContentType)
	if _, ok := AttachmentTypes[mediaType]; err != nil || !ok {
		return Invalid("unsupported_content_type", field+".content_type",
			"%s.content_type %q is not allowed; allowed: application/pdf, image/jpeg, image/png, image/gif, image/webp, text/calendar (.ics), application/vnd.apple.pkpass.", field, a.ContentType)
	}
	a.ContentType = mediaType
	if a.SHA256 != "" {
		a.SHA256 = strings.ToLower(a.SHA256)
		if b, err := hex.DecodeString(a.SHA256); err != nil || len(b) != sha256.Size {
			return Invalid("invalid_sha256", field+".sha256", "%s.sha256 must be the file's SHA-256 as 64 hex digits.", field)
		}
	}
	switch {
	case (a.URL == "") == (a.Content == ""):
		return Invalid("invalid_attachment", field, "%s needs either url or content (base64), not both.", field)
	case a.URL != "":
		return checkFileURL(field+".url", a.URL)
	}
	data, err := base64.StdEncoding.DecodeString(a.Content)
	if err != nil {
		return Invalid("invalid_base64", field+".content", "%s.content is not valid base64 (standard alphabet, padded).", field)
	}
	if e := CheckFileBytes(field, a.ContentType, a.SHA256, data); e != nil {
		return e
	}
	a.data = data
	return nil
}

// checkFileURL checks the form of a file's URL; where it leads is
// checked when it is fetched, on every address it resolves to.
func checkFileURL(field, raw string) *Error {
	u, err := url.Parse(raw)
	switch {
	case len(raw) > 2048:
		return Invalid("invalid_attachment_url", field, "%s must be at most 2048 characters.", field)
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return Invalid("invalid_attachment_url", field, "%s must be an https URL.", field)
	case u.User != nil:
		return Invalid("invalid_attachment_url", field, "%s must not carry credentials.", field)
	}
	return nil
}

// CheckFileBytes checks a file's bytes against its limits, its declared
// content type (sniffed from the bytes, never trusted from a name or a
// header) and its declared sha256 (empty: none), with errors under field.
func CheckFileBytes(field, contentType, declaredSHA string, data []byte) *Error {
	if len(data) == 0 {
		return Invalid("empty_attachment", field, "%s is empty.", field)
	}
	if len(data) > MaxAttachmentBytes {
		return Invalid("attachment_too_large", field, "%s has %d bytes; a file may have %d (5 MiB).", field, len(data), MaxAttachmentBytes)
	}
	if want := AttachmentTypes[contentType]; !sniffedAs(data, want) {
		return Invalid("content_type_mismatch", field+".content_type", "%s.content_type is %s, but the bytes are %s.", field, contentType, mimetype.Detect(data).String())
	}
	if declaredSHA != "" && declaredSHA != SHA256Hex(data) {
		return Invalid("sha256_mismatch", field+".sha256", "%s.sha256 does not match the file's bytes (their SHA-256 is %s).", field, SHA256Hex(data))
	}
	return nil
}

// sniffedAs reports whether data is of type want or of a type derived
// from it (mimetype detects the most specific type: a JAR is a ZIP).
func sniffedAs(data []byte, want string) bool {
	for m := mimetype.Detect(data); m != nil; m = m.Parent() {
		if m.Is(want) {
			return true
		}
	}
	return false
}

// SHA256Hex is data's SHA-256 in lower-case hex.
func SHA256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// attachmentsOf returns the files a valid request stores for event e.
func attachmentsOf(req *NotificationRequest, e *Event) []*Attachment {
	var out []*Attachment
	add := func(recipient *int, list []AttachmentInput) {
		for i, in := range list {
			a := &Attachment{ID: NewID(), TenantID: e.TenantID, EventID: e.ID, RecipientIndex: recipient, Position: i,
				Filename: in.Filename, ContentType: in.ContentType, CreatedAt: e.CreatedAt}
			if in.SHA256 != "" {
				a.DeclaredSHA256 = &in.SHA256
			}
			if in.URL != "" {
				a.SourceURL = &in.URL
			} else {
				size, sum := int64(len(in.data)), SHA256Hex(in.data)
				a.Content, a.Size, a.SHA256 = in.data, &size, &sum
			}
			out = append(out, a)
		}
	}
	add(nil, req.Attachments)
	for i := range req.Recipients {
		add(&i, req.Recipients[i].Attachments)
	}
	return out
}

// withoutContent returns files as the event stores them in its request:
// the inline bytes replaced by their hash, so that a repeated request
// compares by what it sends and the event stays small.
func withoutContent(list []AttachmentInput) []AttachmentInput {
	if len(list) == 0 {
		return nil
	}
	out := make([]AttachmentInput, len(list))
	for i, a := range list {
		if a.Content != "" {
			a.Content, a.SHA256 = "", SHA256Hex(a.data)
		}
		out[i] = a
	}
	return out
}

// inlineBytes is the size of the base64 text of a request's inline files.
func inlineBytes(req *NotificationRequest) int {
	n := 0
	for _, a := range req.Attachments {
		n += len(a.Content)
	}
	for _, r := range req.Recipients {
		for _, a := range r.Attachments {
			n += len(a.Content)
		}
	}
	return n
}

// FileFetcher fetches a file by URL for a send: at most limit bytes, in
// ctx's time. Its errors are *provider.Error: Permanent when the URL
// gives no file and never will (unreachable, refused, not found, a
// private address, too large), Transient otherwise (a timeout, a 5xx).
type FileFetcher interface {
	Fetch(ctx context.Context, rawURL string, limit int64) ([]byte, error)
}

// FileTx lists the statements about a message's files.
type FileTx interface {
	// MessageFiles returns the files a message carries, the event's and
	// its recipient's, in order, with their bytes when withContent.
	MessageFiles(ctx context.Context, tenantID, messageID uuid.UUID, withContent bool) ([]*Attachment, error)
	// RecordFileFetch stores a fetched file's bytes (content non-nil) or
	// why it could not be fetched, unless either is stored already;
	// stored false then.
	RecordFileFetch(ctx context.Context, tenantID, id uuid.UUID, content []byte, fetchErr string, at time.Time) (stored bool, err error)
}
