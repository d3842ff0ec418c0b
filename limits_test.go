package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// setAccountConfig merges settings into the tenant's ACTIVE account of a channel.
func setAccountConfig(t *testing.T, p *webtest.Herald, tenantID uuid.UUID, ch app.Channel, settings string) {
	t.Helper()
	require.NoError(t, p.Services.Store.InPlatform(p.Ctx, func(tx *db.Tx) error {
		_, err := tx.SQL().ExecContext(p.Ctx, `
			UPDATE channel_accounts SET config = config || $3::jsonb
			WHERE tenant_id = $1 AND channel = $2 AND status = 'ACTIVE'`, tenantID, ch, settings)
		return err
	}))
}

// sentTimes returns when the tenant's messages were sent, earliest first.
func sentTimes(p *webtest.Herald, tenantID uuid.UUID) []time.Time {
	p.T.Helper()
	var ts []time.Time
	require.NoError(p.T, p.Services.Store.InPlatform(p.Ctx, func(tx *db.Tx) error {
		rows, err := tx.SQL().QueryContext(p.Ctx, `SELECT sent_at FROM messages WHERE tenant_id = $1 AND sent_at IS NOT NULL`, tenantID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var at time.Time
			if err := rows.Scan(&at); err != nil {
				return err
			}
			ts = append(ts, at)
		}
		return rows.Err()
	}))
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	return ts
}

func emailTo(eventID, addr string) map[string]any {
	b := map[string]any{
		"event_id": eventID, "trigger_event": "BOOKING_REFUNDED",
		"recipients": []map[string]any{{"name": "A", "email": addr}},
		"context":    map[string]any{"passenger_name": "A", "booking_reference": "BK-" + eventID, "refund_amount": "5 EUR"},
	}
	return b
}

// TestRateLimit_SharedAcrossWorkers runs two River clients on one database
// and checks that together they keep to the account's rate.
func TestRateLimit_SharedAcrossWorkers(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})
	p.StartWorkers() // a second worker client, as a second process would be
	const rate, burst, n = 20, 20, 120
	setAccountConfig(t, p, p.Tenant.ID, app.Email, fmt.Sprintf(`{"rate_per_second": "%d"}`, rate))

	for i := range n {
		p.Submit(emailTo(fmt.Sprintf("rl-%d", i), fmt.Sprintf("p%d@example.com", i)))
	}
	require.Eventually(t, func() bool { return len(sentTimes(p, p.Tenant.ID)) == n }, 30*time.Second, 100*time.Millisecond)
	ts := sentTimes(p, p.Tenant.ID)
	// By time t after the first send the bucket has handed out at most
	// burst + rate*t tokens, so the sends beyond the burst measure the rate.
	measured := float64(n-burst) / ts[n-1].Sub(ts[0]).Seconds()
	t.Logf("configured %d/s, measured %.1f/s over %d sends by two workers", rate, measured, n-burst)
	require.InDelta(t, rate, measured, rate*0.10, "the shared limit holds within 10%%")
	require.Greater(t, p.Count(`SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND attempt = 1 AND state = 'completed'`), n/2,
		"snoozed jobs used no attempt")
}

// TestRateLimit_Fairness shows that one tenant's backlog does not hold up
// another tenant's messages on the same channel and queue.
func TestRateLimit_Fairness(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})
	setAccountConfig(t, p, p.Tenant.ID, app.Email, `{"rate_per_second": "2", "burst": "1"}`)
	for i := range 200 {
		p.Submit(emailTo(fmt.Sprintf("busy-%d", i), fmt.Sprintf("b%d@example.com", i)))
	}
	time.Sleep(500 * time.Millisecond) // the backlog is being worked and snoozed

	other, err := p.Services.Tenants.Create(p.Ctx, app.CLIActor, app.TenantInput{Slug: "quiet", Name: "Quiet Tours", Plan: app.PlanPro})
	require.NoError(t, err)
	_, key, err := p.Services.APIKeys.Create(p.Ctx, app.CLIActor, other.ID, "k")
	require.NoError(t, err)
	var res struct{ ID uuid.UUID }
	start := time.Now()
	require.Equal(t, 202, p.RequestWithKey(key, "POST", "/api/v1/notifications", emailTo("quiet-1", "q@example.com"), &res))
	require.Eventually(t, func() bool { return len(sentTimes(p, other.ID)) == 1 }, 5*time.Second, 20*time.Millisecond,
		"the quiet tenant's message waits behind the busy tenant's backlog")
	took := time.Since(start)
	busySent := len(sentTimes(p, p.Tenant.ID))
	t.Logf("quiet tenant's message sent %s after submission; busy tenant has sent %d of 200", took.Round(time.Millisecond), busySent)
	require.Less(t, busySent, 20, "the busy tenant is still held to its own rate")
}

