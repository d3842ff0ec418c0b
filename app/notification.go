package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/nyaruka/phonenumbers"
)

// MaxPayloadBytes caps a notification request.
const MaxPayloadBytes = 16 << 10

// MaxRecipients caps the recipients of one request; larger audiences are
// several requests.
const MaxRecipients = 500

// NotificationRequest is what a tenant's system sends to ask for messages.
// The tenant comes from the API key, never from the body.
type NotificationRequest struct {
	// EventID is the caller's id for the event and the idempotency key.
	EventID             string               `json:"event_id"`
	TriggerEvent        string               `json:"trigger_event"`
	Recipients          []Recipient          `json:"recipients"`
	Context             map[string]any       `json:"context"`
	ConversationContext *ConversationContext `json:"conversation_context,omitempty"`
	Channels            []string             `json:"channels,omitempty"`
	FallbackChain       []string             `json:"fallback_chain,omitempty"`
	SendAt              *time.Time           `json:"send_at,omitempty"`
	Locale              string               `json:"locale,omitempty"`
}

// Recipient is one person to notify.
type Recipient struct {
	PassengerProfileID string `json:"passenger_profile_id,omitempty"`
	Name               string `json:"name"`
	Phone              string `json:"phone,omitempty"`
	Email              string `json:"email,omitempty"`
	Locale             string `json:"locale,omitempty"`
}

