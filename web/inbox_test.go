package web_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsnotify/awsnotifytest"
	"github.com/heraldhq/herald/app/provider/sns"
	"github.com/heraldhq/herald/app/provider/webhook"
	"github.com/heraldhq/herald/web/webtest"
)

// conversationView is a conversation as the API lists it.
type conversationView struct {
	ID            uuid.UUID  `json:"id"`
	Status        string     `json:"status"`
	BookingID     *string    `json:"booking_id"`
	LastBody      *string    `json:"last_body"`
	LastChannel   *string    `json:"last_channel"`
	LastInboundAt *time.Time `json:"last_inbound_at"`
	LastReplyAt   *time.Time `json:"last_reply_at"`
	Waiting       int        `json:"waiting"`
}

// conversations lists the tenant's conversations through the API.
func conversations(t *testing.T, p *webtest.Herald, query string) []conversationView {
	t.Helper()
	var out struct {
		Conversations []conversationView `json:"conversations"`
	}
	require.Equal(t, http.StatusOK, p.Request(http.MethodGet, "/api/v1/conversations"+query, nil, &out))
	return out.Conversations
}

// replyOptionsView is a conversation's reply options as the API shows them.
type replyOptionsView struct {
	Channel     string `json:"channel"`
	FreeText    bool   `json:"free_text"`
	Why         string `json:"why"`
	Unavailable string `json:"unavailable"`
	Templates   []struct {
		ID           uuid.UUID `json:"id"`
		TriggerEvent string    `json:"trigger_event"`
		Usable       bool      `json:"usable"`
		Why          string    `json:"why"`
	} `json:"templates"`
}

