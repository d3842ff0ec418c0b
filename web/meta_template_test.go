package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/jobs"
	"github.com/heraldhq/herald/web/webtest"
)

// fakeWABA speaks a WhatsApp Business Account's message_templates
// endpoints of the Graph API.
type fakeWABA struct {
	*httptest.Server
	mu        sync.Mutex
	list      []map[string]any
	submitted []map[string]any
}

func newFakeWABA(t *testing.T, waba, token string) *fakeWABA {
	f := &fakeWABA{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") == "Bearer "+token && r.Method == http.MethodPost && f.has(strings.TrimPrefix(r.URL.Path, "/v23.0/")) {
			var body map[string]any
			_ = json.NewDecoder(r.Body).Decode(&body)
			body["edited"] = strings.TrimPrefix(r.URL.Path, "/v23.0/")
			f.mu.Lock()
			f.submitted = append(f.submitted, body)
			f.mu.Unlock()
			_, _ = fmt.Fprint(w, `{"success":true}`)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+token || r.URL.Path != "/v23.0/"+waba+"/message_templates" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = fmt.Fprint(w, `{"error":{"message":"Unsupported get request.","type":"GraphMethodException","code":100,"error_subcode":33,"fbtrace_id":"A"}}`)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Method == http.MethodPost {
			var body map[string]any
			_ = json.NewDecoder(r.Body).Decode(&body)
			f.submitted = append(f.submitted, body)
			_, _ = fmt.Fprintf(w, `{"id":"77%d","status":"PENDING","category":"UTILITY"}`, len(f.submitted))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": f.list, "paging": map[string]any{"cursors": map[string]any{"before": "a", "after": "b"}}})
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeWABA) set(ts ...[3]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = nil
	for i, t := range ts {
		f.list = append(f.list, map[string]any{"id": fmt.Sprint(9000 + i), "name": t[0], "language": t[1], "status": t[2],
			"category": "UTILITY", "components": []any{map[string]any{"type": "BODY", "text": "Hallo {{1}}."}}})
	}
}

// has reports whether id is one of the WABA's templates.
func (f *fakeWABA) has(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.list {
		if t["id"] == id {
			return true
		}
	}
	return false
}

func (f *fakeWABA) submissions() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.submitted...)
}

func templateStatusHook(waba, event, name, language, reason string) []byte {
	return []byte(`{"object":"whatsapp_business_account","entry":[{"id":"` + waba + `","time":1750857384,"changes":[{"value":{
		"event":"` + event + `","message_template_id":594425479261596,"message_template_name":"` + name + `",
		"message_template_language":"` + language + `","reason":"` + reason + `"},"field":"message_template_status_update"}]}]}`)
}

