package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestAPIBudgets_AndApprovalEstimate: a tenant reads its budgets with the
// month's spend, and an approval answers what the broadcast would cost,
// priced by the operator's table over every recipient.
func TestAPIBudgets_AndApprovalEstimate(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	key := keyWith(t, h, h.Tenant.ID, app.ScopeSend, app.ScopeRead)
	_, err := h.Services.Prices.Put(h.Ctx, app.CLIActor, app.PriceInput{Channel: "EMAIL", UnitPrice: "0.50"})
	require.NoError(t, err)
	require.NoError(t, h.Services.Limits.Set(h.Ctx, app.CLIActor, h.Tenant.ID, app.LimitInput{BudgetEmail: "100", BudgetWhatsApp: "0"}))

	var budgets struct {
		Budgets []app.BudgetUse `json:"budgets"`
	}
	status, raw := call(t, h, key, http.MethodGet, "/api/v1/budgets", nil, &budgets)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.Len(t, budgets.Budgets, 3)
	byChannel := map[app.Channel]app.BudgetUse{}
	for _, b := range budgets.Budgets {
		byChannel[b.Channel] = b
		require.Equal(t, "EUR", b.Currency)
	}
	require.Equal(t, "100.00", *byChannel[app.Email].Budget)
	require.Equal(t, "100.00", *byChannel[app.Email].Remaining)
	require.Equal(t, "0.00", byChannel[app.Email].Spent)
	require.Equal(t, "0.00", *byChannel[app.WhatsApp].Remaining)
	require.Nil(t, byChannel[app.SMS].Budget, "no budget")

	body := incidentBroadcast("estimate-1")
	body["recipients"] = []map[string]any{{"name": "Anna", "email": "anna@example.com"}, {"name": "Ben", "email": "ben@example.com"},
		{"name": "Cleo", "email": "cleo@example.com"}}
	var res submitted
	status, raw = call(t, h, key, http.MethodPost, "/api/v1/notifications", body, &res)
	require.Equal(t, http.StatusAccepted, status, "%s", raw)
	var approval struct {
		Estimate struct {
			Currency, Total, Text string
			Lines                 []struct {
				Channel string
				Count   int
				Cost    string
			}
		} `json:"estimate"`
	}
	status, raw = call(t, h, key, http.MethodGet, "/api/v1/approvals/"+res.ID.String(), nil, &approval)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.Equal(t, "about EUR 1.50: 3 e-mail", approval.Estimate.Text, "%s", raw)
	require.Equal(t, "1.50", approval.Estimate.Total)
	require.Equal(t, 3, approval.Estimate.Lines[0].Count)
}
