package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/app"
)

// Body sizes of a rejected request: a larger body is not read for
// redaction at all, and the redacted body is cut at MaxRedactedBody.
const (
	MaxRedactInput  = 64 << 10
	MaxRedactedBody = 16 << 10
)

// redactKeep names the fields whose values identify or steer a request
// rather than describe a person: they stay readable, so that a rejection
// can be debugged. Every other string is masked.
var redactKeep = map[string]bool{
	"event_id": true, "trigger_event": true, "channels": true, "fallback_chain": true, "channel": true,
	"locale": true, "timezone": true, "send_at": true, "type": true, "id": true, "entity_type": true,
	"entity_id": true, "passenger_profile_id": true, "scopes": true, "status": true, "provider": true,
	"events": true, "version": true,
}

// keptSuffix reports whether a field names a reference or a date by its
// name (booking_reference, tour_id, departure_date), which stays readable.
func keptSuffix(key string) bool {
	for _, suffix := range []string{"_id", "_ref", "_reference", "_date", "_at"} {
		if strings.HasSuffix(key, suffix) {
			return true
		}
	}
	return false
}

// redactKeepMax clips a kept value.
const redactKeepMax = 200

// RedactBody returns a rejected API request's body as the Requests page may
// show it to anyone who sees the tenant's messages: the JSON's structure
// and keys as sent; identifiers, channels, locales and times readable;
// e-mail addresses and phone numbers masked as everywhere in the console;
// every other text (names, messages, template bodies) replaced by its
// length. A body that is not JSON, or too large or too deeply nested to
// read, is described, not kept; one of those is never decoded.
func RedactBody(body []byte) string {
	switch {
	case len(bytes.TrimSpace(body)) == 0:
		return ""
	case len(body) > MaxRedactInput:
		return fmt.Sprintf("(%d bytes: too large to keep)", len(body))
	case app.CheckJSONDepth(body) != nil:
		return fmt.Sprintf("(%d bytes, nested more than %d levels deep: not parsed)", len(body), app.MaxJSONDepth)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return fmt.Sprintf("(%d bytes, not valid JSON: not kept)", len(body))
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(redactValue("", v)); err != nil {
		return fmt.Sprintf("(%d bytes: not kept)", len(body))
	}
	s := strings.TrimSpace(out.String())
	if len(s) > MaxRedactedBody {
		cut := MaxRedactedBody
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "\n… (cut at 16 KiB)"
	}
	return s
}

// redactValue redacts v, the value of key (the nearest key above it for
// array elements).
func redactValue(key string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = redactValue(strings.ToLower(k), x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = redactValue(key, x)
		}
		return out
	case string:
		return redactString(key, v)
	}
	// Numbers, booleans and null say nothing about a person on their own.
	return v
}

func redactString(key, s string) string {
	switch {
	case emailPattern.MatchString(s):
		return emailPattern.ReplaceAllStringFunc(maskedLength(s, true), MaskEmail)
	case phonePattern.MatchString(s) || strings.Contains(key, "phone"):
		return MaskPhone(phoneDigits(s))
	case redactKeep[key] || keptSuffix(key):
		if r := []rune(s); len(r) > redactKeepMax {
			return string(r[:redactKeepMax]) + "…"
		}
		return s
	}
	if _, err := time.Parse(time.RFC3339, s); err == nil {
		return s
	}
	if _, err := time.Parse(time.DateOnly, s); err == nil {
		return s
	}
	return maskedLength(s, false)
}

// maskedLength stands in for free text: its length only. With keepEmails
// an e-mail address alone is kept for MaskEmail to mask.
func maskedLength(s string, keepEmails bool) string {
	if keepEmails && emailPattern.FindString(s) == strings.TrimSpace(s) {
		return strings.TrimSpace(s)
	}
	if s == "" {
		return ""
	}
	return fmt.Sprintf("••• (%d characters)", utf8.RuneCountInString(s))
}

// phoneDigits keeps a number's plus and digits, so that a number written
// with spaces or dashes is masked as a number.
func phoneDigits(s string) string {
	var b strings.Builder
	for i, r := range strings.TrimSpace(s) {
		if (r == '+' && i == 0) || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	if !strings.HasPrefix(b.String(), "+") {
		return "+" + b.String()
	}
	return b.String()
}
