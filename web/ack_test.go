package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/ses"
	"github.com/heraldhq/herald/web/webtest"
)

// buttonHook is a webhook post of a tap on a template's quick-reply button
// (type button) or an interactive reply button (type interactive), from
// the number to the business number, answering the message wamid.
func buttonHook(kind, replyID, contextID, from, phoneNumberID string, at time.Time) []byte {
	reply := `"type":"button","button":{"payload":"ACK","text":"Verstanden"}`
	if kind == "interactive" {
		reply = `"type":"interactive","interactive":{"type":"button_reply","button_reply":{"id":"ack","title":"Got it"}}`
	}
	return []byte(`{"object":"whatsapp_business_account","entry":[{"id":"WABA","changes":[{"field":"messages","value":{
		"messaging_product":"whatsapp","metadata":{"display_phone_number":"4989","phone_number_id":"` + phoneNumberID + `"},
		"contacts":[{"profile":{"name":"Anna"},"wa_id":"` + from + `"}],
		"messages":[{"context":{"from":"4989","id":"` + contextID + `"},"from":"` + from + `","id":"` + replyID + `","timestamp":"` +
		strconv.FormatInt(at.Unix(), 10) + `",` + reply + `}]}}]}]}`)
}

// ackDepartureChanged is a DEPARTURE_CHANGED (a safety event: it asks for
// acknowledgement) for Anna on WhatsApp.
func ackDepartureChanged(eventID string) map[string]any {
	def, _ := app.BuiltInEvent("DEPARTURE_CHANGED")
	return map[string]any{"event_id": eventID, "trigger_event": "DEPARTURE_CHANGED", "context": def.Sample, "channels": []string{"WHATSAPP"},
		"recipients":           []map[string]any{{"name": "Anna", "phone": "+4915123456789", "locale": "de-DE"}},
		"conversation_context": map[string]any{"type": "booking", "id": "BK-ACK"}}
}

