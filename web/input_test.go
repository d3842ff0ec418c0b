package web_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider/awsnotify/awsnotifytest"
	"github.com/heraldhq/herald/web"
	"github.com/heraldhq/herald/web/webtest"
)

// deepValue nests objects 8,000 levels deep: 48 KB that encoding/json
// would decode (it allows 10,000 levels), at a cost that grows with the
// nesting.
func deepValue() string {
	return strings.Repeat(`{"a":`, 8000) + "1" + strings.Repeat("}", 8000)
}

// deepBody is a notification request whose context is deepValue. Its event
// id comes first, where anything that decoded the body would find it.
func deepBody(eventID string) []byte {
	return []byte(`{"event_id":"` + eventID + `","trigger_event":"BOOKING_CONFIRMED","context":` + deepValue() + `}`)
}

// requireTooDeep checks the answer to a body nested too deeply: 400
// body_too_deep in the API's error format, naming no field.
func requireTooDeep(t *testing.T, resp *http.Response) {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	code, message, field := decodeError(t, resp)
	require.Equal(t, "body_too_deep", code)
	require.Contains(t, message, "more than 32 levels deep")
	require.Empty(t, field)
}

// TestInputBounds_DeepBodyAPI: the report's body, sent without a key, with
// only a key's 11-character prefix (which names the tenant, so the refusal
// is kept on its Requests page) and with a valid key, is refused before
// anything decodes it: not the handler (nothing is stored), and not the
// record of the refusal, which would have found the event id in it.
func TestInputBounds_DeepBodyAPI(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})

	for name, key := range map[string]string{"NoKey": "", "KeyPrefixOnly": h.Key[:11], "ValidKey": h.Key} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eventID, rid := "deep-"+name, "rid-deep-"+name
			body := deepBody(eventID)
			require.Greater(t, len(body), 48_000)
			req := httptest.NewRequest(http.MethodPost, "/api/v1/notifications", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Request-Id", rid)
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			requireTooDeep(t, h.DoGarbage(t, req))
			requireNothingStoredIn(t, h, eventID)

			r := rejectionOf(t, h, h.Tenant.ID, rid)
			if key == "" {
				require.Nil(t, r, "a request whose key names no tenant is kept nowhere")
				return
			}
			require.NotNil(t, r, "the refusal is kept for the tenant the key's prefix names")
			require.Equal(t, http.StatusBadRequest, r.Status)
			require.Equal(t, "body_too_deep", r.Code)
			require.Equal(t, len(body), r.BodySize)
			require.Equal(t, fmt.Sprintf("(%d bytes, nested more than 32 levels deep: not parsed)", len(body)), r.Body)
			require.Nil(t, r.EventID, "the record never decoded the body: it would have found %s", eventID)
		})
	}

	t.Run("WithinTheBound", func(t *testing.T) {
		t.Parallel()
		body := webtest.Notification("deep-ok", "BK-DEEP")
		v := any("Gardasee")
		for range app.MaxJSONDepth - 3 {
			v = map[string]any{"a": v}
		}
		body["context"].(map[string]any)["nested"] = v
		require.Equal(t, http.StatusAccepted, h.Request(http.MethodPost, "/api/v1/notifications", body, nil), "a body within the bound is read")
	})
}

