package web_test

import (
	"context"
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

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsnotify/awsnotifytest"
	"github.com/heraldhq/herald/app/provider/ses"
	"github.com/heraldhq/herald/app/provider/sns"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/web/webtest"
)

// contactByPhone returns the tenant's contact with the phone number, or nil.
func contactByPhone(t *testing.T, p *webtest.Herald, tenantID uuid.UUID, phone string) *app.Contact {
	t.Helper()
	cs, _, err := p.Services.Contacts.List(p.Ctx, tenantID, app.ContactFilter{Phone: phone}, 10, 0)
	require.NoError(t, err)
	if len(cs) == 0 {
		return nil
	}
	require.Len(t, cs, 1)
	return cs[0]
}

// optOutChanges returns the opted_out entries of a contact's history, oldest first.
func optOutChanges(t *testing.T, p *webtest.Herald, tenantID, contactID uuid.UUID) []*app.ContactChange {
	t.Helper()
	d, err := p.Services.Contacts.Get(p.Ctx, tenantID, contactID)
	require.NoError(t, err)
	var out []*app.ContactChange
	for i := len(d.History) - 1; i >= 0; i-- {
		if d.History[i].Field == "opted_out" {
			out = append(out, d.History[i])
		}
	}
	return out
}

// confirmations returns the keyword answers queued for a contact.
func confirmations(t *testing.T, p *webtest.Herald, contactID uuid.UUID) []string {
	t.Helper()
	var bodies []string
	require.NoError(t, p.Services.Store.InPlatform(p.Ctx, func(tx *db.Tx) error {
		rows, err := tx.SQL().QueryContext(p.Ctx, `SELECT body FROM messages WHERE contact_id = $1 AND trigger_event = $2 ORDER BY created_at`,
			contactID, app.PreferenceTrigger)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var b string
			if err := rows.Scan(&b); err != nil {
				return err
			}
			bodies = append(bodies, b)
		}
		return rows.Err()
	}))
	return bodies
}

// metaHook is a signed-ready webhook post with one text message from a
// number to the business number phoneNumberID, sent at at.
func metaHook(phoneNumberID, wamid, from, text string, at time.Time) []byte {
	b, _ := json.Marshal(text)
	return []byte(`{"object":"whatsapp_business_account","entry":[{"id":"WABA","changes":[{"field":"messages","value":{
		"messaging_product":"whatsapp","metadata":{"display_phone_number":"4989","phone_number_id":"` + phoneNumberID + `"},
		"contacts":[{"profile":{"name":"Anna"},"wa_id":"` + from + `"}],
		"messages":[{"from":"` + from + `","id":"` + wamid + `","timestamp":"` + strconv.FormatInt(at.Unix(), 10) + `","type":"text","text":{"body":` + string(b) + `}}]}}]}]}`)
}

