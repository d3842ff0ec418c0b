package web_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/webhook"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/web/webtest"
)

// callbackBundle is Herald with callbacks posted to loopback receivers.
type callbackBundle struct {
	*webtest.Herald
}

type callbackSetup struct {
	// productionClient keeps the wired client, whose SSRF guard refuses
	// loopback receivers.
	productionClient bool
	backoff          []time.Duration
}

// setupCallbacks builds Herald whose callbacks may go to loopback
// receivers (httptest servers), with a short retry schedule, and starts
// its workers once that is set.
func setupCallbacks(t *testing.T, s callbackSetup) *callbackBundle {
	t.Helper()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	cb := h.Services.Callbacks
	if !s.productionClient {
		// Production's timeout: a shorter one could end a post to a
		// receiver that is only slow because the machine is busy, and
		// retry it.
		cb.Client = webhook.NewClient(webhook.Options{AllowPrivate: true, AnyPort: true, Timeout: webhook.DefaultTimeout})
	}
	// The receivers listen on 127.0.0.1, which the URL check refuses (as it
	// should for tenants); the dial guard is what the SSRF test checks.
	cb.CheckURLFunc = func(string) error { return nil }
	cb.Backoff = s.backoff
	if cb.Backoff == nil {
		cb.Backoff = []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond}
	}
	h.Worker = h.StartWorkers()
	return &callbackBundle{Herald: h}
}

// createEndpoint registers url for the event types through the API and
// returns its id and secret.
func (b *callbackBundle) createEndpoint(key, url string, types ...string) (uuid.UUID, string) {
	b.T.Helper()
	var out struct {
		ID     uuid.UUID `json:"id"`
		Secret string    `json:"secret"`
	}
	status := b.RequestWithKey(key, http.MethodPost, "/api/v1/callback-endpoints",
		map[string]any{"url": url, "event_types": types, "description": "booking system"}, &out)
	require.Equal(b.T, http.StatusCreated, status)
	return out.ID, out.Secret
}

// deliveryView is a delivery as the API lists it.
type deliveryView struct {
	ID                 uuid.UUID       `json:"id"`
	MessageID          *uuid.UUID      `json:"message_id"`
	EventType          string          `json:"event_type"`
	Status             string          `json:"status"`
	Attempts           int             `json:"attempts"`
	LastResponseStatus *int            `json:"last_response_status"`
	LastError          *string         `json:"last_error"`
	NextAttemptAt      *time.Time      `json:"next_attempt_at"`
	LastAttemptAt      *time.Time      `json:"last_attempt_at"`
	Payload            json.RawMessage `json:"payload"`
}

func (b *callbackBundle) deliveries(endpointID uuid.UUID) []deliveryView {
	b.T.Helper()
	var out struct {
		Deliveries []deliveryView `json:"deliveries"`
	}
	require.Equal(b.T, http.StatusOK, b.Request(http.MethodGet, "/api/v1/callback-endpoints/"+endpointID.String()+"/deliveries", nil, &out))
	return out.Deliveries
}

// waitDeliveries waits until the endpoint's deliveries satisfy ok.
func (b *callbackBundle) waitDeliveries(endpointID uuid.UUID, what string, ok func([]deliveryView) bool) []deliveryView {
	b.T.Helper()
	var last []deliveryView
	b.WaitUntil(what, func() bool {
		last = b.deliveries(endpointID)
		return ok(last)
	})
	return last
}

// waitCount waits until query counts n.
func (b *callbackBundle) waitCount(n int, what, query string, args ...any) {
	b.T.Helper()
	b.WaitUntil(what, func() bool { return b.Count(query, args...) == n })
}

func oneDelivery(status string, attempts int) func([]deliveryView) bool {
	return func(ds []deliveryView) bool {
		return len(ds) == 1 && ds[0].Status == status && ds[0].Attempts == attempts
	}
}

// received is one post a receiver got.
type received struct {
	ID, Timestamp, Signature string
	Body                     []byte
	At                       time.Time
}

// payload decodes the body.
func (r received) payload(t *testing.T) map[string]any {
	t.Helper()
	var p map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &p))
	return p
}