// TestInputBounds_DeepBodyWebhooks posts the report's nesting to every
// webhook: without credentials, with wrong ones and with valid ones (a
// Meta signature over the very body, a signed SNS envelope carrying it in
// a field of its own, the SMS status secret). Each is refused before a
// signature is checked or a parser runs, and nothing is stored.
func TestInputBounds_DeepBodyWebhooks(t *testing.T) {
	t.Parallel()
	const (
		appSecret = "meta-app-secret"
		smsSecret = "sms-status-secret-0123456789"
	)
	sns := awsnotifytest.New(t)
	fake := newFakeMeta(t)
	h := webtest.New(t, webtest.Options{NoWorkers: true, SNS: sns, Config: func(cfg *app.Config) {
		cfg.SNSTopicARNs, cfg.SMSStatusSecret, cfg.MetaBaseURL = []string{sesTopic, smsTopic}, smsSecret, fake.URL
	}})
	// The sandbox account has the number the Meta account takes.
	sb := h.ActiveAccount(app.WhatsApp)
	require.NoError(t, h.Services.Accounts.SetStatus(h.Ctx, app.CLIActor, h.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	acct, err := h.Services.Accounts.Create(h.Ctx, app.CLIActor, h.Tenant.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "Acme WhatsApp", Activate: true,
		Config:  app.Attrs{"phone_number_id": "1234567890", "waba_id": "WABA"},
		Secrets: map[string]string{"access_token": "EAAG-test-token", "app_secret": appSecret},
	})
	require.NoError(t, err)

	deep := []byte(deepValue())
	// envelope is a signed SNS notification with deepValue in a field the
	// signature does not cover, so that it verifies as Amazon's would.
	envelope := func(topic string, tamper bool) []byte {
		e := sns.Notification(topic, `{"notification":{"messageId":"m-1"},"status":"SUCCESS"}`)
		if tamper {
			e.Signature = "c2lnbmVkIGJ5IG5vYm9keQ=="
		}
		raw := envelopeJSON(t, e)
		return []byte(string(raw[:len(raw)-1]) + `,"Extra":` + deepValue() + `}`)
	}
	snsHeaders := map[string]string{"x-amz-sns-message-type": "Notification"}
	meta := func(secret string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta(secret, deep)}
	}
	accountPath := "/webhooks/meta/a/" + acct.WebhookToken

	for name, tc := range map[string]struct {
		path    string
		body    []byte
		headers map[string]string
	}{
		"MetaAccount/UnknownToken": {"/webhooks/meta/a/" + strings.Repeat("x", 52), deep, meta(appSecret)},
		"MetaAccount/BadSignature": {accountPath, deep, meta("not the app secret")},
		"MetaAccount/Signed":       {accountPath, deep, meta(appSecret)},
		"MetaTenant/UnknownTenant": {"/webhooks/meta/nobody", deep, meta(appSecret)},
		"MetaTenant/BadSignature":  {"/webhooks/meta/acme", deep, meta("not the app secret")},
		"MetaTenant/Signed":        {"/webhooks/meta/acme", deep, meta(appSecret)},
		"SES/NoEnvelope":           {"/webhooks/ses", deep, snsHeaders},
		"SES/BadSignature":         {"/webhooks/ses", envelope(sesTopic, true), snsHeaders},
		"SES/Signed":               {"/webhooks/ses", envelope(sesTopic, false), snsHeaders},
		"SMS/NoSecret":             {"/webhooks/sns-sms", deep, nil},
		"SMS/WrongSecret":          {"/webhooks/sns-sms", deep, map[string]string{"X-Herald-Webhook-Secret": "wrong"}},
		"SMS/Secret":               {"/webhooks/sns-sms", deep, map[string]string{"X-Herald-Webhook-Secret": smsSecret}},
		"SMS/SignedEnvelope":       {"/webhooks/sns-sms", envelope(smsTopic, false), snsHeaders},
		// The message inside a signed envelope is JSON of its own, bounded
		// the same way before it is read.
		"SMS/SignedMessage": {"/webhooks/sns-sms", envelopeJSON(t, sns.Notification(smsTopic, deepValue())), snsHeaders},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, tc.path, bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", "text/plain; charset=UTF-8")
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := h.App.Test(req, -1)
			require.NoError(t, err)
			defer resp.Body.Close()
			requireTooDeep(t, resp)
			require.Zero(t, h.Count(`SELECT count(*) FROM receipt_inbox`), "nothing stored")
			require.Zero(t, h.Count(`SELECT count(*) FROM inbound_messages`), "nothing stored")
		})
	}
}

// consoleFilters are the query parameters console pages read.
var consoleFilters = []string{
	"q", "status", "channel", "event", "event_id", "trigger_event", "locale", "from", "to", "state",
	"cursor", "page", "offset", "tenant", "actor", "action", "entity", "entity_id", "type", "id",
	"range", "stale", "reason", "provider", "next",
}

