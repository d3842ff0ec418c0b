package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsnotify"
	"github.com/heraldhq/herald/app/provider/awsnotify/awsnotifytest"
	"github.com/heraldhq/herald/app/provider/ses"
	snsadapter "github.com/heraldhq/herald/app/provider/sns"
	"github.com/heraldhq/herald/app/provider/webhook"
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
func useProvider(t *testing.T, p *pipeline, ch app.Channel, providerName string) {
	t.Helper()
	sb := activeAccount(t, p, ch)
	require.NoError(t, p.svc.Accounts.SetStatus(p.ctx, app.CLIActor, p.tenant.ID, sb.ID, app.AccountDisabled, ""))
	_, err := p.svc.Accounts.Create(p.ctx, app.CLIActor, p.tenant.ID, app.AccountInput{
		Channel: ch, Provider: providerName, Name: providerName + " account", Activate: true,
		Config:  app.Attrs{"region": "eu-central-1", "sender_email": "bookings@acme.example"},
		Secrets: map[string]string{"access_key_id": "AKIAHERALDTEST000001", "secret_access_key": "not-a-real-secret"},
	})
	require.NoError(t, err)
}

func (p *pipeline) post(path string, body []byte, headers map[string]string) (int, map[string]any) {
	p.t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "text/plain; charset=UTF-8")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := p.http.Test(req, -1)
	require.NoError(p.t, err)
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
	p := newPipeline(t, pipelineOpts{
		env:       map[string]string{"HERALD_SNS_TOPIC_ARNS": sesTopic},
		providers: provider.Set{"ses": &ses.Provider{Endpoint: fakeAWS(t).URL}},
		sns:       sns,
	})
	useProvider(t, p, app.Email, "ses")

	sendOne := func(eventID, addr string) *app.Message {
		t.Helper()
		id := p.submit(withRecipient(eventID, "BK-"+eventID, map[string]any{"name": "A", "email": addr}, "EMAIL"))
		return onlyMessage(t, p.waitMessages(id, "sent through ses", allStatus(app.MessageSent)))
	}
	sesEvent := func(kind string, m *app.Message, extra string) []byte {
		return envelopeJSON(t, sns.Notification(sesTopic, `{"eventType":"`+kind+`","mail":{"messageId":"`+*m.ExternalMessageID+`"}`+extra+`}`))
	}
	snsHeaders := map[string]string{"x-amz-sns-message-type": "Notification"}

	t.Run("SubscriptionConfirmed", func(t *testing.T) {
		status, _ := p.post("/webhooks/ses", envelopeJSON(t, sns.Confirmation(sesTopic)), map[string]string{"x-amz-sns-message-type": "SubscriptionConfirmation"})
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, int64(1), sns.Confirmations.Load())

		status, _ = p.post("/webhooks/ses", envelopeJSON(t, sns.Confirmation("arn:aws:sns:eu-central-1:999999999999:other")), nil)
		require.Equal(t, http.StatusForbidden, status, "a topic that is not allowed is refused")
		require.Equal(t, int64(1), sns.Confirmations.Load(), "and not confirmed")
	})

	t.Run("DeliveryThenReplay", func(t *testing.T) {
		m := sendOne("ses-d", "d@example.com")
		body := sesEvent("Delivery", m, `,"delivery":{"timestamp":"2026-11-21T10:00:00.000Z"}`)
		status, out := p.post("/webhooks/ses", body, snsHeaders)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, app.ReceiptApplied, out["outcome"])
		status, out = p.post("/webhooks/ses", body, snsHeaders)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, app.ReceiptDuplicate, out["outcome"], "SNS retries are no-ops")
		var d struct{ Status string }
		p.request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &d)
		require.Equal(t, app.MessageDelivered, d.Status)
	})

	t.Run("PermanentBounceFails", func(t *testing.T) {
		m := sendOne("ses-b", "b@example.com")
		_, out := p.post("/webhooks/ses", sesEvent("Bounce", m, `,"bounce":{"bounceType":"Permanent","bounceSubType":"NoEmail","bouncedRecipients":[{"diagnosticCode":"550 user unknown"}]}`), snsHeaders)
		require.Equal(t, app.ReceiptApplied, out["outcome"])
		var d struct {
			Status       string
			ErrorCode    string `json:"error_code"`
			FailedReason string `json:"failed_reason"`
		}
		p.request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &d)
		require.Equal(t, app.MessageFailed, d.Status)
		require.Equal(t, "bounce:Permanent/NoEmail", d.ErrorCode)
		require.Equal(t, "550 user unknown", d.FailedReason)
	})

	t.Run("ComplaintFailsAndBlocksAddress", func(t *testing.T) {
		m := sendOne("ses-c", "c@example.com")
		_, out := p.post("/webhooks/ses", sesEvent("Complaint", m, `,"complaint":{"complaintFeedbackType":"abuse"}`), snsHeaders)
		require.Equal(t, app.ReceiptApplied, out["outcome"])
		require.Equal(t, 1, p.count(`SELECT count(*) FROM contacts WHERE email = 'c@example.com' AND email_complained_at IS NOT NULL`))
		// The next e-mail to that contact has no address to go to.
		id := p.submit(withRecipient("ses-c2", "BK-ses-c2", map[string]any{"name": "A", "email": "c@example.com"}, "EMAIL"))
		again := onlyMessage(t, p.waitMessages(id, "not sent", allStatus(app.MessageFailed)))
		require.Equal(t, app.ReasonNoAddress, *again.FailedReason)
	})

	t.Run("RejectFails", func(t *testing.T) {
		m := sendOne("ses-r", "r@example.com")
		_, out := p.post("/webhooks/ses", sesEvent("Reject", m, `,"reject":{"reason":"Bad content"}`), snsHeaders)
		require.Equal(t, app.ReceiptApplied, out["outcome"])
	})

	t.Run("OpenOnTimelineOnly", func(t *testing.T) {
		m := sendOne("ses-o", "o@example.com")
		_, out := p.post("/webhooks/ses", sesEvent("Open", m, ""), snsHeaders)
		require.Equal(t, app.ReceiptRecorded, out["outcome"])
		tl := p.timeline(m.ID)
		require.Equal(t, "open", tl[len(tl)-1].Detail["code"])
	})

	t.Run("BadSignatureChangesNothing", func(t *testing.T) {
		m := sendOne("ses-x", "x@example.com")
		e := sns.Notification(sesTopic, `{"eventType":"Bounce","mail":{"messageId":"`+*m.ExternalMessageID+`"},"bounce":{"bounceType":"Permanent"}}`)
		e.Message = `{"eventType":"Bounce","mail":{"messageId":"` + *m.ExternalMessageID + `"},"bounce":{"bounceType":"Permanent","bounceSubType":"forged"}}`
		status, _ := p.post("/webhooks/ses", envelopeJSON(t, e), snsHeaders)
		require.Equal(t, http.StatusForbidden, status)
		var d struct{ Status string }
		p.request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &d)
		require.Equal(t, app.MessageSent, d.Status)
		require.Zero(t, p.count(`SELECT count(*) FROM webhook_receipts WHERE message_id = $1`, m.ID))
	})

	t.Run("UnknownMessageIs200", func(t *testing.T) {
		status, out := p.post("/webhooks/ses", envelopeJSON(t, sns.Notification(sesTopic, `{"eventType":"Delivery","mail":{"messageId":"never-sent"}}`)), snsHeaders)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, app.ReceiptUnknown, out["outcome"])
	})

	t.Run("NotJSON", func(t *testing.T) {
		status, _ := p.post("/webhooks/ses", []byte("hello"), snsHeaders)
		require.Equal(t, http.StatusBadRequest, status)
	})
}

