package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/meta"
	"github.com/heraldhq/herald/db/dbtest"
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
	h := webtest.New(t, webtest.Options{
		Config: func(c *app.Config) {
			c.MetaBaseURL = graph.URL
			c.Quotas[app.PlanPro][app.WhatsApp] = quota
			// A held send waits for every other message to reach the fake
			// or be refused, which on a busy machine takes longer than a
			// job's usual time: cancelled and retried, it would call again.
			// Its provider call has time of its own, as long.
			c.JobTimeout, c.SendTimeout = dbtest.HangGuard, dbtest.HangGuard
			c.RescueStuckAfter = app.DispatchTimeout(c.JobTimeout, c.SendTimeout) + app.RecordSentRetryFor
		},
		// And longer than Meta's client waits by default.
		Providers: provider.Set{meta.Name: &meta.Provider{BaseURL: graph.URL, HTTPClient: &http.Client{Timeout: dbtest.HangGuard}}},
	})
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
	require.Eventually(t, func() bool { return graph.Calls()+failed() == n }, dbtest.HangGuard, 20*time.Millisecond,
		"calls %d, refused %d", graph.Calls(), failed())
	graph.Release()
	require.Eventually(t, func() bool {
		return h.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'SENT'`, h.Tenant.ID) == graph.Calls()
	}, dbtest.HangGuard, 20*time.Millisecond)

	t.Logf("quota %d, %d messages offered by two workers: %d provider calls, %d refused", quota, n, graph.Calls(), failed())
	require.Equal(t, quota, graph.Calls(), "never more than the quota reaches the provider")
	require.Equal(t, n-quota, failed())
	require.Equal(t, quota, h.Count(`SELECT coalesce(sum(count), 0) FROM usage_counters WHERE tenant_id = $1 AND channel = 'WHATSAPP'`, h.Tenant.ID))
	require.Equal(t, quota, h.Count(`SELECT used FROM quota_usage WHERE tenant_id = $1 AND channel = 'WHATSAPP'`, h.Tenant.ID),
		"the refused messages hold no reservation")
}

// TestBudget_HoldsAcrossWorkers is TestQuota_HoldsAcrossWorkers for money:
// a monthly WhatsApp budget of 20 messages' estimated cost, 32 messages
// offered through two River clients with every provider call held until
// each message was sent to the provider or refused. No more than the budget
// buys reaches the provider, the rest fail as budget_exceeded without a
// call, and the month's spend is exactly what was sent.
func TestBudget_HoldsAcrossWorkers(t *testing.T) {
	t.Parallel()
	const affordable, n = 20, 32
	graph := webtest.NewGraph(t)
	h := webtest.New(t, webtest.Options{
		Config: func(c *app.Config) {
			c.MetaBaseURL = graph.URL
			// As in TestQuota_HoldsAcrossWorkers: a held send must not be
			// cancelled and sent again on a busy machine.
			c.JobTimeout, c.SendTimeout = dbtest.HangGuard, dbtest.HangGuard
			c.RescueStuckAfter = app.DispatchTimeout(c.JobTimeout, c.SendTimeout) + app.RecordSentRetryFor
		},
		Providers: provider.Set{meta.Name: &meta.Provider{BaseURL: graph.URL, HTTPClient: &http.Client{Timeout: dbtest.HangGuard}}},
	})
	h.StartWorkers() // a second worker client, as a second process would be
	webtest.CreateMetaAccount(t, h.Ctx, h.Services, h.Tenant, nil)
	for _, category := range app.PriceCategories {
		_, err := h.Services.Prices.Put(h.Ctx, app.CLIActor, app.PriceInput{Channel: "WHATSAPP", Country: app.AnyCountry, Category: category, UnitPrice: "0.05"})
		require.NoError(t, err)
	}
	require.NoError(t, h.Services.Limits.Set(h.Ctx, app.CLIActor, h.Tenant.ID, app.LimitInput{BudgetWhatsApp: "1.00"}))

	graph.Hold()
	for i := range n {
		h.Submit(whatsAppTo(i))
	}
	refused := func() int {
		return h.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'FAILED' AND error_code = 'budget_exceeded'`, h.Tenant.ID)
	}
	require.Eventually(t, func() bool { return graph.Calls()+refused() == n }, dbtest.HangGuard, 20*time.Millisecond,
		"calls %d, refused %d", graph.Calls(), refused())
	graph.Release()
	require.Eventually(t, func() bool {
		return h.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'SENT'`, h.Tenant.ID) == graph.Calls()
	}, dbtest.HangGuard, 20*time.Millisecond)

	t.Logf("budget for %d, %d messages offered by two workers: %d provider calls, %d refused", affordable, n, graph.Calls(), refused())
	require.Equal(t, affordable, graph.Calls(), "never more than the budget buys reaches the provider")
	require.Equal(t, n-affordable, refused())
	require.Equal(t, 1_000_000, h.Count(`SELECT spent FROM quota_usage WHERE tenant_id = $1 AND channel = 'WHATSAPP'`, h.Tenant.ID),
		"the month's spend is what was sent; the refused messages hold no reservation")
}

// TestRescue_ConfigReachesRiver runs River with another rescue time than
// the default and two dispatch jobs left running as a killed worker leaves
// them: the one that has been running longer than HERALD_RESCUE_STUCK_AFTER
// is rescued, runs again and, its message being SENT already, sends
// nothing; the one still within its time (though far past the default's)
// is left to its worker. Both are judged by the same pass of River's
// rescuer, so the test does not depend on when that pass runs.
func TestRescue_ConfigReachesRiver(t *testing.T) {
	t.Parallel()
	graph := webtest.NewGraph(t)
	h := webtest.New(t, webtest.Options{Config: func(c *app.Config) {
		c.MetaBaseURL = graph.URL
		// Long enough that no send of a busy machine is cancelled and sent
		// again, which would add a call to the fake's count.
		c.JobTimeout = dbtest.HangGuard
		c.RescueStuckAfter = 2 * time.Hour // the default is 65 s, River's own 1 h
	}})
	webtest.CreateMetaAccount(t, h.Ctx, h.Services, h.Tenant, nil)
	// River finishes a job in the background after the work returned; the
	// test changes the job rows only once River is done with them.
	events, cancel := h.Worker.Subscribe(river.EventKindJobCompleted)
	defer cancel()
	ids := []string{h.Submit(whatsAppTo(1)).String(), h.Submit(whatsAppTo(2)).String()}
	for done := 0; done < 2; {
		select {
		case e := <-events:
			if e.Job.Kind == "dispatch" {
				done++
			}
		case <-time.After(dbtest.HangGuard):
			t.Fatal("the dispatch jobs did not complete")
		}
	}
	require.Equal(t, 2, graph.Calls())

	jobOf := func(eventID string) int {
		return h.Count(`SELECT j.id FROM river_job j JOIN messages m ON m.id::text = j.args->>'message_id'
			WHERE j.kind = 'dispatch' AND m.event_id = $1`, eventID)
	}
	stuck, fresh := jobOf(ids[0]), jobOf(ids[1])
	// As a killed worker leaves them: running, one for 3 h, one for 90 min.
	for id, age := range map[int]string{stuck: "3 hours", fresh: "90 minutes"} {
		h.Exec(`UPDATE river_job SET state = 'running', finalized_at = NULL, attempted_at = now() - $2::interval WHERE id = $1`, id, age)
	}
	require.Eventually(t, func() bool {
		return h.Count(`SELECT count(*) FROM river_job WHERE id = $1 AND state = 'completed' AND attempt = 2`, stuck) == 1
	}, dbtest.HangGuard, 50*time.Millisecond, "the stuck job is rescued and run again")
	require.Equal(t, 1, h.Count(`SELECT count(*) FROM river_job WHERE id = $1 AND state = 'running'`, fresh),
		"a job running for less than HERALD_RESCUE_STUCK_AFTER is not rescued")
	require.Equal(t, 2, graph.Calls(), "the rescued job sent nothing: its message was SENT")
	require.Equal(t, 2, h.Count(`SELECT coalesce(sum(count), 0) FROM usage_counters WHERE tenant_id = $1`, h.Tenant.ID))
}

// TestChannel_WebhookPrivateAddresses tries a webhook receiver on this
// machine: with HERALD_WEBHOOK_ALLOW_PRIVATE in dev, the console accepts
// its URL and Herald delivers to it; without, both refuse a loopback
// address (and prod refuses the setting at start, see TestConfigFromEnv).
func TestChannel_WebhookPrivateAddresses(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, allow bool) (*webtest.Herald, string, chan struct{}) {
		got := make(chan struct{}, 4)
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- struct{}{} }))
		t.Cleanup(receiver.Close)
		h := webtest.New(t, webtest.Options{Config: func(c *app.Config) { c.WebhookAllowPrivate = allow }})
		return h, receiver.URL + "/herald", got
	}
	send := func(h *webtest.Herald, url string) *app.Message {
		_, err := h.Services.Accounts.Create(h.Ctx, app.CLIActor, h.Tenant.ID, app.AccountInput{
			Channel: app.Webhook, Provider: "webhook", Name: "Booking system", Activate: true,
			Config: app.Attrs{"url": url}, Secrets: map[string]string{"signing_secret": "whsec_test_secret"},
		})
		require.NoError(t, err)
		id := h.Submit(webtest.WithRecipient("wh-1", "BK-WH", map[string]any{"name": "A", "email": "a@example.com"}, "WEBHOOK"))
		return webtest.OnlyMessage(t, h.WaitMessages(id, "sent or failed", func(ms []*app.Message) bool {
			return len(ms) == 1 && ms[0].Status != app.MessageQueued
		}))
	}

	t.Run("AllowedInDev", func(t *testing.T) {
		t.Parallel()
		h, url, got := setup(t, true)
		require.NoError(t, h.Services.Console.Accounts.CheckWebhookURLFunc(url), "the console accepts a loopback receiver")
		m := send(h, url)
		require.Equal(t, app.MessageSent, m.Status)
		select {
		case <-got:
		case <-time.After(dbtest.HangGuard):
			t.Fatal("the receiver got nothing")
		}
	})

	t.Run("RefusedByDefault", func(t *testing.T) {
		t.Parallel()
		h, url, got := setup(t, false)
		require.Error(t, h.Services.Console.Accounts.CheckWebhookURLFunc(url), "the console refuses a loopback receiver")
		m := send(h, url)
		require.Equal(t, app.MessageFailed, m.Status)
		require.Empty(t, got, "nothing reached the loopback address")
	})
}
