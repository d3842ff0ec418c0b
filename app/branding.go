package app

import (
	"context"
	"fmt"
	"html"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
)

// Branding is a tenant's e-mail branding; every field is optional.
type Branding struct {
	TenantID uuid.UUID `db:"tenant_id" json:"tenant_id"`
	// LogoURL is an https image shown at the top, with the tenant's name
	// as its text.
	LogoURL string `db:"logo_url" json:"logo_url"`
	// BrandColor is "#rrggbb", the background of the header band, under
	// white text.
	BrandColor string `db:"brand_color" json:"brand_color"`
	// FooterText is plain text at the bottom of every e-mail.
	FooterText string `db:"footer_text" json:"footer_text"`
	// SenderName is the display name of the From address; it replaces the
	// e-mail account's sender_name.
	SenderName string     `db:"sender_name" json:"sender_name"`
	UpdatedBy  *uuid.UUID `db:"updated_by" json:"updated_by"`
	UpdatedAt  time.Time  `db:"updated_at" json:"updated_at"`
}

// BrandingInput is what saving branding takes.
type BrandingInput struct {
	LogoURL, BrandColor, FooterText, SenderName string
}

// Branding limits.
const (
	MaxLogoURL    = 500
	MaxFooterText = 500
	MaxSenderName = 100
	// MinBrandContrast is WCAG 2's AA contrast for normal text, which
	// white text on the brand colour must reach.
	MinBrandContrast = 4.5
)

var colorPattern = regexp.MustCompile(`^#[0-9a-f]{6}$`)

// ValidateBranding checks branding and returns it tidied (trimmed, the
// colour in lower case), or the first field error.
func ValidateBranding(in BrandingInput) (BrandingInput, error) {
	in.LogoURL = strings.TrimSpace(in.LogoURL)
	in.BrandColor = strings.ToLower(strings.TrimSpace(in.BrandColor))
	in.FooterText = strings.TrimSpace(strings.ReplaceAll(in.FooterText, "\r\n", "\n"))
	in.SenderName = strings.TrimSpace(in.SenderName)
	if err := validateLogoURL(in.LogoURL); err != nil {
		return in, err
	}
	if c := in.BrandColor; c != "" {
		if !colorPattern.MatchString(c) {
			return in, FieldErrorf("brand_color", "The brand colour must be a hex colour such as #1d70b8.")
		}
		if r := ContrastWithWhite(c); r < MinBrandContrast {
			return in, FieldErrorf("brand_color", "White text on %s has a contrast of %.2f:1; it must be at least 4.5:1 (WCAG AA) to be readable. Choose a darker colour.", c, math.Floor(r*100)/100)
		}
	}
	switch {
	case len([]rune(in.FooterText)) > MaxFooterText:
		return in, FieldErrorf("footer_text", "The footer must be at most %d characters.", MaxFooterText)
	case hasControl(in.FooterText, true):
		return in, FieldErrorf("footer_text", "The footer must be plain text without control characters.")
	case len([]rune(in.SenderName)) > MaxSenderName:
		return in, FieldErrorf("sender_name", "The sender name must be at most %d characters.", MaxSenderName)
	case hasControl(in.SenderName, false):
		return in, FieldErrorf("sender_name", "The sender name must be one line, without line breaks or control characters.")
	case strings.ContainsAny(in.SenderName, "\"<>@\\"):
		// A display name holding an address or quotes could pose as
		// another sender ("bank@example.com" <you@tenant>).
		return in, FieldErrorf("sender_name", "The sender name must not contain \", <, >, @ or \\.")
	}
	return in, nil
}

func validateLogoURL(s string) error {
	if s == "" {
		return nil
	}
	if len(s) > MaxLogoURL {
		return FieldErrorf("logo_url", "The logo URL must be at most %d characters.", MaxLogoURL)
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || strings.ContainsAny(s, " \t\r\n\"'<>") {
		return FieldErrorf("logo_url", "The logo URL must be an https:// address of an image, such as https://example.com/logo.png.")
	}
	return nil
}

// hasControl says whether s has control characters; newlines are allowed
// when lines is true.
func hasControl(s string, lines bool) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) && !(lines && r == '\n')
	}) >= 0
}

// ContrastWithWhite is the WCAG 2 contrast ratio of white against the
// colour "#rrggbb": (1 + 0.05) / (L + 0.05), L the colour's relative
// luminance.
func ContrastWithWhite(hex string) float64 {
	var l float64
	for i, w := range []float64{0.2126, 0.7152, 0.0722} {
		v, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		c := float64(v) / 255
		if c <= 0.04045 {
			c /= 12.92
		} else {
			c = math.Pow((c+0.055)/1.055, 2.4)
		}
		l += w * c
	}
	return 1.05 / (l + 0.05)
}

// DefaultBrandColor is the neutral header of tenants without a colour.
const DefaultBrandColor = "#0b0c0c"

// EmailFrame is what the layout around an e-mail's content shows.
type EmailFrame struct {
	Branding   Branding
	TenantName string
	// Locale is the message's language, the document's lang.
	Locale string
	// UnsubscribeURL, on an optional e-mail, is linked in the footer.
	UnsubscribeURL string
}