// TestBreaker_OpensOnStormAndRecovers checks that a 5xx storm at Meta
// opens the account's breaker, that jobs wait instead of failing, and that
// every message is sent once Meta is back. The real Meta adapter talks to a
// fake Graph API.
func TestBreaker_OpensOnStormAndRecovers(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	var calls atomic.Int64
	down.Store(true)
	graph := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":{"message":"Service temporarily unavailable","type":"OAuthException","code":2,"is_transient":true}}`)
			return
		}
		_, _ = fmt.Fprintf(w, `{"messaging_product":"whatsapp","messages":[{"id":"wamid.%s"}]}`, uuid.NewString())
	}))
	t.Cleanup(graph.Close)
	p := webtest.New(t, webtest.Options{Config: func(cfg *app.Config) {
		cfg.BreakerThreshold, cfg.BreakerOpenFor, cfg.MetaBaseURL = 3, 500*time.Millisecond, graph.URL
	}})
	sb := p.ActiveAccount(app.WhatsApp)
	require.NoError(t, p.Services.Accounts.SetStatus(p.Ctx, app.CLIActor, p.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	acct, err := p.Services.Accounts.Create(p.Ctx, app.CLIActor, p.Tenant.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "Acme WhatsApp", Activate: true,
		Config: app.Attrs{"phone_number_id": "1234567890"}, Secrets: map[string]string{"access_token": "t", "app_secret": "s"},
	})
	require.NoError(t, err)
	p.ApproveMetaDefaults(acct)

	const n = 10
	ids := make([]uuid.UUID, n)
	for i := range n {
		ids[i] = p.Submit(webtest.WithRecipient(fmt.Sprintf("storm-%d", i), fmt.Sprintf("BK-S%d", i),
			map[string]any{"name": "A", "phone": fmt.Sprintf("+49151234560%02d", 10+i)}, "WHATSAPP"))
	}
	require.Eventually(t, func() bool { return p.Services.Breakers.State(acct.ID) != app.BreakerClosed }, 10*time.Second, 10*time.Millisecond,
		"the breaker opens on the storm")
	callsWhileOpen := calls.Load()
	time.Sleep(2 * time.Second) // an outage of a few breaker periods
	require.Less(t, calls.Load()-callsWhileOpen, int64(10), "while open, only probes reach Meta")
	require.Zero(t, p.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'FAILED'`, p.Tenant.ID), "no message fails during the outage")

	down.Store(false)
	for _, id := range ids {
		p.WaitMessages(id, "sent after recovery", webtest.AllStatus(app.MessageSent))
	}
	require.Equal(t, app.BreakerClosed, p.Services.Breakers.State(acct.ID))
	require.Zero(t, p.Count(`SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND state = 'discarded'`), "no job was discarded")
	require.Eventually(t, func() bool {
		return p.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.breaker' AND metadata->>'to' = 'open'`) >= 1 &&
			p.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.breaker' AND metadata->>'to' = 'closed'`) >= 1
	}, 5*time.Second, 20*time.Millisecond, "transitions are in the audit log")

	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	resp, err := p.App.Test(req, -1)
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	require.Contains(t, string(metrics), `herald_breaker_state{channel_account_id="`+acct.ID.String()+`",provider="meta"} 0`)
	require.Contains(t, string(metrics), `herald_snoozes_total{reason="breaker_open"}`)
	require.Contains(t, string(metrics), `herald_provider_errors_total{code="2",provider="meta"}`)
}
