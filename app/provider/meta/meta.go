// Package meta sends WhatsApp messages through Meta's WhatsApp Cloud API and
// reads its webhooks: the Send adapter with Meta's error codes mapped onto
// Herald's error classes, and pure functions that the webhook route uses to
// verify, answer and parse what Meta posts back.
package meta

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// Name is the provider name of Meta's WhatsApp Cloud API in a provider.Set
// and on receipts.
const Name = "meta"

// Defaults used when the Provider's fields are left empty.
const (
	// DefaultBaseURL is Meta's Graph API host.
	DefaultBaseURL = "https://graph.facebook.com"
	// DefaultVersion is the Graph API version sends go to. Meta retires a
	// version about two years after its release, so deployments pin a newer
	// one through Provider.Version rather than waiting for a release.
	DefaultVersion = "v23.0"
	// DefaultTimeout bounds a send when no HTTPClient is given, so that a
	// hanging connection turns into a retry instead of a stuck worker.
	DefaultTimeout = 30 * time.Second
)

// Account configuration keys read from provider.Account.
const (
	// ConfigPhoneNumberID is the Config key of the sending number's Graph id
	// (not the phone number itself).
	ConfigPhoneNumberID = "phone_number_id"
	// SecretAccessToken is the Secrets key of the system-user access token.
	SecretAccessToken = "access_token"
)

// maxTextRunes is Meta's limit on a text message body. Checking it here
// saves a round trip that could only end in error 100.
const maxTextRunes = 4096

// maxResponseBytes caps what is read of a Graph response: real ones are a
// few hundred bytes, and a misbehaving proxy must not exhaust memory.
const maxResponseBytes = 1 << 20

// Provider sends WhatsApp messages through the Cloud API. The zero value is
// ready to use; tests point BaseURL at an httptest server.
type Provider struct {
	// HTTPClient sends the requests; nil uses a client with DefaultTimeout.
	HTTPClient *http.Client
	// BaseURL is the Graph API root without a trailing slash; empty means
	// DefaultBaseURL.
	BaseURL string
	// Version is the Graph API version such as "v23.0" (a missing "v" is
	// added); empty means DefaultVersion.
	Version string
	// Log, when set, receives a warning for every error code the table in
	// errors.go does not know, so that new codes become visible and can be
	// classified instead of silently retried.
	Log *slog.Logger
}

var _ provider.Provider = (*Provider)(nil)

// Echoes implements provider.Echoing: Meta echoes a send's
// biz_opaque_callback_data in each of its status webhooks, for every
// account.
func (p *Provider) Echoes(provider.Account) bool { return true }

// callbackPrefix starts the biz_opaque_callback_data of Herald's sends.
const callbackPrefix = "herald:"

// CallbackData is the biz_opaque_callback_data of a message's sends:
// "herald:" and the message id (43 characters; Meta allows 512). Meta does
// not read it; it echoes it in the message's status webhooks, which is how
// a status names the message of a send whose answer Herald never read.
func CallbackData(messageID uuid.UUID) string {
	if messageID == uuid.Nil {
		return ""
	}
	return callbackPrefix + messageID.String()
}

// ParseCallbackData reads CallbackData back, strictly: "herald:" and a
// message id in its canonical form. Anything else (another application's
// data on a shared number, a forged value) names no message.
func ParseCallbackData(s string) (uuid.UUID, bool) {
	rest, ok := strings.CutPrefix(s, callbackPrefix)
	if !ok || len(rest) != 36 {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(rest)
	if err != nil || id == uuid.Nil || id.String() != rest {
		return uuid.Nil, false
	}
	return id, true
}

// sendRequest is the body of POST /{version}/{phone_number_id}/messages.
type sendRequest struct {
	MessagingProduct string        `json:"messaging_product"`
	RecipientType    string        `json:"recipient_type"`
	To               string        `json:"to"`
	Type             string        `json:"type"`
	Text             *textBody     `json:"text,omitempty"`
	Document         *media        `json:"document,omitempty"`
	Image            *media        `json:"image,omitempty"`
	Template         *templateBody `json:"template,omitempty"`
	// BizOpaqueCallbackData is echoed by Meta in every status webhook of
	// the message (CallbackData).
	BizOpaqueCallbackData string `json:"biz_opaque_callback_data,omitempty"`
}

type textBody struct {
	PreviewURL bool   `json:"preview_url"`
	Body       string `json:"body"`
}

type templateBody struct {
	Name       string      `json:"name"`
	Language   language    `json:"language"`
	Components []component `json:"components,omitempty"`
}

// language names a template's translation. Meta's only policy is
// "deterministic": the translation in exactly this language is sent, or the
// send fails (132001) rather than falling back to another.
type language struct {
	Policy string `json:"policy"`
	Code   string `json:"code"`
}

type component struct {
	Type       string      `json:"type"`
	Parameters []parameter `json:"parameters"`
}

type parameter struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Document *media `json:"document,omitempty"`
	Image    *media `json:"image,omitempty"`
}

