package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// PriceTx lists the statements keeping the price table run.
type PriceTx interface {
	Tx
	PriceReader
	// PutPrice adds the row of its channel, country and category, or
	// changes its price.
	PutPrice(ctx context.Context, p *Price) error
	// DeletePrice removes a row; ENOTFOUND when there is none.
	DeletePrice(ctx context.Context, ch Channel, country, category string) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// Prices keeps the installation's price table, which operators edit:
// platform-wide, in the one currency of the installation.
type Prices struct {
	Store Store[PriceTx]
	Now   Clock
	// Currency is HERALD_CURRENCY, the ISO 4217 code every price, estimate
	// and budget is in.
	Currency string
}

// PriceInput is an operator's price row as typed.
type PriceInput struct {
	Channel, Country, Category, UnitPrice string
}

// PricedChannels are the channels prices are kept for; webhooks cost
// nothing per message.
var PricedChannels = []Channel{WhatsApp, SMS, Email}

// Price validates the input; each error names its field.
func (in PriceInput) Price() (*Price, error) {
	p := &Price{Channel: Channel(strings.ToUpper(strings.TrimSpace(in.Channel))),
		Country: strings.ToUpper(strings.TrimSpace(in.Country)), Category: strings.ToUpper(strings.TrimSpace(in.Category))}
	if !slices.Contains(PricedChannels, p.Channel) {
		return nil, Invalid("invalid_channel", "channel", "Choose WHATSAPP, SMS or EMAIL.")
	}
	switch {
	case p.Country == "":
		p.Country = AnyCountry
	case p.Channel == Email && p.Country != AnyCountry:
		return nil, Invalid("invalid_country", "country", "E-mail has no destination country: leave the country empty (or *).")
	case p.Country != AnyCountry && !phoneRegion(p.Country):
		return nil, Invalid("invalid_country", "country", "%q is not a country code Herald knows numbers of (ISO 3166, such as DE or GB, or * for every other country).", in.Country)
	}
	switch {
	case p.Channel == WhatsApp && !slices.Contains(PriceCategories, p.Category):
		return nil, Invalid("invalid_category", "category", "A WhatsApp price needs Meta's pricing category: %s.", strings.Join(PriceCategories, ", "))
	case p.Channel != WhatsApp && p.Category != "":
		return nil, Invalid("invalid_category", "category", "Only WhatsApp prices have a category; leave it empty for %s.", p.Channel)
	}
	unit, err := ParseMoney("unit_price", in.UnitPrice, MaxUnitPrice)
	if err != nil {
		return nil, err
	}
	p.UnitPrice = unit
	return p, nil
}

// List returns the price table.
func (s *Prices) List(ctx context.Context) ([]*Price, error) {
	var ps []*Price
	err := s.Store.InPlatform(ctx, func(tx PriceTx) (err error) {
		ps, err = tx.Prices(ctx)
		return err
	})
	return ps, err
}

// Put adds or changes a price (an operator's change) and audits it.
func (s *Prices) Put(ctx context.Context, actor Actor, in PriceInput) (*Price, error) {
	p, err := in.Price()
	if err != nil {
		return nil, err
	}
	p.UpdatedAt = s.Now()
	err = s.Store.InPlatform(ctx, func(tx PriceTx) error {
		if err := tx.PutPrice(ctx, p); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(nil, "price.set", "price", p.key(),
			map[string]any{"unit_price": p.UnitPrice.String(), "currency": s.Currency}))
	})
	return p, err
}

// Delete removes a price and audits it.
func (s *Prices) Delete(ctx context.Context, actor Actor, ch Channel, country, category string) error {
	return s.Store.InPlatform(ctx, func(tx PriceTx) error {
		if err := tx.DeletePrice(ctx, ch, country, category); err != nil {
			return err
		}
		p := &Price{Channel: ch, Country: country, Category: category}
		return tx.InsertAudit(ctx, actor.Entry(nil, "price.delete", "price", p.key(), nil))
	})
}

// key names a price row in the audit log: "WHATSAPP/DE/UTILITY".
func (p *Price) key() string {
	return strings.TrimSuffix(fmt.Sprintf("%s/%s/%s", p.Channel, p.Country, p.Category), "/")
}

// Table reads the price table for estimates in tx.
func (s *Prices) Table(ctx context.Context, tx PriceReader) (*PriceTable, error) {
	rows, err := tx.Prices(ctx)
	if err != nil {
		return nil, err
	}
	return NewPriceTable(s.Currency, rows), nil
}
