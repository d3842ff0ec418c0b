package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// whatsAppTo is a BOOKING_CONFIRMED request on WhatsApp alone, for a
// booking of its own (so that it is no duplicate of another).
func whatsAppTo(i int) map[string]any {
	return webtest.WithRecipient(fmt.Sprintf("evt-%d", i), fmt.Sprintf("BK-%d", i),
		map[string]any{"name": "Anna Schmidt", "phone": "+49 151 23456789", "locale": "de-DE"}, "WHATSAPP")
}

// TestQuota_HoldsAcrossWorkers sends more messages than the monthly quota
// allows through two River clients on one database, with every provider
// call held until all messages were either sent to the provider or
// refused: however the two interleave, no more than the quota reaches the
// provider, and the rest fail as quota_exceeded without a call.
func TestQuota_HoldsAcrossWorkers(t *testing.T) {
	t.Parallel()
	const quota, n = 20, 32
	graph := webtest.NewGraph(t)
	h := webtest.New(t, webtest.Options{Config: func(c *app.Config) {
		c.MetaBaseURL = graph.URL
		c.Quotas[app.PlanPro][app.WhatsApp] = quota
	}})
	h.StartWorkers() // a second worker client, as a second process would be
	webtest.CreateMetaAccount(t, h.Ctx, h.Services, h.Tenant, nil)

	graph.Hold()
	for i := range n {
		h.Submit(whatsAppTo(i))
	}
	failed := func() int {
		return h.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'FAILED' AND error_code = 'quota_exceeded'`, h.Tenant.ID)
	}
	// Every message is either inside a provider call or refused.
	require.Eventually(t, func() bool { return graph.Calls()+failed() == n }, 30*time.Second, 20*time.Millisecond,
		"calls %d, refused %d", graph.Calls(), failed())
	graph.Release()
	require.Eventually(t, func() bool {
		return h.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'SENT'`, h.Tenant.ID) == graph.Calls()
	}, 30*time.Second, 20*time.Millisecond)

	t.Logf("quota %d, %d messages offered by two workers: %d provider calls, %d refused", quota, n, graph.Calls(), failed())
	require.Equal(t, quota, graph.Calls(), "never more than the quota reaches the provider")
	require.Equal(t, n-quota, failed())
	require.Equal(t, quota, h.Count(`SELECT coalesce(sum(count), 0) FROM usage_counters WHERE tenant_id = $1 AND channel = 'WHATSAPP'`, h.Tenant.ID))
	require.Equal(t, quota, h.Count(`SELECT used FROM quota_usage WHERE tenant_id = $1 AND channel = 'WHATSAPP'`, h.Tenant.ID),
		"the refused messages hold no reservation")
}
