package app

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Money is an amount in millionths of the installation's currency
// (HERALD_CURRENCY): prices, estimates and budgets are whole numbers of
// them, so that sums never round.
type Money int64

// MoneyScale is the millionths a currency unit has.
const MoneyScale = 1_000_000

// MaxUnitPrice is the highest price of one message or SMS part, 1000 units.
const MaxUnitPrice Money = 1000 * MoneyScale

// MaxBudget is the highest monthly budget, one billion units.
const MaxBudget Money = 1_000_000_000 * MoneyScale

// ParseMoney reads an amount as an operator types it ("0.0735", "12",
// "1,250.50"): at most six decimals, not negative, not above max. The
// error names field.
func ParseMoney(field, raw string, max Money) (Money, error) {
	s := strings.ReplaceAll(strings.TrimSpace(raw), ",", "")
	d, err := decimal.NewFromString(s)
	if err != nil || s == "" || strings.ContainsAny(s, "eE") {
		return 0, Invalid("invalid_amount", field, "%q is not an amount; write it with a point, such as 0.0735.", raw)
	}
	if d.IsNegative() {
		return 0, Invalid("invalid_amount", field, "%s cannot be negative.", field)
	}
	if d.Exponent() < -6 && !d.Equal(d.Truncate(6)) {
		return 0, Invalid("invalid_amount", field, "%q has more than 6 decimals; Herald counts millionths.", raw)
	}
	if d.GreaterThan(decimal.New(int64(max), -6)) {
		return 0, Invalid("invalid_amount", field, "%s can be at most %s.", field, max.String())
	}
	return Money(d.Shift(6).IntPart()), nil
}

// String is the amount with at least two decimals and no trailing zeros
// beyond them: 73500 is "0.0735", 23400000 is "23.40".
func (m Money) String() string {
	d := decimal.New(int64(m), -6)
	s := d.StringFixed(6)
	s = strings.TrimRight(s, "0")
	if i := strings.IndexByte(s, '.'); len(s)-i-1 < 2 {
		s += strings.Repeat("0", 2-(len(s)-i-1))
	}
	return s
}

// Value stores the amount as the millionths its columns hold (bigint),
// also where a row is written as JSON; MarshalJSON is the API's form.
func (m Money) Value() (driver.Value, error) { return int64(m), nil }

// MarshalJSON writes the amount as a decimal string ("0.0735"), exact
// where a JSON number might not be.
func (m Money) MarshalJSON() ([]byte, error) { return []byte(`"` + m.String() + `"`), nil }

// UnmarshalJSON reads what MarshalJSON writes.
func (m *Money) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParseMoney("amount", s, math.MaxInt64/MoneyScale*MoneyScale)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Cents is the amount rounded to two decimals, for totals.
func (m Money) Cents() string { return decimal.New(int64(m), -6).StringFixed(2) }

// WhatsApp pricing categories, as Meta bills messages (the category of
// the message's template; free-form text inside the customer service
// window is SERVICE).
const (
	CategoryUtility        = "UTILITY"
	CategoryMarketing      = "MARKETING"
	CategoryAuthentication = "AUTHENTICATION"
	CategoryService        = "SERVICE"
)

// PriceCategories are the WhatsApp pricing categories a price may name.
var PriceCategories = []string{CategoryUtility, CategoryMarketing, CategoryAuthentication, CategoryService}

// AnyCountry is the country of a price row that prices every country
// without a row of its own.
const AnyCountry = "*"

// Price is one row of the price table: what a message on Channel to
// Country (and, on WhatsApp, of Category) costs, per SMS part on SMS.
type Price struct {
	Channel   Channel   `db:"channel" json:"channel"`
	Country   string    `db:"country" json:"country"`
	Category  string    `db:"category" json:"category"`
	UnitPrice Money     `db:"unit_price" json:"unit_price"`
	UpdatedAt time.Time `db:"updated_at" json:"updated_at"`
}

// PriceTable is the installation's prices, as a transaction read them.
type PriceTable struct {
	Currency string
	rows     map[[3]string]Money
}

// NewPriceTable indexes prices for EstimateCost.
func NewPriceTable(currency string, prices []*Price) *PriceTable {
	t := &PriceTable{Currency: currency, rows: make(map[[3]string]Money, len(prices))}
	for _, p := range prices {
		t.rows[[3]string{string(p.Channel), p.Country, p.Category}] = p.UnitPrice
	}
	return t
}

