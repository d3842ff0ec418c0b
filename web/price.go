package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/views"
)

// currency is the installation's currency, "" where prices are not set
// up.
func (s *Server) currency() string {
	if s.Prices == nil {
		return ""
	}
	return s.Prices.Currency
}

// handlePriceList shows the price table with the form that adds or
// changes a row.
func (s *Server) handlePriceList(c *fiber.Ctx) error {
	return s.pricePage(c, views.PriceForm{})
}

// pricePage renders the price table with the form as given.
func (s *Server) pricePage(c *fiber.Ctx, form views.PriceForm) error {
	ps, err := s.Prices.List(c.UserContext())
	if err != nil {
		return err
	}
	return s.render(c, views.PricesPage(s.page(c, "Prices"), s.Prices.Currency, ps, form))
}

// handlePricePut adds a price row or changes its price; audited.
func (s *Server) handlePricePut(c *fiber.Ctx) error {
	in := app.PriceInput{Channel: c.FormValue("channel"), Country: c.FormValue("country"),
		Category: c.FormValue("category"), UnitPrice: c.FormValue("unit_price")}
	p, err := s.Prices.Put(c.UserContext(), userOf(c).Actor(), in)
	if err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			return s.pricePage(c, views.PriceForm{In: in, Errs: errs})
		})
	}
	s.flash(c, "success", "Price of "+views.PriceName(p)+" saved: "+s.Prices.Currency+" "+p.UnitPrice.String()+".")
	return c.Redirect("/prices", fiber.StatusSeeOther)
}

// handlePriceDelete removes a price row; audited.
func (s *Server) handlePriceDelete(c *fiber.Ctx) error {
	p := &app.Price{Channel: app.Channel(c.FormValue("channel")), Country: c.FormValue("country"), Category: c.FormValue("category")}
	if err := s.Prices.Delete(c.UserContext(), userOf(c).Actor(), p.Channel, p.Country, p.Category); err != nil {
		return err
	}
	s.flash(c, "success", "Price of "+views.PriceName(p)+" removed.")
	return c.Redirect("/prices", fiber.StatusSeeOther)
}