func TestInbox_WhatsApp(t *testing.T) {
	t.Parallel()
	fake := newFakeMeta(t)
	p := webtest.New(t, webtest.Options{NoWorkers: true, Config: func(cfg *app.Config) { cfg.MetaBaseURL = fake.URL }})
	cb := p.Services.Callbacks
	cb.Client = webhook.NewClient(webhook.Options{AllowPrivate: true, AnyPort: true, Timeout: webhook.DefaultTimeout})
	cb.CheckURLFunc = func(string) error { return nil }
	p.Worker = p.StartWorkers()
	const appSecret = "meta-app-secret"
	sb := p.ActiveAccount(app.WhatsApp)
	require.NoError(t, p.Services.Accounts.SetStatus(p.Ctx, app.CLIActor, p.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	acct, err := p.Services.Accounts.Create(p.Ctx, app.CLIActor, p.Tenant.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "Acme WhatsApp", Activate: true,
		Config:  app.Attrs{"phone_number_id": "1234567890", "waba_id": "WABA"},
		Secrets: map[string]string{"access_token": "EAAG-test-token", "app_secret": appSecret},
	})
	require.NoError(t, err)
	p.ApproveMetaDefaults(acct)
	rc := newReceiver(t, nil)
	var endpoint struct {
		Secret string `json:"secret"`
	}
	require.Equal(t, http.StatusCreated, p.Request(http.MethodPost, "/api/v1/callback-endpoints",
		map[string]any{"url": rc.URL, "event_types": []string{app.CallbackMessageInbound}}, &endpoint))

	// Herald wrote to Anna about her booking (a template: she has not
	// written yet).
	p.WaitMessages(p.Submit(webtest.WithRecipient("inbox-wa-1", "BK-IN-1",
		map[string]any{"name": "Anna Schmidt", "phone": "+4915123456789"}, "WHATSAPP")), "sent", webtest.AllStatus(app.MessageSent))
	post := func(wamid, text string, at time.Time) {
		t.Helper()
		body := metaHook("1234567890", wamid, "4915123456789", text, at)
		code, _ := postWebhook(p, "/webhooks/meta/acme", body, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta(appSecret, body)})
		require.Equal(t, http.StatusOK, code)
	}
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	var conv conversationView

	t.Run("ReplyLandsInTheInboxAndTheCallback", func(t *testing.T) {
		post("wamid.IN1", "Is there parking at the bus station?", t0)
		cs := conversations(t, p, "?unanswered=true")
		require.Len(t, cs, 1)
		conv = cs[0]
		require.Equal(t, "BK-IN-1", *conv.BookingID, "the conversation about the booking Herald wrote about")
		require.Equal(t, "Is there parking at the bus station?", *conv.LastBody)
		require.Equal(t, 1, conv.Waiting)
		require.Len(t, conversations(t, p, "?booking_id=BK-IN-1"), 1)
		require.Empty(t, conversations(t, p, "?booking_id=BK-OTHER"))

		got := rc.next(t)
		require.NoError(t, verifyStandardWebhook(endpoint.Secret, got, time.Now()))
		var payload struct {
			Type string                  `json:"type"`
			Data app.InboundCallbackData `json:"data"`
		}
		require.NoError(t, json.Unmarshal(got.Body, &payload))
		require.Equal(t, app.CallbackMessageInbound, payload.Type)
		require.Equal(t, "Is there parking at the bus station?", payload.Data.Body)
		require.Equal(t, conv.ID, payload.Data.ConversationID)
		require.Equal(t, "+4915123456789", payload.Data.From)
		require.Equal(t, &app.CallbackEntity{Type: "booking", ID: "BK-IN-1"}, payload.Data.Entity)
	})

	t.Run("FreeTextInsideTheWindowSendsOnce", func(t *testing.T) {
		var d struct {
			Options []replyOptionsView `json:"reply_options"`
		}
		require.Equal(t, http.StatusOK, p.Request(http.MethodGet, "/api/v1/conversations/"+conv.ID.String(), nil, &d))
		require.True(t, d.Options[0].FreeText, d.Options[0].Why)
		var first, second struct {
			Message app.Message `json:"message"`
		}
		reply := map[string]any{"body": "Yes, P+R right next to it.", "idempotency_key": "k-1"}
		require.Equal(t, http.StatusAccepted, p.Request(http.MethodPost, "/api/v1/conversations/"+conv.ID.String()+"/replies", reply, &first))
		require.Equal(t, http.StatusAccepted, p.Request(http.MethodPost, "/api/v1/conversations/"+conv.ID.String()+"/replies", reply, &second))
		require.Equal(t, first.Message.ID, second.Message.ID, "the same key sends once")
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM messages WHERE conversation_id = $1 AND trigger_event = $2`, conv.ID, app.ReplyTrigger))
		p.WaitUntil("the reply is sent", func() bool {
			return p.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'SENT'`, first.Message.ID) == 1
		})
		fake.mu.Lock()
		last := fake.requests[len(fake.requests)-1]
		fake.mu.Unlock()
		require.Equal(t, "text", last["type"])
		require.Equal(t, "Yes, P+R right next to it.", last["text"].(map[string]any)["body"])
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM audit_log WHERE action = 'conversation.reply' AND target_id = $1`, conv.ID.String()))
		require.Empty(t, conversations(t, p, "?unanswered=true"), "answered")
	})

	t.Run("ResolvedReopensWhenThePassengerWritesAgain", func(t *testing.T) {
		var out struct {
			Conversation app.Conversation `json:"conversation"`
		}
		require.Equal(t, http.StatusOK, p.Request(http.MethodPost, "/api/v1/conversations/"+conv.ID.String()+"/status", map[string]any{"status": "resolved"}, &out))
		require.Equal(t, app.ConversationResolved, out.Conversation.Status)
		require.Empty(t, conversations(t, p, ""), "resolved conversations leave the inbox")
		// A STOP is answered by Herald itself: it neither reopens nor asks.
		post("wamid.IN2", "STOP", t0.Add(time.Second))
		require.Len(t, conversations(t, p, "?status=resolved"), 1)
		post("wamid.IN3", "START", t0.Add(2*time.Second))
		post("wamid.IN4", "One more question: can I bring my dog?", t0.Add(3*time.Second))
		cs := conversations(t, p, "?unanswered=true")
		require.Len(t, cs, 1)
		require.Equal(t, conv.ID, cs[0].ID, "the same conversation, reopened")
		require.Equal(t, app.ConversationOpen, cs[0].Status)
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM audit_log WHERE action = 'conversation.status' AND target_id = $1 AND actor_label = 'passenger wrote again'`, conv.ID.String()))
	})

	t.Run("OutsideTheWindowOnlyAnApprovedTemplate", func(t *testing.T) {
		p.OwnerExec(`UPDATE inbound_messages SET received_at = received_at - interval '25 hours' WHERE conversation_id = $1`, conv.ID)
		var d struct {
			Options []replyOptionsView `json:"reply_options"`
		}
		require.Equal(t, http.StatusOK, p.Request(http.MethodGet, "/api/v1/conversations/"+conv.ID.String(), nil, &d))
		wa := d.Options[0]
		require.False(t, wa.FreeText)
		require.Contains(t, wa.Why, "24 hours")
		var usable *uuid.UUID
		for _, tp := range wa.Templates {
			if tp.Usable && tp.TriggerEvent == "BOOKING_CONFIRMED" {
				usable = &tp.ID
			}
		}
		require.NotNil(t, usable, "the booking's confirmation, approved by Meta")
		var e struct {
			Error struct{ Code, Reason, Field string } `json:"error"`
		}
		require.Equal(t, http.StatusConflict, p.Request(http.MethodPost, "/api/v1/conversations/"+conv.ID.String()+"/replies",
			map[string]any{"body": "Dogs are welcome.", "idempotency_key": "k-2"}, &e))
		require.Equal(t, "template_id", e.Error.Field)
		var out struct {
			Message app.Message `json:"message"`
		}
		require.Equal(t, http.StatusAccepted, p.Request(http.MethodPost, "/api/v1/conversations/"+conv.ID.String()+"/replies",
			map[string]any{"template_id": usable, "idempotency_key": "k-3"}, &out))
		require.Equal(t, usable, out.Message.TemplateID)
		p.WaitUntil("the template reply is sent", func() bool {
			return p.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'SENT'`, out.Message.ID) == 1
		})
		fake.mu.Lock()
		last := fake.requests[len(fake.requests)-1]
		fake.mu.Unlock()
		require.Equal(t, "template", last["type"])
	})

	t.Run("BadInput", func(t *testing.T) {
		path := "/api/v1/conversations/" + conv.ID.String()
		var e struct {
			Error struct{ Code, Reason, Field string } `json:"error"`
		}
		require.Equal(t, http.StatusUnprocessableEntity, p.Request(http.MethodPost, path+"/replies", map[string]any{"body": " ", "idempotency_key": "k-4"}, &e))
		require.Equal(t, "body", e.Error.Field)
		require.Equal(t, http.StatusUnprocessableEntity, p.Request(http.MethodPost, path+"/replies", map[string]any{"body": "hi"}, &e))
		require.Equal(t, "idempotency_key", e.Error.Field)
		require.Equal(t, http.StatusUnprocessableEntity, p.Request(http.MethodPost, path+"/replies", map[string]any{"body": "hi", "channel": "EMAIL", "idempotency_key": "k-5"}, &e))
		require.Equal(t, http.StatusUnprocessableEntity, p.Request(http.MethodPost, path+"/status", map[string]any{"status": "DONE"}, &e))
		require.Equal(t, "status", e.Error.Field)
		require.Equal(t, http.StatusUnprocessableEntity, p.Request(http.MethodGet, "/api/v1/conversations?status=maybe", nil, &e))
		require.Equal(t, http.StatusNotFound, p.Request(http.MethodGet, "/api/v1/conversations/"+uuid.NewString(), nil, &e))
		require.Zero(t, p.Count(`SELECT count(*) FROM messages WHERE idempotency_key LIKE 'reply:%:k-4' OR idempotency_key LIKE 'reply:%:k-5'`))
	})
}

func TestInbox_SMSTwoWay(t *testing.T) {
	t.Parallel()
	signer := awsnotifytest.New(t)
	p := webtest.New(t, webtest.Options{
		Config:    func(cfg *app.Config) { cfg.SNSTopicARNs = []string{smsTopic} },
		Providers: provider.Set{"sns": &sns.Provider{Endpoint: fakeAWS(t).URL}},
		SNS:       signer,
	})
	sb := p.ActiveAccount(app.SMS)
	require.NoError(t, p.Services.Accounts.SetStatus(p.Ctx, app.CLIActor, p.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	_, err := p.Services.Accounts.Create(p.Ctx, app.CLIActor, p.Tenant.ID, app.AccountInput{
		Channel: app.SMS, Provider: "sns", Name: "Acme SMS", Activate: true,
		Config:  app.Attrs{"region": "eu-central-1", "origination_number": "+4989111222"},
		Secrets: map[string]string{"access_key_id": "AKIAHERALDTEST000001", "secret_access_key": "not-a-real-secret"},
	})
	require.NoError(t, err)
	msg, _ := json.Marshal(map[string]string{"originationNumber": "+4915200000077", "destinationNumber": "+4989111222",
		"messageBody": "Wann fährt der Bus ab?", "inboundMessageId": "in-inbox-1"})
	e := signer.Notification(smsTopic, string(msg))
	signer.Sign(e, "2")
	code, out := postWebhook(p, "/webhooks/sns-sms", envelopeJSON(t, e), map[string]string{"x-amz-sns-message-type": "Notification"})
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "inbound", out["outcome"])

	cs := conversations(t, p, "?unanswered=true")
	require.Len(t, cs, 1, "a reply from a stranger opens a conversation of its own")
	require.Equal(t, "SMS", *cs[0].LastChannel)
	var sent struct {
		Message app.Message `json:"message"`
	}
	require.Equal(t, http.StatusAccepted, p.Request(http.MethodPost, "/api/v1/conversations/"+cs[0].ID.String()+"/replies",
		map[string]any{"body": "Um 7:15 am ZOB.", "idempotency_key": "sms-1"}, &sent))
	require.Equal(t, app.SMS, sent.Message.Channel, "answered on the channel the passenger wrote on")
	require.Equal(t, "+4915200000077", sent.Message.ToAddress)
	p.WaitUntil("the SMS answer is sent", func() bool {
		return p.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'SENT'`, sent.Message.ID) == 1
	})
	require.Empty(t, conversations(t, p, "?unanswered=true"))
}
