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
	"unicode"

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
	// SendAtSpec is send_at as sent: a time (RFC 3339) or a time relative
	// to one in the context (SendAtRule). Validate resolves it into SendAt.
	SendAtSpec json.RawMessage `json:"send_at,omitempty"`
	// ExpiresSpec is expires_at as sent; Validate reads it into ExpiresAt,
	// or puts the registry's default there.
	ExpiresSpec json.RawMessage `json:"expires_at,omitempty"`
	Locale      string          `json:"locale,omitempty"`

	// SendAt is when the event is due; nil sends now.
	SendAt *time.Time `json:"-"`
	// SendAtRule is the relative send_at, nil for an absolute one.
	SendAtRule *SendAtRule `json:"-"`
	// ExpiresAt is when the event expires unsent, nil never.
	ExpiresAt *time.Time `json:"-"`
	// ExpiresRule says where a default ExpiresAt came from (see
	// Event.ExpiresRule); "" for the request's own.
	ExpiresRule string `json:"-"`
	// Audience, instead of Recipients, sends to every current passenger
	// of a trip (see entity.go).
	Audience *Audience `json:"audience,omitempty"`
	// Attachments go with every message of the event (attachment.go).
	Attachments []AttachmentInput `json:"attachments,omitempty"`

	// def is the event's registry entry for the request's tenant, set by
	// ParseNotificationRequest.
	def *EventDef
}

// Def is the registry entry of a parsed request's event.
func (r *NotificationRequest) Def() *EventDef { return r.def }

// Recipient is one person to notify. Context, Locale and Timezone, when
// given, override the event's for this recipient only: an incident
// broadcast to a coach greets each passenger by name and shows times in
// each one's zone.
type Recipient struct {
	PassengerProfileID string         `json:"passenger_profile_id,omitempty"`
	Name               string         `json:"name"`
	Phone              string         `json:"phone,omitempty"`
	Email              string         `json:"email,omitempty"`
	Locale             string         `json:"locale,omitempty"`
	Timezone           string         `json:"timezone,omitempty"`
	Context            map[string]any `json:"context,omitempty"`
	// Attachments go with this recipient's messages only (a ticket per
	// passenger), after the event's.
	Attachments []AttachmentInput `json:"attachments,omitempty"`
}

