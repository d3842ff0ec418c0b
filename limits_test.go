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
	"github.com/heraldhq/herald/db/dbtest"
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

// logGrants makes the test's database log every token a rate bucket hands
// out, stamped with the database's clock while the bucket row is still
// locked: a grant's stamp lies between the bucket's reading of the time for
// it and for the next grant of the same bucket, whichever process took them
// and however busy the machine is.
func logGrants(p *webtest.Herald) {
	p.T.Helper()
	p.OwnerExec(`CREATE TABLE rate_grants (seq bigserial PRIMARY KEY, key text NOT NULL, at timestamptz NOT NULL)`)
	p.OwnerExec(`GRANT SELECT, INSERT ON rate_grants TO ` + dbtest.RuntimeRole)
	p.OwnerExec(`GRANT USAGE ON SEQUENCE rate_grants_seq_seq TO ` + dbtest.RuntimeRole)
	p.OwnerExec(`ALTER FUNCTION herald_take_token_at(text, double precision, double precision, timestamptz, double precision, double precision)
		RENAME TO herald_take_token_unlogged`)
	p.OwnerExec(`
		CREATE FUNCTION herald_take_token_at(k text, capacity double precision, per_second double precision, at timestamptz,
		                                     cooldown_s double precision, recover_s double precision)
		RETURNS double precision LANGUAGE plpgsql AS $$
		DECLARE wait double precision;
		BEGIN
		  wait := herald_take_token_unlogged(k, capacity, per_second, at, cooldown_s, recover_s);
		  IF wait = 0 THEN
		    INSERT INTO rate_grants (key, at) VALUES (k, clock_timestamp());
		  END IF;
		  RETURN wait;
		END
		$$`)
}

// requireBucketHeld checks every window of the logged grants of the
// account's bucket against the token bucket's promise: grants i..j number at
// most burst + rate x (time between them). Stamps bound the bucket's own
// times from outside (grant j's time is at most its stamp, grant i's at
// least grant i-1's stamp), so the check is exact on any machine. It
// returns the number of grants.
func requireBucketHeld(t *testing.T, p *webtest.Herald, acct *app.ChannelAccount, rate, burst float64) int {
	t.Helper()
	key := "rate:" + acct.TenantID.String() + ":" + acct.ID.String()
	var at []time.Time
	require.NoError(t, p.Services.Store.InPlatform(p.Ctx, func(tx *db.Tx) error {
		rows, err := tx.SQL().QueryContext(p.Ctx, `SELECT at FROM rate_grants WHERE key = $1 ORDER BY seq`, key)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var a time.Time
			if err := rows.Scan(&a); err != nil {
				return err
			}
			at = append(at, a)
		}
		return rows.Err()
	}))
	worst := 0.0
	for i := 1; i < len(at); i++ {
		for j := i; j < len(at); j++ {
			allowed := burst + rate*at[j].Sub(at[i-1]).Seconds()
			require.LessOrEqualf(t, float64(j-i+1), allowed+1e-6,
				"grants %d..%d: %d tokens in %s, the bucket allows %.2f", i, j, j-i+1, at[j].Sub(at[i-1]), allowed)
			worst = max(worst, float64(j-i+1)/allowed)
		}
	}
	t.Logf("%d grants at %g/s (burst %g); the fullest window used %.0f%% of what the bucket allows", len(at), rate, burst, worst*100)
	return len(at)
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
// and checks that together they keep to the account's rate: no window of
// their sends holds more than the bucket hands out, on any machine. (A
// lower bound on the rate would measure the machine, not Herald.)
func TestRateLimit_SharedAcrossWorkers(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{NoWorkers: true})
	logGrants(p)
	const rate, burst, n = 20, 20, 120
	setAccountConfig(t, p, p.Tenant.ID, app.Email, fmt.Sprintf(`{"rate_per_second": "%d"}`, rate))
	acct := p.ActiveAccount(app.Email)

	for i := range n {
		p.Submit(emailTo(fmt.Sprintf("rl-%d", i), fmt.Sprintf("p%d@example.com", i)))
	}
	p.StartWorkers()
	p.StartWorkers() // a second worker client, as a second process would be
	p.WaitUntil("every message sent", func() bool { return len(sentTimes(p, p.Tenant.ID)) == n })
	require.Equal(t, n, requireBucketHeld(t, p, acct, rate, burst), "one token per send")
	require.Greater(t, p.Count(`SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND attempt = 1 AND state = 'completed'`), n/2,
		"snoozed jobs used no attempt")
}