func TestConsole_MetaTemplates(t *testing.T) {
	t.Parallel()
	const waba, token, secret = "102290129340398", "EAAG-waba-token", "waba-app-secret"
	fake := newFakeWABA(t, waba, token)
	c := setupConsole(t, webtest.Options{Config: func(cfg *app.Config) { cfg.MetaBaseURL = fake.URL }})
	sb := c.ActiveAccount(app.WhatsApp)
	require.NoError(t, c.Services.Accounts.SetStatus(c.Ctx, app.CLIActor, c.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	acct, err := c.Services.Accounts.Create(c.Ctx, app.CLIActor, c.Tenant.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "Acme WhatsApp", Activate: true,
		Config:  app.Attrs{"phone_number_id": "1234567890", "waba_id": waba},
		Secrets: map[string]string{"access_token": token, "app_secret": secret},
	})
	require.NoError(t, err)
	base := channelsPrefix + "/" + acct.ID.String()
	page := base + "/templates"
	m := c.signIn(asManager)

	templateOf := func(tenantID uuid.UUID, event, locale string) *app.Template {
		t.Helper()
		var tpl *app.Template
		require.NoError(t, c.Services.Store.InTenant(c.Ctx, tenantID, func(tx *db.Tx) (err error) {
			tpl, err = tx.TemplateByKey(c.Ctx, tenantID, event, app.WhatsApp, locale)
			return err
		}))
		return tpl
	}
	statusCell := func(tpl *app.Template) string {
		t.Helper()
		return text(m.page(page).Find(`tr[data-template-id="` + tpl.ID.String() + `"] .meta-status`))
	}
	confirmedDE := templateOf(c.Tenant.ID, "BOOKING_CONFIRMED", "de-DE")
	cancelledEN := templateOf(c.Tenant.ID, "BOOKING_CANCELLED", "en")

	t.Run("LinkedFromTheAccount", func(t *testing.T) {
		href, ok := m.page(base).Find("a.meta-templates-link").Attr("href")
		require.True(t, ok)
		require.Equal(t, page, href)
		_, ok = m.page(channelsPrefix + "/" + c.ActiveAccount(app.Email).ID.String()).Find("a.meta-templates-link").Attr("href")
		require.False(t, ok, "only WhatsApp (Meta) accounts have Meta templates")
	})

	t.Run("ListsHeraldTemplatesNotSubmitted", func(t *testing.T) {
		doc := m.page(page)
		// Two per WhatsApp event in the defaults: de and en.
		require.Equal(t, 30, doc.Find("table.herald-whatsapp-templates tbody tr").Length())
		require.Equal(t, "herald_booking_confirmed de", text(doc.Find(`tr[data-template-id="`+confirmedDE.ID.String()+`"] .meta-name`)))
		require.Equal(t, "NOT SUBMITTED", statusCell(confirmedDE))
		require.Equal(t, 30, doc.Find("form.meta-submit").Length())
		doc.Find("form").Each(func(_ int, f *goquery.Selection) {
			v, ok := f.Find(`input[name=csrf]`).Attr("value")
			require.True(t, ok && v != "", "every form carries the CSRF token")
		})
		require.Contains(t, text(doc.Find(".empty")), "No templates known yet")
	})

	t.Run("RefreshOnDemand", func(t *testing.T) {
		fake.set([3]string{"herald_booking_confirmed", "de", "APPROVED"}, [3]string{"herald_booking_cancelled", "en", "REJECTED"},
			[3]string{"hello_world", "en_US", "APPROVED"})
		m.page(page)
		resp := m.post(page+"/sync", url.Values{})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc := m.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "Meta lists 3 templates")
		require.Equal(t, 3, doc.Find("table.meta-templates tbody tr").Length())
		require.Equal(t, "APPROVED", statusCell(confirmedDE))
		require.Equal(t, "REJECTED", statusCell(cancelledEN))
		require.Equal(t, 29, doc.Find("form.meta-submit").Length(), "an approved template is not submitted again")
	})

	t.Run("Submit", func(t *testing.T) {
		cancelledDE := templateOf(c.Tenant.ID, "BOOKING_CANCELLED", "de-DE")
		m.page(page)
		resp := m.post(page+"/submit", url.Values{"template_id": {cancelledDE.ID.String()}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(m.follow(resp).Find(".flash-success")), "herald_booking_cancelled (de) for review: PENDING")
		subs := fake.submissions()
		require.Len(t, subs, 1)
		spec, _ := cancelledDE.Spec()
		require.Equal(t, "herald_booking_cancelled", subs[0]["name"])
		require.Equal(t, "UTILITY", subs[0]["category"])
		require.Equal(t, spec.Body, subs[0]["components"].([]any)[0].(map[string]any)["text"])
		require.Equal(t, "PENDING", statusCell(cancelledDE))

		// The rejected one is edited where it is and reviewed again.
		m.page(page)
		resp = m.post(page+"/submit", url.Values{"template_id": {cancelledEN.ID.String()}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(m.follow(resp).Find(".flash-success")), "herald_booking_cancelled (en) for review: PENDING")
		subs = fake.submissions()
		require.Len(t, subs, 2)
		require.Equal(t, "9001", subs[1]["edited"])
		require.Equal(t, "PENDING", statusCell(cancelledEN))
	})

	t.Run("BadInputStoresNothing", func(t *testing.T) {
		before := c.Count(`SELECT count(*) FROM meta_templates`)
		for _, id := range []string{"", "not-a-uuid"} {
			m.page(page)
			resp := m.post(page+"/submit", url.Values{"template_id": {id}})
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
			require.Contains(t, text(m.follow(resp).Find(".flash-error")), "Choose one of the WhatsApp templates")
		}
		m.page(page)
		resp := m.post(page+"/submit", url.Values{"template_id": {templateOf(c.other.ID, "BOOKING_CONFIRMED", "de-DE").ID.String()}})
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "another tenant's template is unknown here")
		m.page(page)
		resp = m.post(page+"/submit", url.Values{"template_id": {confirmedDE.ID.String()}, "csrf": {"forged"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Len(t, fake.submissions(), 2, "nothing more reached Meta")
		require.Equal(t, before, c.Count(`SELECT count(*) FROM meta_templates`))
	})

	t.Run("WebhookUpdatesStatus", func(t *testing.T) {
		cancelledDE := templateOf(c.Tenant.ID, "BOOKING_CANCELLED", "de-DE")
		hook := templateStatusHook(waba, "APPROVED", "herald_booking_cancelled", "de", "NONE")
		code, out := postWebhook(c.Herald, "/webhooks/meta/acme", hook, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta(secret, hook)})
		require.Equal(t, http.StatusOK, code)
		require.EqualValues(t, 1, out["outcomes"].(map[string]any)["template_status"])
		require.Equal(t, "APPROVED", statusCell(cancelledDE))

		hook = templateStatusHook(waba, "REJECTED", "herald_booking_cancelled", "de", "INVALID_FORMAT")
		code, _ = postWebhook(c.Herald, "/webhooks/meta/acme", hook, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta("wrong", hook)})
		require.Equal(t, http.StatusUnauthorized, code, "unsigned reviews change nothing")
		require.Equal(t, "APPROVED", statusCell(cancelledDE))

		hook = templateStatusHook("999888777", "REJECTED", "herald_booking_cancelled", "de", "INVALID_FORMAT")
		code, out = postWebhook(c.Herald, "/webhooks/meta/acme", hook, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta(secret, hook)})
		require.Equal(t, http.StatusOK, code)
		require.EqualValues(t, 1, out["outcomes"].(map[string]any)["template_status_unknown_waba"], "a WABA none of acme's accounts has")
		require.Equal(t, "APPROVED", statusCell(cancelledDE))

		hook = templateStatusHook(waba, "REJECTED", "herald_booking_cancelled", "de", "INVALID_FORMAT")
		code, _ = postWebhook(c.Herald, "/webhooks/meta/acme", hook, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta(secret, hook)})
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "REJECTED INVALID_FORMAT", statusCell(cancelledDE))
	})

	t.Run("TemplateEditorShowsStatus", func(t *testing.T) {
		cancelledDE := templateOf(c.Tenant.ID, "BOOKING_CANCELLED", "de-DE")
		items := m.page("/t/acme/templates/" + cancelledDE.ID.String()).Find(".meta-status-list li")
		require.Equal(t, 1, items.Length())
		require.Equal(t, "Acme WhatsApp: REJECTED INVALID_FORMAT", text(items))
		href, _ := items.Find("a").Attr("href")
		require.Equal(t, page, href)
		require.Equal(t, "Acme WhatsApp: NOT SUBMITTED", text(m.page("/t/acme/templates/"+templateOf(c.Tenant.ID, "PASSENGER_ADDED", "en").ID.String()).Find(".meta-status-list li")))
	})

	t.Run("PeriodicJobSyncs", func(t *testing.T) {
		fake.set([3]string{"herald_booking_confirmed", "de", "PAUSED"})
		_, err := c.Worker.Insert(c.Ctx, jobs.MetaTemplateSyncArgs{}, nil)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			return c.Count(`SELECT count(*) FROM meta_templates WHERE channel_account_id = $1`, acct.ID) == 1
		}, dbtest.HangGuard, 20*time.Millisecond, "the sync job lists Meta's templates again")
		require.Equal(t, "PAUSED", statusCell(confirmedDE))
	})

	t.Run("WithoutWABA", func(t *testing.T) {
		other, err := c.Services.Accounts.Create(c.Ctx, app.CLIActor, c.Tenant.ID, app.AccountInput{
			Channel: app.WhatsApp, Provider: "meta", Name: "No WABA",
			Config: app.Attrs{"phone_number_id": "555"}, Secrets: map[string]string{"access_token": token, "app_secret": "x"},
		})
		require.NoError(t, err)
		p := channelsPrefix + "/" + other.ID.String() + "/templates"
		doc := m.page(p)
		require.Equal(t, 1, doc.Find(".missing-waba").Length())
		require.Zero(t, doc.Find("form.meta-sync").Length())
		resp := m.post(p+"/sync", url.Values{})
		require.Contains(t, text(m.follow(resp).Find(".flash-error")), "waba_id")
		require.True(t, strings.Contains(p, other.ID.String()))
	})
}

