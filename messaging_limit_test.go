package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/meta"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/web/webtest"
)

// whatsAppUser is a notification to the i-th of many WhatsApp users, none
// of whom wrote to the number: each message goes as a template.
func whatsAppUser(i int, fallback ...string) map[string]any {
	b := webtest.WithRecipient(fmt.Sprintf("lim-%d", i), fmt.Sprintf("BK-L%d", i),
		map[string]any{"name": "Anna Schmidt", "phone": fmt.Sprintf("+4915123%06d", i), "email": fmt.Sprintf("u%d@example.com", i),
			"locale": "de-DE"}, "WHATSAPP")
	if len(fallback) > 0 {
		b["fallback_chain"] = fallback
	}
	return b
}

// limitedHerald is Herald with a Meta account whose messaging limit is
// tier, sending to graph through two worker clients.
func limitedHerald(t *testing.T, tier string) (*webtest.Herald, *webtest.Graph, *app.ChannelAccount) {
	graph := webtest.NewGraph(t)
	h := webtest.New(t, webtest.Options{
		Config: func(c *app.Config) {
			c.MetaBaseURL = graph.URL
			c.JobTimeout, c.SendTimeout = dbtest.HangGuard, dbtest.HangGuard
			c.RescueStuckAfter = app.DispatchTimeout(c.JobTimeout, c.SendTimeout) + app.RecordSentRetryFor
		},
		Providers: provider.Set{meta.Name: &meta.Provider{BaseURL: graph.URL, HTTPClient: &http.Client{Timeout: dbtest.HangGuard}}},
	})
	h.StartWorkers()
	acct := webtest.CreateMetaAccount(t, h.Ctx, h.Services, h.Tenant, app.Attrs{"messaging_tier": tier})
	return h, graph, acct
}

// limitNoted counts the tenant's messages whose timeline says the
// messaging limit holds them.
func limitNoted(h *webtest.Herald) int {
	return h.Count(`SELECT count(DISTINCT message_id) FROM message_events WHERE tenant_id = $1 AND detail->>'error_code' = 'messaging_limit_reached'`, h.Tenant.ID)
}

// TestMessagingLimit_HoldsAcrossWorkers offers more templates to distinct
// users than the number's limit through two River clients, with every
// provider call held until each message was sent or held: however the
// two interleave, exactly the limit reaches Meta, and the rest wait
// (they have no fallback) with the reason on their timeline.
func TestMessagingLimit_HoldsAcrossWorkers(t *testing.T) {
	t.Parallel()
	const limit, n = 12, 20
	h, graph, acct := limitedHerald(t, fmt.Sprint(limit))
	graph.Hold()
	for i := range n {
		h.Submit(whatsAppUser(i))
	}
	h.WaitUntil("every message sent or held", func() bool { return graph.Calls()+limitNoted(h) >= n })
	graph.Release()
	h.WaitUntil("the sends recorded", func() bool {
		return h.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'SENT'`, h.Tenant.ID) == graph.Calls()
	})
	require.Equal(t, limit, graph.Calls(), "never more users than the limit reach Meta")
	require.Equal(t, n-limit, limitNoted(h))
	require.Equal(t, n-limit, h.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'QUEUED'`, h.Tenant.ID),
		"a message without a fallback waits for a place")
	require.Equal(t, limit, h.Count(`SELECT count(*) FROM whatsapp_reach WHERE tenant_id = $1 AND account_id = $2`, h.Tenant.ID, acct.ID))
}

// TestMessagingLimit_SameUser: a user reached within the 24 hours takes
// no new place, so a number at its limit still reaches them.
func TestMessagingLimit_SameUser(t *testing.T) {
	t.Parallel()
	h, graph, acct := limitedHerald(t, "1")
	first := h.Submit(whatsAppUser(1))
	h.WaitMessages(first, "sent", func(ms []*app.Message) bool { return len(ms) == 1 && ms[0].Status == app.MessageSent })

	again := h.Submit(webtest.WithRecipient("lim-1b", "BK-L1B",
		map[string]any{"name": "Anna Schmidt", "phone": "+4915123000001", "locale": "de-DE"}, "WHATSAPP"))
	h.WaitMessages(again, "sent", func(ms []*app.Message) bool { return len(ms) == 1 && ms[0].Status == app.MessageSent })
	require.Equal(t, 2, graph.Calls(), "the user reached already took no new place")
	require.Equal(t, 1, h.Count(`SELECT count(*) FROM whatsapp_reach WHERE tenant_id = $1 AND account_id = $2`, h.Tenant.ID, acct.ID))
}