// TestRateLimit_Fairness shows that one tenant's backlog does not hold up
// another tenant's messages on the same channel and queue: the quiet
// tenant's message is sent while the busy tenant, held to one send every
// ten seconds, still has most of its 200 messages ahead of it. (At that
// rate the busy tenant needs a quarter of an hour for half its backlog, so
// the check holds however slowly a busy machine works the quiet message.)
func TestRateLimit_Fairness(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})
	logGrants(p)
	const backlog = 200
	setAccountConfig(t, p, p.Tenant.ID, app.Email, `{"rate_per_second": "0.1", "burst": "1"}`)
	busy := p.ActiveAccount(app.Email)
	for i := range backlog {
		p.Submit(emailTo(fmt.Sprintf("busy-%d", i), fmt.Sprintf("b%d@example.com", i)))
	}
	p.WaitUntil("the busy backlog being worked and snoozed", func() bool {
		return len(sentTimes(p, p.Tenant.ID)) >= 1 &&
			p.Count(`SELECT count(*) FROM river_job WHERE kind = 'dispatch' AND state IN ('available', 'scheduled')
				AND attempted_at IS NOT NULL AND scheduled_at > now()`) >= 1
	})

	other, err := p.Services.Tenants.Create(p.Ctx, app.CLIActor, app.TenantInput{Slug: "quiet", Name: "Quiet Tours", Plan: app.PlanPro})
	require.NoError(t, err)
	_, key, err := p.Services.APIKeys.Create(p.Ctx, app.CLIActor, other.ID, "k")
	require.NoError(t, err)
	var res struct{ ID uuid.UUID }
	start := time.Now()
	require.Equal(t, 202, p.RequestWithKey(key, "POST", "/api/v1/notifications", emailTo("quiet-1", "q@example.com"), &res))
	p.WaitUntil("the quiet tenant's message sent", func() bool { return len(sentTimes(p, other.ID)) == 1 })
	busySent := len(sentTimes(p, p.Tenant.ID))
	t.Logf("quiet tenant's message sent %s after submission; busy tenant has sent %d of %d", time.Since(start).Round(time.Millisecond), busySent, backlog)
	require.Less(t, busySent, backlog/2, "the quiet message did not wait for the busy tenant's backlog")
	requireBucketHeld(t, p, busy, 0.1, 1)
}

// TestBreaker_OpensOnStormAndRecovers checks that a 5xx storm at Meta
// opens the account's breaker, that jobs wait instead of failing, and that
// every message is sent once Meta is back. The real Meta adapter talks to a
// fake Graph API.
func TestBreaker_OpensOnStormAndRecovers(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	var calls, probes atomic.Int64
	var p *webtest.Herald
	var acct *app.ChannelAccount
	var accountReady atomic.Bool
	down.Store(true)
	graph := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		// The breaker lets one call through when half-open: a probe.
		if accountReady.Load() && p.Services.Breakers.State(acct.ID) == app.BreakerHalfOpen {
			probes.Add(1)
		}
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":{"message":"Service temporarily unavailable","type":"OAuthException","code":2,"is_transient":true}}`)
			return
		}
		_, _ = fmt.Fprintf(w, `{"messaging_product":"whatsapp","messages":[{"id":"wamid.%s"}]}`, uuid.NewString())
	}))
	t.Cleanup(graph.Close)
	p = webtest.New(t, webtest.Options{Config: func(cfg *app.Config) {
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
	accountReady.Store(true)

	const n = 10
	ids := make([]uuid.UUID, n)
	for i := range n {
		ids[i] = p.Submit(webtest.WithRecipient(fmt.Sprintf("storm-%d", i), fmt.Sprintf("BK-S%d", i),
			map[string]any{"name": "A", "phone": fmt.Sprintf("+49151234560%02d", 10+i)}, "WHATSAPP"))
	}
	require.Eventually(t, func() bool { return p.Services.Breakers.State(acct.ID) != app.BreakerClosed }, dbtest.HangGuard, 10*time.Millisecond,
		"the breaker opens on the storm")
	callsWhileOpen, probesWhileOpen := calls.Load(), probes.Load()
	// An outage of a few breaker periods: three probes fail.
	p.WaitUntil("three failed probes", func() bool { return probes.Load()-probesWhileOpen >= 3 })
	// Besides probes, only sends that were already on their way when the
	// breaker opened reach Meta: at most one per message. Without the
	// breaker, jobs retrying every 20 ms would have called hundreds of times.
	extra := calls.Load() - callsWhileOpen - (probes.Load() - probesWhileOpen)
	t.Logf("while open: %d probes, %d other calls", probes.Load()-probesWhileOpen, extra)
	require.LessOrEqual(t, extra, int64(n), "while open, only probes reach Meta")
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
	}, dbtest.HangGuard, 20*time.Millisecond, "transitions are in the audit log")

	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	resp, err := p.App.Test(req, -1)
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	require.Contains(t, string(metrics), `herald_breaker_state{channel_account_id="`+acct.ID.String()+`",provider="meta"} 0`)
	require.Contains(t, string(metrics), `herald_snoozes_total{reason="breaker_open"}`)
	require.Contains(t, string(metrics), `herald_provider_errors_total{code="2",provider="meta"}`)
}