// receiver is a tenant's callback endpoint. It answers each post (n counts
// from 1) as answer says, and keeps every post it got.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	posts  []received
	got    chan received
	answer func(n int, w http.ResponseWriter, r *http.Request)
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{got: make(chan received, 64), answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p := received{ID: r.Header.Get("webhook-id"), Timestamp: r.Header.Get("webhook-timestamp"),
			Signature: r.Header.Get("webhook-signature"), Body: body, At: time.Now()}
		rc.mu.Lock()
		rc.posts = append(rc.posts, p)
		n := len(rc.posts)
		rc.mu.Unlock()
		if rc.answer != nil {
			rc.answer(n, w, r)
		}
		rc.got <- p
	}))
	t.Cleanup(rc.Close)
	return rc
}

// next waits for the receiver's next post.
func (rc *receiver) next(t *testing.T) received {
	t.Helper()
	select {
	case p := <-rc.got:
		return p
	case <-time.After(dbtest.HangGuard):
		t.Fatal("the receiver got no post")
		return received{}
	}
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.posts)
}

// verifyStandardWebhook checks a post as a receiver following the Standard
// Webhooks specification would, independently of Herald's own signing: the
// secret's bytes are the base64 after whsec_, the signed content is
// "<webhook-id>.<webhook-timestamp>.<body>", the header lists
// space-separated "v1,<base64 HMAC-SHA256>" signatures of which one must
// match (in constant time), and the timestamp must be within five minutes.
func verifyStandardWebhook(secret string, p received, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	if p.ID == "" || p.Timestamp == "" || p.Signature == "" {
		return errors.New("missing webhook headers")
	}
	ts, err := strconv.ParseInt(p.Timestamp, 10, 64)
	if err != nil {
		return err
	}
	if d := now.Sub(time.Unix(ts, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return errors.New("timestamp outside the tolerance")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(p.ID + "." + p.Timestamp + "." + string(p.Body)))
	want := mac.Sum(nil)
	for _, s := range strings.Split(p.Signature, " ") {
		version, sig, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no signature matches")
}

func emailNotification(eventID, booking, email string) map[string]any {
	return webtest.WithRecipient(eventID, booking, map[string]any{"name": "Anna Schmidt", "email": email}, "EMAIL")
}

func TestCallbacks_Delivery(t *testing.T) {
	t.Parallel()

	t.Run("DeliveredSendsSignedCallback", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, nil)
		endpointID, secret := b.createEndpoint(b.Key, rc.URL+"/herald", app.CallbackMessageDelivered)

		id := b.Submit(emailNotification("cb-delivered", "BK-CB1", "anna@example.com"))
		m := webtest.OnlyMessage(t, b.WaitMessages(id, "read", webtest.AllStatus(app.MessageRead)))

		p := rc.next(t)
		require.NoError(t, verifyStandardWebhook(secret, p, time.Now()))
		payload := p.payload(t)
		require.Equal(t, "message.delivered", payload["type"])
		_, err := time.Parse(time.RFC3339Nano, payload["timestamp"].(string))
		require.NoError(t, err)
		data := payload["data"].(map[string]any)
		require.Equal(t, m.ID.String(), data["message_id"])
		require.Equal(t, "cb-delivered", data["event_id"], "the tenant's own event_id")
		require.Equal(t, id.String(), data["herald_event_id"])
		require.Equal(t, "EMAIL", data["channel"])
		require.Equal(t, app.MessageDelivered, data["status"])
		require.Equal(t, "anna@example.com", data["to"])
		require.Equal(t, "BOOKING_CONFIRMED", data["trigger_event"])
		require.Equal(t, map[string]any{"type": "booking", "id": "BK-CB1"}, data["entity"])
		require.Equal(t, "sandbox", data["provider"])
		require.Equal(t, *m.ExternalMessageID, data["provider_message_id"])
		require.NotContains(t, data, "error")

		// Only the subscribed type: sent and read made no delivery.
		ds := b.waitDeliveries(endpointID, "the delivery succeeded", oneDelivery(app.CallbackSucceeded, 1))
		require.Equal(t, "message.delivered", ds[0].EventType)
		require.Equal(t, "msg_"+strings.ReplaceAll(ds[0].ID.String(), "-", ""), p.ID, "webhook-id is the delivery's")
		require.JSONEq(t, string(p.Body), string(ds[0].Payload))
		require.Equal(t, 200, *ds[0].LastResponseStatus)
		require.Equal(t, 1, rc.count())
	})

	t.Run("EveryEventTypeInOrderOfTheChain", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, nil)
		endpointID, secret := b.createEndpoint(b.Key, rc.URL, app.CallbackEventTypes...)

		// Not on WhatsApp (...0006): WhatsApp fails, SMS is its fallback.
		req := map[string]any{
			"event_id": "cb-chain", "trigger_event": "INCIDENT_ALLCLEAR",
			"recipients":     []map[string]any{{"name": "A", "phone": "+4915123450006"}},
			"context":        map[string]any{"passenger_name": "A", "tour_name": "Gardasee", "update_message": "Alles frei."},
			"fallback_chain": []string{"WHATSAPP", "SMS"},
		}
		id := b.Submit(req)
		ms := b.WaitMessages(id, "fallback read", func(ms []*app.Message) bool {
			return len(ms) == 2 && (ms[0].Status == app.MessageRead || ms[1].Status == app.MessageRead)
		})
		var failed, fallback *app.Message
		for _, m := range ms {
			if m.Channel == app.WhatsApp {
				failed = m
			} else {
				fallback = m
			}
		}
		require.Equal(t, app.MessageFailed, failed.Status)

		ds := b.waitDeliveries(endpointID, "five callbacks succeeded", func(ds []deliveryView) bool {
			n := 0
			for _, d := range ds {
				if d.Status == app.CallbackSucceeded {
					n++
				}
			}
			return n == 5
		})
		types := map[string]uuid.UUID{}
		for _, d := range ds {
			types[d.EventType+"/"+d.MessageID.String()] = d.ID
		}
		require.Len(t, types, 5)
		for _, want := range []string{"message.failed/" + failed.ID.String(), "message.fallback/" + failed.ID.String(),
			"message.sent/" + fallback.ID.String(), "message.delivered/" + fallback.ID.String(), "message.read/" + fallback.ID.String()} {
			require.Contains(t, types, want)
		}
		posts := map[string]map[string]any{}
		for range 5 {
			p := rc.next(t)
			require.NoError(t, verifyStandardWebhook(secret, p, time.Now()))
			pl := p.payload(t)
			posts[pl["type"].(string)] = pl["data"].(map[string]any)
		}
		require.Equal(t, map[string]any{"message_id": fallback.ID.String(), "channel": "SMS"}, posts["message.fallback"]["fallback"])
		errData := posts["message.failed"]["error"].(map[string]any)
		require.NotEmpty(t, errData["code"])
		require.NotEmpty(t, errData["message"], "the provider's text")
		require.Equal(t, failed.ID.String(), posts["message.fallback"]["message_id"])
		require.Equal(t, failed.ID.String(), posts["message.read"]["fallback_of"])
	})

	t.Run("BounceReceiptIsPostedAsFailed", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, nil)
		b.createEndpoint(b.Key, rc.URL, app.CallbackMessageFailed)
		id := b.Submit(emailNotification("cb-bounce", "BK-CB14", "bounce@example.com"))
		m := webtest.OnlyMessage(t, b.WaitMessages(id, "bounced", webtest.AllStatus(app.MessageFailed)))
		data := rc.next(t).payload(t)["data"].(map[string]any)
		require.Equal(t, m.ID.String(), data["message_id"])
		require.Equal(t, app.MessageFailed, data["status"])
		errData := data["error"].(map[string]any)
		require.Equal(t, *m.FailedReason, errData["reason"])
		require.Equal(t, "The sandbox mailbox bounced the message.", errData["message"])
	})

	t.Run("MissedDeadlineFallbackIsPosted", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, nil)
		endpointID, secret := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageFallback)
		require.NoError(t, b.Services.Deadlines.Set(b.Ctx, app.CLIActor, b.Tenant.ID, "BOOKING_CONFIRMED", app.Email, 1))
		// The sandbox never reports on silent@: the e-mail stays SENT.
		req := webtest.WithRecipient("cb-deadline", "BK-CB13", map[string]any{"name": "A", "email": "silent@example.com", "phone": "+4915123456789"}, "EMAIL")
		req["fallback_chain"] = []string{"EMAIL", "SMS"}
		id := b.Submit(req)
		email := webtest.OnlyMessage(t, b.WaitMessages(id, "sent", webtest.AllStatus(app.MessageSent)))
		b.Exec(`UPDATE messages SET sent_at = now() - interval '2 minutes' WHERE id = $1`, email.ID)

		n, err := b.Services.Maintenance.FallBackOverdue(b.Ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		p := rc.next(t)
		require.NoError(t, verifyStandardWebhook(secret, p, time.Now()))
		payload := p.payload(t)
		require.Equal(t, "message.fallback", payload["type"])
		data := payload["data"].(map[string]any)
		require.Equal(t, email.ID.String(), data["message_id"])
		require.Equal(t, app.MessageSent, data["status"], "the overdue message stays SENT")
		require.Equal(t, "SMS", data["fallback"].(map[string]any)["channel"])
		b.waitDeliveries(endpointID, "posted", oneDelivery(app.CallbackSucceeded, 1))
	})

	t.Run("ReceiverFailsThenSucceeds", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				http.Error(w, "database down", http.StatusInternalServerError)
			}
		})
		endpointID, secret := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageSent)
		b.Submit(emailNotification("cb-retry", "BK-CB3", "anna@example.com"))

		first, second := rc.next(t), rc.next(t)
		require.Equal(t, first.ID, second.ID, "a retry keeps the webhook-id")
		require.Equal(t, first.Body, second.Body, "and the payload")
		require.NoError(t, verifyStandardWebhook(secret, second, time.Now()))
		ds := b.waitDeliveries(endpointID, "succeeded on the second attempt", oneDelivery(app.CallbackSucceeded, 2))
		require.Equal(t, 200, *ds[0].LastResponseStatus)
	})

	t.Run("SlowReceiverTimesOutThenSucceeds", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				// Answers only after Herald gave up waiting (its client's
				// timeout ends the request).
				<-r.Context().Done()
			}
		})
		endpointID, _ := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageSent)
		b.Submit(emailNotification("cb-slow", "BK-CB4", "anna@example.com"))
		ds := b.waitDeliveries(endpointID, "succeeded after a timeout", oneDelivery(app.CallbackSucceeded, 2))
		require.Equal(t, 200, *ds[0].LastResponseStatus)
		require.Equal(t, 2, rc.count())
	})

	t.Run("RetryAfterIsHonoured", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				w.Header().Set("Retry-After", "3600")
				w.WriteHeader(http.StatusTooManyRequests)
			}
		})
		endpointID, _ := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageSent)
		b.Submit(emailNotification("cb-429", "BK-CB5", "anna@example.com"))

		ds := b.waitDeliveries(endpointID, "the 429 recorded", oneDelivery(app.CallbackPending, 1))
		require.Equal(t, 429, *ds[0].LastResponseStatus)
		require.GreaterOrEqual(t, ds[0].NextAttemptAt.Sub(*ds[0].LastAttemptAt), time.Hour, "Retry-After beats the 10 ms schedule")
		b.waitCount(1, "the job snoozed for the hour", `SELECT count(*) FROM river_job WHERE kind = 'callback' AND state = 'scheduled'
			AND scheduled_at >= now() + interval '59 minutes'`)

		// The hour passes.
		b.Exec(`UPDATE river_job SET scheduled_at = now() WHERE kind = 'callback' AND state = 'scheduled'`)
		b.waitDeliveries(endpointID, "the retry succeeded", oneDelivery(app.CallbackSucceeded, 2))
	})

	t.Run("LastAttemptFails", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{backoff: []time.Duration{time.Millisecond, time.Millisecond}})
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
		})
		endpointID, _ := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageSent)
		b.Submit(emailNotification("cb-fail", "BK-CB6", "anna@example.com"))
		ds := b.waitDeliveries(endpointID, "failed after three attempts", oneDelivery(app.CallbackFailed, 3))
		require.Equal(t, 502, *ds[0].LastResponseStatus)
		require.Equal(t, "HTTP 502", *ds[0].LastError)
		require.Nil(t, ds[0].NextAttemptAt)
		require.Equal(t, 3, rc.count())
	})

	t.Run("GoneDisablesTheEndpoint", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) })
		endpointID, _ := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageSent)
		b.Submit(emailNotification("cb-gone", "BK-CB7", "anna@example.com"))

		b.waitDeliveries(endpointID, "the 410 failed the delivery", func(ds []deliveryView) bool {
			for _, d := range ds {
				if d.Status == app.CallbackFailed && d.Attempts == 1 {
					return true
				}
			}
			return false
		})
		var e struct {
			Enabled        bool    `json:"enabled"`
			DisabledReason *string `json:"disabled_reason"`
		}
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, "/api/v1/callback-endpoints/"+endpointID.String(), nil, &e))
		require.False(t, e.Enabled)
		require.Contains(t, *e.DisabledReason, "410 Gone")
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'callback_endpoint.disable' AND actor_type = 'system' AND target_id = $1`, endpointID.String()))
		// A message sent after the endpoint was disabled makes no delivery.
		later := b.Submit(emailNotification("cb-gone-later", "BK-CB8", "anna@example.com"))
		b.WaitMessages(later, "the later message read", webtest.AllStatus(app.MessageRead))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM callback_deliveries WHERE endpoint_id = $1`, endpointID))
		require.Equal(t, 1, rc.count(), "a disabled endpoint gets no more posts")
	})

	t.Run("FailingForDaysDisablesTheEndpoint", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
		endpointID, _ := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageSent)
		// Every attempt for the last four days failed.
		b.Exec(`UPDATE callback_endpoints SET failing_since = now() - interval '4 days' WHERE id = $1`, endpointID)
		b.Submit(emailNotification("cb-days", "BK-CB8", "anna@example.com"))

		ds := b.waitDeliveries(endpointID, "the delivery ended", func(ds []deliveryView) bool {
			return len(ds) == 1 && ds[0].Status == app.CallbackFailed
		})
		require.Equal(t, 1, ds[0].Attempts, "no post after the endpoint was disabled")
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM callback_endpoints WHERE id = $1 AND NOT enabled AND disabled_reason LIKE 'Every attempt since%'`, endpointID))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'callback_endpoint.disable' AND target_id = $1`, endpointID.String()))
	})

	t.Run("SuccessEndsTheRunOfFailures", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, nil)
		endpointID, _ := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageSent)
		b.Exec(`UPDATE callback_endpoints SET failing_since = now() - interval '1 day' WHERE id = $1`, endpointID)
		b.Submit(emailNotification("cb-heal", "BK-CB9", "anna@example.com"))
		b.waitDeliveries(endpointID, "succeeded", oneDelivery(app.CallbackSucceeded, 1))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM callback_endpoints WHERE id = $1 AND enabled AND failing_since IS NULL`, endpointID))
	})

	t.Run("DisabledEndpointGetsNothing", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		off, on := newReceiver(t, nil), newReceiver(t, nil)
		offID, _ := b.createEndpoint(b.Key, off.URL, app.CallbackEventTypes...)
		onID, _ := b.createEndpoint(b.Key, on.URL, app.CallbackMessageRead)
		require.Equal(t, http.StatusOK, b.Request(http.MethodPatch, "/api/v1/callback-endpoints/"+offID.String(), map[string]any{"enabled": false}, nil))

		id := b.Submit(emailNotification("cb-off", "BK-CB10", "anna@example.com"))
		b.WaitMessages(id, "read", webtest.AllStatus(app.MessageRead))
		// The enabled endpoint's read callback is the last of the message's
		// changes: by then the disabled one would have had all of its own.
		require.Equal(t, "message.read", on.next(t).payload(t)["type"])
		b.waitDeliveries(onID, "read posted", oneDelivery(app.CallbackSucceeded, 1))
		require.Empty(t, b.deliveries(offID))
		require.Zero(t, off.count())
	})

	t.Run("OtherTenantsEndpointsHearNothing", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		other, err := b.Services.Tenants.Create(b.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex Travel"})
		require.NoError(t, err)
		_, otherKey, err := b.Services.APIKeys.Create(b.Ctx, app.CLIActor, other.ID, "globex system", app.Scopes...)
		require.NoError(t, err)
		mine, theirs := newReceiver(t, nil), newReceiver(t, nil)
		b.createEndpoint(b.Key, mine.URL, app.CallbackMessageSent)
		b.createEndpoint(otherKey, theirs.URL, app.CallbackEventTypes...)

		b.Submit(emailNotification("cb-tenant", "BK-CB11", "anna@example.com"))
		require.Equal(t, "message.sent", mine.next(t).payload(t)["type"])
		require.Zero(t, theirs.count())
		require.Zero(t, b.Count(`SELECT count(*) FROM callback_deliveries WHERE tenant_id = $1`, other.ID))
	})

	t.Run("SSRFGuardRefusesLoopback", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{productionClient: true, backoff: []time.Duration{time.Millisecond}})
		rc := newReceiver(t, nil)
		// As if a public name resolved to 127.0.0.1: only the dial-time
		// guard stands between the tenant and Herald's own network.
		endpointID, _ := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageSent)
		b.Submit(emailNotification("cb-ssrf", "BK-CB12", "anna@example.com"))
		ds := b.waitDeliveries(endpointID, "refused twice", oneDelivery(app.CallbackFailed, 2))
		require.Contains(t, *ds[0].LastError, "refused")
		require.Nil(t, ds[0].LastResponseStatus)
		require.Zero(t, rc.count(), "nothing reached the loopback receiver")
	})
}

func TestCallbacks_ReplayAndRotate(t *testing.T) {
	t.Parallel()

	t.Run("ReplayPostsTheSamePayloadAndID", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, nil)
		endpointID, secret := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageSent)
		b.Submit(emailNotification("cb-replay", "BK-CR1", "anna@example.com"))
		first := rc.next(t)
		ds := b.waitDeliveries(endpointID, "succeeded", oneDelivery(app.CallbackSucceeded, 1))

		path := "/api/v1/callback-endpoints/" + endpointID.String() + "/deliveries/" + ds[0].ID.String() + "/replay"
		var replayed deliveryView
		require.Equal(t, http.StatusAccepted, b.Request(http.MethodPost, path, nil, &replayed))
		require.Equal(t, app.CallbackPending, replayed.Status)
		again := rc.next(t)
		require.Equal(t, first.ID, again.ID, "the receiver can tell it is the same event")
		require.Equal(t, first.Body, again.Body)
		require.NoError(t, verifyStandardWebhook(secret, again, time.Now()))
		b.waitDeliveries(endpointID, "replay counted as a new attempt", oneDelivery(app.CallbackSucceeded, 2))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'callback_delivery.replay' AND actor_type = 'api_key'`))
	})

	t.Run("ReplayOfAPendingDeliveryConflicts", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		endpointID, _ := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageSent)
		b.Submit(emailNotification("cb-replay-pending", "BK-CR2", "anna@example.com"))
		ds := b.waitDeliveries(endpointID, "waiting for its retry", oneDelivery(app.CallbackPending, 1))
		var e apiErrorBody
		path := "/api/v1/callback-endpoints/" + endpointID.String() + "/deliveries/" + ds[0].ID.String() + "/replay"
		require.Equal(t, http.StatusConflict, b.Request(http.MethodPost, path, nil, &e))
		require.Equal(t, "conflict", e.Error.Code)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM river_job WHERE kind = 'callback'`), "no second job")
	})

	t.Run("ConcurrentReplaysStartOneRound", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, nil)
		endpointID, _ := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageSent)
		b.Submit(emailNotification("cb-replay-race", "BK-CR3", "anna@example.com"))
		ds := b.waitDeliveries(endpointID, "succeeded", oneDelivery(app.CallbackSucceeded, 1))
		// Workers stopped, so the replay stays pending while the others try.
		require.NoError(t, b.Worker.Stop(b.Ctx))
		path := "/api/v1/callback-endpoints/" + endpointID.String() + "/deliveries/" + ds[0].ID.String() + "/replay"
		statuses := make(chan int, 6)
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() { statuses <- b.Request(http.MethodPost, path, nil, nil) })
		}
		wg.Wait()
		close(statuses)
		got := map[int]int{}
		for s := range statuses {
			got[s]++
		}
		require.Equal(t, map[int]int{http.StatusAccepted: 1, http.StatusConflict: 5}, got)
		require.Equal(t, 2, b.Count(`SELECT count(*) FROM river_job WHERE kind = 'callback'`), "the first job and one replay")
	})

	t.Run("RotatedSecretSignsBesideTheOldOne", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, nil)
		endpointID, oldSecret := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageSent)
		base := "/api/v1/callback-endpoints/" + endpointID.String()
		var rotated struct {
			Secret                  string    `json:"secret"`
			PreviousSecretExpiresAt time.Time `json:"previous_secret_expires_at"`
		}
		// The grace period is a day from the rotation, which happened
		// between these two readings of the clock, however long it took.
		before := time.Now().Truncate(time.Millisecond)
		require.Equal(t, http.StatusOK, b.Request(http.MethodPost, base+"/rotate-secret", nil, &rotated))
		after := time.Now().Add(time.Millisecond)
		require.NotEqual(t, oldSecret, rotated.Secret)
		require.WithinRange(t, rotated.PreviousSecretExpiresAt, before.Add(24*time.Hour), after.Add(24*time.Hour))

		var test deliveryView
		require.Equal(t, http.StatusAccepted, b.Request(http.MethodPost, base+"/test", nil, &test))
		p := rc.next(t)
		require.Equal(t, "callback.test", p.payload(t)["type"])
		require.Len(t, strings.Split(p.Signature, " "), 2)
		require.NoError(t, verifyStandardWebhook(rotated.Secret, p, time.Now()), "the new secret verifies")
		require.NoError(t, verifyStandardWebhook(oldSecret, p, time.Now()), "and the old one, during the grace period")

		// The grace period ends: only the new secret signs.
		b.Exec(`UPDATE callback_endpoints SET previous_expires_at = now() - interval '1 second' WHERE id = $1`, endpointID)
		b.waitDeliveries(endpointID, "the test posted", oneDelivery(app.CallbackSucceeded, 1))
		require.Equal(t, http.StatusAccepted, b.Request(http.MethodPost, base+"/deliveries/"+test.ID.String()+"/replay", nil, nil))
		p = rc.next(t)
		require.Len(t, strings.Split(p.Signature, " "), 1)
		require.NoError(t, verifyStandardWebhook(rotated.Secret, p, time.Now()))
		require.Error(t, verifyStandardWebhook(oldSecret, p, time.Now()))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'callback_endpoint.rotate_secret'`))
	})
}