// ConversationContext links the messages to a booking, trip or invoice.
type ConversationContext struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// ParseNotificationRequest decodes and validates a request body. Unknown
// fields are refused, so a misspelt field is an error rather than ignored.
func ParseNotificationRequest(body []byte, now time.Time) (*NotificationRequest, error) {
	if len(body) > MaxPayloadBytes {
		return nil, &Error{Code: ETOOLARGE, Reason: "payload_too_large",
			Message: fmt.Sprintf("The request is %d bytes; the limit is %d (16 KiB).", len(body), MaxPayloadBytes)}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var req NotificationRequest
	if err := dec.Decode(&req); err != nil {
		return nil, decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &Error{Code: EMALFORMED, Reason: "malformed_json", Message: "The body must be one JSON object."}
	}
	if err := req.Validate(now); err != nil {
		return nil, err
	}
	return &req, nil
}

func decodeError(err error) error {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	msg := err.Error()
	switch {
	case errors.As(err, &syntax):
		return &Error{Code: EMALFORMED, Reason: "malformed_json", Message: fmt.Sprintf("The body is not valid JSON (at byte %d).", syntax.Offset)}
	case errors.As(err, &typeErr):
		return &Error{Code: EMALFORMED, Reason: "malformed_json", Field: typeErr.Field,
			Message: fmt.Sprintf("Field %s must be %s, not %s.", typeErr.Field, typeErr.Type, typeErr.Value)}
	case strings.HasPrefix(msg, "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
		m := fmt.Sprintf("Unknown field %q.", field)
		if field == "tenant_id" {
			m = "Unknown field \"tenant_id\": the tenant comes from the API key."
		}
		return &Error{Code: EMALFORMED, Reason: "unknown_field", Field: field, Message: m}
	case strings.Contains(msg, "parsing time"):
		return &Error{Code: EMALFORMED, Reason: "malformed_json", Field: "send_at", Message: "send_at must be an RFC 3339 time such as 2027-04-12T07:15:00+02:00."}
	}
	return &Error{Code: EMALFORMED, Reason: "malformed_json", Message: "The body is not a valid notification request."}
}

// Validate checks the request against the registry and the address rules,
// and normalises phones (E.164), e-mail addresses, locales and channels.
func (r *NotificationRequest) Validate(now time.Time) error {
	r.EventID = strings.TrimSpace(r.EventID)
	switch {
	case r.EventID == "":
		return Invalid("missing_event_id", "event_id", "event_id is required: your id for this event, used to drop duplicates.")
	case len(r.EventID) > 200:
		return Invalid("invalid_event_id", "event_id", "event_id must be at most 200 characters.")
	}
	def, ok := LookupEvent(r.TriggerEvent)
	if !ok {
		return Invalid("unknown_event", "trigger_event", "trigger_event %q is not a known event; GET /api/v1/events lists them.", r.TriggerEvent)
	}
	for _, v := range def.Variables {
		val, present := r.Context[v]
		if !present || val == nil || val == "" {
			return Invalid("missing_variable", "context."+v, "context.%s is required for %s.", v, def.Name)
		}
	}
	if len(r.Recipients) == 0 {
		return Invalid("no_recipient", "recipients", "At least one recipient is required.")
	}
	if len(r.Recipients) > MaxRecipients {
		return Invalid("too_many_recipients", "recipients", "At most %d recipients per request.", MaxRecipients)
	}
	for i := range r.Recipients {
		if err := r.Recipients[i].validate(fmt.Sprintf("recipients[%d]", i)); err != nil {
			return err
		}
	}
	var err error
	if r.Channels, err = normalizeChannels("channels", r.Channels); err != nil {
		return err
	}
	if r.FallbackChain, err = normalizeChannels("fallback_chain", r.FallbackChain); err != nil {
		return err
	}
	if r.SendAt != nil && !r.SendAt.After(now) {
		return Invalid("send_at_in_past", "send_at", "send_at must be in the future; leave it out to send now.")
	}
	if r.Locale != "" {
		if r.Locale, err = NormalizeLocale(r.Locale); err != nil {
			return Invalid("invalid_locale", "locale", "%s", err.Error())
		}
	}
	if c := r.ConversationContext; c != nil {
		c.ID = strings.TrimSpace(c.ID)
		switch {
		case c.Type != EntityBooking && c.Type != EntityTrip && c.Type != EntityInvoice:
			return Invalid("invalid_conversation_context", "conversation_context.type", "conversation_context.type must be booking, trip or invoice.")
		case c.ID == "" || len(c.ID) > 200:
			return Invalid("invalid_conversation_context", "conversation_context.id", "conversation_context.id is required (at most 200 characters).")
		}
	}
	return nil
}

func (rc *Recipient) validate(field string) error {
	rc.Name = strings.TrimSpace(rc.Name)
	rc.PassengerProfileID = strings.TrimSpace(rc.PassengerProfileID)
	if len(rc.Name) > 200 || len(rc.PassengerProfileID) > 200 {
		return Invalid("invalid_recipient", field, "Names and profile ids must be at most 200 characters.")
	}
	if rc.Phone == "" && rc.Email == "" {
		return Invalid("no_address", field, "Each recipient needs a phone number or an e-mail address.")
	}
	if rc.Phone != "" {
		p, err := NormalizePhone(rc.Phone)
		if err != nil {
			return Invalid("invalid_phone", field+".phone", "%q is not a valid international phone number (E.164, such as +4915112345678).", rc.Phone)
		}
		rc.Phone = p
	}
	if rc.Email != "" {
		e, err := NormalizeEmail(field+".email", rc.Email)
		if err != nil {
			return Invalid("invalid_email", field+".email", "%q is not a valid e-mail address.", rc.Email)
		}
		rc.Email = e
	}
	if rc.Locale != "" {
		l, err := NormalizeLocale(rc.Locale)
		if err != nil {
			return Invalid("invalid_locale", field+".locale", "%s", err.Error())
		}
		rc.Locale = l
	}
	return nil
}

// NormalizePhone parses an international number and returns it in E.164.
func NormalizePhone(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "+") {
		return "", errors.New("phone numbers must start with + and the country code")
	}
	num, err := phonenumbers.Parse(s, "")
	if err != nil || !phonenumbers.IsValidNumber(num) {
		return "", errors.New("not a valid phone number")
	}
	return phonenumbers.Format(num, phonenumbers.E164), nil
}

func normalizeChannels(field string, in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	seen := map[Channel]bool{}
	out := make([]string, 0, len(in))
	for i, s := range in {
		c, ok := ParseChannel(s)
		if !ok {
			return nil, Invalid("unknown_channel", fmt.Sprintf("%s[%d]", field, i), "%q is not a channel (WHATSAPP, EMAIL, SMS, WEBHOOK).", s)
		}
		if seen[c] {
			return nil, Invalid("duplicate_channel", fmt.Sprintf("%s[%d]", field, i), "Channel %s is listed twice.", c)
		}
		seen[c] = true
		out = append(out, string(c))
	}
	return out, nil
}

var secretKeyPattern = regexp.MustCompile(`(?i)token|secret|password|authorization`)

// Redact replaces the value of every key that looks like a secret, at any
// depth, with "<redacted>", and returns the paths it replaced.
func Redact(v map[string]any) []string {
	var paths []string
	var walk func(prefix string, x any)
	walk = func(prefix string, x any) {
		switch t := x.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				if secretKeyPattern.MatchString(k) {
					t[k] = "<redacted>"
					paths = append(paths, p)
					continue
				}
				walk(p, t[k])
			}
		case []any:
			for i, e := range t {
				walk(fmt.Sprintf("%s[%d]", prefix, i), e)
			}
		}
	}
	walk("", v)
	return paths
}