// ConversationContext links the messages to a booking, trip or invoice.
type ConversationContext struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// ParseNotificationRequest decodes and validates a request body. Unknown
// fields are refused, so a misspelt field is an error rather than ignored.
//
// Inline files (attachments[].content) may take a body past
// MaxPayloadBytes, up to MaxRequestBytes: the rest of it must stay within.
//
// events resolves the trigger event for the request's tenant
// (Registry.For).
func ParseNotificationRequest(body []byte, now time.Time, events EventLookup) (*NotificationRequest, error) {
	if len(body) > MaxRequestBytes {
		return nil, payloadTooLarge(len(body))
	}
	if err := CheckJSONDepth(body); err != nil {
		return nil, err
	}
	if err := CheckJSONText(body); err != nil {
		return nil, err
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
	if size := len(body) - inlineBytes(&req); size > MaxPayloadBytes {
		return nil, payloadTooLarge(size)
	}
	def, known, err := events(req.TriggerEvent)
	if err != nil {
		return nil, err
	}
	if known {
		req.def = def
	}
	if err := req.Validate(now); err != nil {
		return nil, err
	}
	return &req, nil
}

// payloadTooLarge refuses a request of size bytes, its inline files not
// counted.
func payloadTooLarge(size int) error {
	return &Error{Code: ETOOLARGE, Reason: "payload_too_large",
		Message: fmt.Sprintf("The request is %d bytes without its inline files; the limit is %d (16 KiB). Inline files may add up to %d bytes in all; give larger ones by url.", size, MaxPayloadBytes, MaxRequestBytes)}
}

func decodeError(err error) error {
	e := DecodeJSONError(err)
	if ae, ok := e.(*Error); ok && ae.Message == genericDecodeMessage {
		ae.Message = "The body is not a valid notification request."
	}
	return e
}

const genericDecodeMessage = "The body is not valid JSON for this request."

// DecodeJSONError turns an error of encoding/json's decoder (with unknown
// fields disallowed) into Herald's vocabulary with a message for people:
// broken JSON and values of the wrong type are EMALFORMED (400); an unknown
// field, or a time that is not RFC 3339, is EINVALID (422), like every other
// request that parses but is wrong. Go's own texts (type names, time layouts)
// never reach the caller.
func DecodeJSONError(err error) error {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	var timeErr *time.ParseError
	msg := err.Error()
	switch {
	case errors.As(err, &syntax):
		return &Error{Code: EMALFORMED, Reason: "malformed_json", Message: fmt.Sprintf("The body is not valid JSON (at byte %d).", syntax.Offset)}
	case errors.As(err, &typeErr) && strings.HasSuffix(typeErr.Field, "send_at"):
		return invalidSendAt(typeErr.Field)
	case errors.As(err, &typeErr):
		return &Error{Code: EMALFORMED, Reason: "malformed_json", Field: typeErr.Field,
			Message: fmt.Sprintf("Field %s must be %s, not %s.", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)}
	case strings.HasPrefix(msg, "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
		m := fmt.Sprintf("Unknown field %q.", field)
		if field == "tenant_id" {
			m = "Unknown field \"tenant_id\": the tenant comes from the API key."
		}
		return &Error{Code: EINVALID, Reason: "unknown_field", Field: field, Message: m}
	case errors.As(err, &timeErr), strings.Contains(msg, "parsing time"), strings.Contains(msg, "Time.UnmarshalJSON"):
		// encoding/json does not say which field held the time; send_at is
		// the only time the API reads.
		return invalidSendAt("send_at")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Code: EMALFORMED, Reason: "malformed_json", Message: "The body is empty or cut short; send one JSON object."}
	}
	return &Error{Code: EMALFORMED, Reason: "malformed_json", Message: genericDecodeMessage}
}

func invalidSendAt(field string) error {
	return Invalid("invalid_send_at", field, "%s must be a time with its offset (RFC 3339), such as 2027-04-12T07:15:00+02:00 or 2027-04-12T05:15:00Z.", field)
}

// jsonKind names a Go kind as JSON calls it.
func jsonKind(kind string) string {
	switch {
	case kind == "string":
		return "a string"
	case kind == "slice" || kind == "array":
		return "an array"
	case kind == "map" || kind == "struct" || kind == "ptr":
		return "an object"
	case kind == "bool":
		return "true or false"
	case strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint") || strings.HasPrefix(kind, "float"):
		return "a number"
	}
	return "another type"
}

// Validate checks the request against the registry and the address rules,
// and normalises phones (E.164), e-mail addresses, locales and channels. It
// reports every problem at once: the error is the first problem, with all of
// them (the first included) in its Details, so a caller fixes its request in
// one round trip.
func (r *NotificationRequest) Validate(now time.Time) error {
	var p problems
	r.EventID = strings.TrimSpace(r.EventID)
	switch {
	case r.EventID == "":
		p.add(Invalid("missing_event_id", "event_id", "event_id is required: your id for this event, used to drop duplicates."))
	case len(r.EventID) > 200:
		p.add(Invalid("invalid_event_id", "event_id", "event_id must be at most 200 characters."))
	}
	if def := r.def; def == nil {
		p.add(Invalid("unknown_event", "trigger_event", "trigger_event %q is not a known event; GET /api/v1/events lists them.", r.TriggerEvent))
	} else {
		r.checkVariables(&p, def)
	}
	switch {
	case r.Audience != nil:
		r.validateAudience(&p)
	case len(r.Recipients) == 0:
		p.add(Invalid("no_recipient", "recipients", "At least one recipient is required (or an audience: {\"trip_id\": ...})."))
	case len(r.Recipients) > MaxRecipients:
		p.add(Invalid("too_many_recipients", "recipients", "At most %d recipients per request.", MaxRecipients))
	default:
		for i := range r.Recipients {
			r.Recipients[i].validate(&p, fmt.Sprintf("recipients[%d]", i))
		}
	}
	r.validateAttachments(&p)
	r.Channels = normalizeChannels(&p, "channels", r.Channels)
	r.FallbackChain = normalizeChannels(&p, "fallback_chain", r.FallbackChain)
	if r.def != nil {
		r.checkTimes(&p, r.def, now)
	}
	if r.Locale != "" {
		l, err := NormalizeLocale(r.Locale)
		if err != nil {
			p.add(Invalid("invalid_locale", "locale", "%s", err.Error()))
		} else {
			r.Locale = l
		}
	}
	if c := r.ConversationContext; c != nil {
		c.ID = strings.TrimSpace(c.ID)
		if c.Type != EntityBooking && c.Type != EntityTrip && c.Type != EntityInvoice {
			p.add(Invalid("invalid_conversation_context", "conversation_context.type", "conversation_context.type must be booking, trip or invoice."))
		}
		if c.ID == "" || len(c.ID) > 200 {
			p.add(Invalid("invalid_conversation_context", "conversation_context.id", "conversation_context.id is required (at most 200 characters)."))
		}
	}
	if v, ok := r.Context["trip_id"]; ok {
		if s, isString := v.(string); !isString || strings.TrimSpace(s) == "" || len(s) > 200 {
			p.add(Invalid("invalid_trip_id", "context.trip_id", "context.trip_id names the booking's trip: a string of 1 to 200 characters."))
		} else if c := r.ConversationContext; c != nil && c.Type == EntityTrip && c.ID != strings.TrimSpace(s) {
			p.add(Invalid("invalid_trip_id", "context.trip_id", "context.trip_id differs from the trip in conversation_context."))
		}
	}
	return p.err()
}

// validateAttachments checks the event's files, then each recipient's with
// the event's counted: a message carries both.
func (r *NotificationRequest) validateAttachments(p *problems) {
	before := len(*p)
	validateAttachments(p, "attachments", r.Attachments, 0, 0)
	if len(*p) > before {
		return
	}
	var shared int64
	for _, a := range r.Attachments {
		shared += int64(len(a.data))
	}
	for i := range r.Recipients {
		validateAttachments(p, fmt.Sprintf("recipients[%d].attachments", i), r.Recipients[i].Attachments, len(r.Attachments), shared)
	}
}

// validateAudience checks an audience, which replaces the recipients: it
// names a trip, and the event is about that trip.
func (r *NotificationRequest) validateAudience(p *problems) {
	a := r.Audience
	a.TripID = strings.TrimSpace(a.TripID)
	if len(r.Recipients) > 0 {
		p.add(Invalid("audience_with_recipients", "audience", "Give either recipients or an audience, not both: an audience is every current passenger of the trip."))
	}
	if a.TripID == "" || len(a.TripID) > 200 {
		p.add(Invalid("invalid_audience", "audience.trip_id", "audience.trip_id is required (at most 200 characters)."))
	}
	if c := r.ConversationContext; c != nil && (c.Type != EntityTrip || strings.TrimSpace(c.ID) != a.TripID) {
		p.add(Invalid("invalid_audience", "conversation_context", "An audience event is about its trip: leave conversation_context out, or make it {\"type\": \"trip\", \"id\": \"%s\"}.", a.TripID))
	}
}

// checkTimes reads send_at (absolute, or relative to a context time) and
// expires_at, and decides the expiry (see EventExpiry).
func (r *NotificationRequest) checkTimes(p *problems, def *EventDef, now time.Time) {
	var err error
	r.SendAt, r.SendAtRule, err = decodeSendAt(r.SendAtSpec)
	if err == nil && r.SendAtRule != nil {
		var at time.Time
		if at, err = ResolveSendAt(r.SendAtRule, r.Context); err == nil {
			r.SendAt = &at
			if !at.After(now) {
				err = Invalid("send_at_in_past", "send_at", "send_at resolves to %s (%s), which is not in the future.",
					at.Format(time.RFC3339), r.SendAtRule)
			}
		}
	} else if err == nil && r.SendAt != nil && !r.SendAt.After(now) {
		err = Invalid("send_at_in_past", "send_at", "send_at must be in the future; leave it out to send now.")
	}
	if err != nil {
		p.add(asError(err))
		return
	}
	if spec := bytes.TrimSpace(r.ExpiresSpec); len(spec) > 0 && string(spec) != "null" {
		var s string
		t, perr := time.Time{}, json.Unmarshal(spec, &s)
		if perr == nil {
			t, perr = time.Parse(time.RFC3339, s)
		}
		if perr != nil {
			p.add(Invalid("invalid_expires_at", "expires_at", "expires_at must be a time with its offset (RFC 3339), such as 2027-04-12T07:15:00+02:00."))
			return
		}
		r.ExpiresAt = &t
	}
	if r.ExpiresAt, r.ExpiresRule, err = EventExpiry(def, r, now); err != nil {
		p.add(asError(err))
	}
	// A time this event moves must be a time, or nothing could move.
	for _, k := range def.Moves {
		if v, ok := r.Context[k]; ok {
			if s, isText := v.(string); !isText || !isRFC3339(s) {
				p.add(Invalid("invalid_context_time", "context."+k, "context.%s must be a time with its offset (RFC 3339), such as 2027-04-12T07:15:00+02:00.", k))
			}
		}
	}
}

func isRFC3339(s string) bool {
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}

// asError is err as Herald's *Error (an internal one when it is not).
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: EINTERNAL, Message: err.Error()}
}