func TestCallbacks_Enqueue(t *testing.T) {
	t.Parallel()

	// delivered returns a delivered message of a fresh notification, with
	// an endpoint subscribed to message.read (which the sandbox's read
	// receipt would make, so the tests work on a message without one yet).
	setup := func(t *testing.T) (*callbackBundle, *app.Message, uuid.UUID) {
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, nil)
		endpointID, _ := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageRead)
		id := b.Submit(emailNotification("cb-enqueue", "BK-CE", "anna@example.com"))
		m := webtest.OnlyMessage(t, b.WaitMessages(id, "read", webtest.AllStatus(app.MessageRead)))
		b.waitDeliveries(endpointID, "read posted", oneDelivery(app.CallbackSucceeded, 1))
		// Start afresh: the tests below make the read callback themselves.
		b.Exec(`DELETE FROM callback_deliveries`)
		return b, m, endpointID
	}

	t.Run("RolledBackChangeEnqueuesNothing", func(t *testing.T) {
		t.Parallel()
		b, m, endpointID := setup(t)
		jobs := b.Count(`SELECT count(*) FROM river_job WHERE kind = 'callback'`)
		rollBack := errors.New("the status change failed later")
		err := b.Services.Store.InTenant(b.Ctx, b.Tenant.ID, func(tx *db.Tx) error {
			if err := b.Services.Callbacks.Notify(b.Ctx, tx, b.Tenant.ID, m.ID, app.CallbackMessageRead, app.CallbackNote{}); err != nil {
				return err
			}
			return rollBack
		})
		require.ErrorIs(t, err, rollBack)
		require.Empty(t, b.deliveries(endpointID))
		require.Equal(t, jobs, b.Count(`SELECT count(*) FROM river_job WHERE kind = 'callback'`))

		// The same change committed makes its delivery and job.
		require.NoError(t, b.Services.Store.InTenant(b.Ctx, b.Tenant.ID, func(tx *db.Tx) error {
			return b.Services.Callbacks.Notify(b.Ctx, tx, b.Tenant.ID, m.ID, app.CallbackMessageRead, app.CallbackNote{})
		}))
		b.waitDeliveries(endpointID, "posted", oneDelivery(app.CallbackSucceeded, 1))
		require.Equal(t, jobs+1, b.Count(`SELECT count(*) FROM river_job WHERE kind = 'callback'`))
	})

	t.Run("SameChangeTwiceIsOneCallback", func(t *testing.T) {
		t.Parallel()
		b, m, endpointID := setup(t)
		for range 2 {
			require.NoError(t, b.Services.Store.InTenant(b.Ctx, b.Tenant.ID, func(tx *db.Tx) error {
				return b.Services.Callbacks.Notify(b.Ctx, tx, b.Tenant.ID, m.ID, app.CallbackMessageRead, app.CallbackNote{})
			}))
		}
		b.waitDeliveries(endpointID, "posted once", oneDelivery(app.CallbackSucceeded, 1))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM callback_deliveries WHERE message_id = $1`, m.ID))
	})

	t.Run("ConcurrentChangesMakeOneCallback", func(t *testing.T) {
		t.Parallel()
		b, m, endpointID := setup(t)
		jobs := b.Count(`SELECT count(*) FROM river_job WHERE kind = 'callback'`)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				errs <- b.Services.Store.InTenant(b.Ctx, b.Tenant.ID, func(tx *db.Tx) error {
					return b.Services.Callbacks.Notify(b.Ctx, tx, b.Tenant.ID, m.ID, app.CallbackMessageRead, app.CallbackNote{})
				})
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		b.waitDeliveries(endpointID, "posted once", oneDelivery(app.CallbackSucceeded, 1))
		require.Equal(t, jobs+1, b.Count(`SELECT count(*) FROM river_job WHERE kind = 'callback'`))
	})

	t.Run("DuplicateReceiptsMakeOneCallback", func(t *testing.T) {
		t.Parallel()
		b := setupCallbacks(t, callbackSetup{})
		rc := newReceiver(t, nil)
		endpointID, _ := b.createEndpoint(b.Key, rc.URL, app.CallbackMessageDelivered, app.CallbackMessageRead)
		id := b.Submit(emailNotification("cb-dup", "BK-CD", "anna@example.com"))
		m := webtest.OnlyMessage(t, b.WaitMessages(id, "read", webtest.AllStatus(app.MessageRead)))
		b.waitDeliveries(endpointID, "delivered and read posted", func(ds []deliveryView) bool {
			return len(ds) == 2 && ds[0].Status == app.CallbackSucceeded && ds[1].Status == app.CallbackSucceeded
		})

		// The provider reports both again, once with the same receipt ids
		// and once with new ones.
		for _, receiptID := range []string{"", "again"} {
			for _, status := range []string{provider.StatusDelivered, provider.StatusRead} {
				r := provider.Receipt{Provider: *m.Provider, ExternalID: *m.ExternalMessageID, Status: status, At: time.Now()}
				if receiptID != "" {
					r.ReceiptID = receiptID + ":" + status
				}
				b.Receive(app.Internal, r)
			}
		}
		require.Len(t, b.deliveries(endpointID), 2)
		require.Equal(t, 2, b.Count(`SELECT count(*) FROM river_job WHERE kind = 'callback'`))
		require.Equal(t, 2, rc.count())
	})
}
