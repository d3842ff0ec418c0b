package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// metaCatalog stands in for a WABA's message_templates endpoints: GET
// lists its templates in pages of two, as Meta pages them with cursors;
// POST records a submission and answers as Meta does.
type metaCatalog struct {
	mu        sync.Mutex
	templates []map[string]any
	submitted []map[string]any
	gets      int
	// uploads are the example files uploaded through the app (the
	// Resumable Upload API): each session's query and the bytes posted.
	uploads []catalogUpload
	// refuse, when set, is the error body every call answers with (400).
	refuse string
}

type catalogUpload struct {
	query url.Values
	body  []byte
}

// metaUploadHandle is the file handle the fake answers an upload with.
const metaUploadHandle = "4::YXBwbGljYXRpb24vcGRm:ARZ7Zk2bA0b0V1YyCQ6n:e:1764516000:1234567890123456:100087654321098:ARb3"

// isUpload reports whether path is one of the Resumable Upload API's.
func isUpload(p string) bool {
	return strings.HasSuffix(p, "/uploads") || strings.Contains(p, "/upload:")
}

// upload answers the Resumable Upload API: a session on the app, then
// the bytes posted to it with OAuth and file_offset 0.
func (c *metaCatalog) upload(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/uploads") {
		c.uploads = append(c.uploads, catalogUpload{query: r.URL.Query()})
		_, _ = fmt.Fprintf(w, `{"id":"upload:MTphdHRhY2htZW50OjZi%d?sig=ARZXB4sKC"}`, len(c.uploads))
		return
	}
	body, _ := io.ReadAll(r.Body)
	if len(c.uploads) == 0 || r.Header.Get("file_offset") != "0" || r.URL.Query().Get("sig") == "" ||
		c.uploads[len(c.uploads)-1].query.Get("file_length") != strconv.Itoa(len(body)) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"(#100) Invalid upload","type":"OAuthException","code":100,"fbtrace_id":"u"}}`))
		return
	}
	c.uploads[len(c.uploads)-1].body = body
	_, _ = w.Write([]byte(`{"h":"` + metaUploadHandle + `"}`))
}

func (c *metaCatalog) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	auth := "Bearer " + metaAccessToken
	if strings.Contains(r.URL.Path, "/upload:") {
		// The upload step authorises with OAuth, as Meta documents.
		auth = "OAuth " + metaAccessToken
	}
	if r.Header.Get("Authorization") != auth {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Error validating access token: Session has expired.","type":"OAuthException","code":190,"error_subcode":463,"fbtrace_id":"AbC"}}`))
		return
	}
	if c.refuse != "" {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(c.refuse))
		return
	}
	if isUpload(r.URL.Path) {
		c.upload(w, r)
		return
	}
	if r.Method == http.MethodPost && !strings.HasSuffix(r.URL.Path, "/message_templates") {
		// An edit of an existing template: POST /{template_id}.
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		body["edited"] = path.Base(r.URL.Path)
		c.submitted = append(c.submitted, body)
		_, _ = w.Write([]byte(`{"success":true}`))
		return
	}
	if r.Method == http.MethodPost {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		c.submitted = append(c.submitted, body)
		_, _ = fmt.Fprintf(w, `{"id":"5944254792615%02d","status":"PENDING","category":%q}`, len(c.submitted), body["category"])
		return
	}
	c.gets++
	start := 0
	if after := r.URL.Query().Get("after"); after != "" {
		_, _ = fmt.Sscanf(after, "cursor%d", &start)
	}
	end := min(start+2, len(c.templates))
	page := map[string]any{"data": append([]map[string]any{}, c.templates[start:end]...),
		"paging": map[string]any{"cursors": map[string]any{"before": "b", "after": fmt.Sprintf("cursor%d", end)}}}
	if end < len(c.templates) {
		page["paging"].(map[string]any)["next"] = "https://graph.facebook.com/v23.0/x/message_templates?after=" + fmt.Sprintf("cursor%d", end)
	}
	_ = json.NewEncoder(w).Encode(page)
}

