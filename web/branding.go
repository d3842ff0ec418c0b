package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// brandingJSON is the branding as the API shows and takes it.
type brandingJSON struct {
	LogoURL    string `json:"logo_url"`
	BrandColor string `json:"brand_color"`
	FooterText string `json:"footer_text"`
	SenderName string `json:"sender_name"`
}

func brandingOut(b *app.Branding) brandingJSON {
	return brandingJSON{LogoURL: b.LogoURL, BrandColor: b.BrandColor, FooterText: b.FooterText, SenderName: b.SenderName}
}

// handleAPIBrandingGet answers the tenant's e-mail branding; empty fields
// are the neutral layout's.
func (s *Server) handleAPIBrandingGet(c *fiber.Ctx) error {
	b, err := s.Brandings.Get(c.UserContext(), apiKeyOf(c).TenantID)
	if err != nil {
		return err
	}
	return c.JSON(brandingOut(b))
}

// handleAPIBrandingSet replaces the tenant's e-mail branding with the
// body's (a field left out is emptied) and answers it as stored.
func (s *Server) handleAPIBrandingSet(c *fiber.Ctx) error {
	var body brandingJSON
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	b, err := s.Brandings.Save(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, app.BrandingInput(body))
	if err != nil {
		return err
	}
	return c.JSON(brandingOut(b))
}

// emailFrame is the layout frame of the tenant's e-mail previews; a
// failure to read the branding previews the neutral layout.
func (s *Server) emailFrame(c *fiber.Ctx) *app.EmailFrame {
	t := tenantOf(c)
	f := &app.EmailFrame{TenantName: t.Name, Locale: t.DefaultLocale}
	if b, err := s.Brandings.Get(c.UserContext(), t.ID); err == nil {
		f.Branding = *b
	}
	return f
}

// handleBranding shows the branding form with a preview of an e-mail in it.
func (s *Server) handleBranding(c *fiber.Ctx) error {
	t := tenantOf(c)
	b, err := s.BrandingConsole.Branding(c.UserContext(), userOf(c), t.ID)
	if err != nil {
		return err
	}
	in := app.BrandingInput{LogoURL: b.LogoURL, BrandColor: b.BrandColor, FooterText: b.FooterText, SenderName: b.SenderName}
	return s.renderBranding(c, in, false, nil)
}

func (s *Server) renderBranding(c *fiber.Ctx, in app.BrandingInput, previewing bool, errs views.FormErrors) error {
	allowEmailPreview(c)
	t := tenantOf(c)
	f := views.BrandingForm{Slug: t.Slug, Values: in, Previewing: previewing}
	if errs == nil {
		f.Preview = console.BrandingPreview(in, t.Name)
	}
	return s.render(c, views.BrandingPage(s.page(c, "E-mail branding"), f, errs))
}

// handleBrandingUpdate saves the branding (action=save), or previews the
// values typed without saving them (action=preview); bad input shows the
// form again as typed and stores nothing.
func (s *Server) handleBrandingUpdate(c *fiber.Ctx) error {
	t := tenantOf(c)
	in := app.BrandingInput{LogoURL: c.FormValue("logo_url"), BrandColor: c.FormValue("brand_color"),
		FooterText: c.FormValue("footer_text"), SenderName: c.FormValue("sender_name")}
	if c.FormValue("action") == "preview" {
		checked, err := app.ValidateBranding(in)
		if err != nil {
			return s.formFailure(c, err, func(errs views.FormErrors) error { return s.renderBranding(c, in, true, errs) })
		}
		return s.renderBranding(c, checked, true, nil)
	}
	if _, err := s.BrandingConsole.Change(c.UserContext(), userOf(c), t.ID, in); err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error { return s.renderBranding(c, in, false, errs) })
	}
	s.flash(c, "success", "Branding saved. Every e-mail from now on is sent in it.")
	return c.Redirect(tenantPath(c, "/settings/branding"), fiber.StatusSeeOther)
}
