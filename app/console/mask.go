package console

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// MaskPhone hides all but the country code and the last four digits of an
// E.164 number, grouped as it is read aloud: +4915112344567 becomes
// "+49 ••• ••• 4567". Support staff see numbers only like this.
func MaskPhone(phone string) string {
	digits := strings.TrimPrefix(strings.TrimSpace(phone), "+")
	if digits == "" {
		return ""
	}
	if len(digits) <= 6 {
		return "+" + strings.Repeat("•", len(digits))
	}
	cc := countryCodeLen(digits)
	return "+" + digits[:cc] + " ••• ••• " + digits[len(digits)-4:]
}

// countryCodeLen guesses the length of the country calling code at the start
// of an E.164 number's digits. Codes are prefix-free: 1 and 7 are one digit,
// the zones 2x, 3x, 4x, 5x, 6x, 8x, 9x hold two- and three-digit codes.
func countryCodeLen(d string) int {
	switch d[0] {
	case '1', '7':
		return 1
	}
	two := d[:2]
	switch two {
	case "20", "27", "30", "31", "32", "33", "34", "36", "39", "40", "41", "43", "44", "45", "46", "47", "48", "49",
		"51", "52", "53", "54", "55", "56", "57", "58", "60", "61", "62", "63", "64", "65", "66",
		"81", "82", "84", "86", "90", "91", "92", "93", "94", "95", "98":
		return 2
	}
	return 3
}

// MaskEmail keeps the first character of the local part and the domain:
// maria.schmidt@example.com becomes "m•••@example.com".
func MaskEmail(email string) string {
	email = strings.TrimSpace(email)
	at := strings.LastIndexByte(email, '@')
	if at <= 0 {
		if email == "" {
			return ""
		}
		return "•••"
	}
	_, size := utf8.DecodeRuneInString(email)
	return email[:size] + "•••" + email[at:]
}

// MaskAddress masks a phone number, an e-mail address or a webhook URL,
// whichever it is.
func MaskAddress(addr string) string {
	switch {
	case strings.HasPrefix(addr, "https://") || strings.HasPrefix(addr, "http://"):
		return MaskURL(addr)
	case strings.Contains(addr, "@"):
		return MaskEmail(addr)
	}
	return MaskPhone(addr)
}

// MaskURL keeps only the scheme and host of a webhook endpoint:
// https://user:pw@hooks.example.com/in/abc?token=s3cret becomes
// "https://hooks.example.com/…". Paths, queries and user info often carry
// the tokens that authorise calls to the endpoint, so roles that see
// addresses masked never see them.
func MaskURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "•••"
	}
	return u.Scheme + "://" + u.Host + "/…"
}
