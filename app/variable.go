package app

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/currency"
)

// VariableType is the type of an event's context variable: what a request
// must send in it.
type VariableType string

// Variable types. Every value but an integer is a JSON string; the forms
// are those the booking systems already send, so that a template shows the
// value as it came.
const (
	// VarString is any text.
	VarString VariableType = "string"
	// VarDate is a calendar date, YYYY-MM-DD.
	VarDate VariableType = "date"
	// VarTime is an instant with its offset (RFC 3339).
	VarTime VariableType = "time"
	// VarMoney is an amount with its currency in one string, as a passenger
	// reads it: "150.00 EUR", "150,00 €", "€150.00". The currency is an ISO
	// 4217 code or one of the symbols in moneySymbols.
	VarMoney VariableType = "money"
	// VarURL is an absolute http or https address.
	VarURL VariableType = "url"
	// VarPhone is an international phone number (E.164 once its spaces are
	// taken out, such as +49 89 1234567).
	VarPhone VariableType = "phone"
	// VarEmail is an e-mail address.
	VarEmail VariableType = "email"
	// VarInteger is a whole number: a JSON number, or a string of digits
	// (a list upload's cells are text).
	VarInteger VariableType = "integer"
	// VarEnum is one of the variable's Values.
	VarEnum VariableType = "enum"
)

// VariableTypes lists the types in the order forms offer them.
var VariableTypes = []VariableType{VarString, VarDate, VarTime, VarMoney, VarURL, VarPhone, VarEmail, VarInteger, VarEnum}

// MaxEnumValues caps an enum's allowed values.
const MaxEnumValues = 50

// Variable is one context variable of an event and its type.
type Variable struct {
	Name string       `json:"name"`
	Type VariableType `json:"type"`
	// Values are an enum's allowed values, in the order given.
	Values []string `json:"values,omitempty"`
}

// Format says in words what the variable accepts, for the registry's
// pages and error messages.
func (v Variable) Format() string {
	switch v.Type {
	case VarDate:
		return "a date, YYYY-MM-DD (such as 2027-04-12), or a date with its time in RFC 3339"
	case VarTime:
		return "a time with its offset, RFC 3339 (such as 2027-04-12T07:15:00+02:00)"
	case VarMoney:
		return `an amount with its currency (such as "150.00 EUR" or "150,00 €")`
	case VarURL:
		return "an http or https address (such as https://example.com/pay/BK-1)"
	case VarPhone:
		return "an international phone number (such as +49 89 1234567)"
	case VarEmail:
		return "an e-mail address"
	case VarInteger:
		return "a whole number (such as 3)"
	case VarEnum:
		return "one of " + strings.Join(v.Values, ", ")
	}
	return "text"
}

// moneySymbols are the currency signs a money value may carry instead of
// an ISO 4217 code.
var moneySymbols = []string{"€", "$", "£", "¥", "CHF", "zł", "Kč", "kr", "Ft", "lei"}

// moneyAmount is the number of a money value: digits with optional
// thousands separators (. , ' space or a no-break space), and up to three
// decimals after . or ,.
var moneyAmount = regexp.MustCompile(`^-?(?:\d{1,3}(?:[.,'\x{00a0}\x{202f} ]\d{3})+|\d+)(?:[.,]\d{1,3})?$`)

// CheckValue reports whether val is a valid value of the variable, with a
// message naming field when it is not. nil and "" are absent values, which
// the caller reports as missing.
func (v Variable) CheckValue(field string, val any) *Error {
	ok := false
	switch s, isString := val.(string); {
	case v.Type == VarInteger:
		ok = isInteger(val)
	case !isString:
		return Invalid("invalid_variable", field, "%s must be %s, given as a string.", field, v.Format())
	default:
		ok = v.checkString(strings.TrimSpace(s))
	}
	if !ok {
		return Invalid("invalid_variable", field, "%s must be %s; %s is not.", field, v.Format(), shortValue(val))
	}
	return nil
}

// checkString reports whether s is a valid value of a string-typed
// variable.
func (v Variable) checkString(s string) bool {
	switch v.Type {
	case VarDate:
		// A date, or a date with its time (RFC 3339), which templates
		// show in each recipient's own time zone.
		if _, err := time.Parse(time.DateOnly, s); err == nil {
			return true
		}
		_, err := time.Parse(time.RFC3339, s)
		return err == nil
	case VarTime:
		_, err := time.Parse(time.RFC3339, s)
		return err == nil
	case VarMoney:
		return validMoney(s)
	case VarURL:
		u, err := url.Parse(s)
		return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && !strings.ContainsAny(s, " \t\n")
	case VarPhone:
		_, err := NormalizePhone(s)
		return err == nil
	case VarEmail:
		_, err := NormalizeEmail("", s)
		return err == nil
	case VarEnum:
		return slices.Contains(v.Values, s)
	}
	return true
}