// checkVariables reports the required variables missing from a
// recipient's merged context (the event's, with the recipient's own over
// it): one problem under context.<name> when no recipient has the variable,
// else one under recipients[i].context.<name> for each recipient without
// it.
func (r *NotificationRequest) checkVariables(p *problems, def *EventDef) {
	present := func(ctx map[string]any, v string) bool {
		val, ok := ctx[v]
		return ok && val != nil && val != ""
	}
	r.checkTypes(p, def)
	for _, v := range def.Variables {
		if present(r.Context, v) {
			continue
		}
		if r.Audience != nil {
			// Each passenger of an audience gets their own passenger_name;
			// the rest must be in the event's context.
			if v != "passenger_name" {
				p.add(Invalid("missing_variable", "context."+v, "context.%s is required for %s.", v, def.Name))
			}
			continue
		}
		var missing []int
		for i, rc := range r.Recipients {
			if !present(rc.Context, v) {
				missing = append(missing, i)
			}
		}
		if len(missing) == 0 {
			continue
		}
		if len(missing) == len(r.Recipients) {
			p.add(Invalid("missing_variable", "context."+v, "context.%s is required for %s.", v, def.Name))
			continue
		}
		for _, i := range missing {
			field := fmt.Sprintf("recipients[%d].context.%s", i, v)
			p.add(Invalid("missing_variable", field, "%s is required for %s: the event's context does not have it, so each recipient's must.", field, def.Name))
		}
	}
}

