package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsnotify"
	"github.com/heraldhq/herald/app/provider/awsnotify/awsnotifytest"
	"github.com/heraldhq/herald/app/provider/ses"
	snsadapter "github.com/heraldhq/herald/app/provider/sns"
	"github.com/heraldhq/herald/web/webtest"
)

const sesTopic = "arn:aws:sns:eu-central-1:123456789012:herald-ses-events"

// fakeAWS answers SESv2 SendEmail (REST-JSON) and SNS Publish (query
// protocol) the way Amazon does, so the real adapters run.
func fakeAWS(t *testing.T) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := fmt.Sprintf("fake-%d-%s", n.Add(1), uuid.NewString())
		if r.URL.Path == "/v2/email/outbound-emails" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"MessageId":%q}`, id)
			return
		}
		_ = r.ParseForm()
		if r.Form.Get("Action") != "Publish" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		_, _ = fmt.Fprintf(w, `<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>%s</MessageId></PublishResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></PublishResponse>`, id)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// useProvider replaces the tenant's sandbox account of a channel by an
// ACTIVE account of the named provider.
func useProvider(t *testing.T, p *webtest.Herald, ch app.Channel, providerName string) {
	t.Helper()
	sb := p.ActiveAccount(ch)
	require.NoError(t, p.Services.Accounts.SetStatus(p.Ctx, app.CLIActor, p.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	_, err := p.Services.Accounts.Create(p.Ctx, app.CLIActor, p.Tenant.ID, app.AccountInput{
		Channel: ch, Provider: providerName, Name: providerName + " account", Activate: true,
		Config:  app.Attrs{"region": "eu-central-1", "sender_email": "bookings@acme.example"},
		Secrets: map[string]string{"access_key_id": "AKIAHERALDTEST000001", "secret_access_key": "not-a-real-secret"},
	})
	require.NoError(t, err)
}

// postWebhook posts a provider's callback as the provider would, with the
// headers given, and decodes the JSON answer. A webhook answers once the
// receipts are in the inbox; after a 200 it waits until the applier has
// applied them, so that tests see their effects.
func postWebhook(p *webtest.Herald, path string, body []byte, headers map[string]string) (int, map[string]any) {
	p.T.Helper()
	code, out := postWebhookNow(p, path, body, headers)
	if code == http.StatusOK {
		p.WaitReceipts()
	}
	return code, out
}

// postWebhookNow is postWebhook without the wait: for a Herald without
// workers, whose test runs the applier itself.
func postWebhookNow(p *webtest.Herald, path string, body []byte, headers map[string]string) (int, map[string]any) {
	p.T.Helper()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "text/plain; charset=UTF-8")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := p.App.Test(req, -1)
	require.NoError(p.T, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func envelopeJSON(t *testing.T, e *awsnotify.Envelope) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	require.NoError(t, err)
	return b
}

func TestWebhook_SES(t *testing.T) {
	t.Parallel()
	sns := awsnotifytest.New(t)
	p := webtest.New(t, webtest.Options{
		Config:    func(cfg *app.Config) { cfg.SNSTopicARNs = []string{sesTopic} },
		Providers: provider.Set{"ses": &ses.Provider{Endpoint: fakeAWS(t).URL}},
		SNS:       sns,
	})
	useProvider(t, p, app.Email, "ses")

	sendOne := func(eventID, addr string) *app.Message {
		t.Helper()
		id := p.Submit(webtest.WithRecipient(eventID, "BK-"+eventID, map[string]any{"name": "A", "email": addr}, "EMAIL"))
		return webtest.OnlyMessage(t, p.WaitMessages(id, "sent through ses", webtest.AllStatus(app.MessageSent)))
	}
	sesEvent := func(kind string, m *app.Message, extra string) []byte {
		return envelopeJSON(t, sns.Notification(sesTopic, `{"eventType":"`+kind+`","mail":{"messageId":"`+*m.ExternalMessageID+`"}`+extra+`}`))
	}
	snsHeaders := map[string]string{"x-amz-sns-message-type": "Notification"}

	t.Run("SubscriptionConfirmed", func(t *testing.T) {
		status, _ := postWebhook(p, "/webhooks/ses", envelopeJSON(t, sns.Confirmation(sesTopic)), map[string]string{"x-amz-sns-message-type": "SubscriptionConfirmation"})
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, int64(1), sns.Confirmations.Load())

		status, _ = postWebhook(p, "/webhooks/ses", envelopeJSON(t, sns.Confirmation("arn:aws:sns:eu-central-1:999999999999:other")), nil)
		require.Equal(t, http.StatusForbidden, status, "a topic that is not allowed is refused")
		require.Equal(t, int64(1), sns.Confirmations.Load(), "and not confirmed")
	})

	t.Run("DeliveryThenReplay", func(t *testing.T) {
		m := sendOne("ses-d", "d@example.com")
		body := sesEvent("Delivery", m, `,"delivery":{"timestamp":"2026-11-21T10:00:00.000Z"}`)
		status, out := postWebhook(p, "/webhooks/ses", body, snsHeaders)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, app.ReceiptAccepted, out["outcome"])
		status, out = postWebhook(p, "/webhooks/ses", body, snsHeaders)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, app.ReceiptAccepted, out["outcome"])
		var d struct{ Status string }
		p.Request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &d)
		require.Equal(t, app.MessageDelivered, d.Status)
		require.Len(t, webhookEntries(p.Timeline(m.ID)), 1, "SNS retries are no-ops")
	})

	t.Run("PermanentBounceFails", func(t *testing.T) {
		m := sendOne("ses-b", "b@example.com")
		_, out := postWebhook(p, "/webhooks/ses", sesEvent("Bounce", m, `,"bounce":{"bounceType":"Permanent","bounceSubType":"NoEmail","bouncedRecipients":[{"diagnosticCode":"550 user unknown"}]}`), snsHeaders)
		require.Equal(t, app.ReceiptAccepted, out["outcome"])
		var d struct {
			Status       string
			ErrorCode    string `json:"error_code"`
			FailedReason string `json:"failed_reason"`
		}
		p.Request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &d)
		require.Equal(t, app.MessageFailed, d.Status)
		require.Equal(t, "bounce:Permanent/NoEmail", d.ErrorCode)
		require.Equal(t, "ses_bounce_permanent", d.FailedReason, "a code; the diagnostic is on the timeline")
	})

	t.Run("ComplaintFailsAndBlocksAddress", func(t *testing.T) {
		m := sendOne("ses-c", "c@example.com")
		_, out := postWebhook(p, "/webhooks/ses", sesEvent("Complaint", m, `,"complaint":{"complaintFeedbackType":"abuse"}`), snsHeaders)
		require.Equal(t, app.ReceiptAccepted, out["outcome"])
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM contacts WHERE email = 'c@example.com' AND email_complained_at IS NOT NULL`))
		// The next e-mail to that contact has no address to go to.
		id := p.Submit(webtest.WithRecipient("ses-c2", "BK-ses-c2", map[string]any{"name": "A", "email": "c@example.com"}, "EMAIL"))
		again := webtest.OnlyMessage(t, p.WaitMessages(id, "not sent", webtest.AllStatus(app.MessageFailed)))
		require.Equal(t, app.ReasonNoAddress, *again.FailedReason)
	})

	t.Run("RejectFails", func(t *testing.T) {
		m := sendOne("ses-r", "r@example.com")
		_, out := postWebhook(p, "/webhooks/ses", sesEvent("Reject", m, `,"reject":{"reason":"Bad content"}`), snsHeaders)
		require.Equal(t, app.ReceiptAccepted, out["outcome"])
		var d struct{ Status string }
		p.Request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &d)
		require.Equal(t, app.MessageFailed, d.Status)
	})

	t.Run("OpenOnTimelineOnly", func(t *testing.T) {
		m := sendOne("ses-o", "o@example.com")
		_, out := postWebhook(p, "/webhooks/ses", sesEvent("Open", m, ""), snsHeaders)
		require.Equal(t, app.ReceiptAccepted, out["outcome"])
		tl := p.Timeline(m.ID)
		require.Equal(t, "open", tl[len(tl)-1].Detail["code"])
		require.Nil(t, tl[len(tl)-1].ToStatus, "on the timeline only")
	})

	t.Run("BadSignatureChangesNothing", func(t *testing.T) {
		m := sendOne("ses-x", "x@example.com")
		e := sns.Notification(sesTopic, `{"eventType":"Bounce","mail":{"messageId":"`+*m.ExternalMessageID+`"},"bounce":{"bounceType":"Permanent"}}`)
		e.Message = `{"eventType":"Bounce","mail":{"messageId":"` + *m.ExternalMessageID + `"},"bounce":{"bounceType":"Permanent","bounceSubType":"forged"}}`
		status, _ := postWebhook(p, "/webhooks/ses", envelopeJSON(t, e), snsHeaders)
		require.Equal(t, http.StatusForbidden, status)
		var d struct{ Status string }
		p.Request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &d)
		require.Equal(t, app.MessageSent, d.Status)
		require.Zero(t, p.Count(`SELECT count(*) FROM webhook_receipts WHERE message_id = $1`, m.ID))
	})

	t.Run("UnknownMessageIs200", func(t *testing.T) {
		status, out := postWebhook(p, "/webhooks/ses", envelopeJSON(t, sns.Notification(sesTopic, `{"eventType":"Delivery","mail":{"messageId":"never-sent"}}`)), snsHeaders)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, app.ReceiptAccepted, out["outcome"])
		p.WaitUntil("the receipt parked for its send", func() bool {
			return p.Count(`SELECT count(*) FROM receipt_inbox WHERE provider = 'ses' AND external_id = 'never-sent' AND available_at = 'infinity'`) == 1
		})
	})

	t.Run("NotJSON", func(t *testing.T) {
		status, _ := postWebhook(p, "/webhooks/ses", []byte("hello"), snsHeaders)
		require.Equal(t, http.StatusBadRequest, status)
	})
}