func TestPreferences_WhatsAppKeywords(t *testing.T) {
	t.Parallel()
	fake := newFakeMeta(t)
	p := webtest.New(t, webtest.Options{Config: func(cfg *app.Config) { cfg.MetaBaseURL = fake.URL }})
	const appSecret = "meta-app-secret"
	sb := p.ActiveAccount(app.WhatsApp)
	require.NoError(t, p.Services.Accounts.SetStatus(p.Ctx, app.CLIActor, p.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	_, err := p.Services.Accounts.Create(p.Ctx, app.CLIActor, p.Tenant.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "Acme WhatsApp", Activate: true,
		Config:  app.Attrs{"phone_number_id": "1234567890", "waba_id": "WABA"},
		Secrets: map[string]string{"access_token": "EAAG-test-token", "app_secret": appSecret},
	})
	require.NoError(t, err)
	// Another tenant, with its own number.
	globex, err := p.Services.Tenants.Create(p.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex", Plan: app.PlanPro})
	require.NoError(t, err)
	var globexSandbox *app.ChannelAccount
	require.NoError(t, p.Services.Store.InTenant(p.Ctx, globex.ID, func(tx *db.Tx) (err error) {
		globexSandbox, err = tx.ActiveAccount(p.Ctx, globex.ID, app.WhatsApp)
		return err
	}))
	require.NoError(t, p.Services.Accounts.SetStatus(p.Ctx, app.CLIActor, globex.ID, globexSandbox.ID, app.AccountDisabled, ""))
	_, err = p.Services.Accounts.Create(p.Ctx, app.CLIActor, globex.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "Globex WhatsApp", Activate: true,
		Config:  app.Attrs{"phone_number_id": "2222222222", "waba_id": "WABA2"},
		Secrets: map[string]string{"access_token": "EAAG-globex", "app_secret": "globex-secret"},
	})
	require.NoError(t, err)

	post := func(body []byte, secret string) (int, map[string]any) {
		t.Helper()
		return postWebhook(p, "/webhooks/meta/acme", body, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta(secret, body)})
	}
	t0 := time.Now().Add(-10 * time.Minute).Truncate(time.Second)

	t.Run("StopOptsOutOnceAndIsAnswered", func(t *testing.T) {
		hook := metaHook("1234567890", "wamid.S1", "4915100000001", " sToP \n", t0)
		code, out := post(hook, appSecret)
		require.Equal(t, http.StatusOK, code)
		require.EqualValues(t, 1, out["outcomes"].(map[string]any)["inbound"])
		// Meta delivers at least once: the same message again changes nothing.
		code, out = post(hook, appSecret)
		require.Equal(t, http.StatusOK, code)
		require.EqualValues(t, 1, out["outcomes"].(map[string]any)["inbound_duplicate"])

		c := contactByPhone(t, p, p.Tenant.ID, "+4915100000001")
		require.Equal(t, app.StringList{"WHATSAPP"}, c.OptedOut)
		hist := optOutChanges(t, p, p.Tenant.ID, c.ID)
		require.Len(t, hist, 1)
		require.Equal(t, app.ChangeSourceWhatsAppKeyword, hist[0].Source)
		require.Equal(t, "WHATSAPP", *hist[0].NewValue)
		require.Contains(t, hist[0].ActorLabel, "STOP by WhatsApp")
		require.True(t, hist[0].At.Equal(t0), "the decision's time is Meta's timestamp")

		// One answer, as free-form text inside the window the STOP opened,
		// actually sent to Meta.
		bodies := confirmations(t, p, c.ID)
		require.Len(t, bodies, 1)
		require.Contains(t, bodies[0], "no longer receive reminders and offers on WhatsApp")
		require.Contains(t, bodies[0], "Booking confirmations")
		p.WaitUntil("the answer is sent", func() bool {
			return p.Count(`SELECT count(*) FROM messages WHERE contact_id = $1 AND trigger_event = $2 AND status = 'SENT'`, c.ID, app.PreferenceTrigger) == 1
		})
		fake.mu.Lock()
		last := fake.requests[len(fake.requests)-1]
		fake.mu.Unlock()
		require.Equal(t, "text", last["type"])
	})

	t.Run("GermanKeywordsAnsweredInGerman", func(t *testing.T) {
		post(metaHook("1234567890", "wamid.G1", "4915100000002", "ABMELDEN", t0), appSecret)
		c := contactByPhone(t, p, p.Tenant.ID, "+4915100000002")
		require.Equal(t, app.StringList{"WHATSAPP"}, c.OptedOut)
		post(metaHook("1234567890", "wamid.G2", "4915100000002", "Anmelden", t0.Add(time.Minute)), appSecret)
		c = contactByPhone(t, p, p.Tenant.ID, "+4915100000002")
		require.Empty(t, c.OptedOut)
		bodies := confirmations(t, p, c.ID)
		require.Len(t, bodies, 2)
		require.Contains(t, bodies[0], "keine Erinnerungen")
		require.Contains(t, bodies[1], "wieder Erinnerungen")
		require.Len(t, optOutChanges(t, p, p.Tenant.ID, c.ID), 2)
	})

	t.Run("ReversedDeliveryDecidedByTimestamp", func(t *testing.T) {
		// The passenger wrote STOP, then START a minute later; Meta
		// delivers START first.
		stop := metaHook("1234567890", "wamid.R1", "4915100000003", "STOP", t0)
		start := metaHook("1234567890", "wamid.R2", "4915100000003", "START", t0.Add(time.Minute))
		post(start, appSecret)
		post(stop, appSecret)
		c := contactByPhone(t, p, p.Tenant.ID, "+4915100000003")
		require.Empty(t, c.OptedOut, "the later START wins")
		require.Empty(t, optOutChanges(t, p, p.Tenant.ID, c.ID), "START changed nothing and the older STOP is ignored")
		bodies := confirmations(t, p, c.ID)
		require.Len(t, bodies, 1, "only the decided keyword is answered")
		require.Contains(t, bodies[0], "again")

		// In order, the same two keywords opt out and back in.
		post(metaHook("1234567890", "wamid.R3", "4915100000004", "STOP", t0), appSecret)
		post(metaHook("1234567890", "wamid.R4", "4915100000004", "START", t0.Add(time.Minute)), appSecret)
		c = contactByPhone(t, p, p.Tenant.ID, "+4915100000004")
		require.Empty(t, c.OptedOut)
		require.Len(t, optOutChanges(t, p, p.Tenant.ID, c.ID), 2)
	})

	t.Run("KeywordOlderThanConsoleDecision", func(t *testing.T) {
		post(metaHook("1234567890", "wamid.C1", "4915100000005", "Hello", t0), appSecret)
		c := contactByPhone(t, p, p.Tenant.ID, "+4915100000005")
		_, err := p.Services.Contacts.SetOptOut(p.Ctx, app.CLIActor, p.Tenant.ID, c.ID, []string{"WHATSAPP"}, true)
		require.NoError(t, err)
		// A START written before that decision, delivered after it.
		post(metaHook("1234567890", "wamid.C2", "4915100000005", "START", t0.Add(time.Minute)), appSecret)
		require.Equal(t, app.StringList{"WHATSAPP"}, contactByPhone(t, p, p.Tenant.ID, "+4915100000005").OptedOut)
	})

	t.Run("SentenceIsNotAKeyword", func(t *testing.T) {
		post(metaHook("1234567890", "wamid.N1", "4915100000006", "please stop the reminders", t0), appSecret)
		c := contactByPhone(t, p, p.Tenant.ID, "+4915100000006")
		require.Empty(t, c.OptedOut)
		require.Empty(t, confirmations(t, p, c.ID))
	})

	t.Run("OtherTenantsNumberChangesNothing", func(t *testing.T) {
		// Signed with acme's secret on acme's path, but naming globex's
		// business number: acme has no such number, globex did not sign.
		code, _ := post(metaHook("2222222222", "wamid.W1", "4915100000007", "STOP", t0), appSecret)
		require.Equal(t, http.StatusOK, code)
		c := contactByPhone(t, p, p.Tenant.ID, "+4915100000007")
		require.NotNil(t, c, "the message is kept")
		require.Empty(t, c.OptedOut)
		require.Empty(t, confirmations(t, p, c.ID))
		require.Nil(t, contactByPhone(t, p, globex.ID, "+4915100000007"))
	})

	t.Run("BadSignatureRefused", func(t *testing.T) {
		code, _ := post(metaHook("1234567890", "wamid.B1", "4915100000008", "STOP", t0), "forged-secret")
		require.Equal(t, http.StatusUnauthorized, code)
		require.Nil(t, contactByPhone(t, p, p.Tenant.ID, "+4915100000008"))
		require.Zero(t, p.Count(`SELECT count(*) FROM inbound_messages WHERE external_id = 'wamid.B1'`))
	})
}

