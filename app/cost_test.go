package app_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func TestParseMoney(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]app.Money{"0.0735": 73500, "12": 12_000_000, "1,250.50": 1_250_500_000, " 0.000001 ": 1, "0": 0, "0.10000000": 100_000} {
		got, err := app.ParseMoney("unit_price", raw, app.MaxUnitPrice*10)
		require.NoError(t, err, raw)
		require.Equal(t, want, got, raw)
	}
	for _, raw := range []string{"", "abc", "-1", "0.0000001", "1e3", "1.2.3", "EUR 3", "1001"} {
		_, err := app.ParseMoney("unit_price", raw, app.MaxUnitPrice)
		require.Error(t, err, raw)
		require.Equal(t, app.EINVALID, app.ErrorCode(err), raw)
		var e *app.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, "unit_price", e.Field, raw)
	}
	require.Equal(t, "0.0735", app.Money(73500).String())
	require.Equal(t, "23.40", app.Money(23_400_000).String())
	require.Equal(t, "23.40", app.Money(23_399_999).Cents())
}

func TestPriceInput(t *testing.T) {
	t.Parallel()
	p, err := app.PriceInput{Channel: "whatsapp", Country: "de", Category: "utility", UnitPrice: "0.0456"}.Price()
	require.NoError(t, err)
	require.Equal(t, &app.Price{Channel: app.WhatsApp, Country: "DE", Category: "UTILITY", UnitPrice: 45600}, p)
	p, err = app.PriceInput{Channel: "EMAIL", UnitPrice: "0.0001"}.Price()
	require.NoError(t, err)
	require.Equal(t, app.AnyCountry, p.Country)
	for field, in := range map[string]app.PriceInput{
		"channel":    {Channel: "WEBHOOK", UnitPrice: "1"},
		"country":    {Channel: "SMS", Country: "XX", UnitPrice: "1"},
		"category":   {Channel: "WHATSAPP", Country: "DE", Category: "PROMO", UnitPrice: "1"},
		"unit_price": {Channel: "SMS", Country: "DE", UnitPrice: "-0.07"},
	} {
		_, err := in.Price()
		var e *app.Error
		require.ErrorAs(t, err, &e, field)
		require.Equal(t, field, e.Field)
	}
	_, err = app.PriceInput{Channel: "SMS", Category: "UTILITY", UnitPrice: "1"}.Price()
	require.Error(t, err, "only WhatsApp prices have a category")
	_, err = app.PriceInput{Channel: "EMAIL", Country: "DE", UnitPrice: "1"}.Price()
	require.Error(t, err, "e-mail has no country")
}

func TestEstimateCost(t *testing.T) {
	t.Parallel()
	table := app.NewPriceTable("EUR", []*app.Price{
		{Channel: app.SMS, Country: "DE", UnitPrice: 75_000},
		{Channel: app.SMS, Country: "*", UnitPrice: 100_000},
		{Channel: app.WhatsApp, Country: "DE", Category: "UTILITY", UnitPrice: 45_600},
		{Channel: app.WhatsApp, Country: "*", Category: "SERVICE", UnitPrice: 0},
		{Channel: app.Email, Country: "*", UnitPrice: 100},
	})
	parts := func(n int) *int { return &n }
	cost := func(m *app.Message) *app.Money { return app.EstimateCost(table, m) }
	money := func(m app.Money) *app.Money { return &m }

	require.Equal(t, money(150_000), cost(&app.Message{Channel: app.SMS, ToAddress: "+4915123456789", SMSParts: parts(2)}), "per part, German price")
	require.Equal(t, money(100_000), cost(&app.Message{Channel: app.SMS, ToAddress: "+33612345678", SMSParts: parts(1)}), "France has no row: '*'")
	require.Equal(t, money(45_600), cost(&app.Message{Channel: app.WhatsApp, ToAddress: "+4915123456789", PriceCategory: "UTILITY"}))
	require.Equal(t, money(0), cost(&app.Message{Channel: app.WhatsApp, ToAddress: "+4915123456789"}), "free-form text is SERVICE")
	require.Nil(t, cost(&app.Message{Channel: app.WhatsApp, ToAddress: "+33612345678", PriceCategory: "MARKETING"}), "no row prices it")
	require.Equal(t, money(100), cost(&app.Message{Channel: app.Email, ToAddress: "a@example.com"}))
	require.Nil(t, cost(&app.Message{Channel: app.Webhook, ToAddress: "https://example.com"}))

	var e app.Estimate
	e.Currency = "EUR"
	for range 41 {
		e.Add(table, &app.Message{Channel: app.WhatsApp, ToAddress: "+4915123456789", PriceCategory: "UTILITY"})
	}
	for range 7 {
		e.Add(table, &app.Message{Channel: app.SMS, ToAddress: "+4915123456789", SMSParts: parts(2)})
	}
	require.Equal(t, "about EUR 2.92: 41 WhatsApp utility, 7 SMS (2 parts each)", e.String())
}

