package console

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider/ses"
)

// Brandings serves the tenant's e-mail branding on the console's settings.
type Brandings struct {
	*app.Brandings
}

// BrandingPage is the branding form with its preview.
type BrandingPage struct {
	Branding app.BrandingInput
	Preview  *EmailPreview
}

// EmailPreview is an e-mail as it leaves: the whole HTML document the
// layout makes and its plain-text part, as the SES adapter derives it.
type EmailPreview struct {
	Subject, HTML, Text string
}

// PreviewEmail renders content HTML in the layout with the branding, as
// the dispatcher does at the send (app.EmailLayout), and derives the text
// part as the e-mail adapter does.
func PreviewEmail(b app.Branding, tenantName, locale, subject, content string) *EmailPreview {
	doc := app.EmailLayout(app.EmailFrame{Branding: b, TenantName: tenantName, Locale: locale}, subject, content)
	return &EmailPreview{Subject: subject, HTML: doc, Text: ses.PlainText(doc)}
}

// brandingSample is the content of the branding page's preview.
const brandingSample = "## Your booking is confirmed\n\nGood day Anna,\n\nthank you for your booking.\n\n" +
	"- Tour: **Lake Garda**\n- Departure: 12 April 2027\n\n> Please bring your passport.\n\n[Manage your booking](https://example.com/booking)\n"

// BrandingPreview shows sample content in branding b, checked or not.
func BrandingPreview(b app.BrandingInput, tenantName string) *EmailPreview {
	content := app.EmailMarkdown(brandingSample)
	return PreviewEmail(app.Branding{LogoURL: b.LogoURL, BrandColor: b.BrandColor, FooterText: b.FooterText, SenderName: b.SenderName},
		tenantName, "en", "Your booking is confirmed", content)
}

// Branding returns the tenant's branding for a user who may change its
// settings.
func (s *Brandings) Branding(ctx context.Context, u *app.User, tenantID uuid.UUID) (*app.Branding, error) {
	if err := requireTenantAccess(u, app.PermSettings, tenantID); err != nil {
		return nil, err
	}
	return s.Get(ctx, tenantID)
}

// Change saves the tenant's branding on behalf of a console user; bad
// input is a field error and changes nothing.
func (s *Brandings) Change(ctx context.Context, u *app.User, tenantID uuid.UUID, in app.BrandingInput) (*app.Branding, error) {
	if err := requireTenantAccess(u, app.PermSettings, tenantID); err != nil {
		return nil, err
	}
	return s.Save(ctx, u.Actor(), tenantID, in)
}
