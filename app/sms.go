package app

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/uuid"
)

// SMS encodings: the GSM 7-bit default alphabet (3GPP TS 23.038, with its
// extension table), or UCS-2 (UTF-16) for a text with any character
// outside it.
const (
	EncodingGSM7 = "GSM7"
	EncodingUCS2 = "UCS2"
)

// SMS part sizes: one message alone, or each part of a concatenated one,
// whose user data header takes 6 bytes (7 septets, 3 UTF-16 units).
const (
	GSM7SinglePart = 160
	GSM7MultiPart  = 153
	UCS2SinglePart = 70
	UCS2MultiPart  = 67
)

// DefaultMaxSMSParts is the longest SMS, in parts, a tenant may send
// unless an operator set its own limit.
const DefaultMaxSMSParts = 6

// MaxSMSPartsCeiling is the highest limit an operator may set: SNS takes
// at most 1,600 characters in one publish, ten GSM-7 parts and some.
const MaxSMSPartsCeiling = 10

// gsm7Basic is the default alphabet: each character is one septet.
const gsm7Basic = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"

// gsm7Extension is the extension table: each character is sent as the
// escape septet and its own, two septets. \f is the page break.
const gsm7Extension = "\f^{}\\[~]|€"

var gsm7Septets = func() map[rune]int {
	m := make(map[rune]int, 140)
	for _, r := range gsm7Basic {
		m[r] = 1
	}
	for _, r := range gsm7Extension {
		m[r] = 2
	}
	return m
}()

// smsReplacements are the characters that have a GSM-7 form a reader does
// not miss: typographic quotes, dashes, the ellipsis, and the spaces that
// only keep a line from breaking. A replacement of "" drops the character
// (zero-width characters and the soft hyphen, which show nothing).
var smsReplacements = map[rune]string{
	'\u2018': "'", '\u2019': "'", '\u201A': "'", '\u201B': "'", '\u2032': "'", '\u02BC': "'", '\u2039': "'", '\u203A': "'",
	'\u201C': `"`, '\u201D': `"`, '\u201E': `"`, '\u201F': `"`, '\u2033': `"`, '\u00AB': `"`, '\u00BB': `"`,
	'\u2010': "-", '\u2011': "-", '\u2012': "-", '\u2013': "-", '\u2014': "-", '\u2015': "-", '\u2212': "-",
	'\u2026': "...",
	'\t':     " ", '\u00A0': " ", '\u2000': " ", '\u2001': " ", '\u2002': " ", '\u2003': " ", '\u2004': " ", '\u2005': " ",
	'\u2006': " ", '\u2007': " ", '\u2008': " ", '\u2009': " ", '\u200A': " ", '\u202F': " ", '\u205F': " ", '\u3000': " ",
	'\u200B': "", '\u200C': "", '\u200D': "", '\u2060': "", '\uFEFF': "", '\u00AD': "",
}

// SMSCount is what an SMS text costs: its encoding and parts.
type SMSCount struct {
	// Characters are the text's characters as a reader counts them.
	Characters int `json:"characters"`
	// Units are what the parts hold: GSM-7 septets (an extension
	// character takes two) or UTF-16 units (a character outside the
	// Basic Multilingual Plane, such as an emoji, takes two).
	Units    int    `json:"units"`
	Parts    int    `json:"parts"`
	Encoding string `json:"encoding"`
	// Replaced counts the characters PrepareSMS replaced by their GSM-7
	// forms (or dropped) to keep the text in GSM-7.
	Replaced int `json:"replaced"`
}

// String describes the count as the template editor shows it:
// "212 characters, 2 parts, GSM-7 (1 character replaced)".
func (c SMSCount) String() string {
	s := fmt.Sprintf("%s, %s, %s", plural(c.Characters, "character"), plural(c.Parts, "part"), EncodingLabel(c.Encoding))
	if c.Replaced > 0 {
		s += fmt.Sprintf(" (%s replaced)", plural(c.Replaced, "character"))
	}
	return s
}

