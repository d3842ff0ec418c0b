package meta

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/app/provider"
)

// SignatureHeader is the header in which Meta signs webhook bodies.
const SignatureHeader = "X-Hub-Signature-256"

// VerifySignature reports whether header (the X-Hub-Signature-256 value,
// "sha256=<hex>") is the HMAC-SHA256 of the raw body under the app secret.
// Call it on the bytes as received, before any parsing: re-encoded JSON
// would not match. An empty secret never verifies, so a misconfigured
// account cannot accept forged posts.
func VerifySignature(appSecret string, body []byte, header string) bool {
	if appSecret == "" {
		return false
	}
	hexSig, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, []byte(appSecret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// VerifyChallenge answers Meta's subscription check (GET with hub.mode,
// hub.verify_token and hub.challenge): when the mode is "subscribe" and the
// token equals the account's verify token, the route answers 200 with the
// returned challenge as the body; otherwise 403. The token comparison is
// constant-time since the token is the only thing guarding the endpoint.
func VerifyChallenge(query url.Values, verifyToken string) (challenge string, ok bool) {
	if verifyToken == "" || query.Get("hub.mode") != "subscribe" {
		return "", false
	}
	if subtle.ConstantTimeCompare([]byte(query.Get("hub.verify_token")), []byte(verifyToken)) != 1 {
		return "", false
	}
	challenge = query.Get("hub.challenge")
	if challenge == "" {
		return "", false
	}
	return challenge, true
}

// Webhook is what one webhook post carries that Herald acts on.
type Webhook struct {
	// Receipts are the delivery statuses of messages Herald sent, in payload
	// order. Meta sends them out of order and at least once, so the receiver
	// must apply them idempotently (by ReceiptID) and never move a message
	// backwards.
	Receipts []provider.Receipt
	// Inbound are the messages recipients sent to the business number.
	Inbound []Inbound
	// TemplateUpdates are Meta's reviews of message templates
	// (message_template_status_update).
	TemplateUpdates []TemplateUpdate
}

// TemplateUpdate is one message_template_status_update: a template of a
// WABA was approved, rejected, paused, disabled, ...
type TemplateUpdate struct {
	// WABAID is the WhatsApp Business Account that owns the template.
	WABAID string
	// Event is the new status: APPROVED, REJECTED, PENDING, PAUSED,
	// DISABLED, FLAGGED, REINSTATED, IN_APPEAL, PENDING_DELETION, ...
	Event      string
	TemplateID string
	Name       string
	Language   string
	Category   string
	// Reason explains a rejection; Meta sends "NONE" otherwise, which is
	// left out.
	Reason string
}

// Inbound is a message a WhatsApp user sent to the business. A reply opens
// the 24 h window in which free-form text may be sent to that user.
type Inbound struct {
	// From is the sender's WhatsApp id, their number without "+".
	From string
	// Name is the sender's WhatsApp profile name, when Meta includes it.
	Name string
	// ExternalID is Meta's id of the inbound message (a wamid).
	ExternalID string
	// Type is Meta's message type: text, image, button, interactive, ...
	Type string
	// Text is the body of a text message, empty for other types.
	Text string
	// ContextID is the wamid of the business message this one answers
	// (context.id): the message whose quick-reply button was tapped.
	ContextID string
	// ButtonText is the label of the tapped quick-reply button (type
	// button: button.text; type interactive: button_reply.title); empty
	// when no button was tapped.
	ButtonText string
	At         time.Time
	// PhoneNumberID is the business number that received it; it tells
	// which channel account the message belongs to.
	PhoneNumberID string
}

// envelope is the webhook body; see PROVIDERS.md for the wire format.
type envelope struct {
	Object string `json:"object"`
	Entry  []struct {
		ID      string `json:"id"`
		Changes []struct {
			Field string `json:"field"`
			Value struct {
				Metadata struct {
					PhoneNumberID string `json:"phone_number_id"`
				} `json:"metadata"`
				Contacts []struct {
					Profile struct {
						Name string `json:"name"`
					} `json:"profile"`
					WaID string `json:"wa_id"`
				} `json:"contacts"`
				// Statuses stay raw so each receipt can carry its own excerpt.
				Statuses []json.RawMessage `json:"statuses"`
				// The message_template_status_update fields.
				Event            string      `json:"event"`
				TemplateID       json.Number `json:"message_template_id"`
				TemplateName     string      `json:"message_template_name"`
				TemplateLanguage string      `json:"message_template_language"`
				TemplateCategory string      `json:"message_template_category"`
				Reason           string      `json:"reason"`
				Messages         []struct {
					From      string `json:"from"`
					ID        string `json:"id"`
					Timestamp string `json:"timestamp"`
					Type      string `json:"type"`
					Text      struct {
						Body string `json:"body"`
					} `json:"text"`
					Context struct {
						ID string `json:"id"`
					} `json:"context"`
					// A template's quick-reply button.
					Button struct {
						Payload string `json:"payload"`
						Text    string `json:"text"`
					} `json:"button"`
					// An interactive message's reply button.
					Interactive struct {
						Type        string `json:"type"`
						ButtonReply struct {
							ID    string `json:"id"`
							Title string `json:"title"`
						} `json:"button_reply"`
					} `json:"interactive"`
				} `json:"messages"`
			} `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

// status is one entry of value.statuses.
type status struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Timestamp   string `json:"timestamp"`
	RecipientID string `json:"recipient_id"`
	// BizOpaqueCallbackData echoes the send's field (CallbackData).
	BizOpaqueCallbackData string `json:"biz_opaque_callback_data"`
	Errors                []struct {
		Code      int    `json:"code"`
		Title     string `json:"title"`
		Message   string `json:"message"`
		ErrorData struct {
			Details string `json:"details"`
		} `json:"error_data"`
	} `json:"errors"`
}

// receiptStatus maps Meta's status words onto Herald's. Others (Meta also
// reports "deleted" and "warning") say nothing about delivery and are
// skipped rather than rejected, so that Meta does not redeliver the post.
func receiptStatus(s string) (string, bool) {
	switch s {
	case "sent":
		return provider.StatusSent, true
	case "delivered":
		return provider.StatusDelivered, true
	case "read":
		return provider.StatusRead, true
	case "failed":
		return provider.StatusFailed, true
	}
	return "", false
}

// ParseWebhook reads a verified webhook body. It fails only on a body that
// is not a WhatsApp Business webhook at all. Template reviews
// (message_template_status_update) are read into TemplateUpdates; changes
// of other fields (account updates, quality) and statuses Herald does not
// track are skipped. A timestamp that does not parse leaves At zero for
// the receiver to fill in.
func ParseWebhook(body []byte) (*Webhook, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("meta webhook: %w", err)
	}
	if env.Object != "whatsapp_business_account" {
		return nil, fmt.Errorf("meta webhook: object %q is not whatsapp_business_account", env.Object)
	}
	w := &Webhook{}
	for _, entry := range env.Entry {
		for _, ch := range entry.Changes {
			if ch.Field == "message_template_status_update" {
				if u, ok := templateUpdate(entry.ID, ch.Value.Event, string(ch.Value.TemplateID), ch.Value.TemplateName,
					ch.Value.TemplateLanguage, ch.Value.TemplateCategory, ch.Value.Reason); ok {
					w.TemplateUpdates = append(w.TemplateUpdates, u)
				}
				continue
			}
			if ch.Field != "messages" {
				continue
			}
			v := ch.Value
			for _, raw := range v.Statuses {
				var s status
				if err := json.Unmarshal(raw, &s); err != nil {
					return nil, fmt.Errorf("meta webhook status: %w", err)
				}
				st, ok := receiptStatus(s.Status)
				if !ok || s.ID == "" {
					continue
				}
				r := provider.Receipt{
					Provider:   Name,
					ExternalID: s.ID,
					AccountRef: v.Metadata.PhoneNumberID,
					// A redelivered post repeats the timestamp, so the id
					// stays stable across Meta's retries.
					ReceiptID: s.ID + ":" + s.Status + ":" + s.Timestamp,
					Status:    st,
					At:        unixTime(s.Timestamp),
					Raw:       statusExcerpt(raw),
				}
				if id, ok := ParseCallbackData(s.BizOpaqueCallbackData); ok {
					r.MessageRef = id
				}
				if len(s.Errors) > 0 {
					e := s.Errors[0]
					r.Code = strconv.Itoa(e.Code)
					msg := e.Message
					if msg == "" {
						msg = e.Title
					}
					r.Reason = reason(msg, e.ErrorData.Details, e.Code)
					if st == provider.StatusFailed {
						r.Error = statusError(e.Code, r.Reason)
					}
				}
				w.Receipts = append(w.Receipts, r)
			}
			names := make(map[string]string, len(v.Contacts))
			for _, c := range v.Contacts {
				names[c.WaID] = c.Profile.Name
			}
			for _, m := range v.Messages {
				in := Inbound{
					From: m.From, Name: names[m.From], ExternalID: m.ID, Type: m.Type,
					At: unixTime(m.Timestamp), PhoneNumberID: v.Metadata.PhoneNumberID,
				}
				switch {
				case m.Type == "text":
					in.Text = m.Text.Body
				case m.Type == "button":
					in.ContextID, in.ButtonText = m.Context.ID, cmp.Or(m.Button.Text, m.Button.Payload)
				case m.Type == "interactive" && m.Interactive.Type == "button_reply":
					in.ContextID, in.ButtonText = m.Context.ID, cmp.Or(m.Interactive.ButtonReply.Title, m.Interactive.ButtonReply.ID)
				}
				w.Inbound = append(w.Inbound, in)
			}
		}
	}
	return w, nil
}

// templateUpdate reads one message_template_status_update; one without a
// template name and event says nothing Herald can apply.
func templateUpdate(waba, event, id, name, language, category, reason string) (TemplateUpdate, bool) {
	if name == "" || event == "" {
		return TemplateUpdate{}, false
	}
	if strings.EqualFold(reason, "NONE") {
		reason = ""
	}
	return TemplateUpdate{WABAID: waba, Event: strings.ToUpper(event), TemplateID: id, Name: name,
		Language: language, Category: category, Reason: reason}, true
}

// unixTime reads Meta's Unix-seconds strings.
func unixTime(s string) time.Time {
	secs, err := strconv.ParseInt(s, 10, 64)
	if err != nil || secs <= 0 {
		return time.Time{}
	}
	return time.Unix(secs, 0).UTC()
}

// statusExcerpt is a status's Receipt.Raw, which the receipt path keeps on
// the message's timeline: the compact status with what Meta bills the
// message as (pricing: category, pricing_model, billable, type) and the
// conversation's origin first, so that the excerpt's cut never drops what
// the tenant pays for.
func statusExcerpt(raw json.RawMessage) string {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields["pricing"] == nil {
		return compactExcerpt(raw)
	}
	first := []string{"pricing", "conversation", "status"}
	var rest []string
	for k := range fields {
		if !slices.Contains(first, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	var buf bytes.Buffer
	buf.WriteByte('{')
	for _, k := range append(first, rest...) {
		v, ok := fields[k]
		if !ok {
			continue
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		buf.Write(key)
		buf.WriteByte(':')
		if err := json.Compact(&buf, v); err != nil {
			return compactExcerpt(raw)
		}
	}
	buf.WriteByte('}')
	return excerpt(buf.Bytes())
}

// compactExcerpt shortens a JSON fragment for Receipt.Raw.
func compactExcerpt(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return excerpt(raw)
	}
	return excerpt(buf.Bytes())
}