// isTemplate reports whether path names one of the WABA's templates by id.
func (c *metaCatalog) isTemplate(p string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.templates {
		if path.Base(p) == t["id"] {
			return true
		}
	}
	return false
}

// set makes the WABA's templates (name, language, status, reason) these.
func (c *metaCatalog) set(ts ...[4]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.templates = nil
	for i, t := range ts {
		c.templates = append(c.templates, map[string]any{"id": fmt.Sprintf("11873662627972%02d", i), "name": t[0], "language": t[1],
			"status": t[2], "category": "UTILITY", "rejected_reason": t[3],
			"components": []map[string]any{{"type": "BODY", "text": "Hallo {{1}}, danke."}}})
	}
}

func (c *metaCatalog) submissions() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]any(nil), c.submitted...)
}

// metaTemplates is what Herald knows of the account's Meta templates.
func (b *pipelineBundle) metaTemplates(t *testing.T, tn *app.Tenant, acct *app.ChannelAccount) map[string]*app.MetaTemplate {
	t.Helper()
	out := map[string]*app.MetaTemplate{}
	require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
		ts, err := tx.MetaTemplates(b.ctx, tn.ID, acct.ID)
		for _, mt := range ts {
			out[mt.Name+"/"+mt.Language] = mt
		}
		return err
	}))
	return out
}