const smsTopic = "arn:aws:sns:eu-central-1:123456789012:herald-sms-inbound"

func TestPreferences_SMSKeywords(t *testing.T) {
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

	t0 := time.Now().Add(-10 * time.Minute)
	post := func(from, to, text, id string, at time.Time) (int, map[string]any) {
		t.Helper()
		msg, _ := json.Marshal(map[string]string{"originationNumber": from, "destinationNumber": to, "messageKeyword": "KEYWORD_123",
			"messageBody": text, "inboundMessageId": id})
		e := signer.Notification(smsTopic, string(msg))
		e.Timestamp = at.UTC().Format(time.RFC3339Nano)
		signer.Sign(e, "2")
		return postWebhook(p, "/webhooks/sns-sms", envelopeJSON(t, e), map[string]string{"x-amz-sns-message-type": "Notification"})
	}

	t.Run("StopAndDuplicate", func(t *testing.T) {
		code, out := post("+4915200000001", "+4989111222", "Stopp", "in-1", t0)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "inbound", out["outcome"])
		_, out = post("+4915200000001", "+4989111222", "Stopp", "in-1", t0)
		require.Equal(t, "inbound_duplicate", out["outcome"])
		c := contactByPhone(t, p, p.Tenant.ID, "+4915200000001")
		require.Equal(t, app.StringList{"SMS"}, c.OptedOut)
		hist := optOutChanges(t, p, p.Tenant.ID, c.ID)
		require.Len(t, hist, 1)
		require.Equal(t, app.ChangeSourceSMSKeyword, hist[0].Source)
		bodies := confirmations(t, p, c.ID)
		require.Len(t, bodies, 1)
		require.Contains(t, bodies[0], "über SMS keine Erinnerungen")
		p.WaitUntil("the SMS answer is sent", func() bool {
			return p.Count(`SELECT count(*) FROM messages WHERE contact_id = $1 AND trigger_event = $2 AND status = 'SENT'`, c.ID, app.PreferenceTrigger) == 1
		})
	})

	t.Run("ReversedByTimestamp", func(t *testing.T) {
		post("+4915200000002", "+4989111222", "START", "in-2b", t0.Add(time.Minute))
		post("+4915200000002", "+4989111222", "STOP", "in-2a", t0)
		c := contactByPhone(t, p, p.Tenant.ID, "+4915200000002")
		require.Empty(t, c.OptedOut)
		require.Len(t, confirmations(t, p, c.ID), 1)
	})

	t.Run("UnknownNumberIgnored", func(t *testing.T) {
		code, out := post("+4915200000003", "+4930999999", "STOP", "in-3", t0)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "ignored", out["outcome"])
		require.Nil(t, contactByPhone(t, p, p.Tenant.ID, "+4915200000003"))
	})

	t.Run("BadSignatureRefused", func(t *testing.T) {
		msg := `{"originationNumber":"+4915200000004","destinationNumber":"+4989111222","messageBody":"STOP","inboundMessageId":"in-4"}`
		e := signer.Notification(smsTopic, msg)
		e.Message = strings.Replace(e.Message, "0004", "0005", 1)
		code, _ := postWebhook(p, "/webhooks/sns-sms", envelopeJSON(t, e), map[string]string{"x-amz-sns-message-type": "Notification"})
		require.Equal(t, http.StatusForbidden, code)
		require.Nil(t, contactByPhone(t, p, p.Tenant.ID, "+4915200000005"))
		require.Nil(t, contactByPhone(t, p, p.Tenant.ID, "+4915200000004"))
	})
}