func TestWebhook_SMS(t *testing.T) {
	t.Parallel()
	sns := awsnotifytest.New(t)
	const secret = "sms-status-secret-0123456789"
	p := newPipeline(t, pipelineOpts{
		env:       map[string]string{"HERALD_SNS_TOPIC_ARNS": sesTopic, "HERALD_SMS_STATUS_SECRET": secret},
		providers: provider.Set{"sns": &snsadapter.Provider{Endpoint: fakeAWS(t).URL}},
		sns:       sns,
	})
	useProvider(t, p, app.SMS, "sns")
	send := func(eventID, phone string) *app.Message {
		id := p.submit(withRecipient(eventID, "BK-"+eventID, map[string]any{"name": "A", "phone": phone}, "SMS"))
		return onlyMessage(t, p.waitMessages(id, "sent through sns", allStatus(app.MessageSent)))
	}
	record := func(m *app.Message, status, response string) string {
		return `{"notification":{"messageId":"` + *m.ExternalMessageID + `","timestamp":"2026-11-21 10:00:00.000"},"delivery":{"providerResponse":"` + response + `"},"status":"` + status + `"}`
	}
	get := func(m *app.Message) (status, reason string) {
		var d struct {
			Status       string
			FailedReason string `json:"failed_reason"`
		}
		p.request(http.MethodGet, "/api/v1/messages/"+m.ID.String(), nil, &d)
		return d.Status, d.FailedReason
	}

	t.Run("SuccessWithSharedSecret", func(t *testing.T) {
		m := send("sms-1", "+4915123451001")
		status, _ := p.post("/webhooks/sns-sms", []byte(record(m, "SUCCESS", "Message has been accepted by phone carrier")), map[string]string{"X-Herald-Webhook-Secret": secret})
		require.Equal(t, http.StatusOK, status)
		s, _ := get(m)
		require.Equal(t, app.MessageDelivered, s)
	})

	t.Run("FailureInSignedEnvelope", func(t *testing.T) {
		m := send("sms-2", "+4915123451002")
		e := sns.Notification(sesTopic, record(m, "FAILURE", "Phone is currently unreachable/unavailable"))
		status, _ := p.post("/webhooks/sns-sms", envelopeJSON(t, e), map[string]string{"x-amz-sns-message-type": "Notification"})
		require.Equal(t, http.StatusOK, status)
		s, reason := get(m)
		require.Equal(t, app.MessageFailed, s)
		require.Equal(t, "Phone is currently unreachable/unavailable", reason)
	})

	t.Run("BatchOfRecords", func(t *testing.T) {
		a, b := send("sms-3", "+4915123451003"), send("sms-4", "+4915123451004")
		body := "[" + record(a, "SUCCESS", "ok") + "," + record(b, "SUCCESS", "ok") + "]"
		status, out := p.post("/webhooks/sns-sms", []byte(body), map[string]string{"X-Herald-Webhook-Secret": secret})
		require.Equal(t, http.StatusOK, status)
		require.Len(t, out["outcomes"], 2)
	})

	t.Run("WrongOrMissingSecret", func(t *testing.T) {
		m := send("sms-5", "+4915123451005")
		for _, h := range []map[string]string{nil, {"X-Herald-Webhook-Secret": "wrong-secret-wrong-secret"}} {
			status, _ := p.post("/webhooks/sns-sms", []byte(record(m, "FAILURE", "x")), h)
			require.Equal(t, http.StatusUnauthorized, status)
		}
		s, _ := get(m)
		require.Equal(t, app.MessageSent, s, "nothing changed")
	})

	t.Run("WrongTopic", func(t *testing.T) {
		m := send("sms-6", "+4915123451006")
		e := sns.Notification("arn:aws:sns:eu-central-1:999999999999:other", record(m, "FAILURE", "x"))
		status, _ := p.post("/webhooks/sns-sms", envelopeJSON(t, e), map[string]string{"x-amz-sns-message-type": "Notification"})
		require.Equal(t, http.StatusForbidden, status)
	})
}