func TestWebhook_SMS(t *testing.T) {
	t.Parallel()
	sns := awsnotifytest.New(t)
	const secret = "sms-status-secret-0123456789"
	p := webtest.New(t, webtest.Options{
		Config: func(cfg *app.Config) {
			cfg.SNSTopicARNs, cfg.SMSStatusSecret = []string{sesTopic}, secret
		},
		Providers: provider.Set{"sns": &snsadapter.Provider{Endpoint: fakeAWS(t).URL}},
		SNS:       sns,
	})
	useProvider(t, p, app.SMS, "sns")
	send := func(eventID, phone string) *app.Message {
		id := p.Submit(webtest.WithRecipient(eventID, "BK-"+eventID, map[string]any{"name": "A", "phone": phone}, "SMS"))
		return webtest.OnlyMessage(t, p.WaitMessages(id, "sent through sns", webtest.AllStatus(app.MessageSent)))
	}
	record := func(m *app.Message, status, response string) string {
		return `{"notification":{"messageId":"` + *m.ExternalMessageID + `","timestamp":"2026-11-21 10:00:00.000"},"delivery":{"providerResponse":"` + response + `"},"status":"` + status + `"}`
	}
	get := func(m *app.Message) (status, reason string) {
		var d struct {
			Status       string
			FailedReason string `json:"failed_reason"`
		}
		p.Request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &d)
		return d.Status, d.FailedReason
	}

	t.Run("SuccessWithSharedSecret", func(t *testing.T) {
		m := send("sms-1", "+4915123451001")
		status, _ := postWebhook(p, "/webhooks/sns-sms", []byte(record(m, "SUCCESS", "Message has been accepted by phone carrier")), map[string]string{"X-Herald-Webhook-Secret": secret})
		require.Equal(t, http.StatusOK, status)
		s, _ := get(m)
		require.Equal(t, app.MessageDelivered, s)
	})

	t.Run("FailureInSignedEnvelope", func(t *testing.T) {
		m := send("sms-2", "+4915123451002")
		e := sns.Notification(sesTopic, record(m, "FAILURE", "Phone is currently unreachable/unavailable"))
		status, _ := postWebhook(p, "/webhooks/sns-sms", envelopeJSON(t, e), map[string]string{"x-amz-sns-message-type": "Notification"})
		require.Equal(t, http.StatusOK, status)
		s, reason := get(m)
		require.Equal(t, app.MessageFailed, s)
		require.Equal(t, "sns_sms_failure", reason, "a code; the carrier's text is on the timeline")
	})

	t.Run("BatchOfRecords", func(t *testing.T) {
		a, b := send("sms-3", "+4915123451003"), send("sms-4", "+4915123451004")
		body := "[" + record(a, "SUCCESS", "ok") + "," + record(b, "SUCCESS", "ok") + "]"
		status, out := postWebhook(p, "/webhooks/sns-sms", []byte(body), map[string]string{"X-Herald-Webhook-Secret": secret})
		require.Equal(t, http.StatusOK, status)
		require.Len(t, out["outcomes"], 2)
	})

	t.Run("WrongOrMissingSecret", func(t *testing.T) {
		m := send("sms-5", "+4915123451005")
		for _, h := range []map[string]string{nil, {"X-Herald-Webhook-Secret": "wrong-secret-wrong-secret"}} {
			status, _ := postWebhook(p, "/webhooks/sns-sms", []byte(record(m, "FAILURE", "x")), h)
			require.Equal(t, http.StatusUnauthorized, status)
		}
		s, _ := get(m)
		require.Equal(t, app.MessageSent, s, "nothing changed")
	})

	t.Run("WrongTopic", func(t *testing.T) {
		m := send("sms-6", "+4915123451006")
		e := sns.Notification("arn:aws:sns:eu-central-1:999999999999:other", record(m, "FAILURE", "x"))
		status, _ := postWebhook(p, "/webhooks/sns-sms", envelopeJSON(t, e), map[string]string{"x-amz-sns-message-type": "Notification"})
		require.Equal(t, http.StatusForbidden, status)
	})
}

