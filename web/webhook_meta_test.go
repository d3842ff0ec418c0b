package web_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// fakeMeta speaks the Graph API's send endpoint.
type fakeMeta struct {
	*httptest.Server
	mu       sync.Mutex
	requests []map[string]any
	n        int
}

func newFakeMeta(t *testing.T) *fakeMeta {
	f := &fakeMeta{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer EAAG-test-token" || !strings.HasSuffix(r.URL.Path, "/1234567890/messages") {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"Invalid OAuth access token.","type":"OAuthException","code":190}}`)
			return
		}
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.requests = append(f.requests, body)
		f.n++
		id := fmt.Sprintf("wamid.TEST%d", f.n)
		f.mu.Unlock()
		_, _ = fmt.Fprintf(w, `{"messaging_product":"whatsapp","contacts":[{"input":"%v","wa_id":"x"}],"messages":[{"id":"%s"}]}`, body["to"], id)
	}))
	t.Cleanup(f.Close)
	return f
}

func signMeta(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func statusHook(wamid, status string, at time.Time) []byte {
	return []byte(`{"object":"whatsapp_business_account","entry":[{"id":"WABA","changes":[{"field":"messages","value":{
		"messaging_product":"whatsapp","metadata":{"display_phone_number":"4989","phone_number_id":"1234567890"},
		"statuses":[{"id":"` + wamid + `","status":"` + status + `","timestamp":"` + strconv.FormatInt(at.Unix(), 10) + `","recipient_id":"4915123456789"}]}}]}]}`)
}

// inboundHook is a webhook post with one text message from the number to
// the test account's business number.
func inboundHook(wamid, from, text string, at time.Time) []byte {
	return []byte(`{"object":"whatsapp_business_account","entry":[{"id":"WABA","changes":[{"field":"messages","value":{
		"messaging_product":"whatsapp","metadata":{"display_phone_number":"4989","phone_number_id":"1234567890"},
		"contacts":[{"profile":{"name":"Anna"},"wa_id":"` + from + `"}],
		"messages":[{"from":"` + from + `","id":"` + wamid + `","timestamp":"` + strconv.FormatInt(at.Unix(), 10) + `","type":"text","text":{"body":"` + text + `"}}]}}]}]}`)
}

func TestWebhook_Meta(t *testing.T) {
	t.Parallel()
	fake := newFakeMeta(t)
	p := webtest.New(t, webtest.Options{Config: func(cfg *app.Config) {
		// The client's address comes from a header, as behind a proxy, so
		// that subtests are distinct clients of the throttle.
		cfg.MetaBaseURL, cfg.ClientIPHeader = fake.URL, "X-Client-IP"
	}})
	sb := p.ActiveAccount(app.WhatsApp)
	require.NoError(t, p.Services.Accounts.SetStatus(p.Ctx, app.CLIActor, p.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	const appSecret = "meta-app-secret"
	acct, err := p.Services.Accounts.Create(p.Ctx, app.CLIActor, p.Tenant.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "Acme WhatsApp", Activate: true,
		Config:  app.Attrs{"phone_number_id": "1234567890", "waba_id": "WABA"},
		Secrets: map[string]string{"access_token": "EAAG-test-token", "app_secret": appSecret},
	})
	require.NoError(t, err)

	// Anna wrote first: her reply opens the 24-hour window on this number,
	// so the booking confirmation goes out as free-form text.
	hello := inboundHook("wamid.IN0", "4915123456789", "Hallo!", time.Now())
	code, _ := postWebhook(p, "/webhooks/meta/acme", hello, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta(appSecret, hello)})
	require.Equal(t, http.StatusOK, code)
	id := p.Submit(webtest.WithRecipient("meta-1", "BK-META", map[string]any{"name": "Anna", "phone": "+4915123456789"}, "WHATSAPP"))
	m := webtest.OnlyMessage(t, p.WaitMessages(id, "sent through Meta", webtest.AllStatus(app.MessageSent)))
	require.Equal(t, "wamid.TEST1", *m.ExternalMessageID)
	fake.mu.Lock()
	require.Equal(t, "text", fake.requests[0]["type"])
	require.Contains(t, fake.requests[0]["text"].(map[string]any)["body"], "Gardasee")
	fake.mu.Unlock()

	verifyAt := func(path, client, token string) (*http.Response, string) {
		req := httptest.NewRequest(http.MethodGet, path+"?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token="+token, nil)
		req.Header.Set("X-Client-IP", client)
		resp, err := p.App.Test(req, -1)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	accountPath := "/webhooks/meta/a/" + acct.WebhookToken
	t.Run("VerifyChallenge", func(t *testing.T) {
		for _, path := range []string{accountPath, "/webhooks/meta/acme"} {
			resp, body := verifyAt(path, "192.0.2.1", acct.VerifyToken)
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
			require.Equal(t, "1158201444", body)
			resp, _ = verifyAt(path, "192.0.2.1", "wrong")
			require.Equal(t, http.StatusForbidden, resp.StatusCode)
		}
	})
	t.Run("VerifyTellsNothing", func(t *testing.T) {
		// A wrong token, a tenant without a Meta account, a tenant that does
		// not exist and a path no account has: one answer.
		_, want := verifyAt(accountPath, "192.0.2.2", "wrong")
		for _, path := range []string{"/webhooks/meta/globex", "/webhooks/meta/nobody", "/webhooks/meta/a/" + strings.Repeat("x", 52), "/webhooks/meta/a/" + sb.WebhookToken} {
			resp, body := verifyAt(path, "192.0.2.2", acct.VerifyToken)
			require.Equal(t, http.StatusForbidden, resp.StatusCode, path)
			require.JSONEq(t, want, body, path)
		}
	})
	t.Run("VerifyThrottled", func(t *testing.T) {
		for i := range 10 {
			resp, _ := verifyAt("/webhooks/meta/nobody", "192.0.2.3", "x")
			require.Equal(t, http.StatusForbidden, resp.StatusCode, "check %d", i+1)
		}
		resp, _ := verifyAt(accountPath, "192.0.2.3", acct.VerifyToken)
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "guessing from one address is slowed down")
		require.NotEmpty(t, resp.Header.Get("Retry-After"))
		resp, _ = verifyAt(accountPath, "192.0.2.4", acct.VerifyToken)
		require.Equal(t, http.StatusOK, resp.StatusCode, "other addresses are not")
	})
	t.Run("PostsToTheAccountPath", func(t *testing.T) {
		// A status of a message Herald does not know: accepted and
		// counted, and no other subtest's message moves.
		body := statusHook("wamid.ELSEWHERE", "delivered", time.Now())
		code, out := postWebhook(p, accountPath, body, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta(appSecret, body)})
		require.Equal(t, http.StatusOK, code, "%v", out)
		code, _ = postWebhook(p, "/webhooks/meta/a/"+strings.Repeat("x", 52), body, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta(appSecret, body)})
		require.Equal(t, http.StatusUnauthorized, code, "an unknown path answers like a bad signature")
		code, _ = postWebhook(p, "/webhooks/meta/nobody", body, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta(appSecret, body)})
		require.Equal(t, http.StatusUnauthorized, code)
	})

	post := func(body []byte, signature string) (int, map[string]any) {
		h := map[string]string{"Content-Type": "application/json"}
		if signature != "" {
			h["X-Hub-Signature-256"] = signature
		}
		return postWebhook(p, "/webhooks/meta/acme", body, h)
	}
	status := func() string {
		var d struct{ Status string }
		p.Request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &d)
		return d.Status
	}

	t.Run("BadOrMissingSignatureChangesNothing", func(t *testing.T) {
		body := statusHook("wamid.TEST1", "read", time.Now())
		code, _ := post(body, signMeta("another-secret", body))
		require.Equal(t, http.StatusUnauthorized, code)
		code, _ = post(body, "")
		require.Equal(t, http.StatusUnauthorized, code)
		code, _ = post(body, "sha256=zz")
		require.Equal(t, http.StatusUnauthorized, code)
		require.Equal(t, app.MessageSent, status())
	})

	t.Run("OtherPhoneNumberIsForeign", func(t *testing.T) {
		// Signed with the tenant's own secret, but about a number that is
		// not the account's: it cannot touch the account's messages.
		body := []byte(strings.Replace(string(statusHook("wamid.TEST1", "failed", time.Now())), `"phone_number_id":"1234567890"`, `"phone_number_id":"999"`, 1))
		code, out := post(body, signMeta(appSecret, body))
		require.Equal(t, http.StatusOK, code)
		require.EqualValues(t, 1, out["outcomes"].(map[string]any)[app.ReceiptAccepted])
		require.Equal(t, app.MessageSent, status())
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM webhook_receipts WHERE outcome = 'foreign' AND tenant_id = $1 AND message_id IS NULL`, p.Tenant.ID))
	})

	t.Run("StatusesOutOfOrderAndReplayed", func(t *testing.T) {
		now := time.Now()
		read := statusHook("wamid.TEST1", "read", now)
		code, out := post(read, signMeta(appSecret, read))
		require.Equal(t, http.StatusOK, code)
		require.EqualValues(t, 1, out["outcomes"].(map[string]any)[app.ReceiptAccepted])
		require.Equal(t, app.MessageRead, status())

		delivered := statusHook("wamid.TEST1", "delivered", now.Add(-time.Second))
		_, out = post(delivered, signMeta(appSecret, delivered))
		require.EqualValues(t, 1, out["outcomes"].(map[string]any)[app.ReceiptAccepted])
		entries := webhookEntries(p.Timeline(m.ID))
		require.Len(t, entries, 2)
		require.Nil(t, entries[1].ToStatus, "a late delivered is recorded only")
		_, out = post(read, signMeta(appSecret, read))
		require.EqualValues(t, 1, out["outcomes"].(map[string]any)[app.ReceiptAccepted])
		require.Len(t, webhookEntries(p.Timeline(m.ID)), 2, "Meta's redelivery is a no-op")
		require.Equal(t, app.MessageRead, status())
	})

	t.Run("TemplateSend", func(t *testing.T) {
		var tmpl *app.Template
		require.NoError(t, p.Services.Store.InTenant(p.Ctx, p.Tenant.ID, func(tx *db.Tx) (err error) {
			tmpl, err = tx.FindTemplate(p.Ctx, p.Tenant.ID, "BOOKING_CONFIRMED", app.WhatsApp, []string{"de-DE"})
			return err
		}))
		_, _, err := p.Services.Templates.Save(p.Ctx, app.CLIActor, p.Tenant.ID, tmpl.ID, app.TemplateInput{
			Body: tmpl.Body, IsActive: true,
			WhatsAppTemplate: &app.WhatsAppTemplateSpec{Name: "booking_confirmed_v2", Language: "de", Parameters: []string{"passenger_name", "tour_name"}},
		})
		require.NoError(t, err)
		// Ben never wrote: only a template Meta approved reaches him.
		require.NoError(t, p.Services.Store.InTenant(p.Ctx, p.Tenant.ID, func(tx *db.Tx) error {
			return tx.UpsertMetaTemplate(p.Ctx, &app.MetaTemplate{TenantID: p.Tenant.ID, ChannelAccountID: acct.ID,
				Name: "booking_confirmed_v2", Language: "de", Status: app.MetaTemplateApproved, SyncedAt: time.Now()})
		}))
		id := p.Submit(webtest.WithRecipient("meta-2", "BK-META2", map[string]any{"name": "Ben", "phone": "+4915123456788"}, "WHATSAPP"))
		p.WaitMessages(id, "sent as a template", webtest.AllStatus(app.MessageSent))
		fake.mu.Lock()
		defer fake.mu.Unlock()
		last := fake.requests[len(fake.requests)-1]
		require.Equal(t, "template", last["type"])
		tpl := last["template"].(map[string]any)
		require.Equal(t, "booking_confirmed_v2", tpl["name"])
		params := tpl["components"].([]any)[0].(map[string]any)["parameters"].([]any)
		require.Equal(t, "Anna Schmidt", params[0].(map[string]any)["text"], "parameters come from the context in the template's order")
		require.Equal(t, "Gardasee", params[1].(map[string]any)["text"])
	})

	t.Run("InboundOpensWindow", func(t *testing.T) {
		at := time.Now().Truncate(time.Second)
		body := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"WABA","changes":[{"field":"messages","value":{
			"messaging_product":"whatsapp","metadata":{"display_phone_number":"4989","phone_number_id":"1234567890"},
			"contacts":[{"profile":{"name":"Anna"},"wa_id":"4915123456789"}],
			"messages":[{"from":"4915123456789","id":"wamid.IN1","timestamp":"` + strconv.FormatInt(at.Unix(), 10) + `","type":"text","text":{"body":"Is there parking at the bus station?"}}]}}]}]}`)
		code, out := post(body, signMeta(appSecret, body))
		require.Equal(t, http.StatusOK, code)
		require.EqualValues(t, 1, out["outcomes"].(map[string]any)["inbound"])
		_, out = post(body, signMeta(appSecret, body))
		require.EqualValues(t, 1, out["outcomes"].(map[string]any)["inbound_duplicate"])

		require.Equal(t, 1, p.Count(`SELECT count(*) FROM inbound_messages i JOIN contacts c ON c.id = i.contact_id
			WHERE i.external_id = 'wamid.IN1' AND c.phone = '+4915123456789' AND i.conversation_id IS NOT NULL
			AND i.body = 'Is there parking at the bus station?'`), "the reply is on Anna's booking conversation")
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM inbound_messages WHERE external_id = 'wamid.IN1' AND channel_account_id = $1`, acct.ID),
			"the window it opens belongs to the number it was sent to (metadata.phone_number_id)")
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM contacts WHERE phone = '+4915123456789'
			AND whatsapp_window_until = $1`, at.Add(24*time.Hour)), "the 24 h window's end is recorded")
	})
}