// media is a document or image object, of a message or of a template
// header's parameter, as Meta documents it (Messages API, "Document
// messages" and "Image messages"): the file by the link Meta fetches it
// from (id instead, for uploaded media), the file name a document shows,
// and a caption of at most 1024 characters.
type media struct {
	ID       string `json:"id,omitempty"`
	Link     string `json:"link,omitempty"`
	Caption  string `json:"caption,omitempty"`
	Filename string `json:"filename,omitempty"`
}

// maxCaptionRunes is Meta's limit on a media caption.
const maxCaptionRunes = 1024

// mediaOf is the media object of a file, checked against Meta's limits.
func mediaOf(kind string, f provider.File) (*media, error) {
	if kind == "" || provider.WhatsAppMedia(f.ContentType) != kind {
		return nil, &provider.Error{Code: "unsupported_media", Class: provider.Permanent,
			Reason: fmt.Sprintf("WhatsApp takes %s (%s) neither as a document nor as an image here: only PDF documents and JPEG or PNG images.", f.Filename, f.ContentType)}
	}
	limit := provider.MaxWhatsAppDocumentBytes
	if kind == "image" {
		limit = provider.MaxWhatsAppImageBytes
	}
	if len(f.Content) > limit {
		return nil, &provider.Error{Code: "media_too_large", Class: provider.Permanent,
			Reason: fmt.Sprintf("%s has %d bytes; WhatsApp takes a %s of at most %d MB.", f.Filename, len(f.Content), kind, limit>>20)}
	}
	if f.Link == "" && f.MediaID == "" {
		return nil, &provider.Error{Code: "media_without_link", Class: provider.Permanent,
			Reason: f.Filename + " has neither a link nor a media id for Meta to take it from."}
	}
	m := &media{ID: f.MediaID}
	if m.ID == "" {
		m.Link = f.Link
	}
	if kind == "document" {
		m.Filename = f.Filename
	}
	return m, nil
}

// sendResponse is the success body; only the message id matters to Herald.
// message_status ("accepted", "held_for_quality_assessment") is not read:
// both mean Meta took the message, and the outcome arrives as a webhook.
type sendResponse struct {
	Messages []struct {
		ID string `json:"id"`
	} `json:"messages"`
}

// Send implements provider.Provider: it posts one text or template message
// and returns Meta's message id (the "wamid") that later webhooks refer to.
// Every error it returns is a *provider.Error.
func (p *Provider) Send(ctx context.Context, m provider.Outbound) (string, error) {
	phoneNumberID := strings.TrimSpace(m.Account.Config[ConfigPhoneNumberID])
	if phoneNumberID == "" {
		return "", &provider.Error{Code: "missing_phone_number_id", Class: provider.Permanent, Account: true,
			Reason: "The WhatsApp account has no phone_number_id configured."}
	}
	token := strings.TrimSpace(m.Account.Secrets[SecretAccessToken])
	if token == "" {
		return "", &provider.Error{Code: "missing_access_token", Class: provider.Permanent, Account: true,
			Reason: "The WhatsApp account has no access_token secret."}
	}
	req, err := buildRequest(m)
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", &provider.Error{Code: "encode", Class: provider.Permanent, Reason: err.Error()}
	}

	endpoint := p.baseURL() + "/" + p.version() + "/" + url.PathEscape(phoneNumberID) + "/messages"
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		// Only a broken BaseURL gets here; every message would fail alike.
		return "", &provider.Error{Code: "bad_endpoint", Class: provider.Permanent, Reason: err.Error()}
	}
	hr.Header.Set("Authorization", "Bearer "+token)
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")

	resp, err := p.client().Do(hr)
	if err != nil {
		return "", transportError(ctx, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return "", transportError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", p.responseError(resp, raw)
	}

	var ok sendResponse
	if err := json.Unmarshal(raw, &ok); err != nil || len(ok.Messages) == 0 || ok.Messages[0].ID == "" {
		// Meta accepted the request but we cannot tell which message it
		// made; retrying risks a duplicate, failing risks a lost message,
		// and a retry is the one the tenant can see and live with.
		return "", &provider.Error{Code: "missing_message_id", Class: provider.Transient,
			Reason: "Meta answered " + resp.Status + " without a message id: " + excerpt(raw)}
	}
	return ok.Messages[0].ID, nil
}