// TestWebhook_ReceiptBinding checks that SES events and SMS statuses touch
// only messages of the accounts that hear the topic (or secret) they came
// through: another tenant's topic naming Acme's message is foreign.
func TestWebhook_ReceiptBinding(t *testing.T) {
	t.Parallel()
	const globexTopic = "arn:aws:sns:eu-central-1:222222222222:globex-events"
	const secret = "sms-status-secret-0123456789"
	sns := awsnotifytest.New(t)
	fake := fakeAWS(t).URL
	p := webtest.New(t, webtest.Options{
		Config: func(cfg *app.Config) {
			cfg.SNSTopicARNs, cfg.SMSStatusSecret = []string{sesTopic, globexTopic}, secret
		},
		Providers: provider.Set{"ses": &ses.Provider{Endpoint: fake}, "sns": &snsadapter.Provider{Endpoint: fake}},
		SNS:       sns,
	})
	useProvider(t, p, app.Email, "ses")
	useProvider(t, p, app.SMS, "sns")
	// Globex runs its own AWS account and topic, which it can publish
	// anything to.
	globex, err := p.Services.Tenants.Create(p.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex", Plan: app.PlanPro})
	require.NoError(t, err)
	for _, spec := range []struct {
		ch       app.Channel
		provider string
	}{{app.Email, "ses"}, {app.SMS, "sns"}} {
		_, err := p.Services.Accounts.Create(p.Ctx, app.CLIActor, globex.ID, app.AccountInput{
			Channel: spec.ch, Provider: spec.provider, Name: "Globex " + spec.provider,
			Config: app.Attrs{"region": "eu-central-1", "sender_email": "info@globex.example", "configuration_set": "globex-set",
				app.AccountStatusTopic: globexTopic},
			Secrets: map[string]string{"access_key_id": "AKIAHERALDTEST000002", "secret_access_key": "not-a-real-secret"},
		})
		require.NoError(t, err)
	}
	snsHeaders := map[string]string{"x-amz-sns-message-type": "Notification"}
	status := func(m *app.Message) string {
		var d struct{ Status string }
		p.Request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &d)
		return d.Status
	}
	foreignRows := func() int {
		return p.Count(`SELECT count(*) FROM webhook_receipts WHERE outcome = 'foreign' AND tenant_id IS NULL AND message_id IS NULL`)
	}

	t.Run("SESThroughOtherTenantsTopic", func(t *testing.T) {
		id := p.Submit(webtest.WithRecipient("bind-ses", "BK-BIND-SES", map[string]any{"name": "A", "email": "a@example.com"}, "EMAIL"))
		m := webtest.OnlyMessage(t, p.WaitMessages(id, "sent", webtest.AllStatus(app.MessageSent)))
		bounce := func(topic, tags string) []byte {
			return envelopeJSON(t, sns.Notification(topic, `{"eventType":"Bounce","mail":{"messageId":"`+*m.ExternalMessageID+`"`+tags+
				`},"bounce":{"bounceType":"Permanent","bounceSubType":"General","timestamp":"2026-11-21T10:00:00.000Z"}}`))
		}
		before := foreignRows()
		acmeForeign := func() int {
			return p.Count(`SELECT count(*) FROM webhook_receipts WHERE outcome = 'foreign' AND tenant_id = $1 AND channel_account_id = $2`,
				p.Tenant.ID, *m.ChannelAccountID)
		}
		forged := bounce(globexTopic, `,"tags":{"ses:configuration-set":["globex-set"]}`)
		for range 2 {
			code, out := postWebhook(p, "/webhooks/ses", forged, snsHeaders)
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, app.ReceiptAccepted, out["outcome"])
		}
		require.Equal(t, before+1, foreignRows(), "the forged event is kept once, as foreign, under no tenant")
		require.Zero(t, acmeForeign(), "another tenant's topic says nothing about Acme's account")
		// Globex's configuration set on the shared topic, which Acme's
		// account hears, names no account of Acme's either: kept as
		// foreign, as the account's whose message it names.
		code, out := postWebhook(p, "/webhooks/ses", bounce(sesTopic, `,"tags":{"ses:configuration-set":["globex-set"]}`), snsHeaders)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, app.ReceiptAccepted, out["outcome"])
		require.Equal(t, before+1, foreignRows())
		require.Equal(t, 1, acmeForeign())
		require.Equal(t, app.MessageSent, status(m), "no other tenant's topic or set moves Acme's message")
		require.Empty(t, webhookEntries(p.Timeline(m.ID)))

		// The event through the shared topic, for Acme's account, applies.
		code, out = postWebhook(p, "/webhooks/ses", bounce(sesTopic, ""), snsHeaders)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, app.ReceiptAccepted, out["outcome"])
		require.Equal(t, app.MessageFailed, status(m))
	})

	t.Run("SMSThroughOtherTenantsTopic", func(t *testing.T) {
		id := p.Submit(webtest.WithRecipient("bind-sms", "BK-BIND-SMS", map[string]any{"name": "A", "phone": "+4915123452001"}, "SMS"))
		m := webtest.OnlyMessage(t, p.WaitMessages(id, "sent", webtest.AllStatus(app.MessageSent)))
		rec := `{"notification":{"messageId":"` + *m.ExternalMessageID + `","timestamp":"2026-11-21 10:00:00.000"},"delivery":{"providerResponse":"x"},"status":"FAILURE"}`
		code, out := postWebhook(p, "/webhooks/sns-sms", envelopeJSON(t, sns.Notification(globexTopic, rec)), snsHeaders)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, []any{app.ReceiptAccepted}, out["outcomes"])
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM webhook_receipts WHERE provider = 'sns' AND outcome = 'foreign' AND receipt_id LIKE '%' || $1 || '%'`, *m.ExternalMessageID))
		require.Equal(t, app.MessageSent, status(m))

		// The deployment's own secret serves accounts that claim no topic.
		code, out = postWebhook(p, "/webhooks/sns-sms", []byte(rec), map[string]string{"X-Herald-Webhook-Secret": secret})
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, []any{app.ReceiptAccepted}, out["outcomes"])
		require.Equal(t, app.MessageFailed, status(m))
	})
}

// webhookEntries keeps the timeline entries receipts wrote.
func webhookEntries(es []*app.MessageEvent) []*app.MessageEvent {
	var out []*app.MessageEvent
	for _, e := range es {
		if e.Source == app.SourceWebhook {
			out = append(out, e)
		}
	}
	return out
}

// TestWebhook_LateFailureFallsBack checks that an SES permanent bounce and
// an SNS SMS FAILURE continue the fallback chain, once however often they
// are posted, with the workers running the new message.
func TestWebhook_LateFailureFallsBack(t *testing.T) {
	t.Parallel()
	signer := awsnotifytest.New(t)
	const secret = "sms-status-secret-0123456789"
	fake := fakeAWS(t).URL
	p := webtest.New(t, webtest.Options{
		Config: func(cfg *app.Config) {
			cfg.SNSTopicARNs, cfg.SMSStatusSecret = []string{sesTopic}, secret
		},
		Providers: provider.Set{"ses": &ses.Provider{Endpoint: fake}, "sns": &snsadapter.Provider{Endpoint: fake}},
		SNS:       signer,
	})
	snsHeaders := map[string]string{"x-amz-sns-message-type": "Notification"}
	chain := func(eventID string, recipient map[string]any, channels ...string) uuid.UUID {
		body := webtest.WithRecipient(eventID, "BK-"+eventID, recipient)
		body["fallback_chain"] = channels
		return p.Submit(body)
	}
	fellBack := func(id uuid.UUID, next app.Channel) func([]*app.Message) bool {
		return func(ms []*app.Message) bool {
			return len(ms) == 2 && ms[0].Status == app.MessageFailed && ms[1].Channel == next && ms[1].Status != app.MessageQueued
		}
	}

	t.Run("SESPermanentBounce", func(t *testing.T) {
		useProvider(t, p, app.Email, "ses")
		id := chain("late-ses", map[string]any{"name": "A", "email": "a@example.com", "phone": "+4915123453001"}, "EMAIL", "SMS")
		m := webtest.OnlyMessage(t, p.WaitMessages(id, "sent through ses", webtest.AllStatus(app.MessageSent)))
		bounce := envelopeJSON(t, signer.Notification(sesTopic, `{"eventType":"Bounce","mail":{"messageId":"`+*m.ExternalMessageID+
			`"},"bounce":{"bounceType":"Permanent","bounceSubType":"NoEmail","timestamp":"2026-11-21T10:00:00.000Z"}}`))
		for range 3 {
			code, _ := postWebhook(p, "/webhooks/ses", bounce, snsHeaders)
			require.Equal(t, http.StatusOK, code)
		}
		ms := p.WaitMessages(id, "SMS fallback sent", fellBack(id, app.SMS))
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *ms[0].FailedReason)
		require.Equal(t, m.ID, *ms[1].FallbackOf)
		require.Equal(t, m.CorrelationID, ms[1].CorrelationID)
	})

	t.Run("SNSFailure", func(t *testing.T) {
		useProvider(t, p, app.SMS, "sns")
		id := chain("late-sms", map[string]any{"name": "A", "email": "b@example.com", "phone": "+4915123453002"}, "SMS", "EMAIL")
		m := webtest.OnlyMessage(t, p.WaitMessages(id, "sent through sns", webtest.AllStatus(app.MessageSent)))
		rec := `{"notification":{"messageId":"` + *m.ExternalMessageID + `","timestamp":"2026-11-21 10:00:00.000"},"delivery":{"providerResponse":"Phone has blocked SMS"},"status":"FAILURE"}`
		for range 3 {
			code, _ := postWebhook(p, "/webhooks/sns-sms", []byte(rec), map[string]string{"X-Herald-Webhook-Secret": secret})
			require.Equal(t, http.StatusOK, code)
		}
		ms := p.WaitMessages(id, "e-mail fallback sent", fellBack(id, app.Email))
		require.Equal(t, app.ReasonFallbackTriggered+"EMAIL", *ms[0].FailedReason)
		require.Equal(t, m.ID, *ms[1].FallbackOf)
	})
}

