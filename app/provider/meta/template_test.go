package meta_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/meta"
)

const wabaID = "102290129340398"

func wabaAccount() provider.Account {
	return provider.Account{ID: uuid.New(), Provider: meta.Name,
		Config:  map[string]string{"phone_number_id": phoneNumberID, "waba_id": wabaID},
		Secrets: map[string]string{"access_token": accessToken}}
}

func TestProvider_ListTemplates(t *testing.T) {
	t.Parallel()

	t.Run("FollowsPages", func(t *testing.T) {
		t.Parallel()
		page1, page2 := readFile(t, "templates_page1.json"), readFile(t, "templates_page2.json")
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Query().Get("after") == "MQZDZD" {
				_, _ = w.Write(page2)
				return
			}
			_, _ = w.Write(page1)
		})

		ts, err := b.prov.ListTemplates(context.Background(), wabaAccount())
		require.NoError(t, err)
		require.Len(t, ts, 3)
		require.Equal(t, provider.MessageTemplate{ID: "1187366262797213", Name: "herald_booking_confirmed", Language: "de",
			Status: "APPROVED", Category: "UTILITY", HeaderFormat: "DOCUMENT",
			Body: "Hallo {{1}},\n\nvielen Dank für Ihre Buchung! Ihre Reise *{{2}}* am *{{3}}* ist bestätigt, Ihre Anzahlung von {{4}} ist bei uns eingegangen.\n\nBuchungsnummer: {{5}}\n\nWir freuen uns auf Sie!"}, ts[0])
		require.Equal(t, "PENDING", ts[1].Status)
		require.Equal(t, "REJECTED", ts[2].Status)
		require.Equal(t, "INVALID_FORMAT", ts[2].RejectedReason)
		require.Equal(t, "Hallo {{1}}, Ihre Buchung für *{{2}}* ist noch nicht abgeschlossen: {{3}} Bis bald!", ts[2].Body, "the body, not the header")
		require.Equal(t, "TEXT", ts[2].HeaderFormat, "the header's format, as Meta writes it")
		require.Empty(t, ts[1].HeaderFormat, "no header")

		b.mu.Lock()
		defer b.mu.Unlock()
		require.Len(t, b.requests, 2)
		for _, r := range b.requests {
			require.Equal(t, http.MethodGet, r.Method)
			require.Equal(t, "/v21.0/"+wabaID+"/message_templates", r.Path, "the cursor is followed on the configured host")
			require.Equal(t, "Bearer "+accessToken, r.Auth)
		}
	})

	t.Run("GraphErrorIsClassified", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusUnauthorized, "error_190.json", nil))
		_, err := b.prov.ListTemplates(context.Background(), wabaAccount())
		pe := requireProviderError(t, err)
		require.Equal(t, "190", pe.Code)
		require.True(t, pe.Account)
	})

	t.Run("WithoutWABA", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "templates_page2.json", nil))
		a := wabaAccount()
		delete(a.Config, "waba_id")
		_, err := b.prov.ListTemplates(context.Background(), a)
		require.Equal(t, "missing_waba_id", requireProviderError(t, err).Code)
		require.Zero(t, b.count(), "nothing is asked without a WABA")
	})
}