// isInteger reports whether val is a whole number: a JSON integer, or a
// string of digits.
func isInteger(val any) bool {
	switch n := val.(type) {
	case json.Number:
		_, err := n.Int64()
		return err == nil
	case float64:
		return n == float64(int64(n))
	case int, int64:
		return true
	case string:
		return digits.MatchString(strings.TrimSpace(n))
	}
	return false
}

// digits is an integer given as text.
var digits = regexp.MustCompile(`^-?\d{1,18}$`)

// validMoney reports whether s is an amount with exactly one currency, an
// ISO 4217 code or a symbol, before or after it.
func validMoney(s string) bool {
	amount, cur := splitMoney(s)
	if cur == "" || !moneyAmount.MatchString(amount) {
		return false
	}
	if slices.Contains(moneySymbols, cur) {
		return true
	}
	_, err := currency.ParseISO(cur)
	return err == nil && strings.ToUpper(cur) == cur
}

// splitMoney splits a money value into its amount and its currency, the
// letters or symbol at either end.
func splitMoney(s string) (amount, cur string) {
	isCurrency := func(r rune) bool {
		return !(r >= '0' && r <= '9') && !strings.ContainsRune(".,'- \u00a0\u202f", r)
	}
	trim := func(x string) string { return strings.Trim(x, " \u00a0\u202f") }
	start := strings.IndexFunc(s, func(r rune) bool { return !isCurrency(r) })
	if start > 0 {
		// Currency first: "€150.00", "EUR 150.00".
		return trim(s[start:]), trim(s[:start])
	}
	end := strings.LastIndexFunc(s, func(r rune) bool { return !isCurrency(r) })
	if end < 0 || end == len(s)-1 {
		return s, ""
	}
	_, size := utf8.DecodeRuneInString(s[end:])
	return trim(s[:end+size]), trim(s[end+size:])
}

// shortValue quotes a value for an error message, cut to 40 characters.
func shortValue(val any) string {
	b, _ := json.Marshal(val)
	s := string(b)
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	return s
}

// builtinTypes are the types of the built-in events' variables by name:
// a name means the same in every event. Variables not listed are strings.
var builtinTypes = map[string]VariableType{
	"departure_date": VarDate, "expiry_date": VarDate, "due_date": VarDate,
	"departure_at":   VarTime,
	"deposit_amount": VarMoney, "total_amount": VarMoney, "cancellation_fee": VarMoney, "refund_amount": VarMoney,
	"remaining_amount": VarMoney, "total_gross": VarMoney,
	"invoice_url": VarURL, "feedback_url": VarURL, "checkout_url": VarURL, "payment_link": VarURL,
	"invoice_pdf_url": VarURL, "tracking_url": VarURL,
	"operator_phone": VarPhone,
	"days_overdue":   VarInteger, "days_remaining": VarInteger,
}

// withTypes gives each built-in event's variables their types.
func withTypes(events []EventDef) []EventDef {
	for i := range events {
		e := &events[i]
		e.Types = make([]Variable, len(e.Variables))
		for j, name := range e.Variables {
			t, ok := builtinTypes[name]
			if !ok {
				t = VarString
			}
			e.Types[j] = Variable{Name: name, Type: t}
		}
	}
	return events
}

// Variable returns the event's variable of that name.
func (e *EventDef) Variable(name string) (Variable, bool) {
	for _, v := range e.Types {
		if v.Name == name {
			return v, true
		}
	}
	return Variable{}, false
}

// Sample is a value of the variable's type for template previews.
func (v Variable) Sample() any {
	switch v.Type {
	case VarDate:
		return "2027-04-12"
	case VarTime:
		return "2027-04-12T07:15:00+02:00"
	case VarMoney:
		return "150.00 EUR"
	case VarURL:
		return "https://example.com/" + strings.ReplaceAll(v.Name, "_", "-")
	case VarPhone:
		return "+49 89 1234567"
	case VarEmail:
		return "info@example.com"
	case VarInteger:
		return 3
	case VarEnum:
		if len(v.Values) > 0 {
			return v.Values[0]
		}
	}
	return strings.ReplaceAll(v.Name, "_", " ")
}