// EncodingLabel is how people write an encoding: GSM-7, UCS-2.
func EncodingLabel(enc string) string {
	switch enc {
	case EncodingGSM7:
		return "GSM-7"
	case EncodingUCS2:
		return "UCS-2"
	}
	return enc
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// PrepareSMS is the text an SMS is sent with, and its count: every SMS
// Herald sends, previews or tests passes here, so what is counted is what
// is sent. When the text fits GSM-7 once typographic quotes, dashes,
// ellipses and special spaces become their GSM-7 forms (and zero-width
// characters go), it is sent so; otherwise a character without a GSM-7
// form (Ł, an emoji) makes the whole text UCS-2 anyway, and the text is
// sent as written. Preparing a prepared text changes nothing.
func PrepareSMS(text string) (string, SMSCount) {
	if isGSM7(text) {
		return text, CountSMS(text)
	}
	var b strings.Builder
	replaced := 0
	for _, r := range text {
		if rep, ok := smsReplacements[r]; ok {
			b.WriteString(rep)
			replaced++
			continue
		}
		if _, ok := gsm7Septets[r]; !ok {
			// Lost to UCS-2 whatever is replaced: keep the typography.
			return text, CountSMS(text)
		}
		b.WriteRune(r)
	}
	out := b.String()
	c := CountSMS(out)
	c.Replaced = replaced
	return out, c
}

func isGSM7(text string) bool {
	for _, r := range text {
		if _, ok := gsm7Septets[r]; !ok {
			return false
		}
	}
	return true
}

// CountSMS counts text as sent, without replacing anything: GSM-7 when
// every character is in the default alphabet or its extension, else
// UCS-2. A text longer than one part is split into parts of 153 septets or
// 67 UTF-16 units, and a character is never split across two: an escape
// pair or a surrogate pair that does not fit starts the next part.
func CountSMS(text string) SMSCount {
	c := SMSCount{Characters: utf8.RuneCountInString(text), Encoding: EncodingUCS2}
	cost := func(r rune) int { return utf16.RuneLen(r) }
	single, multi := UCS2SinglePart, UCS2MultiPart
	if isGSM7(text) {
		c.Encoding = EncodingGSM7
		cost = func(r rune) int { return gsm7Septets[r] }
		single, multi = GSM7SinglePart, GSM7MultiPart
	}
	for _, r := range text {
		c.Units += max(cost(r), 1)
	}
	switch {
	case c.Units == 0:
		c.Parts = 0
	case c.Units <= single:
		c.Parts = 1
	default:
		used := 0
		c.Parts = 1
		for _, r := range text {
			n := max(cost(r), 1)
			if used+n > multi {
				c.Parts++
				used = 0
			}
			used += n
		}
	}
	return c
}

// TooManySMSParts is the refusal of an SMS longer than the tenant's limit.
func TooManySMSParts(what string, c SMSCount, limit int) *Error {
	return &Error{Code: EINVALID, Reason: ReasonSMSTooLong, Field: "body", Message: fmt.Sprintf(
		"%s is %s long: %s. This tenant's limit is %s; shorten the text or ask an operator to raise the limit.",
		what, plural(c.Parts, "SMS part"), c, plural(limit, "part"))}
}

// prepareSMS gives an SMS message the text it is sent with and its count,
// as it is stored: the two ways messages are stored (InsertMessage and
// routing's batch) both call it, so every SMS row has its parts. A
// message of a safety event will end with the acknowledgement link (added
// at the send, withAckLink), which acks (nil: the deployment adds none)
// lets count now: the parts, and so the cost estimate and the tenant's
// limit of parts, are those of the text sent. The stored body stays the
// content.
func (m *Message) prepareSMS(acks *AckLinks) {
	if m.Channel != SMS {
		m.SMSParts, m.SMSEncoding = nil, nil
		return
	}
	body, c := PrepareSMS(m.Body)
	if acks != nil && !m.Test && SafetyEvent(m.TriggerEvent) {
		_, c = PrepareSMS(body + acks.smsSuffix(deref(m.Locale)))
	}
	m.Body, m.SMSParts, m.SMSEncoding = body, &c.Parts, &c.Encoding
}

// SampleRecipient is the recipient template previews and the length check
// of SMS templates are rendered for.
var SampleRecipient = Recipient{Name: "Anna Schmidt", Phone: "+49 151 23456789", Email: "anna.schmidt@example.com", Locale: "de-DE"}

// SMSLimitTx reads a tenant's limit of SMS parts.
type SMSLimitTx interface {
	LimitSettings(ctx context.Context, tenantID uuid.UUID) (*LimitSettings, error)
}

// SampleSMS is an SMS template's text rendered with the event's sample
// values and prepared as it is sent, with its count.
func SampleSMS(event *EventDef, body string) (string, SMSCount) {
	// The sample carries no files: {{files}} renders empty, as for a
	// message without any.
	return PrepareSMS(RenderSMSFiles(body, TemplateVars(event.Sample, SampleRecipient), nil))
}

// CheckSMSTemplate refuses an SMS template whose text, rendered with the
// event's sample values, is longer than the tenant's limit of parts; the
// error names the template (event and locale) and its count. Other
// channels pass.
func CheckSMSTemplate(ctx context.Context, tx SMSLimitTx, tenantID uuid.UUID, event *EventDef, ch Channel, locale, body string) error {
	if ch != SMS {
		return nil
	}
	set, err := tx.LimitSettings(ctx, tenantID)
	if err != nil {
		return err
	}
	limit := orDefault(set.MaxSMSParts, DefaultMaxSMSParts)
	if _, c := SampleSMS(event, body); c.Parts > limit {
		return TooManySMSParts(fmt.Sprintf("The SMS template %s (%s), rendered with the sample values,", event.Name, locale), c, limit)
	}
	return nil
}