func TestProvider_SubmitTemplate(t *testing.T) {
	t.Parallel()

	t.Run("Created", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "template_created.json", nil))
		got, err := b.prov.SubmitTemplate(context.Background(), wabaAccount(), provider.TemplateDraft{
			Name: "herald_booking_confirmed", Language: "de", Category: "UTILITY",
			Body: "Hallo {{1}}, Ihre Reise {{2}} ist bestätigt.", Examples: []string{"Anna Schmidt", "Gardasee\nim Frühling"},
		})
		require.NoError(t, err)
		require.Equal(t, provider.MessageTemplate{ID: "594425479261596", Name: "herald_booking_confirmed", Language: "de",
			Status: "PENDING", Category: "UTILITY", Body: "Hallo {{1}}, Ihre Reise {{2}} ist bestätigt."}, got)

		req := b.only(t)
		require.Equal(t, http.MethodPost, req.Method)
		require.Equal(t, "/v21.0/"+wabaID+"/message_templates", req.Path)
		require.Equal(t, "application/json", req.ContentType)
		require.JSONEq(t, `{
			"name": "herald_booking_confirmed",
			"language": "de",
			"category": "UTILITY",
			"parameter_format": "positional",
			"components": [{
				"type": "BODY",
				"text": "Hallo {{1}}, Ihre Reise {{2}} ist bestätigt.",
				"example": {"body_text": [["Anna Schmidt", "Gardasee / im Frühling"]]}
			}]
		}`, string(req.Body))
	})

	t.Run("EditsExisting", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"success":true}`)) })
		got, err := b.prov.SubmitTemplate(context.Background(), wabaAccount(), provider.TemplateDraft{ID: "594425479261596",
			Name: "herald_booking_confirmed", Language: "de", Category: "UTILITY", Body: "Hallo {{1}}, bestätigt.", Examples: []string{"Anna"}})
		require.NoError(t, err)
		require.Equal(t, "PENDING", got.Status)
		require.Equal(t, "594425479261596", got.ID)
		req := b.only(t)
		require.Equal(t, "/v21.0/594425479261596", req.Path, "a rejected template is edited where it is")
		require.JSONEq(t, `{"category":"UTILITY","components":[{"type":"BODY","text":"Hallo {{1}}, bestätigt.","example":{"body_text":[["Anna"]]}}]}`, string(req.Body))
	})

	t.Run("WithoutParametersNoExample", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "template_created.json", nil))
		_, err := b.prov.SubmitTemplate(context.Background(), wabaAccount(), provider.TemplateDraft{
			Name: "herald_hello", Language: "en", Category: "UTILITY", Body: "Hello there."})
		require.NoError(t, err)
		var body map[string]any
		require.NoError(t, json.Unmarshal(b.only(t).Body, &body))
		require.Equal(t, []any{map[string]any{"type": "BODY", "text": "Hello there."}}, body["components"])
	})

	t.Run("Refused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"message":"Invalid parameter","type":"OAuthException","code":100,"error_subcode":2388024,"is_transient":false,"error_user_title":"Content in This Language Already Exists","error_user_msg":"There's already content for this template in the language you selected.","fbtrace_id":"Ad1Fq2"}}`))
		})
		_, err := b.prov.SubmitTemplate(context.Background(), wabaAccount(), provider.TemplateDraft{
			Name: "herald_hello", Language: "en", Category: "UTILITY", Body: "Hello there."})
		pe := requireProviderError(t, err)
		require.Equal(t, "100", pe.Code)
		require.Equal(t, provider.Permanent, pe.Class)
		require.Equal(t, "Invalid parameter: There's already content for this template in the language you selected.", pe.Reason)
	})
}

func TestParseWebhook_TemplateStatusUpdate(t *testing.T) {
	t.Parallel()
	w, err := meta.ParseWebhook(readFile(t, "template_status_webhook.json"))
	require.NoError(t, err)
	require.Empty(t, w.Receipts)
	require.Empty(t, w.Inbound)
	require.Equal(t, []meta.TemplateUpdate{{WABAID: wabaID, Event: "REJECTED", TemplateID: "594425479261596",
		Name: "herald_booking_confirmed", Language: "de", Category: "UTILITY", Reason: "INVALID_FORMAT"}}, w.TemplateUpdates)

	approved := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"` + wabaID + `","time":1750857384,"changes":[{"value":{
		"event":"APPROVED","message_template_id":594425479261596,"message_template_name":"herald_booking_confirmed",
		"message_template_language":"de","reason":"NONE"},"field":"message_template_status_update"}]}]}`)
	w, err = meta.ParseWebhook(approved)
	require.NoError(t, err)
	require.Len(t, w.TemplateUpdates, 1)
	require.Equal(t, "APPROVED", w.TemplateUpdates[0].Event)
	require.Empty(t, w.TemplateUpdates[0].Reason, `Meta's "NONE" is no reason`)
}

func TestParseWebhook_PricingOnTheTimeline(t *testing.T) {
	t.Parallel()
	w, err := meta.ParseWebhook(readFile(t, "status_webhook.json"))
	require.NoError(t, err)
	sent := w.Receipts[1]
	require.Equal(t, provider.StatusSent, sent.Status)
	require.True(t, strings.HasPrefix(sent.Raw,
		`{"pricing":{"billable":true,"pricing_model":"PMP","category":"utility","type":"regular"},"conversation":{"id":"6ceb9d929c1d2c6ab6c5d4e3f2a1b0c9","expiration_timestamp":"1750943784","origin":{"type":"utility"}},"status":"sent"`),
		"what Meta bills comes first in the excerpt the timeline keeps: %s", sent.Raw)

	// A long id cannot push the pricing out of the excerpt.
	long := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"metadata":{"phone_number_id":"1"},
		"statuses":[{"id":"wamid.` + strings.Repeat("A", 300) + `","status":"delivered","timestamp":"1750857390","recipient_id":"4915112345678",
		"pricing":{"billable":false,"pricing_model":"PMP","category":"service","type":"free_customer_service"}}]}}]}]}`)
	w, err = meta.ParseWebhook(long)
	require.NoError(t, err)
	require.Contains(t, w.Receipts[0].Raw, `"category":"service","type":"free_customer_service"`)

	// Without pricing the excerpt is the status as Meta sent it.
	w, err = meta.ParseWebhook(readFile(t, "status_webhook.json"))
	require.NoError(t, err)
	require.Equal(t, provider.StatusRead, w.Receipts[2].Status)
	require.True(t, strings.HasPrefix(w.Receipts[2].Raw, `{"id":"wamid.`))
}
