package db

import (
	"context"

	"github.com/heraldhq/herald/app"
)

const priceColumns = `channel, country, category, unit_price, updated_at`

// Prices serves app.PriceReader: the installation's price table, in any
// transaction (prices belong to no tenant).
func (t *Tx) Prices(ctx context.Context) ([]*app.Price, error) {
	ps := []*app.Price{}
	err := t.tx.SelectContext(ctx, &ps, `SELECT `+priceColumns+` FROM prices ORDER BY channel, country = '*' DESC, country, category`)
	return ps, mapErr(err)
}

// PutPrice serves app.PriceTx: it adds the row or changes its price.
func (t *Tx) PutPrice(ctx context.Context, p *app.Price) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO prices (`+priceColumns+`) VALUES (:channel, :country, :category, :unit_price, :updated_at)
		ON CONFLICT (channel, country, category) DO UPDATE SET unit_price = EXCLUDED.unit_price, updated_at = EXCLUDED.updated_at`, p)
	return mapErr(err)
}

// DeletePrice serves app.PriceTx; a row that does not exist is ENOTFOUND.
func (t *Tx) DeletePrice(ctx context.Context, ch app.Channel, country, category string) error {
	res, err := t.tx.ExecContext(ctx, `DELETE FROM prices WHERE channel = $1 AND country = $2 AND category = $3`, ch, country, category)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return app.Errorf(app.ENOTFOUND, "There is no %s price for %s %s.", ch, country, category)
	}
	return nil
}