// metaHook posts a signed WhatsApp Business webhook to the tenant's path.
func metaHook(t *testing.T, h *webtest.Herald, secret, slug string, body []byte) int {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req := httptest.NewRequest(http.MethodPost, "/webhooks/meta/"+slug, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(meta.SignatureHeader, "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return h.Do(t, req).StatusCode
}

func qualityHook(waba, event, limit string, at time.Time) []byte {
	return fmt.Appendf(nil, `{"object":"whatsapp_business_account","entry":[{"id":%q,"time":%d,"changes":[{"field":"phone_number_quality_update",
		"value":{"display_phone_number":"15550783881","event":%q,"current_limit":%q,"max_daily_conversations_per_business":%q}}]}]}`,
		waba, at.Unix(), event, limit, limit)
}

func health(t *testing.T, h *webtest.Herald, tenantID, accountID uuid.UUID) *app.NumberHealth {
	var got *app.NumberHealth
	require.NoError(t, h.Services.Store.InTenant(h.Ctx, tenantID, func(tx *db.Tx) (err error) {
		got, err = tx.NumberHealth(h.Ctx, tenantID, accountID)
		if app.ErrorCode(err) == app.ENOTFOUND {
			got, err = nil, nil
		}
		return err
	}))
	return got
}

// TestMessagingLimit_QualityWebhook: Meta's phone_number_quality_update
// sets the tier Herald enforces and FLAGGED halves it; older news changes
// nothing; an unknown WABA, another tenant's WABA and a bad signature
// change nothing.
func TestMessagingLimit_QualityWebhook(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{})
	acct := webtest.CreateMetaAccount(t, h.Ctx, h.Services, h.Tenant, app.Attrs{"messaging_tier": "TIER_250"})
	secret, waba := "app-secret-"+h.Tenant.Slug, acct.Config["waba_id"]
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)

	require.Equal(t, 200, metaHook(t, h, secret, h.Tenant.Slug, qualityHook(waba, "UPGRADE", "TIER_2K", t0)))
	got := health(t, h, h.Tenant.ID, acct.ID)
	require.Equal(t, "TIER_2K", *got.MetaTier)
	l := app.EffectiveLimit(acct, got)
	require.Equal(t, app.MessagingLimit{Tier: "TIER_2K", Source: app.TierFromMeta, Base: 2000, Limit: 2000, Enforced: true}, l)

	require.Equal(t, 200, metaHook(t, h, secret, h.Tenant.Slug, qualityHook(waba, "FLAGGED", "TIER_2K", t0.Add(time.Minute))))
	got = health(t, h, h.Tenant.ID, acct.ID)
	require.True(t, got.Flagged)
	require.Equal(t, 1000, app.EffectiveLimit(acct, got).Limit, "a flagged number sends half its limit")

	// Redelivered older news: no change.
	require.Equal(t, 200, metaHook(t, h, secret, h.Tenant.Slug, qualityHook(waba, "UNFLAGGED", "TIER_250", t0.Add(-time.Minute))))
	got = health(t, h, h.Tenant.ID, acct.ID)
	require.True(t, got.Flagged)
	require.Equal(t, "TIER_2K", *got.MetaTier)

	// Another tenant's account on another WABA: this tenant's signed post
	// naming it changes nothing there, nor here.
	other, err := h.Services.Tenants.Create(h.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex"})
	require.NoError(t, err)
	theirs, err := h.Services.Accounts.Create(h.Ctx, app.CLIActor, other.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "Globex WhatsApp",
		Config:  app.Attrs{"phone_number_id": "200000000000001", "waba_id": "200000000000002"},
		Secrets: map[string]string{"access_token": webtest.GraphAccessToken, "app_secret": "globex-app-secret-0123"},
	})
	require.NoError(t, err)
	require.Equal(t, 200, metaHook(t, h, secret, h.Tenant.Slug, qualityHook("200000000000002", "DOWNGRADE", "TIER_50", t0.Add(2*time.Minute))))
	require.Equal(t, 200, metaHook(t, h, secret, h.Tenant.Slug, qualityHook("999999999", "DOWNGRADE", "TIER_50", t0.Add(2*time.Minute))))
	require.Nil(t, health(t, h, other.ID, theirs.ID), "another tenant's number is not touched")
	require.Equal(t, "TIER_2K", *health(t, h, h.Tenant.ID, acct.ID).MetaTier)

	// A post not signed with the account's secret is refused.
	require.Equal(t, 401, metaHook(t, h, "wrong-secret", h.Tenant.Slug, qualityHook(waba, "UNFLAGGED", "TIER_250", t0.Add(3*time.Minute))))
	require.True(t, health(t, h, h.Tenant.ID, acct.ID).Flagged)

	// account_update is recorded with what Meta said.
	hook := fmt.Appendf(nil, `{"object":"whatsapp_business_account","entry":[{"id":%q,"time":%d,"changes":[{"field":"account_update",
		"value":{"phone_number":"15550783881","event":"ACCOUNT_RESTRICTION","restriction_info":[{"restriction_type":"RESTRICTED_BIZ_INITIATED_MESSAGING","expiration":1700000000}]}}]}]}`,
		waba, t0.Add(4*time.Minute).Unix())
	require.Equal(t, 200, metaHook(t, h, secret, h.Tenant.Slug, hook))
	got = health(t, h, h.Tenant.ID, acct.ID)
	require.Equal(t, "ACCOUNT_RESTRICTION", got.AccountEvent)
	require.Contains(t, got.AccountDetail, "RESTRICTED_BIZ_INITIATED_MESSAGING")
	require.NotNil(t, got.LastWebhookAt)
}