func TestAcknowledgements_MetaButton(t *testing.T) {
	t.Parallel()
	fake := newFakeMeta(t)
	p := webtest.New(t, webtest.Options{Config: func(cfg *app.Config) { cfg.MetaBaseURL = fake.URL }})
	sb := p.ActiveAccount(app.WhatsApp)
	require.NoError(t, p.Services.Accounts.SetStatus(p.Ctx, app.CLIActor, p.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	const appSecret = "meta-app-secret"
	_, err := p.Services.Accounts.Create(p.Ctx, app.CLIActor, p.Tenant.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "Acme WhatsApp", Activate: true,
		Config:  app.Attrs{"phone_number_id": "1234567890", "waba_id": "WABA"},
		Secrets: map[string]string{"access_token": "EAAG-test-token", "app_secret": appSecret},
	})
	require.NoError(t, err)
	post := func(path, secret string, body []byte) map[string]any {
		code, out := postWebhook(p, path, body, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta(secret, body)})
		require.Equal(t, http.StatusOK, code)
		return out["outcomes"].(map[string]any)
	}
	// Anna wrote first, so the notices go as free-form text.
	post("/webhooks/meta/acme", appSecret, inboundHook("wamid.IN0", "4915123456789", "Hallo!", time.Now()))
	first := webtest.OnlyMessage(t, p.WaitMessages(p.Submit(ackDepartureChanged("dep-1")), "sent", webtest.AllStatus(app.MessageSent)))
	second := webtest.OnlyMessage(t, p.WaitMessages(p.Submit(ackDepartureChanged("dep-2")), "sent", webtest.AllStatus(app.MessageSent)))
	fake.mu.Lock()
	require.Contains(t, fake.requests[0]["text"].(map[string]any)["body"], "/ack/", "free-form text carries the signed link")
	fake.mu.Unlock()
	acked := func(id string) int {
		return p.Count(`SELECT count(*) FROM messages WHERE id = $1 AND acknowledged_at IS NOT NULL AND ack_via = 'whatsapp_button'`, id)
	}

	t.Run("OtherTenantCannotAcknowledge", func(t *testing.T) {
		globex, err := p.Services.Tenants.Create(p.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex", Plan: app.PlanPro})
		require.NoError(t, err)
		webtest.CreateMetaAccount(t, p.Ctx, p.Services, globex, app.Attrs{"phone_number_id": "999000999"})
		// Globex's signed post names Acme's wamid, from Globex's number or
		// claiming Acme's: neither acknowledges.
		for _, number := range []string{"999000999", "1234567890"} {
			out := post("/webhooks/meta/globex", "app-secret-globex", buttonHook("button", "wamid.X-"+number, *first.ExternalMessageID, "4915123456789", number, time.Now()))
			require.Nil(t, out["acknowledged"])
		}
		// Acme's own webhook, from another number than the message's.
		out := post("/webhooks/meta/acme", appSecret, buttonHook("button", "wamid.X-stranger", *first.ExternalMessageID, "4915199999999", "1234567890", time.Now()))
		require.Nil(t, out["acknowledged"])
		require.Zero(t, acked(first.ID.String()))
	})

	t.Run("ButtonReplyAcknowledgesOnce", func(t *testing.T) {
		hook := buttonHook("button", "wamid.BTN1", *first.ExternalMessageID, "4915123456789", "1234567890", time.Now())
		require.EqualValues(t, 1, post("/webhooks/meta/acme", appSecret, hook)["acknowledged"])
		require.Nil(t, post("/webhooks/meta/acme", appSecret, hook)["acknowledged"], "a replay acknowledges nothing again")
		require.Equal(t, 1, acked(first.ID.String()))
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM message_events WHERE message_id = $1 AND detail->>'acknowledged' = 'true'
			AND detail->>'via' = 'whatsapp_button' AND detail->>'button' = 'Verstanden'`, first.ID), "one timeline entry")
		require.Equal(t, 1, p.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'SENT'`, first.ID), "the status stays")
		require.Zero(t, acked(second.ID.String()))
	})

	t.Run("InteractiveButtonReply", func(t *testing.T) {
		hook := buttonHook("interactive", "wamid.BTN2", *second.ExternalMessageID, "4915123456789", "1234567890", time.Now())
		require.EqualValues(t, 1, post("/webhooks/meta/acme", appSecret, hook)["acknowledged"])
		require.Equal(t, 1, acked(second.ID.String()))
	})

	t.Run("BadSignatureChangesNothing", func(t *testing.T) {
		third := webtest.OnlyMessage(t, p.WaitMessages(p.Submit(ackDepartureChanged("dep-3")), "sent", webtest.AllStatus(app.MessageSent)))
		hook := buttonHook("button", "wamid.BTN3", *third.ExternalMessageID, "4915123456789", "1234567890", time.Now())
		code, _ := postWebhook(p, "/webhooks/meta/acme", hook, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta("wrong", hook)})
		require.Equal(t, http.StatusUnauthorized, code)
		require.Zero(t, acked(third.ID.String()))
	})
}

// ackRequest makes a request of an acknowledgement page and parses it.
func ackRequest(t *testing.T, h *webtest.Herald, method, path string) (int, *goquery.Document) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	resp, err := h.App.Test(req, -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		t.Logf("%s %s: %s", method, path, b)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(b)))
	require.NoError(t, err)
	return resp.StatusCode, doc
}