// sesRecorder stands in for SES's SendEmail and keeps every request body.
type sesRecorder struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newSESRecorder(t *testing.T) *sesRecorder {
	r := &sesRecorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		r.mu.Lock()
		r.bodies = append(r.bodies, body)
		n := len(r.bodies)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"MessageId":"ses-%d-%s"}`, n, uuid.NewString())
	}))
	t.Cleanup(r.Close)
	return r
}

// headersTo returns the custom headers of the SendEmail request to addr.
func (r *sesRecorder) headersTo(t *testing.T, addr string) map[string]string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bodies {
		to := b["Destination"].(map[string]any)["ToAddresses"].([]any)
		if to[0] != addr {
			continue
		}
		out := map[string]string{}
		simple := b["Content"].(map[string]any)["Simple"].(map[string]any)
		if hs, ok := simple["Headers"].([]any); ok {
			for _, h := range hs {
				m := h.(map[string]any)
				out[m["Name"].(string)] = m["Value"].(string)
			}
		}
		return out
	}
	t.Fatalf("no SendEmail to %s", addr)
	return nil
}

func TestPreferences_EmailUnsubscribe(t *testing.T) {
	t.Parallel()
	rec := newSESRecorder(t)
	p := webtest.New(t, webtest.Options{Providers: provider.Set{"ses": &ses.Provider{Endpoint: rec.URL}}})
	useProvider(t, p, app.Email, "ses")

	sendEmail := func(eventID, trigger, addr string) *app.Message {
		t.Helper()
		b := webtest.Reminder(eventID, "BK-"+eventID)
		if trigger == "BOOKING_CONFIRMED" {
			b = webtest.Notification(eventID, "BK-"+eventID)
		}
		b["recipients"] = []map[string]any{{"name": "Anna", "email": addr}}
		b["channels"] = []string{"EMAIL"}
		return webtest.OnlyMessage(t, p.WaitMessages(p.Submit(b), "sent through ses", webtest.AllStatus(app.MessageSent)))
	}
	unsubscribe := func(method, path, body string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := p.App.Test(req, -1)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	pathOf := func(t *testing.T, header string) string {
		t.Helper()
		require.True(t, strings.HasPrefix(header, "<http://localhost:8080/unsubscribe/") && strings.HasSuffix(header, ">"), header)
		return strings.TrimSuffix(strings.TrimPrefix(header, "<http://localhost:8080"), ">")
	}

	t.Run("OptionalEmailCarriesOneClickHeaders", func(t *testing.T) {
		m := sendEmail("u-1", "PRE_TRIP_REMINDER", "u1@example.com")
		h := rec.headersTo(t, "u1@example.com")
		require.Equal(t, "List-Unsubscribe=One-Click", h["List-Unsubscribe-Post"])
		token := strings.TrimPrefix(pathOf(t, h["List-Unsubscribe"]), "/unsubscribe/")
		target, err := p.Services.Preferences.Links.Parse(token)
		require.NoError(t, err)
		require.Equal(t, app.UnsubscribeTarget{TenantID: p.Tenant.ID, ContactID: *m.ContactID, MessageID: m.ID}, target)
	})

	t.Run("TransactionalEmailHasNone", func(t *testing.T) {
		sendEmail("u-2", "BOOKING_CONFIRMED", "u2@example.com")
		require.Empty(t, rec.headersTo(t, "u2@example.com"))
	})

	t.Run("GetAsksPostUnsubscribesReplayIsANoOp", func(t *testing.T) {
		m := sendEmail("u-3", "PRE_TRIP_REMINDER", "u3@example.com")
		path := pathOf(t, rec.headersTo(t, "u3@example.com")["List-Unsubscribe"])

		code, page := unsubscribe(http.MethodGet, path, "")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, page, "Unsubscribe from e-mails")
		require.Contains(t, page, `method="post"`)
		require.Contains(t, page, "Acme Tours")
		require.Empty(t, optOutChanges(t, p, p.Tenant.ID, *m.ContactID), "opening the page changes nothing")

		// The mail client's one-click POST, without a session.
		code, page = unsubscribe(http.MethodPost, path, "List-Unsubscribe=One-Click")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, page, "You are unsubscribed")
		require.Contains(t, page, "booking confirmations")
		hist := optOutChanges(t, p, p.Tenant.ID, *m.ContactID)
		require.Len(t, hist, 1)
		require.Equal(t, app.ChangeSourceEmailUnsubscribe, hist[0].Source)
		require.Equal(t, "EMAIL", *hist[0].NewValue)

		// Replayed: still 200, nothing more recorded.
		code, _ = unsubscribe(http.MethodPost, path, "List-Unsubscribe=One-Click")
		require.Equal(t, http.StatusOK, code)
		require.Len(t, optOutChanges(t, p, p.Tenant.ID, *m.ContactID), 1)

		// The next optional e-mail is not sent; a transactional one is.
		b := webtest.Reminder("u-3b", "BK-u-3b")
		b["recipients"] = []map[string]any{{"name": "Anna", "email": "u3@example.com"}}
		b["channels"] = []string{"EMAIL"}
		skipped := webtest.OnlyMessage(t, p.WaitMessages(p.Submit(b), "failed", webtest.AllStatus(app.MessageFailed)))
		require.Equal(t, app.ReasonOptedOut, *skipped.FailedReason)
		sendEmail("u-3c", "BOOKING_CONFIRMED", "u3@example.com")
	})

	t.Run("TamperedRefused", func(t *testing.T) {
		m := sendEmail("u-4", "PRE_TRIP_REMINDER", "u4@example.com")
		path := pathOf(t, rec.headersTo(t, "u4@example.com")["List-Unsubscribe"])
		// Change one character of the token (the contact id's part).
		i := len("/unsubscribe/") + 30
		flipped := path[:i] + string("AB"[boolIndex(path[i] == 'A')]) + path[i+1:]
		for _, bad := range []string{flipped, path[:len(path)-2], "/unsubscribe/not-a-token", path + "x"} {
			code, _ := unsubscribe(http.MethodPost, bad, "List-Unsubscribe=One-Click")
			require.Equal(t, http.StatusUnauthorized, code, bad)
			code, _ = unsubscribe(http.MethodGet, bad, "")
			require.Equal(t, http.StatusUnauthorized, code, bad)
		}
		require.Empty(t, optOutChanges(t, p, p.Tenant.ID, *m.ContactID))
	})

	t.Run("OtherTenantsContactNotFound", func(t *testing.T) {
		globex, err := p.Services.Tenants.Create(p.Ctx, app.CLIActor, app.TenantInput{Slug: "globex-u", Name: "Globex", Plan: app.PlanPro})
		require.NoError(t, err)
		m := sendEmail("u-5", "PRE_TRIP_REMINDER", "u5@example.com")
		// A well-signed link naming globex with acme's contact: the
		// contact is looked up in globex only.
		token := p.Services.Preferences.Links.Token(app.UnsubscribeTarget{TenantID: globex.ID, ContactID: *m.ContactID, MessageID: m.ID})
		code, _ := unsubscribe(http.MethodPost, "/unsubscribe/"+token, "List-Unsubscribe=One-Click")
		require.Equal(t, http.StatusNotFound, code)
		require.Empty(t, optOutChanges(t, p, p.Tenant.ID, *m.ContactID))
		// A link signed with another deployment's key is refused.
		other := app.NewUnsubscribeLinks("http://localhost:8080", []byte("another deployment's secret key!"))
		token = other.Token(app.UnsubscribeTarget{TenantID: p.Tenant.ID, ContactID: *m.ContactID, MessageID: m.ID})
		code, _ = unsubscribe(http.MethodPost, "/unsubscribe/"+token, "List-Unsubscribe=One-Click")
		require.Equal(t, http.StatusUnauthorized, code)
	})
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sentOrLater is true once every message was sent: the sandbox moves sent
// messages on to DELIVERED and READ a moment later.
func sentOrLater(ms []*app.Message) bool {
	for _, m := range ms {
		if m.SentAt == nil {
			return false
		}
	}
	return len(ms) > 0
}

func TestPreferences_Routing(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})

	// anna makes a contact with her own phone and e-mail, through a
	// transactional event, and returns it.
	anna := func(t *testing.T, n int) (*app.Contact, map[string]any) {
		t.Helper()
		rc := map[string]any{"name": "Anna", "phone": fmt.Sprintf("+4915123456%03d", n), "email": fmt.Sprintf("anna%d@example.com", n), "locale": "de-DE"}
		b := webtest.Notification(fmt.Sprintf("r-%d-confirmed", n), fmt.Sprintf("BK-R%d", n))
		b["recipients"] = []map[string]any{rc}
		p.WaitMessages(p.Submit(b), "sent", sentOrLater)
		return contactByPhone(t, p, p.Tenant.ID, rc["phone"].(string)), rc
	}
	optOut := func(t *testing.T, c *app.Contact, chs ...string) {
		t.Helper()
		var out struct{}
		var body any
		if len(chs) > 0 {
			body = map[string]any{"channels": chs}
		}
		require.Equal(t, http.StatusOK, p.Request(http.MethodPost, "/api/v1/contacts/"+c.ID.String()+"/opt-out", body, &out))
	}

	t.Run("FallbackContinuesPastOptedOut", func(t *testing.T) {
		c, rc := anna(t, 1)
		optOut(t, c, "WHATSAPP")
		require.Equal(t, app.ChangeSourceAPI, optOutChanges(t, p, p.Tenant.ID, c.ID)[0].Source)
		b := webtest.Reminder("r-1-reminder", "BK-R1")
		b["recipients"] = []map[string]any{rc}
		b["fallback_chain"] = []string{"WHATSAPP", "SMS", "EMAIL"}
		m := webtest.OnlyMessage(t, p.WaitMessages(p.Submit(b), "sent", sentOrLater))
		require.Equal(t, app.SMS, m.Channel)
		first := p.Timeline(m.ID)[0]
		require.Equal(t, []any{map[string]any{"channel": "WHATSAPP", "reason": "opted_out"}}, first.Detail["skipped"])
	})

	t.Run("TransactionalNotSkipped", func(t *testing.T) {
		c, rc := anna(t, 2)
		optOut(t, c)
		b := webtest.Notification("r-2-paid", "BK-R2")
		b["trigger_event"] = "BOOKING_FULLY_PAID"
		b["context"].(map[string]any)["total_amount"] = "890 €"
		b["context"].(map[string]any)["invoice_url"] = "https://example.com/i.pdf"
		b["recipients"] = []map[string]any{rc}
		ms := p.WaitMessages(p.Submit(b), "sent", sentOrLater)
		require.Len(t, ms, 2, "e-mail and WhatsApp, opted out or not")
	})

	// An opt-out that commits while an optional message is being claimed
	// for sending: the claim waits for it and sends nothing. Routing read
	// the contact before the opt-out committed and queued the SMS; the
	// dispatch job's claim blocks on the contact's row, then sees the
	// opt-out and moves on to e-mail.
	t.Run("OptOutCommittedDuringClaim", func(t *testing.T) {
		c, rc := anna(t, 3)
		// Outlives the waits below, each up to a hang guard long.
		ctx, cancel := context.WithTimeout(p.Ctx, 3*dbtest.HangGuard)
		defer cancel()
		conn, err := p.Services.DB.Pool.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = conn.Rollback(context.Background()) }()
		_, err = conn.Exec(ctx, `SELECT set_config('herald.tenant_id', $1, true)`, p.Tenant.ID.String())
		require.NoError(t, err)
		// The opt-out's own statement (SaveContact), not committed yet.
		_, err = conn.Exec(ctx, `UPDATE contacts SET opted_out = ARRAY['SMS'], updated_at = now() WHERE tenant_id = $1 AND id = $2`, p.Tenant.ID, c.ID)
		require.NoError(t, err)

		b := webtest.Reminder("r-3-reminder", "BK-R3")
		b["recipients"] = []map[string]any{rc}
		b["fallback_chain"] = []string{"SMS", "EMAIL"}
		id := p.Submit(b)
		p.WaitUntil("the claim waits on the contact's row", func() bool {
			return p.Count(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR SHARE%'`) > 0
		})
		require.Zero(t, p.Count(`SELECT count(*) FROM messages WHERE event_id = $1 AND status <> 'QUEUED'`, id))
		require.NoError(t, conn.Commit(ctx))

		ms := p.WaitMessages(id, "SMS failed, e-mail sent", func(ms []*app.Message) bool {
			return len(ms) == 2 && ms[1].SentAt != nil
		})
		sms, email := ms[0], ms[1]
		require.Equal(t, app.SMS, sms.Channel)
		require.Equal(t, app.MessageFailed, sms.Status)
		require.Nil(t, sms.ExternalMessageID, "never handed to the provider")
		require.Equal(t, app.ReasonFallbackTriggered+"EMAIL", *sms.FailedReason)
		require.Equal(t, app.Email, email.Channel)
		var reasons []any
		for _, e := range p.Timeline(sms.ID) {
			reasons = append(reasons, e.Detail["reason"])
		}
		require.Contains(t, reasons, app.ReasonOptedOut)
	})

	// Many optional events for one contact race an opt-out: each message
	// is either sent (and was queued before the opt-out committed) or
	// failed opted_out, whether routing or the claim saw the opt-out; and
	// once it has committed, nothing more goes out on the channel.
	t.Run("ConcurrentOptOutAndRouting", func(t *testing.T) {
		c, rc := anna(t, 4)
		var wg sync.WaitGroup
		ids := make(chan uuid.UUID, 20)
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := webtest.Reminder(fmt.Sprintf("r-4-%d", i), "BK-R4")
				b["recipients"] = []map[string]any{rc}
				b["channels"] = []string{"SMS"}
				ids <- p.Submit(b)
			}()
		}
		optedAt := make(chan time.Time, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.Services.Contacts.SetOptOut(p.Ctx, app.CLIActor, p.Tenant.ID, c.ID, []string{"SMS"}, true)
			if err != nil {
				optedAt <- time.Time{}
				return
			}
			optedAt <- time.Now()
		}()
		wg.Wait()
		close(ids)
		committed := <-optedAt
		require.False(t, committed.IsZero())
		for id := range ids {
			m := webtest.OnlyMessage(t, p.WaitMessages(id, "settled", func(ms []*app.Message) bool {
				return len(ms) == 1 && ms[0].Status != app.MessageQueued
			}))
			if m.Status == app.MessageFailed {
				require.Equal(t, app.ReasonOptedOut, *m.FailedReason)
				continue
			}
			// Sent: its claim (the send marker's time) came before the
			// opt-out's commit returned.
			require.NotNil(t, m.SentAt)
			require.False(t, m.QueuedAt.After(committed), "a message queued after the opt-out committed was sent")
		}
		// And nothing queued from now on is sent on SMS.
		b := webtest.Reminder("r-4-after", "BK-R4")
		b["recipients"] = []map[string]any{rc}
		b["channels"] = []string{"SMS"}
		m := webtest.OnlyMessage(t, p.WaitMessages(p.Submit(b), "failed", webtest.AllStatus(app.MessageFailed)))
		require.Equal(t, app.ReasonOptedOut, *m.FailedReason)
	})
}