// TestWebhook_SESEventBeforeSendAnswers has the SES stand-in post the
// delivery event to /webhooks/ses before it answers SendEmail, as a fast
// SNS topic can: the event is kept under no tenant (the topic is shared)
// and applied when the send is recorded.
func TestWebhook_SESEventBeforeSendAnswers(t *testing.T) {
	t.Parallel()
	signer := awsnotifytest.New(t)
	var p *webtest.Herald
	var mu sync.Mutex
	var answers []map[string]any
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := fmt.Sprintf("early-%d", n.Add(1))
		event := envelopeJSON(t, signer.Notification(sesTopic, `{"eventType":"Delivery","mail":{"messageId":"`+id+
			`"},"delivery":{"timestamp":"2026-11-21T10:00:00.000Z","smtpResponse":"250 OK"}}`))
		_, out := postWebhook(p, "/webhooks/ses", event, map[string]string{"x-amz-sns-message-type": "Notification"})
		mu.Lock()
		answers = append(answers, out)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"MessageId":%q}`, id)
	}))
	t.Cleanup(srv.Close)
	p = webtest.New(t, webtest.Options{
		Config:    func(cfg *app.Config) { cfg.SNSTopicARNs = []string{sesTopic} },
		Providers: provider.Set{"ses": &ses.Provider{Endpoint: srv.URL}},
		SNS:       signer,
	})
	useProvider(t, p, app.Email, "ses")

	id := p.Submit(webtest.WithRecipient("early-ses", "BK-EARLY", map[string]any{"name": "A", "email": "a@example.com"}, "EMAIL"))
	m := webtest.OnlyMessage(t, p.WaitMessages(id, "delivered", webtest.AllStatus(app.MessageDelivered)))
	require.Equal(t, "early-1", *m.ExternalMessageID)
	mu.Lock()
	require.Equal(t, []map[string]any{{"outcome": app.ReceiptAccepted}}, answers)
	mu.Unlock()
	require.Equal(t, 1, p.Count(`SELECT count(*) FROM webhook_receipts WHERE provider = 'ses' AND outcome = 'matched' AND message_id = $1`, m.ID))
}