// buildRequest turns an outbound message into Meta's JSON, rejecting what
// Meta would reject anyway before spending a request on it.
func buildRequest(m provider.Outbound) (*sendRequest, error) {
	to := strings.TrimSpace(m.To)
	if to == "" {
		return nil, &provider.Error{Code: "missing_recipient", Class: provider.Permanent, Reason: "The message has no recipient number."}
	}
	// The number goes out as stored (E.164 with "+"), as in Meta's own
	// examples; the Cloud API accepts it with or without the plus.
	req := &sendRequest{MessagingProduct: "whatsapp", RecipientType: "individual", To: to, BizOpaqueCallbackData: CallbackData(m.MessageID)}
	if t := m.Template; t != nil {
		if t.Name == "" || t.Language == "" {
			return nil, &provider.Error{Code: "invalid_template", Class: provider.Permanent,
				Reason: "A WhatsApp template needs a name and a language code."}
		}
		req.Type = "template"
		req.Template = &templateBody{Name: t.Name, Language: language{Policy: "deterministic", Code: t.Language}}
		// A template without variables takes no components; an empty body
		// component is rejected by Meta as a parameter count mismatch.
		if err := templateHeader(req.Template, t); err != nil {
			return nil, err
		}
		if len(t.Parameters) > 0 {
			params := make([]parameter, len(t.Parameters))
			for i, v := range t.Parameters {
				params[i] = parameter{Type: "text", Text: parameterText(v)}
			}
			req.Template.Components = append(req.Template.Components, component{Type: "body", Parameters: params})
		}
		return req, nil
	}
	if len(m.Attachments) > 0 {
		return mediaRequest(req, m)
	}
	if n := utf8.RuneCountInString(m.Body); n > maxTextRunes {
		return nil, &provider.Error{Code: "text_too_long", Class: provider.Permanent,
			Reason: fmt.Sprintf("A WhatsApp text may have at most %d characters; this one has %d.", maxTextRunes, n)}
	}
	req.Type = "text"
	// Link previews stay off: the body is tenant content, and a preview
	// would fetch whatever URL it contains on the recipient's phone.
	req.Text = &textBody{PreviewURL: false, Body: m.Body}
	return req, nil
}

// templateHeader adds the header component of a template whose header is a
// document or an image: its one parameter is the file, as Meta documents a
// template message's media header ({"type": "header", "parameters":
// [{"type": "document", "document": {"link", "filename"}}]}).
func templateHeader(b *templateBody, t *provider.WhatsAppTemplate) error {
	kind := strings.ToLower(t.HeaderFormat)
	if kind != "document" && kind != "image" {
		return nil
	}
	if t.Header == nil {
		return &provider.Error{Code: "missing_header_file", Class: provider.Permanent,
			Reason: fmt.Sprintf("Meta template %s has a %s header, and the message has no file for it.", t.Name, t.HeaderFormat)}
	}
	m, err := mediaOf(kind, *t.Header)
	if err != nil {
		return err
	}
	p := parameter{Type: kind, Document: m}
	if kind == "image" {
		p.Document, p.Image = nil, m
	}
	b.Components = append(b.Components, component{Type: "header", Parameters: []parameter{p}})
	return nil
}

// mediaRequest sends a message's one file as a document or image message
// with the text as its caption. A WhatsApp message is one Meta message:
// the dispatcher gives the adapter at most one file, the others' links
// being in the text already.
func mediaRequest(req *sendRequest, m provider.Outbound) (*sendRequest, error) {
	if len(m.Attachments) != 1 {
		return nil, &provider.Error{Code: "too_many_files", Class: provider.Permanent,
			Reason: fmt.Sprintf("A WhatsApp message carries one file; this one has %d.", len(m.Attachments))}
	}
	if n := utf8.RuneCountInString(m.Body); n > maxCaptionRunes {
		return nil, &provider.Error{Code: "caption_too_long", Class: provider.Permanent,
			Reason: fmt.Sprintf("A WhatsApp caption may have at most %d characters; this one has %d.", maxCaptionRunes, n)}
	}
	f := m.Attachments[0]
	kind := provider.WhatsAppMedia(f.ContentType)
	md, err := mediaOf(kind, f)
	if err != nil {
		return nil, err
	}
	md.Caption = m.Body
	req.Type = kind
	if kind == "image" {
		req.Image = md
	} else {
		req.Document = md
	}
	return req, nil
}

// parameterText makes a value acceptable as a template parameter: Meta
// refuses parameters with new lines, tabs or more than four consecutive
// spaces (error 132018), which a multi-line context value would otherwise
// carry in. Line breaks become " / " so that lines stay apart; an empty
// value becomes a dash, since Meta refuses empty text parameters.
func parameterText(v string) string {
	v = strings.ReplaceAll(v, "\r\n", "\n")
	lines := strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\r' })
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	v = strings.Join(slices.DeleteFunc(lines, func(l string) bool { return l == "" }), " / ")
	if v == "" {
		return "-"
	}
	return v
}

func (p *Provider) client() *http.Client {
	if p.HTTPClient != nil {
		return p.HTTPClient
	}
	return &http.Client{Timeout: DefaultTimeout}
}

func (p *Provider) baseURL() string {
	if p.BaseURL == "" {
		return DefaultBaseURL
	}
	return strings.TrimRight(p.BaseURL, "/")
}

func (p *Provider) version() string {
	v := strings.Trim(p.Version, "/")
	switch {
	case v == "":
		return DefaultVersion
	case v[0] != 'v':
		return "v" + v
	}
	return v
}

// excerpt shortens a payload for error reasons and receipts, cutting on a
// character boundary.
func excerpt(b []byte) string {
	const max = 300
	s := strings.TrimSpace(string(b))
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