func TestMetaTemplates_Sync(t *testing.T) {
	t.Parallel()

	t.Run("ListsEveryPageAndReplaces", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		b.meta.catalog.set(
			[4]string{"herald_booking_confirmed", "de", "APPROVED", "NONE"},
			[4]string{"herald_booking_confirmed", "en", "PENDING", ""},
			[4]string{"herald_booking_cancelled", "de", "REJECTED", "INVALID_FORMAT"},
		)

		ts, err := b.svc.MetaTemplates.Sync(b.ctx, tn.ID, acct.ID)
		require.NoError(t, err)
		require.Len(t, ts, 3)
		require.Equal(t, 2, b.meta.catalog.gets, "two pages")
		got := b.metaTemplates(t, tn, acct)
		require.Len(t, got, 3, "Meta's list replaces what Herald knew")
		require.Equal(t, app.MetaTemplateApproved, got["herald_booking_confirmed/de"].Status)
		require.Empty(t, got["herald_booking_confirmed/de"].RejectedReason)
		require.Equal(t, app.MetaTemplatePending, got["herald_booking_confirmed/en"].Status)
		require.Equal(t, "INVALID_FORMAT", got["herald_booking_cancelled/de"].RejectedReason)
		require.Equal(t, "UTILITY", got["herald_booking_cancelled/de"].Category)
		require.Equal(t, "Hallo {{1}}, danke.", got["herald_booking_cancelled/de"].Body)
		require.True(t, got["herald_booking_cancelled/de"].SyncedAt.Equal(b.clock.Now()))
		require.Empty(t, got["herald_booking_confirmed/de"].HeaderFormat, "no header")
		require.Empty(t, b.meta.received(), "no message was sent")
	})

	t.Run("LearnsHeaderFormats", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "headers")
		acct := b.useMeta(t, tn, nil)
		b.meta.catalog.set([4]string{"herald_booking_confirmed", "de", "APPROVED", "NONE"})
		b.meta.catalog.mu.Lock()
		b.meta.catalog.templates[0]["components"] = []map[string]any{
			{"type": "HEADER", "format": "DOCUMENT", "example": map[string]any{"header_handle": []string{"4::aW..."}}},
			{"type": "BODY", "text": "Hallo {{1}}, Ihre Rechnung."},
		}
		b.meta.catalog.mu.Unlock()
		_, err := b.svc.MetaTemplates.Sync(b.ctx, tn.ID, acct.ID)
		require.NoError(t, err)
		got := b.metaTemplates(t, tn, acct)["herald_booking_confirmed/de"]
		require.Equal(t, "DOCUMENT", got.HeaderFormat)
		require.Equal(t, "Hallo {{1}}, Ihre Rechnung.", got.Body)

		// A status webhook says nothing of the header: the format stays.
		b.metaStatus(t, tn, acct, "herald_booking_confirmed", "de", app.MetaTemplatePaused)
		require.Equal(t, "DOCUMENT", b.metaTemplates(t, tn, acct)["herald_booking_confirmed/de"].HeaderFormat)
	})

	t.Run("DispatchFollowsTheSync", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		b.meta.catalog.set([4]string{"herald_booking_confirmed", "de", "PAUSED", ""})
		_, err := b.svc.MetaTemplates.Sync(b.ctx, tn.ID, acct.ID)
		require.NoError(t, err)
		wa := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		_, err = b.dispatch(wa, 1, 5, &completion{})
		require.NoError(t, err)
		require.Equal(t, app.ReasonWhatsAppTemplateRequired, *b.message(t, tn.ID, wa.ID).FailedReason, "a paused template is not sent")

		b.meta.catalog.set([4]string{"herald_booking_confirmed", "de", "APPROVED", ""})
		_, err = b.svc.MetaTemplates.Sync(b.ctx, tn.ID, acct.ID)
		require.NoError(t, err)
		b.sendOK(t, b.routeOne(t, tn, booking("evt-2", "BK-2", anna, "WHATSAPP")))
	})

	t.Run("NeedsWABA", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, app.Attrs{"waba_id": ""})
		_, err := b.svc.MetaTemplates.Sync(b.ctx, tn.ID, acct.ID)
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
		require.Contains(t, app.ErrorMessage(err), "waba_id")
		require.Zero(t, b.meta.catalog.gets)
	})

	t.Run("OnlyMetaAccounts", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		_, err := b.svc.MetaTemplates.Sync(b.ctx, tn.ID, b.activeAccount(t, tn.ID, app.Email).ID)
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
	})

	t.Run("AnotherTenantsAccount", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		acme, beta := b.tenant(t, "acme"), b.tenant(t, "beta")
		betaAcct := b.useMeta(t, beta, nil)
		_, err := b.svc.MetaTemplates.Sync(b.ctx, acme.ID, betaAcct.ID)
		require.Equal(t, app.ENOTFOUND, app.ErrorCode(err))
		require.Zero(t, b.meta.catalog.gets)
	})

	t.Run("MetaRefusalKeepsWhatWasKnown", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			return tx.ReplaceMetaTemplates(b.ctx, tn.ID, acct.ID, nil)
		}))
		before := b.metaTemplates(t, tn, acct)
		b.meta.catalog.refuse = `{"error":{"message":"(#4) Application request limit reached","type":"OAuthException","code":4,"fbtrace_id":"x"}}`
		_, err := b.svc.MetaTemplates.Sync(b.ctx, tn.ID, acct.ID)
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
		require.Contains(t, app.ErrorMessage(err), "Application request limit reached")
		require.Equal(t, before, b.metaTemplates(t, tn, acct))
	})

	t.Run("SyncAllContinuesPastAFailure", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		acme, beta := b.tenant(t, "acme"), b.tenant(t, "beta")
		acmeAcct := b.useMeta(t, acme, nil)
		// beta's token expired: Meta answers 190 to it.
		sb := b.activeAccount(t, beta.ID, app.WhatsApp)
		require.NoError(t, b.svc.Accounts.SetStatus(b.ctx, app.CLIActor, beta.ID, sb.ID, app.AccountDisabled, ""))
		betaAcct, err := b.svc.Accounts.Create(b.ctx, app.CLIActor, beta.ID, app.AccountInput{
			Channel: app.WhatsApp, Provider: "meta", Name: "WhatsApp beta", Activate: true,
			Config:  app.Attrs{"phone_number_id": "999000111222333", "waba_id": "555000111"},
			Secrets: map[string]string{"access_token": "expired", "app_secret": "s"},
		})
		require.NoError(t, err)
		b.approveDefaults(t, beta, betaAcct)
		b.meta.catalog.set([4]string{"herald_booking_confirmed", "de", "APPROVED", ""})

		synced, failed, err := b.svc.MetaTemplates.SyncAll(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, synced)
		require.Equal(t, 1, failed)
		require.Len(t, b.metaTemplates(t, acme, acmeAcct), 1)
		whatsAppDefaults := 0
		for _, d := range app.DefaultTemplates() {
			if d.WhatsApp != nil {
				whatsAppDefaults++
			}
		}
		require.Len(t, b.metaTemplates(t, beta, betaAcct), whatsAppDefaults, "the failed account keeps what it had")
	})
}