func TestAcknowledgements_LinkAndTrip(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})
	h := c.Herald
	const trip = "T-ACK-3"
	bookTrip(t, h, trip, []tripPassenger{
		{booking: "BK-A1", name: "Anna", phone: "+4915123420001", email: "anna@example.com", locale: "de-DE"},
		{booking: "BK-A2", name: "Ben", phone: "+4915123420002", email: "ben@example.com", locale: "en"},
		// The sandbox refuses this number and address: never reached.
		{booking: "BK-A3", name: "Cara", phone: "+4915123480000", email: "fail@example.com", locale: "en"},
	})
	sent := submitAnswer(t, h, h.Key, tripIncident("incident-ack", trip))
	approver := keyWith(t, h, h.Tenant.ID, app.ScopeApprove)
	require.Equal(t, http.StatusOK, h.RequestWithKey(approver, http.MethodPost, "/api/v1/notifications/"+sent.ID.String()+"/approve", map[string]any{}, nil))
	ms := h.WaitMessages(sent.ID, "Anna and Ben reached, Cara failed everywhere", func(ms []*app.Message) bool {
		done := 0
		for _, m := range ms {
			if m.Status == app.MessageDelivered || m.Status == app.MessageRead || (m.Status == app.MessageFailed && len(m.FallbackChain) == 0) {
				done++
			}
		}
		return done == 3
	})
	var anna *app.Message
	for _, m := range ms {
		if *m.RecipientIndex == 0 || m.ToAddress == "+4915123420001" {
			anna = m
		}
	}
	require.NotNil(t, anna)
	anna.TenantID = h.Tenant.ID // the API leaves it out
	link, err := url.Parse(h.Services.Acks.Links.URL(anna, time.Now()))
	require.NoError(t, err)

	t.Run("GetAsksPostConfirmsOnce", func(t *testing.T) {
		code, doc := ackRequest(t, h, http.MethodGet, link.Path)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "ask", doc.Find("[data-ack-state]").AttrOr("data-ack-state", ""))
		require.Zero(t, h.Count(`SELECT count(*) FROM messages WHERE id = $1 AND acknowledged_at IS NOT NULL`, anna.ID), "opening changes nothing")
		for range 2 {
			code, doc = ackRequest(t, h, http.MethodPost, link.Path)
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, "done", doc.Find("[data-ack-state]").AttrOr("data-ack-state", ""))
		}
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM messages WHERE id = $1 AND ack_via = 'link'`, anna.ID))
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM message_events WHERE message_id = $1 AND detail->>'acknowledged' = 'true'`, anna.ID))
	})

	t.Run("InvalidAndExpiredLinks", func(t *testing.T) {
		token := strings.TrimPrefix(link.Path, "/ack/")
		tampered := token[:len(token)-2] + map[bool]string{true: "AA", false: "AB"}[!strings.HasSuffix(token, "AA")]
		expired := h.Services.Acks.Links.Token(app.AckTarget{TenantID: anna.TenantID, MessageID: anna.ID, Expires: time.Now().Add(-time.Minute)})
		for path, want := range map[string]string{"/ack/" + tampered: "not valid", "/ack/garbage": "not valid", "/ack/" + expired: "expired"} {
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				code, doc := ackRequest(t, h, method, path)
				require.Equal(t, http.StatusUnauthorized, code, path)
				require.Equal(t, "problem", doc.Find("[data-ack-state]").AttrOr("data-ack-state", ""))
				require.Contains(t, text(doc.Find("[role=alert]")), want)
			}
		}
	})

	t.Run("TripPageAndAPI", func(t *testing.T) {
		doc := c.signIn(asSupport).page("/t/acme/trips/" + trip)
		require.Equal(t, "1 of 3 acknowledged; call this one", text(doc.Find("[data-summary]")))
		require.Equal(t, "1", text(doc.Find(`[data-stat="acknowledged"]`)))
		rows := doc.Find("table.trip-unreached tbody tr")
		require.Equal(t, 1, rows.Length())
		require.Contains(t, text(rows), "Cara")
		require.Contains(t, text(rows), "+4915123480000")
		require.Contains(t, text(doc.Find(`table.trip-acks tr[data-passenger="Anna"] [data-ack]`)), "yes, link")

		var reach struct {
			AsksAck  bool   `json:"asks_acknowledgement"`
			Summary  string `json:"summary"`
			CallList []struct {
				Name, Phone string
			} `json:"call_list"`
			Counts struct{ Acknowledged, Passengers int } `json:"counts"`
		}
		require.Equal(t, http.StatusOK, h.Request(http.MethodGet, "/api/v1/trips/"+trip+"/reach", nil, &reach))
		require.True(t, reach.AsksAck)
		require.Equal(t, "1 of 3 acknowledged; call this one", reach.Summary)
		require.Equal(t, 1, reach.Counts.Acknowledged)
		require.Len(t, reach.CallList, 1)
		require.Equal(t, "+4915123480000", reach.CallList[0].Phone)

		var e apiErrorBody
		require.Equal(t, http.StatusUnprocessableEntity, h.Request(http.MethodGet, "/api/v1/trips/"+trip+"/reach?event=nope", nil, &e))
		require.Equal(t, "event", e.Error.Field)
		require.Equal(t, http.StatusNotFound, h.Request(http.MethodGet, "/api/v1/trips/T-NEVER/reach", nil, nil))
	})
}