// TestMessagingLimit_SubscribeOnActivation: activating a WhatsApp account
// registers Herald's app on its WABA through the Graph API; when Meta
// refuses, the account stays PENDING and the error says why, and both
// outcomes are recorded on the account.
func TestMessagingLimit_SubscribeOnActivation(t *testing.T) {
	t.Parallel()
	create := func(t *testing.T, h *webtest.Herald, waba string) *app.ChannelAccount {
		a, err := h.Services.Accounts.Create(h.Ctx, app.CLIActor, h.Tenant.ID, app.AccountInput{
			Channel: app.WhatsApp, Provider: "meta", Name: "WhatsApp " + waba,
			Config:  app.Attrs{"phone_number_id": "106540352242922", "waba_id": waba},
			Secrets: map[string]string{"access_token": webtest.GraphAccessToken, "app_secret": "app-secret-0123456789"},
		})
		require.NoError(t, err)
		return a
	}
	t.Run("Success", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{})
		owner := &app.User{ID: uuid.New(), TenantID: &h.Tenant.ID, Email: "m@example.com", Role: app.RoleManager}
		a := create(t, h, "300000000000001")
		require.NoError(t, h.Services.Console.Accounts.Activate(h.Ctx, owner, h.Tenant.ID, a.ID, true))
		require.Equal(t, []string{"300000000000001"}, h.Graph.Subscribed())
		got := health(t, h, h.Tenant.ID, a.ID)
		require.Equal(t, app.SubscriptionOK, got.Subscription)
		require.Equal(t, app.AccountActive, h.ActiveAccount(app.WhatsApp).Status)
	})
	t.Run("Refused", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{})
		owner := &app.User{ID: uuid.New(), TenantID: &h.Tenant.ID, Email: "m@example.com", Role: app.RoleManager}
		a := create(t, h, "300000000000002")
		h.Graph.RefuseSubscriptions("(#200) Permissions error")
		err := h.Services.Console.Accounts.Activate(h.Ctx, owner, h.Tenant.ID, a.ID, true)
		require.Equal(t, app.ECONFLICT, app.ErrorCode(err))
		require.Contains(t, app.ErrorMessage(err), "Meta did not subscribe Herald's app to WhatsApp Business Account 300000000000002")
		require.Contains(t, app.ErrorMessage(err), "Permissions error")
		got := health(t, h, h.Tenant.ID, a.ID)
		require.Equal(t, app.SubscriptionFailed, got.Subscription)
		require.Contains(t, got.SubscriptionError, "Permissions error")
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM channel_accounts WHERE id = $1 AND status = 'PENDING'`, a.ID), "not activated")
		require.Empty(t, h.Graph.Subscribed())
	})
}