func TestMetaTemplates_Submit(t *testing.T) {
	t.Parallel()

	whatsAppTemplate := func(t *testing.T, b *pipelineBundle, tn *app.Tenant, event, locale string) *app.Template {
		t.Helper()
		var tpl *app.Template
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
			tpl, err = tx.TemplateByKey(b.ctx, tn.ID, event, app.WhatsApp, locale)
			return err
		}))
		return tpl
	}

	t.Run("DefaultAsItIs", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			return tx.ReplaceMetaTemplates(b.ctx, tn.ID, acct.ID, nil)
		}))
		tpl := whatsAppTemplate(t, b, tn, "BOOKING_CONFIRMED", "de-DE")
		spec, _ := tpl.Spec()

		mt, err := b.svc.MetaTemplates.Submit(b.ctx, app.CLIActor, tn.ID, acct.ID, tpl.ID)
		require.NoError(t, err)
		require.Equal(t, app.MetaTemplatePending, mt.Status)
		require.Equal(t, "594425479261501", mt.MetaID)

		subs := b.meta.catalog.submissions()
		require.Len(t, subs, 1)
		require.Equal(t, map[string]any{
			"name": "herald_booking_confirmed", "language": "de", "category": "UTILITY", "parameter_format": "positional",
			"components": []any{map[string]any{"type": "BODY", "text": spec.Body,
				"example": map[string]any{"body_text": []any{[]any{"Anna Schmidt", "Lake Garda Spring Tour", "2027-04-12", "150.00 EUR", "BK-2027-0412"}}}}},
		}, subs[0], "the default's Meta template, with the event's sample values as examples")

		got := b.metaTemplates(t, tn, acct)["herald_booking_confirmed/de"]
		require.Equal(t, app.MetaTemplatePending, got.Status)
		require.Equal(t, spec.Body, got.Body)
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'meta_template.submit'`, tn.ID))

		// Pending is not approved: outside the window nothing goes to Meta.
		wa := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		_, err = b.dispatch(wa, 1, 5, &completion{})
		require.NoError(t, err)
		require.Equal(t, app.ReasonWhatsAppTemplateRequired, *b.message(t, tn.ID, wa.ID).FailedReason)
	})

	t.Run("EditedTextIsDerivedAnew", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		tpl := whatsAppTemplate(t, b, tn, "BOOKING_CONFIRMED", "en")
		body := "Hello {{passenger_name}}, your trip {{tour_name}} on {{departure_date}} is confirmed ({{booking_reference}}), deposit {{deposit_amount}} received. See you soon!"
		_, _, err := b.svc.Templates.Save(b.ctx, app.CLIActor, tn.ID, tpl.ID, app.TemplateInput{Body: body, IsActive: true,
			WhatsAppTemplate: &app.WhatsAppTemplateSpec{Name: "herald_booking_confirmed_v2", Language: "en",
				Parameters: []string{"passenger_name", "tour_name", "departure_date", "booking_reference", "deposit_amount"}}})
		require.NoError(t, err)

		_, err = b.svc.MetaTemplates.Submit(b.ctx, app.CLIActor, tn.ID, acct.ID, tpl.ID)
		require.NoError(t, err)
		sub := b.meta.catalog.submissions()[0]
		require.Equal(t, "herald_booking_confirmed_v2", sub["name"])
		require.Equal(t, "Hello {{1}}, your trip {{2}} on {{3}} is confirmed ({{4}}), deposit {{5}} received. See you soon!",
			sub["components"].([]any)[0].(map[string]any)["text"])
	})

	for name, tc := range map[string]struct {
		event, locale string
		change        func(t *testing.T, b *pipelineBundle, tn *app.Tenant, tpl *app.Template)
		code          string
		message       string
	}{
		"NotWhatsApp": {event: "BOOKING_CONFIRMED", locale: "de-DE", code: app.EINVALID, message: "Only WhatsApp templates"},
		"NoMetaTemplateNamed": {event: "BOOKING_CANCELLED", locale: "de-DE", code: app.EINVALID, message: "names no Meta template",
			change: func(t *testing.T, b *pipelineBundle, tn *app.Tenant, tpl *app.Template) {
				_, _, err := b.svc.Templates.Save(b.ctx, app.CLIActor, tn.ID, tpl.ID, app.TemplateInput{Body: tpl.Body, IsActive: true})
				require.NoError(t, err)
			}},
		"ParametersDifferFromText": {event: "BOOKING_CANCELLED", locale: "en", code: app.EINVALID, message: "make them the same",
			change: func(t *testing.T, b *pipelineBundle, tn *app.Tenant, tpl *app.Template) {
				spec, _ := tpl.Spec()
				_, _, err := b.svc.Templates.Save(b.ctx, app.CLIActor, tn.ID, tpl.ID, app.TemplateInput{
					Body: "Hi {{tour_name}} for {{passenger_name}}.", IsActive: true,
					WhatsAppTemplate: &app.WhatsAppTemplateSpec{Name: spec.Name, Language: spec.Language, Parameters: []string{"passenger_name", "tour_name"}}})
				require.NoError(t, err)
			}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupPipeline(t, nil)
			tn := b.tenant(t, "acme")
			acct := b.useMeta(t, tn, nil)
			before := b.metaTemplates(t, tn, acct)
			var tpl *app.Template
			if name == "NotWhatsApp" {
				require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) (err error) {
					tpl, err = tx.TemplateByKey(b.ctx, tn.ID, tc.event, app.Email, tc.locale)
					return err
				}))
			} else {
				tpl = whatsAppTemplate(t, b, tn, tc.event, tc.locale)
			}
			if tc.change != nil {
				tc.change(t, b, tn, tpl)
			}
			_, err := b.svc.MetaTemplates.Submit(b.ctx, app.CLIActor, tn.ID, acct.ID, tpl.ID)
			require.Equal(t, tc.code, app.ErrorCode(err), "%v", err)
			require.Contains(t, app.ErrorMessage(err), tc.message)
			require.Empty(t, b.meta.catalog.submissions(), "nothing reaches Meta")
			require.Equal(t, before, b.metaTemplates(t, tn, acct), "nothing is stored")
		})
	}

	t.Run("MetaRefuses", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		require.NoError(t, b.svc.Store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			return tx.ReplaceMetaTemplates(b.ctx, tn.ID, acct.ID, nil)
		}))
		before := b.metaTemplates(t, tn, acct)
		b.meta.catalog.refuse = `{"error":{"message":"Invalid parameter","type":"OAuthException","code":100,"error_subcode":2388024,"error_user_title":"Content in This Language Already Exists","error_user_msg":"There's already content for this template in the language you selected.","fbtrace_id":"Ad1"}}`
		_, err := b.svc.MetaTemplates.Submit(b.ctx, app.CLIActor, tn.ID, acct.ID, whatsAppTemplate(t, b, tn, "BOOKING_CONFIRMED", "de-DE").ID)
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
		require.Contains(t, app.ErrorMessage(err), "There's already content for this template")
		require.Equal(t, before, b.metaTemplates(t, tn, acct))
		require.Zero(t, b.count(t, `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'meta_template.submit'`, tn.ID))
	})

	t.Run("RejectedIsEditedApprovedIsNot", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		acct := b.useMeta(t, tn, nil)
		b.meta.catalog.set([4]string{"herald_booking_confirmed", "de", "REJECTED", "INVALID_FORMAT"},
			[4]string{"herald_booking_confirmed", "en", "APPROVED", ""})
		_, err := b.svc.MetaTemplates.Sync(b.ctx, tn.ID, acct.ID)
		require.NoError(t, err)

		mt, err := b.svc.MetaTemplates.Submit(b.ctx, app.CLIActor, tn.ID, acct.ID, whatsAppTemplate(t, b, tn, "BOOKING_CONFIRMED", "de-DE").ID)
		require.NoError(t, err)
		require.Equal(t, app.MetaTemplatePending, mt.Status)
		subs := b.meta.catalog.submissions()
		require.Len(t, subs, 1)
		require.Equal(t, "1187366262797200", subs[0]["edited"], "Meta keeps one template per name and language: it is edited")
		got := b.metaTemplates(t, tn, acct)["herald_booking_confirmed/de"]
		require.Equal(t, app.MetaTemplatePending, got.Status)
		require.Empty(t, got.RejectedReason)

		_, err = b.svc.MetaTemplates.Submit(b.ctx, app.CLIActor, tn.ID, acct.ID, whatsAppTemplate(t, b, tn, "BOOKING_CONFIRMED", "en").ID)
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
		require.Contains(t, app.ErrorMessage(err), "is already APPROVED")
		require.Len(t, b.meta.catalog.submissions(), 1)
	})

	t.Run("AnotherTenantsTemplate", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		acme, beta := b.tenant(t, "acme"), b.tenant(t, "beta")
		acct := b.useMeta(t, acme, nil)
		_, err := b.svc.MetaTemplates.Submit(b.ctx, app.CLIActor, acme.ID, acct.ID, whatsAppTemplate(t, b, beta, "BOOKING_CONFIRMED", "de-DE").ID)
		require.Equal(t, app.ENOTFOUND, app.ErrorCode(err))
		require.Empty(t, b.meta.catalog.submissions())
	})
}

func TestMetaTemplates_ApplyStatusUpdate(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	acme, beta := b.tenant(t, "acme"), b.tenant(t, "beta")
	acct := b.useMeta(t, acme, nil)
	betaAcct := b.useMeta(t, beta, app.Attrs{"waba_id": "555000111"})
	waba := acct.Config["waba_id"]

	update := func(tn *app.Tenant, waba, event, reason string) bool {
		ok, err := b.svc.MetaTemplates.ApplyStatusUpdate(b.ctx, tn.ID, app.MetaTemplateUpdate{WABAID: waba, Event: event,
			TemplateID: "594425479261596", Name: "herald_booking_confirmed", Language: "de", Reason: reason})
		require.NoError(t, err)
		return ok
	}
	require.True(t, update(acme, waba, "REJECTED", "INVALID_FORMAT"))
	got := b.metaTemplates(t, acme, acct)["herald_booking_confirmed/de"]
	require.Equal(t, app.MetaTemplateRejected, got.Status)
	require.Equal(t, "INVALID_FORMAT", got.RejectedReason)
	require.Equal(t, "594425479261596", got.MetaID)
	require.Equal(t, app.MetaCategoryUtility, got.Category, "a review without category keeps the one known")

	require.True(t, update(acme, waba, "APPROVED", ""))
	got = b.metaTemplates(t, acme, acct)["herald_booking_confirmed/de"]
	require.Equal(t, app.MetaTemplateApproved, got.Status)
	require.Empty(t, got.RejectedReason)

	require.False(t, update(acme, "555000111", "REJECTED", "SCAM"), "beta's WABA is not acme's to change")
	require.Equal(t, app.MetaTemplateApproved, b.metaTemplates(t, beta, betaAcct)["herald_booking_confirmed/de"].Status)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'meta_template.status'`, acme.ID))
}