// unit is the price of ch to country in category: the country's own row,
// else the '*' row.
func (t *PriceTable) unit(ch Channel, country, category string) (Money, bool) {
	if t == nil {
		return 0, false
	}
	if p, ok := t.rows[[3]string{string(ch), country, category}]; ok && country != "" {
		return p, true
	}
	p, ok := t.rows[[3]string{string(ch), AnyCountry, category}]
	return p, ok
}

// CostOf is what a message is priced as: the country of its number
// (AnyCountry for e-mail, which has none), its WhatsApp category and its
// SMS parts.
type CostOf struct {
	Channel  Channel
	Country  string
	Category string
	Parts    int
}

// Describe is how an estimate names a kind of message: "WhatsApp utility",
// "SMS (2 parts each)", "e-mail".
func (c CostOf) Describe() string {
	switch c.Channel {
	case WhatsApp:
		return "WhatsApp " + strings.ToLower(c.Category)
	case SMS:
		if c.Parts == 1 {
			return "SMS (1 part each)"
		}
		return fmt.Sprintf("SMS (%d parts each)", c.Parts)
	case Email:
		return "e-mail"
	}
	return strings.ToLower(string(c.Channel))
}

// CostKind is how a message is priced: its channel, country, category and
// parts. An SMS without parts counted is one part; a WhatsApp message
// without a Meta template's category is free-form text, which Meta lets
// through only inside the customer service window: SERVICE.
func CostKind(m *Message) CostOf {
	c := CostOf{Channel: m.Channel, Country: AnyCountry}
	switch m.Channel {
	case SMS:
		c.Country, c.Parts = regionOf(m.ToAddress), 1
		if m.SMSParts != nil {
			c.Parts = *m.SMSParts
		}
	case WhatsApp:
		c.Country, c.Category = regionOf(m.ToAddress), m.PriceCategory
		if c.Category == "" {
			c.Category = CategoryService
		}
	}
	return c
}

// EstimateCost is what the message costs by the price table: the unit
// price of its channel, country and category (the '*' country's where its
// own has no row), times its parts on SMS; nil when no row prices it.
// Routing stores it on every message it inserts, the dispatcher reserves
// it from the month's budget, and approvals sum it over what an event
// would send.
func EstimateCost(t *PriceTable, m *Message) *Money {
	c := CostKind(m)
	unit, ok := t.unit(c.Channel, c.Country, c.Category)
	if !ok {
		return nil
	}
	cost := unit
	if c.Channel == SMS {
		cost = unit * Money(c.Parts)
	}
	return &cost
}

// Estimate is what a set of messages costs by the price table, with how
// many of each kind ("41 WhatsApp utility").
type Estimate struct {
	Currency string
	Total    Money
	Lines    []EstimateLine
	// Unpriced counts the messages no price row priced.
	Unpriced int
}

// EstimateLine is one kind of message in an estimate.
type EstimateLine struct {
	Kind  CostOf
	Count int
	Cost  Money
}

// Add counts one message in the estimate, priced by EstimateCost.
func (e *Estimate) Add(t *PriceTable, m *Message) {
	cost := EstimateCost(t, m)
	if cost == nil {
		e.Unpriced++
		return
	}
	e.Total += *cost
	k := CostKind(m)
	k.Country = "" // lines are per kind, across countries
	for i := range e.Lines {
		if e.Lines[i].Kind == k {
			e.Lines[i].Count++
			e.Lines[i].Cost += *cost
			return
		}
	}
	e.Lines = append(e.Lines, EstimateLine{Kind: k, Count: 1, Cost: *cost})
}

// String is the estimate as the approval page says it: "about EUR 23.40:
// 41 WhatsApp utility, 7 SMS (2 parts each)".
func (e *Estimate) String() string {
	lines := slices.Clone(e.Lines)
	slices.SortStableFunc(lines, func(a, b EstimateLine) int { return b.Count - a.Count })
	parts := make([]string, 0, len(lines)+1)
	for _, l := range lines {
		parts = append(parts, fmt.Sprintf("%d %s", l.Count, l.Kind.Describe()))
	}
	if e.Unpriced > 0 {
		parts = append(parts, fmt.Sprintf("%d without a price", e.Unpriced))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("about %s 0.00: nothing to send", e.Currency)
	}
	return fmt.Sprintf("about %s %s: %s", e.Currency, e.Total.Cents(), strings.Join(parts, ", "))
}

// PriceReader reads the price table in any transaction.
type PriceReader interface {
	// Prices returns every row of the price table.
	Prices(ctx context.Context) ([]*Price, error)
}