// TestWebhook_MetaPricingOnTimeline: what Meta bills a message as (its
// statuses' pricing) shows on the message's timeline.
func TestWebhook_MetaPricingOnTimeline(t *testing.T) {
	t.Parallel()
	fake := newFakeMeta(t)
	p := webtest.New(t, webtest.Options{Config: func(cfg *app.Config) { cfg.MetaBaseURL = fake.URL }})
	sb := p.ActiveAccount(app.WhatsApp)
	require.NoError(t, p.Services.Accounts.SetStatus(p.Ctx, app.CLIActor, p.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	const appSecret = "meta-app-secret"
	acct, err := p.Services.Accounts.Create(p.Ctx, app.CLIActor, p.Tenant.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "Acme WhatsApp", Activate: true,
		Config:  app.Attrs{"phone_number_id": "1234567890", "waba_id": "WABA"},
		Secrets: map[string]string{"access_token": "EAAG-test-token", "app_secret": appSecret},
	})
	require.NoError(t, err)
	p.ApproveMetaDefaults(acct)
	id := p.Submit(webtest.WithRecipient("price-1", "BK-PRICE", map[string]any{"name": "Anna", "phone": "+4915123456789"}, "WHATSAPP"))
	m := webtest.OnlyMessage(t, p.WaitMessages(id, "sent through Meta", webtest.AllStatus(app.MessageSent)))

	hook := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"WABA","changes":[{"field":"messages","value":{
		"messaging_product":"whatsapp","metadata":{"display_phone_number":"4989","phone_number_id":"1234567890"},
		"statuses":[{"id":"` + *m.ExternalMessageID + `","status":"delivered","timestamp":"` + strconv.FormatInt(time.Now().Unix(), 10) + `","recipient_id":"4915123456789",
		"conversation":{"id":"6ceb9d929c1d2c6ab6c5d4e3f2a1b0c9","origin":{"type":"utility"}},
		"pricing":{"billable":true,"pricing_model":"PMP","category":"utility","type":"regular"}}]}}]}]}`)
	code, _ := postWebhook(p, "/webhooks/meta/acme", hook, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": signMeta(appSecret, hook)})
	require.Equal(t, http.StatusOK, code)

	var raws []string
	for _, e := range p.Timeline(m.ID) {
		if e.Source == app.SourceWebhook {
			raws = append(raws, fmt.Sprint(e.Detail["raw"]))
		}
	}
	require.Len(t, raws, 1)
	require.Contains(t, raws[0], `"pricing":{"billable":true,"pricing_model":"PMP","category":"utility","type":"regular"}`,
		"the timeline shows what Meta bills the message as")
}

// TestConsole_MetaTemplatesSyncOnSave checks that saving a Meta account in
// the console lists its WABA's templates soon after, without waiting for
// the hourly sync, and that a save that fails queues nothing.
func TestConsole_MetaTemplatesSyncOnSave(t *testing.T) {
	t.Parallel()
	const waba = "102290129340398" // metaForm's
	fake := newFakeWABA(t, waba, metaToken)
	fake.set([3]string{"herald_booking_confirmed", "de", "APPROVED"}, [3]string{"herald_booking_confirmed", "en", "PENDING"})
	c := setupConsole(t, webtest.Options{Config: func(cfg *app.Config) { cfg.MetaBaseURL = fake.URL }})
	m := c.signIn(asManager)
	synced := func(accountID uuid.UUID) func() bool {
		return func() bool {
			return c.Count(`SELECT count(*) FROM meta_templates WHERE channel_account_id = $1`, accountID) == 2
		}
	}

	t.Run("Create", func(t *testing.T) {
		m.page(channelsPrefix + "/new")
		resp := m.post(channelsPrefix, metaForm("Acme WhatsApp"))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		id := createdID(t, resp)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM river_job WHERE kind = 'meta_template_sync' AND args->>'account_id' = $1`, id.String()),
			"the save queued one sync of this account")
		require.Eventually(t, synced(id), dbtest.HangGuard, 20*time.Millisecond, "the account's templates are listed")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM meta_templates WHERE channel_account_id = $1 AND tenant_id = $2 AND status = 'APPROVED'`, id, c.Tenant.ID))

		// Meta approves the English one; saving the account lists it again.
		fake.set([3]string{"herald_booking_confirmed", "de", "APPROVED"}, [3]string{"herald_booking_confirmed", "en", "APPROVED"})
		m.page(channelsPrefix + "/" + id.String() + "/edit")
		resp = m.post(channelsPrefix+"/"+id.String(), with(metaForm("Acme WhatsApp"), "secret_access_token", "", "secret_app_secret", ""))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Eventually(t, func() bool {
			return c.Count(`SELECT count(*) FROM meta_templates WHERE channel_account_id = $1 AND status = 'APPROVED'`, id) == 2
		}, dbtest.HangGuard, 20*time.Millisecond, "the update synced the account again")
	})

	t.Run("BadSaveQueuesNothing", func(t *testing.T) {
		before := c.Count(`SELECT count(*) FROM river_job WHERE kind = 'meta_template_sync' AND args ? 'account_id'`)
		m.page(channelsPrefix + "/new")
		resp, _ := m.postRaw(channelsPrefix, with(metaForm("Broken"), "config_waba_id", ""))
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Equal(t, before, c.Count(`SELECT count(*) FROM river_job WHERE kind = 'meta_template_sync' AND args ? 'account_id'`))
	})

	t.Run("OtherProvidersQueueNothing", func(t *testing.T) {
		before := c.Count(`SELECT count(*) FROM river_job WHERE kind = 'meta_template_sync' AND args ? 'account_id'`)
		m.page(channelsPrefix + "/new")
		resp := m.post(channelsPrefix, sesForm("Acme e-mail"))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, before, c.Count(`SELECT count(*) FROM river_job WHERE kind = 'meta_template_sync' AND args ? 'account_id'`))
	})
}
