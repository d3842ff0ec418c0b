package app_test

import (
	"encoding/json"
	"errors"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

// The fuzz targets of the domain's input handling. Their seed corpora (the
// f.Add calls and testdata/fuzz) run in every go test; `go tool task fuzz`
// runs each target for a while.

var fuzzNow = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

// FuzzParseNotificationRequest feeds the intake parser any body. It must
// never panic; a refusal is an *app.Error with a code and a readable
// message; an accepted request carries no NUL and survives a round trip
// through its own JSON unchanged.
func FuzzParseNotificationRequest(f *testing.F) {
	for _, seed := range []string{
		`{"event_id":"e1","trigger_event":"BOOKING_CONFIRMED","recipients":[{"name":"Ann","phone":"+4915112345678","email":"ann@example.com"}],"context":{"booking_reference":"BK-1","tour_name":"Alps","departure_date":"2027-04-12","passenger_name":"Ann"}}`,
		`{"event_id":"e2","trigger_event":"INCIDENT_BROADCAST","recipients":[{"name":"A","email":"a@example.com"},{"name":"B","phone":"+436641234567"}],"context":{"message":"Delay"},"conversation_context":{"type":"trip","id":"T-1"},"channels":["EMAIL","SMS"],"fallback_chain":["WHATSAPP","SMS"]}`,
		`{"event_id":"e3","trigger_event":"FINAL_PAYMENT_DUE","recipients":[{"name":"C","email":"c@example.com","locale":"de-DE"}],"context":{},"send_at":"2027-01-01T10:00:00Z"}`,
		`{"event_id":"","trigger_event":"NOPE","recipients":[]}`,
		`{"event_id":"e4","unknown":1}`,
		`{"event_id":"e5","trigger_event":"BOOKING_CONFIRMED","recipients":[{"name":"\u0000"}]}`,
		`[]`, `null`, `{`, ``, `{"event_id":1e999}`,
		`{"event_id":"e6","trigger_event":"BOOKING_CONFIRMED","recipients":[{"name":"D","phone":"015112345678"}],"context":{"x":{"y":[1,2,{"z":"\r\n"}]}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := app.ParseNotificationRequest(body, fuzzNow, app.BuiltIn)
		if err != nil {
			var ae *app.Error
			require.True(t, errors.As(err, &ae), "a refusal is an *app.Error, got %T: %v", err, err)
			require.NotEmpty(t, ae.Code)
			require.NotEmpty(t, strings.TrimSpace(ae.Message), "a refusal says why")
			require.NotContains(t, ae.Message, "json: ", "no decoder internals in the message")
			return
		}
		raw, err := json.Marshal(req)
		require.NoError(t, err)
		require.NotContains(t, string(raw), `\u0000`, "an accepted request holds no NUL")
		again, err := app.ParseNotificationRequest(raw, fuzzNow, app.BuiltIn)
		require.NoError(t, err, "an accepted request parses again from its own JSON: %s", raw)
		require.Equal(t, req, again, "the round trip changes nothing")
	})
}

// FuzzCheckJSONText: a body with a NUL byte is refused; a valid JSON body
// that passes holds no NUL in any key or string.
func FuzzCheckJSONText(f *testing.F) {
	for _, seed := range []string{`{"a":"b"}`, `{"a":"\u0000"}`, `{"\u0000":1}`, "{\"a\":\"\x00\"}", `[1,"x",{"y":["\u0000"]}]`, `"\\u0000"`, `not json \u0000`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		err := app.CheckJSONText(body)
		if strings.IndexByte(string(body), 0) >= 0 {
			require.Error(t, err, "a raw NUL byte is refused")
		}
		var v any
		if err != nil || json.Unmarshal(body, &v) != nil {
			return
		}
		var walk func(any)
		walk = func(x any) {
			switch y := x.(type) {
			case string:
				require.NotContains(t, y, "\x00")
			case []any:
				for _, e := range y {
					walk(e)
				}
			case map[string]any:
				for k, e := range y {
					require.NotContains(t, k, "\x00")
					walk(e)
				}
			}
		}
		walk(v)
	})
}

// FuzzRenderEmail: context values can never inject markup into an e-mail
// body (escaped), nor a header into its subject (one line).
func FuzzRenderEmail(f *testing.F) {
	f.Add("Hello {{passenger_name}}, <b>{{tour_name}}</b>", "passenger_name", "<script>alert(1)</script>")
	f.Add("{{Name}}{{name}}{{ name }}", "name", "a&b\"c'd")
	f.Add("Booking {{booking_reference}}", "booking_reference", "BK\r\nBcc: victim@example.com")
	f.Add("{{x}}", "x", "\n\r\n")
	f.Fuzz(func(t *testing.T, text, name, value string) {
		vars := map[string]string{strings.ToLower(name): value}
		body, _ := app.Render(text, vars, true)
		if !strings.Contains(text, "<") {
			require.NotContains(t, body, "<", "a value's markup is escaped")
		}
		if !strings.Contains(text, "\"") {
			require.NotContains(t, body, "\"", "a value cannot close an attribute")
		}
		plain, _ := app.Render(text, vars, false)
		require.Equal(t, body, mustEscapeValues(text, vars), "escaping touches the values only")
		subject := app.HeaderText(plain)
		require.NotContains(t, subject, "\r")
		require.NotContains(t, subject, "\n")
		require.Equal(t, subject, strings.TrimSpace(subject))
		require.Equal(t, subject, app.HeaderText(subject), "header text is stable")
	})
}

// mustEscapeValues renders with each value escaped beforehand, which is
// what escaping during rendering must equal.
func mustEscapeValues(text string, vars map[string]string) string {
	escaped := make(map[string]string, len(vars))
	for k, v := range vars {
		escaped[k] = html.EscapeString(v)
	}
	out, _ := app.Render(text, escaped, false)
	return out
}

// FuzzValidateTemplateSubject: a subject with a line break, or a template
// with a NUL, is refused; whatever is accepted renders to a one-line
// subject whatever the context holds.
func FuzzValidateTemplateSubject(f *testing.F) {
	f.Add("Your booking {{booking_reference}}", "Hello {{passenger_name}}", "BK-1\r\nX: y")
	f.Add("Line\nbreak", "body", "")
	f.Add("", "body", "")
	f.Add("ok", "\x00", "")
	def, ok := app.BuiltInEvent("BOOKING_CONFIRMED")
	require.True(f, ok)
	f.Fuzz(func(t *testing.T, subject, body, value string) {
		_, err := app.ValidateTemplate(def, app.Email, app.TemplateInput{Subject: subject, Body: body})
		if strings.ContainsAny(subject, "\r\n") || strings.IndexByte(subject+body, 0) >= 0 {
			require.Error(t, err)
			return
		}
		if err != nil {
			return
		}
		rendered, _ := app.Render(subject, map[string]string{"booking_reference": value, "passenger_name": value}, false)
		one := app.HeaderText(rendered)
		require.False(t, strings.ContainsAny(one, "\r\n"), "the rendered subject is one line: %q", one)
	})
}

var e164 = regexp.MustCompile(`^\+[1-9][0-9]{5,14}$`)

// FuzzNormalizePhone: an accepted number comes out in E.164, and
// normalising it again changes nothing.
func FuzzNormalizePhone(f *testing.F) {
	for _, seed := range []string{"+4915112345678", " +49 151 1234 5678 ", "+1 (202) 555-0143", "015112345678", "+", "+0", "+49\x00151", "+44 7700 900123 ext. 4", "+٤٩١٥١١٢٣٤٥٦٧٨"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := app.NormalizePhone(s)
		if err != nil {
			require.Empty(t, out)
			return
		}
		require.Regexp(t, e164, out)
		again, err := app.NormalizePhone(out)
		require.NoError(t, err)
		require.Equal(t, out, again)
	})
}

// FuzzNormalizeEmail: an accepted address is lower-case, has no space or
// line break (it goes into a header), and normalising it again changes
// nothing.
func FuzzNormalizeEmail(f *testing.F) {
	for _, seed := range []string{"ann@example.com", " Ann@Example.COM ", "a@b", "\"a b\"@example.com", "a@example.com\r\nBcc: x@y.z", "<a@example.com>", "Ann <a@example.com>", "a@@example.com", "ä@exämple.de"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := app.NormalizeEmail("email", s)
		if err != nil {
			var ae *app.Error
			require.True(t, errors.As(err, &ae))
			require.Equal(t, "email", ae.Field)
			return
		}
		require.Equal(t, strings.ToLower(out), out)
		require.False(t, strings.ContainsAny(out, "\r\n\t\x00"), "no line break in an address: %q", out)
		require.Contains(t, out, "@")
		again, err := app.NormalizeEmail("email", out)
		require.NoError(t, err)
		require.Equal(t, out, again)
	})
}