// checkTypes reports each variable present, in the event's context or a
// recipient's, whose value is not of the variable's type, under the field
// that holds it.
func (r *NotificationRequest) checkTypes(p *problems, def *EventDef) {
	check := func(ctx map[string]any, prefix string) {
		for _, v := range def.Types {
			if val, ok := ctx[v.Name]; ok && val != nil && val != "" {
				if e := v.CheckValue(prefix+v.Name, val); e != nil {
					p.add(e)
				}
			}
		}
	}
	check(r.Context, "context.")
	for i, rc := range r.Recipients {
		check(rc.Context, fmt.Sprintf("recipients[%d].context.", i))
	}
}

func (rc *Recipient) validate(p *problems, field string) {
	rc.Name = strings.TrimSpace(rc.Name)
	rc.PassengerProfileID = strings.TrimSpace(rc.PassengerProfileID)
	if len(rc.Name) > 200 || len(rc.PassengerProfileID) > 200 {
		p.add(Invalid("invalid_recipient", field, "Names and profile ids must be at most 200 characters."))
	}
	if rc.Phone == "" && rc.Email == "" {
		p.add(Invalid("no_address", field, "Each recipient needs a phone number or an e-mail address."))
	}
	if rc.Phone != "" {
		if ph, err := NormalizePhone(rc.Phone); err != nil {
			p.add(Invalid("invalid_phone", field+".phone", "%q is not a valid international phone number (E.164, such as +4915112345678).", rc.Phone))
		} else {
			rc.Phone = ph
		}
	}
	if rc.Email != "" {
		if e, err := NormalizeEmail(field+".email", rc.Email); err != nil {
			p.add(Invalid("invalid_email", field+".email", "%q is not a valid e-mail address.", rc.Email))
		} else {
			rc.Email = e
		}
	}
	if rc.Locale != "" {
		if l, err := NormalizeLocale(rc.Locale); err != nil {
			p.add(Invalid("invalid_locale", field+".locale", "%s", err.Error()))
		} else {
			rc.Locale = l
		}
	}
	if rc.Timezone != "" {
		if _, err := RecipientLocation(rc.Timezone); err != nil {
			p.add(Invalid("invalid_timezone", field+".timezone", "%q is not a time zone; use an IANA name such as Europe/Berlin.", rc.Timezone))
		}
	}
	if len(rc.Context) == 0 {
		// {} and absent mean the same: nothing overrides the event's context.
		rc.Context = nil
	}
}