// TestAcknowledgements_Callback: a passenger's acknowledgement reaches
// the tenant's subscribed endpoint as a signed message.acknowledged
// callback, once however often it is confirmed.
func TestAcknowledgements_Callback(t *testing.T) {
	t.Parallel()
	b := setupCallbacks(t, callbackSetup{})
	rc := newReceiver(t, nil)
	endpointID, secret := b.createEndpoint(b.Key, rc.URL+"/herald", app.CallbackMessageAcknowledged)
	def, _ := app.BuiltInEvent("DEPARTURE_CHANGED")
	id := b.Submit(map[string]any{"event_id": "ack-cb", "trigger_event": "DEPARTURE_CHANGED", "context": def.Sample, "channels": []string{"EMAIL"},
		"recipients": []map[string]any{{"name": "Anna", "email": "anna@example.com", "locale": "en"}}})
	m := webtest.OnlyMessage(t, b.WaitMessages(id, "read", webtest.AllStatus(app.MessageRead)))
	m.TenantID = b.Tenant.ID // the API leaves it out
	link, err := url.Parse(b.Services.Acks.Links.URL(m, time.Now()))
	require.NoError(t, err)
	require.Zero(t, rc.count(), "sent, delivered and read are not subscribed")

	code, _ := ackRequest(t, b.Herald, http.MethodPost, link.Path)
	require.Equal(t, http.StatusOK, code)
	p := rc.next(t)
	require.NoError(t, verifyStandardWebhook(secret, p, time.Now()))
	payload := p.payload(t)
	require.Equal(t, app.CallbackMessageAcknowledged, payload["type"])
	data := payload["data"].(map[string]any)
	require.Equal(t, m.ID.String(), data["message_id"])
	require.Equal(t, app.AckViaLink, data["ack_via"])
	at, err := time.Parse(time.RFC3339Nano, data["acknowledged_at"].(string))
	require.NoError(t, err)
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM messages WHERE id = $1 AND acknowledged_at = $2 AND ack_via = 'link'`, m.ID, at),
		"the stored acknowledgement")
	require.Equal(t, "DEPARTURE_CHANGED", data["trigger_event"])
	b.waitDeliveries(endpointID, "the delivery succeeded", oneDelivery(app.CallbackSucceeded, 1))

	// A second confirmation (a replay) makes no delivery: the delivery
	// would be written in the confirming transaction, so there is nothing
	// to wait for.
	code, _ = ackRequest(t, b.Herald, http.MethodPost, link.Path)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 1, b.Count(`SELECT count(*) FROM callback_deliveries WHERE message_id = $1`, m.ID))
	require.Len(t, b.deliveries(endpointID), 1)
	require.Equal(t, 1, rc.count())
}

// htmlTo returns the HTML body of the SendEmail request to addr, as SES
// received it (SESv2's Simple content: Herald sends no raw MIME).
func (r *sesRecorder) htmlTo(t *testing.T, addr string) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bodies {
		if b["Destination"].(map[string]any)["ToAddresses"].([]any)[0] != addr {
			continue
		}
		body := b["Content"].(map[string]any)["Simple"].(map[string]any)["Body"].(map[string]any)
		return body["Html"].(map[string]any)["Data"].(string)
	}
	t.Fatalf("no SendEmail to %s", addr)
	return ""
}

// TestAcknowledgements_EmailLinkThroughSES: a safety event's e-mail, as
// SES receives it, carries the signed link, whose page asks to confirm;
// the link is throttled per client like the other public links, and a
// throttled confirmation confirms nothing.
func TestAcknowledgements_EmailLinkThroughSES(t *testing.T) {
	t.Parallel()
	rec := newSESRecorder(t)
	p := webtest.New(t, webtest.Options{Providers: provider.Set{"ses": &ses.Provider{Endpoint: rec.URL}},
		Config: func(cfg *app.Config) { cfg.ClientIPHeader = "X-Client-IP" }})
	useProvider(t, p, app.Email, "ses")
	def, _ := app.BuiltInEvent("DEPARTURE_CHANGED")
	m := webtest.OnlyMessage(t, p.WaitMessages(p.Submit(map[string]any{"event_id": "ack-ses", "trigger_event": "DEPARTURE_CHANGED",
		"context": def.Sample, "channels": []string{"EMAIL"},
		"recipients": []map[string]any{{"name": "Anna", "email": "anna@example.com", "locale": "de-DE"}}}),
		"sent through ses", webtest.AllStatus(app.MessageSent)))

	doc, err := goquery.NewDocumentFromReader(strings.NewReader(rec.htmlTo(t, "anna@example.com")))
	require.NoError(t, err)
	a := doc.Find(`a[href*="/ack/"]`)
	require.Equal(t, 1, a.Length(), "one acknowledgement link")
	require.Equal(t, "Verstanden", text(a))
	link, err := url.Parse(a.AttrOr("href", ""))
	require.NoError(t, err)
	require.Equal(t, "localhost:8080", link.Host, "the deployment's public URL")
	token := strings.TrimPrefix(link.Path, "/ack/")
	target, err := p.Services.Acks.Links.Parse(token, time.Now())
	require.NoError(t, err)
	require.Equal(t, p.Tenant.ID, target.TenantID)
	require.Equal(t, m.ID, target.MessageID)

	frozen := time.Now()
	limits := p.Services.PublicLimits
	limits.BucketNow = func() time.Time { return frozen }
	limits.ClientBurst, limits.ClientRate = 5, 1
	ack := func(method, client string) (int, *http.Response) {
		t.Helper()
		r := httptest.NewRequest(method, link.Path, nil)
		r.Header.Set("X-Client-IP", client)
		resp, err := p.App.Test(r, -1)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp.StatusCode, resp
	}
	code, resp := ack(http.MethodGet, "203.0.113.9")
	require.Equal(t, http.StatusOK, code)
	page, err := goquery.NewDocumentFromReader(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "ask", page.Find("[data-ack-state]").AttrOr("data-ack-state", ""), "the link verifies: the page asks")
	for n := range int(limits.ClientBurst) - 1 {
		code, _ := ack(http.MethodGet, "203.0.113.9")
		require.Equal(t, http.StatusOK, code, "request %d", n+2)
	}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		code, resp := ack(method, "203.0.113.9")
		require.Equal(t, http.StatusTooManyRequests, code, method)
		require.NotEmpty(t, resp.Header.Get("Retry-After"))
	}
	acked := `SELECT count(*) FROM messages WHERE id = $1 AND acknowledged_at IS NOT NULL`
	require.Zero(t, p.Count(acked, m.ID), "a throttled confirmation confirms nothing")
	require.Zero(t, p.Count(`SELECT count(*) FROM message_events WHERE message_id = $1 AND detail->>'acknowledged' = 'true'`, m.ID))
	// Another client is served, and confirms.
	code, _ = ack(http.MethodPost, "198.51.100.9")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 1, p.Count(acked, m.ID))
}

// TestAcknowledgements_SMSPartsCountTheLink: a safety event's SMS whose
// content fills one part is stored as the two parts it is sent as, once
// the acknowledgement link is added (the cost estimate, computed from the
// stored parts after they are counted, follows).
func TestAcknowledgements_SMSPartsCountTheLink(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})
	// "New departure time for <tour>: <time>, boarding at <stop>." is 75
	// characters besides the tour's name: 160, one part, with this one.
	tour := strings.Repeat("T", 85)
	submit := func(eventID, trigger string) *app.Message {
		t.Helper()
		body := map[string]any{"event_id": eventID, "trigger_event": trigger,
			"context": map[string]any{"passenger_name": "Anna", "tour_name": tour, "departure_at": "2027-04-12T09:30:00+02:00",
				"boarding_point_name": "Munich ZOB"},
			"channels": []string{"SMS"}, "recipients": []map[string]any{{"name": "Anna", "phone": "+4915123456701", "locale": "en"}}}
		var out struct {
			ID    string
			Error map[string]any
		}
		require.Equal(t, http.StatusAccepted, p.Request(http.MethodPost, "/api/v1/notifications", body, &out), "%+v", out.Error)
		return webtest.OnlyMessage(t, p.WaitMessages(uuid.MustParse(out.ID), "sent", sentOrLater))
	}
	m := submit("sms-ack-parts", "DEPARTURE_CHANGED")
	require.Equal(t, 160, len(m.Body), m.Body)
	require.Equal(t, 1, app.CountSMS(m.Body).Parts, "the content alone fits one part")
	m.TenantID = p.Tenant.ID
	sent := m.Body + "\n\nPlease confirm you got this: " + p.Services.Acks.Links.URL(m, time.Now())
	require.Equal(t, 2, app.CountSMS(sent).Parts)
	require.NotNil(t, m.SMSParts)
	require.Equal(t, 2, *m.SMSParts, "the stored count is the text sent")
	require.Equal(t, 1, p.Count(`SELECT count(*) FROM messages WHERE id = $1 AND sms_parts = 2`, m.ID))
}