// BrandingTx lists the statements of saving branding.
type BrandingTx interface {
	Tx
	TenantBranding(ctx context.Context, tenantID uuid.UUID) (*Branding, error)
	UpsertBranding(ctx context.Context, b *Branding) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// Brandings reads and saves tenants' e-mail branding.
type Brandings struct {
	Store Store[BrandingTx]
	Now   Clock
}

// Get returns the tenant's branding; a tenant that set none gets the
// empty branding (the neutral layout).
func (s *Brandings) Get(ctx context.Context, tenantID uuid.UUID) (*Branding, error) {
	var b *Branding
	err := s.Store.InTenant(ctx, tenantID, func(tx BrandingTx) (err error) {
		b, err = tx.TenantBranding(ctx, tenantID)
		return err
	})
	return b, err
}

// Save checks and stores the tenant's branding, with an audit entry that
// names the fields changed.
func (s *Brandings) Save(ctx context.Context, actor Actor, tenantID uuid.UUID, in BrandingInput) (*Branding, error) {
	in, err := ValidateBranding(in)
	if err != nil {
		return nil, err
	}
	b := &Branding{TenantID: tenantID, LogoURL: in.LogoURL, BrandColor: in.BrandColor, FooterText: in.FooterText,
		SenderName: in.SenderName, UpdatedBy: actor.ID, UpdatedAt: s.Now()}
	err = s.Store.InTenant(ctx, tenantID, func(tx BrandingTx) error {
		cur, err := tx.TenantBranding(ctx, tenantID)
		if err != nil {
			return err
		}
		var changed []string
		for _, f := range []struct{ name, old, new string }{
			{"logo_url", cur.LogoURL, b.LogoURL}, {"brand_color", cur.BrandColor, b.BrandColor},
			{"footer_text", cur.FooterText, b.FooterText}, {"sender_name", cur.SenderName, b.SenderName},
		} {
			if f.old != f.new {
				changed = append(changed, f.name)
			}
		}
		if err := tx.UpsertBranding(ctx, b); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "branding.update", "tenant", tenantID.String(),
			map[string]any{"changed": changed}))
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// IsFullDocument says whether an HTML body is a whole document of its own
// (<html> or <body>): such a body brings its own layout and is sent as it
// is, as it was before layouts existed.
func IsFullDocument(body string) bool {
	l := strings.ToLower(body)
	return strings.Contains(l, "<html") || strings.Contains(l, "<body")
}

// EmailLayout wraps an e-mail's content HTML in the tenant's layout: one
// table-based document with the message's lang, the logo (alt text: the
// tenant's name) in a band of the brand colour, the content, and the
// footer with the unsubscribe link of optional e-mails. It declares light
// and dark colour schemes and reads in order without CSS. It is the only
// layout: the dispatcher wraps every e-mail it sends with it, test sends
// included, and the console's previews show its output. A body that is a
// full document (IsFullDocument) is returned as it is.
func EmailLayout(f EmailFrame, subject, content string) string {
	if IsFullDocument(content) {
		return content
	}
	b := f.Branding
	color := b.BrandColor
	if color == "" {
		color = DefaultBrandColor
	}
	lang := f.Locale
	if lang == "" {
		lang = FallbackLocale
	}
	e := html.EscapeString
	var w strings.Builder
	fmt.Fprintf(&w, `<!DOCTYPE html>
<html lang="%s">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="supported-color-schemes" content="light dark">
<title>%s</title>
<style>
body { margin: 0; padding: 0; }
.hd-body { background: #f3f2f1; }
.hd-card { background: #ffffff; color: #0b0c0c; }
.hd-card a { color: #1d70b8; }
.hd-foot { color: #505a5f; }
@media (prefers-color-scheme: dark) {
  .hd-body { background: #1b1b1b !important; }
  .hd-card { background: #262626 !important; color: #f3f2f1 !important; }
  .hd-card a { color: #8fc1ff !important; }
  .hd-foot, .hd-foot a { color: #c8c8c8 !important; }
}
</style>
</head>
<body class="hd-body" style="margin:0;padding:0;background:#f3f2f1;">
<table role="presentation" width="100%%" cellpadding="0" cellspacing="0" border="0" class="hd-body" style="background:#f3f2f1;">
<tr><td align="center" style="padding:16px 8px;">
<table role="presentation" width="100%%" cellpadding="0" cellspacing="0" border="0" style="max-width:600px;">
`, e(lang), e(subject))
	fmt.Fprintf(&w, `<tr><td style="background:%s;color:#ffffff;padding:16px 24px;font-family:Arial,Helvetica,sans-serif;font-size:20px;font-weight:bold;">`, color)
	if b.LogoURL != "" {
		fmt.Fprintf(&w, `<img src="%s" alt="%s" height="40" style="display:block;height:40px;max-width:100%%;border:0;color:#ffffff;">`, e(b.LogoURL), e(f.TenantName))
	} else {
		w.WriteString(e(f.TenantName))
	}
	w.WriteString("</td></tr>\n")
	fmt.Fprintf(&w, `<tr><td class="hd-card" style="background:#ffffff;color:#0b0c0c;padding:24px;font-family:Arial,Helvetica,sans-serif;font-size:16px;line-height:1.5;">
%s
</td></tr>
`, content)
	w.WriteString(`<tr><td class="hd-foot" style="padding:16px 24px;color:#505a5f;font-family:Arial,Helvetica,sans-serif;font-size:14px;line-height:1.5;">`)
	if b.FooterText != "" {
		fmt.Fprintf(&w, "<p>%s</p>", strings.ReplaceAll(e(b.FooterText), "\n", "<br>"))
	}
	if f.UnsubscribeURL != "" {
		fmt.Fprintf(&w, `<p><a href="%s" style="color:#505a5f;">Unsubscribe from these e-mails</a></p>`, e(f.UnsubscribeURL))
	}
	w.WriteString("</td></tr>\n</table>\n</td></tr>\n</table>\n</body>\n</html>\n")
	return w.String()
}