// RecipientLocation loads an IANA time zone by name. "Local", which names
// whatever zone the server runs in, is not one.
func RecipientLocation(name string) (*time.Location, error) {
	if name == "Local" || strings.TrimSpace(name) != name {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	return time.LoadLocation(name)
}

// NormalizePhone parses an international number and returns it in E.164.
func NormalizePhone(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "+") {
		return "", errors.New("phone numbers must start with + and the country code")
	}
	// Letters would be read as a keypad's vanity digits (A is 2): a
	// passenger's number never has any, so a letter is a mistake.
	if strings.IndexFunc(s, unicode.IsLetter) >= 0 {
		return "", errors.New("phone numbers are digits only, not letters")
	}
	num, err := phonenumbers.Parse(s, "")
	if err != nil || !phonenumbers.IsValidNumber(num) {
		return "", errors.New("not a valid phone number")
	}
	e164 := phonenumbers.Format(num, phonenumbers.E164)
	// E.164 allows 15 digits at most; the metadata of some countries accepts
	// longer numbers that no provider will send to.
	if len(e164) > 16 {
		return "", errors.New("not a valid phone number: more than 15 digits")
	}
	return e164, nil
}

func normalizeChannels(p *problems, field string, in []string) []string {
	if len(in) == 0 {
		return nil
	}
	seen := map[Channel]bool{}
	out := make([]string, 0, len(in))
	for i, s := range in {
		c, ok := ParseChannel(s)
		switch {
		case !ok:
			p.add(Invalid("unknown_channel", fmt.Sprintf("%s[%d]", field, i), "%q is not a channel (WHATSAPP, EMAIL, SMS, WEBHOOK).", s))
		case seen[c]:
			p.add(Invalid("duplicate_channel", fmt.Sprintf("%s[%d]", field, i), "Channel %s is listed twice.", c))
		default:
			seen[c] = true
			out = append(out, string(c))
		}
	}
	return out
}

// CheckJSONText refuses a JSON document with a NUL character in any key or
// string (a raw byte, or the \u0000 escape). Postgres cannot store NUL in
// text or jsonb, and no name, address or variable has one, so it is bad
// input rather than a storage failure. A body nested too deep to decode is
// refused as CheckJSONDepth refuses it; one that is not valid JSON passes:
// its decoder reports that.
func CheckJSONText(body []byte) error {
	if bytes.IndexByte(body, 0) >= 0 {
		return invalidText("", "The body contains a NUL byte.")
	}
	// Only an escape can hide a NUL in valid JSON; most bodies have none.
	if !bytes.Contains(body, []byte(`\u0000`)) {
		return nil
	}
	if err := CheckJSONDepth(body); err != nil {
		return err
	}
	v, err := decodeLoose(body)
	if err != nil {
		return nil
	}
	if path, found := findNUL("", v); found {
		return invalidText(path, fmt.Sprintf("%s contains a NUL character (\\u0000); text may not contain one.", describePath(path)))
	}
	return nil
}

// CheckText refuses a NUL character in a single text input, such as a query
// parameter.
func CheckText(field, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return invalidText(field, fmt.Sprintf("%s contains a NUL character; text may not contain one.", field))
	}
	return nil
}

func invalidText(field, msg string) error {
	return &Error{Code: EMALFORMED, Reason: "invalid_text", Field: field, Message: msg}
}

func describePath(path string) string {
	if path == "" {
		return "The body"
	}
	return path
}

// findNUL returns the path of the first key or string holding a NUL.
func findNUL(path string, v any) (string, bool) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := v.(type) {
	case string:
		return path, strings.IndexByte(x, 0) >= 0
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if strings.IndexByte(k, 0) >= 0 {
				return join(strings.ReplaceAll(k, "\x00", `\u0000`)), true
			}
			if p, found := findNUL(join(k), x[k]); found {
				return p, true
			}
		}
	case []any:
		for i, e := range x {
			if p, found := findNUL(fmt.Sprintf("%s[%d]", path, i), e); found {
				return p, true
			}
		}
	}
	return "", false
}

// HeaderText makes rendered text safe for a one-line header such as an
// e-mail subject: each run of CR and LF (which a context value could carry
// into the header, and with it new headers) becomes one space, and the
// ends are trimmed.
func HeaderText(s string) string {
	if strings.ContainsAny(s, "\r\n") {
		s = crlfRuns.ReplaceAllString(s, " ")
	}
	return strings.TrimSpace(s)
}

var crlfRuns = regexp.MustCompile(`[\r\n]+`)

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