// TestDispatcher_Budget: a message's estimated cost is stored when it is
// routed and taken from the month's budget with its quota; a send that
// would pass the budget fails budget_exceeded, and one worker's send never
// lets another's past the budget.
func TestDispatcher_Budget(t *testing.T) {
	t.Parallel()

	setup := func(t *testing.T) (*pipelineBundle, *app.Tenant) {
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		for _, c := range app.PriceCategories {
			_, err := b.svc.Prices.Put(b.ctx, app.CLIActor, app.PriceInput{Channel: "WHATSAPP", Country: "*", Category: c, UnitPrice: "0.05"})
			require.NoError(t, err)
		}
		require.NoError(t, b.svc.Limits.Set(b.ctx, app.CLIActor, tn.ID, app.LimitInput{BudgetWhatsApp: "0.08"}))
		return b, tn
	}
	spent := func(b *pipelineBundle, t *testing.T, tn *app.Tenant) int {
		return b.count(t, `SELECT coalesce(sum(spent), 0) FROM quota_usage WHERE tenant_id = $1 AND channel = 'WHATSAPP'`, tn.ID)
	}

	t.Run("RefusedPastTheBudget", func(t *testing.T) {
		t.Parallel()
		b, tn := setup(t)
		first := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		require.Equal(t, app.Money(50_000), *b.message(t, tn.ID, first.ID).EstimatedCost, "the cost is stored with the message")
		b.sendOK(t, first)
		require.Equal(t, 50_000, spent(b, t, tn))

		second := b.routeOne(t, tn, booking("evt-2", "BK-2", anna, "WHATSAPP"))
		out, err := b.dispatch(second, 1, 5, &completion{})
		require.NoError(t, err)
		require.True(t, out.Done, "a budget refusal is final")
		failed := b.message(t, tn.ID, second.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonBudgetExceeded, *failed.FailedReason)
		tl := b.timeline(t, tn.ID, second.ID)
		require.Equal(t, "This WHATSAPP message costs about 0.05; the tenant's monthly WHATSAPP budget is 0.08 and 0.05 of it is spent.", tl[len(tl)-1].Detail["error"])
		require.Len(t, b.meta.received(), 1)
		require.Equal(t, 50_000, spent(b, t, tn), "the refused message holds nothing")

		// A higher budget lets the next send through.
		require.NoError(t, b.svc.Limits.Set(b.ctx, app.CLIActor, tn.ID, app.LimitInput{BudgetWhatsApp: "1"}))
		b.sendOK(t, b.routeOne(t, tn, booking("evt-3", "BK-3", anna, "WHATSAPP")))
		require.Equal(t, 100_000, spent(b, t, tn))
	})

	t.Run("GivenBackWhenNotSent", func(t *testing.T) {
		t.Parallel()
		b, tn := setup(t)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		b.meta.reply(graphError(t, "131026"))
		_, err := b.dispatch(m, 1, 5, &completion{})
		require.NoError(t, err)
		require.Equal(t, app.MessageFailed, b.message(t, tn.ID, m.ID).Status)
		require.Zero(t, spent(b, t, tn), "a refused send gives its cost back")
	})

	t.Run("HoldsUnderConcurrentSends", func(t *testing.T) {
		t.Parallel()
		b, tn := setup(t)
		first := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		second := b.routeOne(t, tn, booking("evt-2", "BK-2", anna, "WHATSAPP"))
		// A second worker dispatches the other message while Meta is still
		// answering the first, as in the quota's test.
		var nested atomic.Bool
		var nestedOut app.DispatchOutcome
		var nestedErr error
		b.meta.mu.Lock()
		b.meta.before = func() {
			if nested.CompareAndSwap(false, true) {
				nestedOut, nestedErr = b.dispatch(second, 1, 5, &completion{})
			}
		}
		b.meta.mu.Unlock()
		out, err := b.dispatch(first, 1, 5, &completion{})
		require.NoError(t, err)
		require.NoError(t, nestedErr)
		require.True(t, out.Done)
		require.True(t, nestedOut.Done)
		require.Len(t, b.meta.received(), 1, "a budget of 0.08 pays for one message of 0.05")
		require.Equal(t, app.ReasonBudgetExceeded, *b.message(t, tn.ID, second.ID).FailedReason)
		require.Equal(t, 50_000, spent(b, t, tn))
	})
}