// TestInputBounds_ConsoleNUL walks every console route with a NUL
// character (%00) in each filter a page reads, in each path parameter and
// in a form: each answers the console's 400 page naming where the NUL was,
// never a 500, and a change stores nothing. Postgres cannot store NUL, so
// before the console refused it, eight of these ended in a statement as a
// 500.
func TestInputBounds_ConsoleNUL(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	ops, mgr := c.signIn(asOperator), c.signIn(asManager)
	ops.page("/t/acme/")
	mgr.page("/t/acme/")

	requireRefused := func(t *testing.T, s *session, method, path string, form url.Values, where string) {
		t.Helper()
		var doc *goquery.Document
		var resp *http.Response
		if method == http.MethodGet {
			doc, resp = s.get(path)
		} else {
			doc, resp = s.postPage(path, form)
		}
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s %s", method, path)
		message := text(doc.Find(".error-card h1"))
		require.Contains(t, message, "NUL character", "%s %s", method, path)
		require.Contains(t, message, where, "%s %s", method, path)
	}
	// sessionFor is a user who may open the route: the operator, or for
	// the pages only a tenant's own users have, its manager.
	sessionFor := func(r web.ConsoleRoute) *session {
		if app.Can(app.RoleOperator, r.Perm) {
			return ops
		}
		return mgr
	}
	audit := func() int { return c.Count(`SELECT count(*) FROM audit_log`) }

	for _, r := range c.Server.ConsoleRoutes() {
		t.Run(r.Method+" "+r.Path, func(t *testing.T) {
			s := sessionFor(r)
			before := audit()
			if r.Method == http.MethodGet {
				for _, name := range consoleFilters {
					requireRefused(t, s, r.Method, pathFor(r.Path, "acme")+"?"+name+"=a%00b", nil, name)
				}
			} else {
				requireRefused(t, s, r.Method, pathFor(r.Path, "acme"), url.Values{"name": {"a\x00b"}}, "name")
			}
			parts := strings.Split(r.Path, "/")
			for i, p := range parts {
				if !strings.HasPrefix(p, ":") || p == ":tenant" {
					continue
				}
				withNUL := append([]string(nil), parts...)
				withNUL[i] = "a%00b"
				requireRefused(t, s, r.Method, pathFor(strings.Join(withNUL, "/"), "acme"), nil, "address")
			}
			require.Equal(t, before, audit(), "nothing changed")
		})
	}

	// The pages that answered 500, with the values people would type.
	t.Run("Reported", func(t *testing.T) {
		for path, where := range map[string]string{
			"/tenants?q=acme%00":                    "q",
			"/audit?tenant=acme%00":                 "tenant",
			"/audit?actor=ops%00":                   "actor",
			"/t/acme/audit?actor=ops%00":            "actor",
			"/t/acme/requests?event_id=BK%00-1":     "event_id",
			"/t/acme/scheduled?entity=BK%00-1":      "entity",
			"/t/acme/trips/TRIP%00-1":               "address",
			"/t/acme/bookings/booking/BK%00-1":      "address",
			"/t/acme/search?q=anna%00":              "q",
			"/t/acme/messages?channel=EMAIL%00":     "channel",
			"/t/acme/bookings?type=booking&id=B%00": "id",
		} {
			requireRefused(t, ops, http.MethodGet, path, nil, where)
		}
	})

	t.Run("FormField", func(t *testing.T) {
		before := c.Count(`SELECT count(*) FROM users`)
		requireRefused(t, mgr, http.MethodPost, "/t/acme/users", url.Values{
			"email": {"new\x00@acme.test"}, "name": {"New"}, "role": {app.RoleSupport},
		}, "email")
		require.Equal(t, before, c.Count(`SELECT count(*) FROM users`), "no user created")
	})
}

// gzipped compresses b as a client sending Content-Encoding: gzip would.
func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return out.Bytes()
}

// TestInputBounds_CompressedBody: a body sent with a content coding is
// refused with 415 before anything decodes it, since decoding has no bound
// on what the body grows to. A valid notification, gzipped and sent with
// a valid key, proves it: it is refused and nothing is stored, where
// decoding would have accepted it.
func TestInputBounds_CompressedBody(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	send := func(t *testing.T, path, key string, body []byte, codings ...string) *http.Response {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for _, coding := range codings {
			req.Header.Add("Content-Encoding", coding)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := h.App.Test(req, -1)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	requireRefused := func(t *testing.T, resp *http.Response) {
		t.Helper()
		require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
		require.Equal(t, "identity", resp.Header.Get("Accept-Encoding"))
		code, message, _ := decodeError(t, resp)
		require.Equal(t, "unsupported_media_type", code)
		require.Contains(t, message, "without Content-Encoding")
	}
	notification := func(eventID string) []byte {
		b, err := json.Marshal(webtest.Notification(eventID, "BK-"+eventID))
		require.NoError(t, err)
		return b
	}

	for name, codings := range map[string][]string{
		"Gzip":           {"gzip"},
		"Deflate":        {"deflate"},
		"Brotli":         {"br"},
		"Listed":         {"identity, gzip"},
		"SecondHeader":   {"identity", "gzip"},
		"UnknownCoding":  {"x-herald"},
		"UpperCaseGzip":  {"GZIP"},
		"GzipThenIgnore": {"gzip", ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eventID := "gz-" + strings.ToLower(name)
			requireRefused(t, send(t, "/api/v1/notifications", h.Key, gzipped(t, notification(eventID)), codings...))
			requireNothingStoredIn(t, h, eventID)
		})
	}

	t.Run("NoKeyAndWebhooks", func(t *testing.T) {
		t.Parallel()
		// 8 MiB of one byte, in about 8 KB.
		bomb := gzipped(t, bytes.Repeat([]byte{' '}, 8<<20))
		require.Less(t, len(bomb), 64<<10)
		for _, path := range []string{"/api/v1/notifications", "/webhooks/meta/acme", "/webhooks/ses", "/webhooks/sns-sms"} {
			requireRefused(t, send(t, path, "", bomb, "gzip"))
		}
		require.Zero(t, h.Count(`SELECT count(*) FROM receipt_inbox`), "nothing stored")

		// The console answers its own page.
		resp := send(t, "/login", "", bomb, "gzip")
		require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode)
		doc, err := goquery.NewDocumentFromReader(resp.Body)
		require.NoError(t, err)
		require.Contains(t, text(doc.Find(".error-card h1")), "without Content-Encoding")
	})

	t.Run("IdentityIsRead", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, http.StatusAccepted, send(t, "/api/v1/notifications", h.Key, notification("gz-identity"), "identity").StatusCode)
	})
}
