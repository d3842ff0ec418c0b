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
	// NumberUpdates are Meta's news about the WABA's numbers:
	// phone_number_quality_update and account_update.
	NumberUpdates []NumberUpdate
}

// Fields of NumberUpdate.
const (
	FieldQualityUpdate = "phone_number_quality_update"
	FieldAccountUpdate = "account_update"
)

// NumberUpdate is one phone_number_quality_update (Event FLAGGED,
// UNFLAGGED, DOWNGRADE, UPGRADE, ONBOARDING, THROUGHPUT_UPGRADE; Tier the
// messaging limit now) or account_update (Event such as ACCOUNT_UPDATE,
// ACCOUNT_VIOLATION, ACCOUNT_RESTRICTION, DISABLED_UPDATE; Detail the
// ban, restriction or violation it carries).
type NumberUpdate struct {
	// WABAID is the entry's id: the WhatsApp Business Account.
	WABAID string
	Field  string
	// DisplayPhoneNumber is the number the update is about, when Meta
	// names it.
	DisplayPhoneNumber string
	Event              string
	// Tier is max_daily_conversations_per_business when Meta sends it,
	// else current_limit (which Meta is retiring): TIER_250, TIER_2K,
	// TIER_10K, TIER_100K, TIER_UNLIMITED, or a number.
	Tier   string
	Detail string
	// At is the entry's time (zero when Meta sent none).
	At time.Time
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
		ID      string      `json:"id"`
		Time    json.Number `json:"time"`
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
				// The phone_number_quality_update and account_update fields.
				DisplayPhoneNumber string          `json:"display_phone_number"`
				PhoneNumber        string          `json:"phone_number"`
				CurrentLimit       string          `json:"current_limit"`
				MaxDaily           json.RawMessage `json:"max_daily_conversations_per_business"`
				BanInfo            json.RawMessage `json:"ban_info"`
				ViolationInfo      json.RawMessage `json:"violation_info"`
				RestrictionInfo    json.RawMessage `json:"restriction_info"`
				Messages           []struct {
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
// (message_template_status_update) are read into TemplateUpdates, quality
// and account updates into NumberUpdates; changes of other fields and
// statuses Herald does not track are skipped. A timestamp that does not parse leaves At zero for
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
			if ch.Field == FieldQualityUpdate || ch.Field == FieldAccountUpdate {
				v := ch.Value
				u := NumberUpdate{WABAID: entry.ID, Field: ch.Field, Event: strings.ToUpper(strings.TrimSpace(v.Event)),
					DisplayPhoneNumber: cmp.Or(v.DisplayPhoneNumber, v.PhoneNumber), At: unixTime(entry.Time.String())}
				if ch.Field == FieldQualityUpdate {
					u.Tier = cmp.Or(rawText(v.MaxDaily), strings.TrimSpace(v.CurrentLimit))
				} else {
					u.Detail = accountDetail(v.BanInfo, v.ViolationInfo, v.RestrictionInfo)
				}
				if u.WABAID != "" && u.Event != "" {
					w.NumberUpdates = append(w.NumberUpdates, u)
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

// rawText reads a JSON string or number as text ("" for anything else).
func rawText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// accountDetail is what an account_update says beyond its event: its ban,
// violation and restriction objects, compacted, at most 500 bytes.
func accountDetail(parts ...json.RawMessage) string {
	names := []string{"ban_info", "violation_info", "restriction_info"}
	var out []string
	for i, raw := range parts {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var buf bytes.Buffer
		if json.Compact(&buf, raw) != nil {
			continue
		}
		out = append(out, names[i]+"="+buf.String())
	}
	d := strings.Join(out, " ")
	if len(d) > 500 {
		d = strings.ToValidUTF8(d[:497], "") + "..."
	}
	return d
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
