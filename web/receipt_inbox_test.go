package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestWebhook_ReceiptInboxSurvivesStop checks that a webhook's receipts
// are durable before they are applied: with no worker running (stopped, or
// crashed after the webhook answered) they wait in the inbox, and the next
// worker applies them.
func TestWebhook_ReceiptInboxSurvivesStop(t *testing.T) {
	t.Parallel()
	const secret = "sms-status-secret-0123456789"
	p := webtest.New(t, webtest.Options{NoWorkers: true, Config: func(cfg *app.Config) { cfg.SMSStatusSecret = secret }})
	records := `[{"notification":{"messageId":"not-sent-yet-1","timestamp":"2026-11-21 10:00:00.000"},"delivery":{"providerResponse":"ok"},"status":"SUCCESS"},
		{"notification":{"messageId":"not-sent-yet-2","timestamp":"2026-11-21 10:00:00.000"},"delivery":{"providerResponse":"ok"},"status":"SUCCESS"}]`
	post := func(body string) (int, map[string]any) {
		req := httptest.NewRequest(http.MethodPost, "/webhooks/sns-sms", bytes.NewReader([]byte(body)))
		req.Header.Set("X-Herald-Webhook-Secret", secret)
		resp, err := p.App.Test(req, -1)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		out := map[string]any{}
		_ = json.Unmarshal(raw, &out)
		return resp.StatusCode, out
	}

	code, out := post(records)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []any{app.ReceiptAccepted, app.ReceiptAccepted}, out["outcomes"])
	require.Equal(t, 2, p.Count(`SELECT count(*) FROM receipt_inbox WHERE provider = 'sns'`), "both records, stored by the webhook")
	require.Zero(t, p.Count(`SELECT count(*) FROM webhook_receipts`), "and not applied: no worker runs")

	// A post with one bad record stores none of it.
	code, _ = post(`[{"notification":{"messageId":"x"},"status":"SUCCESS"}, "garbage"]`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, 2, p.Count(`SELECT count(*) FROM receipt_inbox`))

	p.StartWorkers()
	p.WaitReceipts()
	require.Equal(t, 2, p.Count(`SELECT count(*) FROM receipt_inbox WHERE provider = 'sns' AND available_at = 'infinity' AND external_id LIKE 'not-sent-yet-%'`),
		"the worker that starts takes what waited: parked for sends not recorded yet")
}