// TestChannel_Webhook sends on the WEBHOOK channel through the real adapter
// to a tenant receiver, which checks the signature as a tenant would.
func TestChannel_Webhook(t *testing.T) {
	t.Parallel()
	const secret = "whsec_test_secret"
	got := make(chan map[string]any, 4)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !webhook.Verify(secret, r.Header.Get("Herald-Signature"), r.Header.Get("Herald-Timestamp"), body, time.Now(), time.Minute) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var payload map[string]any
		_ = json.Unmarshal(body, &payload)
		got <- payload
	}))
	t.Cleanup(receiver.Close)
	p := newPipeline(t, pipelineOpts{providers: provider.Set{"webhook": &webhook.Provider{AllowHTTP: true, AllowPrivate: true}}})
	_, err := p.svc.Accounts.Create(p.ctx, app.CLIActor, p.tenant.ID, app.AccountInput{
		Channel: app.Webhook, Provider: "webhook", Name: "Booking system", Activate: true,
		Config: app.Attrs{"url": receiver.URL + "/herald"}, Secrets: map[string]string{"signing_secret": secret},
	})
	require.NoError(t, err)

	id := p.submit(withRecipient("wh-1", "BK-WH", map[string]any{"name": "A", "email": "a@example.com"}, "WEBHOOK"))
	m := onlyMessage(t, p.waitMessages(id, "delivered to the receiver", allStatus(app.MessageSent)))
	select {
	case payload := <-got:
		require.Equal(t, m.ID.String(), payload["id"])
		var event map[string]any
		require.NoError(t, json.Unmarshal([]byte(payload["body"].(string)), &event), "the body is the event as JSON")
		require.Equal(t, "BOOKING_CONFIRMED", event["trigger_event"])
		require.Equal(t, "Gardasee", event["context"].(map[string]any)["tour_name"])
	case <-time.After(5 * time.Second):
		t.Fatal("the receiver got nothing")
	}
	require.Nil(t, m.TemplateID, "the webhook channel needs no template")
}
