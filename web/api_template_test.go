package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// apiTemplate is a template as the API answers it.
type apiTemplate struct {
	ID               uuid.UUID `json:"id"`
	TriggerEvent     string    `json:"trigger_event"`
	Channel          string    `json:"channel"`
	Locale           string    `json:"locale"`
	Subject          string    `json:"subject"`
	Body             string    `json:"body"`
	WhatsAppTemplate *struct {
		Name       string   `json:"name"`
		Language   string   `json:"language"`
		Parameters []string `json:"parameters"`
	} `json:"whatsapp_template"`
	Version  int      `json:"version"`
	Active   bool     `json:"active"`
	Warnings []string `json:"warnings"`
}

type apiTemplateList struct {
	Templates []apiTemplate `json:"templates"`
	Page      struct {
		HasMore    bool `json:"has_more"`
		NextOffset *int `json:"next_offset"`
	} `json:"page"`
}

// templateBundle is Herald with a manage key, a read key and another
// tenant's key with every scope.
type templateBundle struct {
	*webtest.Herald
	manage, read, other string
	managerKeyID        uuid.UUID
}

func setupTemplateAPI(t *testing.T) *templateBundle {
	t.Helper()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	b := &templateBundle{Herald: h}
	k, secret, err := h.Services.APIKeys.Create(h.Ctx, app.CLIActor, h.Tenant.ID, "template manager", app.ScopeManage)
	require.NoError(t, err)
	b.manage, b.managerKeyID = secret, k.ID
	b.read = keyWith(t, h, h.Tenant.ID, app.ScopeRead)
	other, err := h.Services.Tenants.Create(h.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex"})
	require.NoError(t, err)
	b.other = keyWith(t, h, other.ID, app.Scopes...)
	return b
}

// find returns the tenant's one template for an event, channel and locale.
func (b *templateBundle) find(t *testing.T, event, channel, locale string) apiTemplate {
	t.Helper()
	var l apiTemplateList
	status, raw := call(t, b.Herald, b.read, http.MethodGet, "/api/v1/templates?trigger_event="+event+"&channel="+channel+"&locale="+locale, nil, &l)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.Len(t, l.Templates, 1)
	return l.Templates[0]
}

func TestAPITemplates_List(t *testing.T) {
	t.Parallel()
	b := setupTemplateAPI(t)

	tpl := b.find(t, "BOOKING_CONFIRMED", "EMAIL", "de-DE")
	require.Equal(t, "BOOKING_CONFIRMED", tpl.TriggerEvent)
	require.Equal(t, "EMAIL", tpl.Channel)
	require.NotEmpty(t, tpl.Subject)
	require.True(t, tpl.Active)
	require.Equal(t, 1, tpl.Version)
	wa := b.find(t, "BOOKING_CONFIRMED", "WHATSAPP", "de-DE")
	require.NotNil(t, wa.WhatsAppTemplate, "the default WhatsApp text names its Meta template")

	var page apiTemplateList
	status, _ := call(t, b.Herald, b.read, http.MethodGet, "/api/v1/templates?trigger_event=BOOKING_CONFIRMED&limit=1", nil, &page)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, page.Templates, 1)
	require.True(t, page.Page.HasMore)
	require.Equal(t, 1, *page.Page.NextOffset)
	var rest apiTemplateList
	call(t, b.Herald, b.read, http.MethodGet, "/api/v1/templates?trigger_event=BOOKING_CONFIRMED&limit=200&offset=1", nil, &rest)
	require.NotContains(t, rest.Templates, page.Templates[0])
	require.False(t, rest.Page.HasMore)
	require.Nil(t, rest.Page.NextOffset)

	var inactive apiTemplateList
	call(t, b.Herald, b.read, http.MethodGet, "/api/v1/templates?active=false", nil, &inactive)
	require.Empty(t, inactive.Templates, "every provisioned template is active")

	t.Run("BadFilters", func(t *testing.T) {
		for query, field := range map[string]string{
			"trigger_event=NO_SUCH_EVENT": "trigger_event",
			"channel=FAX":                 "channel",
			"locale=not%20a%20locale":     "locale",
			"active=maybe":                "active",
			"limit=0":                     "limit",
		} {
			var res apiErrorBody
			status, _ := call(t, b.Herald, b.read, http.MethodGet, "/api/v1/templates?"+query, nil, &res)
			require.Equal(t, http.StatusUnprocessableEntity, status, query)
			require.Equal(t, field, res.Error.Field, query)
			require.NotEmpty(t, res.Error.Details, query)
		}
	})

	t.Run("OtherTenant", func(t *testing.T) {
		var l apiTemplateList
		call(t, b.Herald, b.other, http.MethodGet, "/api/v1/templates?limit=200", nil, &l)
		for _, o := range l.Templates {
			require.NotEqual(t, tpl.ID, o.ID, "globex lists its own templates only")
		}
		var res apiErrorBody
		status, _ := call(t, b.Herald, b.other, http.MethodGet, "/api/v1/templates/"+tpl.ID.String(), nil, &res)
		require.Equal(t, http.StatusNotFound, status)
		status, _ = call(t, b.Herald, b.other, http.MethodGet, "/api/v1/templates/"+tpl.ID.String()+"/versions", nil, &res)
		require.Equal(t, http.StatusNotFound, status)
		status, _ = call(t, b.Herald, b.read, http.MethodGet, "/api/v1/templates/not-a-uuid", nil, &res)
		require.Equal(t, http.StatusNotFound, status)
	})
}

func TestAPITemplates_Create(t *testing.T) {
	t.Parallel()
	b := setupTemplateAPI(t)
	valid := func() map[string]any {
		return map[string]any{"trigger_event": "BOOKING_CONFIRMED", "channel": "EMAIL", "locale": "fr",
			"subject": "Réservation {{booking_reference}}", "body": "Bonjour {{passenger_name}} {{nickname}}"}
	}

	t.Run("BadInputStoresNothing", func(t *testing.T) {
		before := b.Count(`SELECT count(*) FROM templates`)
		audits := b.Count(`SELECT count(*) FROM audit_log`)
		for name, tc := range map[string]struct {
			change      func(map[string]any)
			raw         string
			status      int
			code, field string
		}{
			"MissingEvent":   {change: func(m map[string]any) { delete(m, "trigger_event") }, status: 422, code: "invalid", field: "trigger_event"},
			"UnknownEvent":   {change: func(m map[string]any) { m["trigger_event"] = "NOPE" }, status: 422, code: "invalid", field: "trigger_event"},
			"WrongChannel":   {change: func(m map[string]any) { m["channel"] = "WEBHOOK" }, status: 422, code: "invalid", field: "channel"},
			"MissingLocale":  {change: func(m map[string]any) { m["locale"] = "" }, status: 422, code: "invalid", field: "locale"},
			"BadLocale":      {change: func(m map[string]any) { m["locale"] = "x!" }, status: 422, code: "invalid", field: "locale"},
			"EmptyBody":      {change: func(m map[string]any) { m["body"] = " " }, status: 422, code: "invalid", field: "body"},
			"NoSubject":      {change: func(m map[string]any) { delete(m, "subject") }, status: 422, code: "invalid", field: "subject"},
			"SubjectNewline": {change: func(m map[string]any) { m["subject"] = "a\nBcc: x" }, status: 422, code: "invalid_subject", field: "subject"},
			"MetaOnEmail": {change: func(m map[string]any) {
				m["whatsapp_template"] = map[string]any{"name": "x", "language": "de", "parameters": []string{}}
			}, status: 422, code: "invalid", field: "whatsapp_template"},
			"MetaVideoHeader": {change: func(m map[string]any) {
				m["channel"] = "WHATSAPP"
				delete(m, "subject")
				m["whatsapp_template"] = map[string]any{"name": "herald_booking_confirmed", "language": "fr", "parameters": []string{}, "header": "VIDEO"}
			}, status: 422, code: "invalid", field: "whatsapp_template"},
			"MarkdownSMS": {change: func(m map[string]any) {
				m["channel"], m["body_format"] = "SMS", "markdown"
				delete(m, "subject")
			}, status: 422, code: "invalid", field: "body_format"},
			"Duplicate":    {change: func(m map[string]any) { m["locale"] = "de-DE" }, status: 422, code: "invalid", field: "locale"},
			"UnknownField": {change: func(m map[string]any) { m["version"] = 3 }, status: 422, code: "unknown_field", field: "version"},
			"WrongType":    {change: func(m map[string]any) { m["body"] = 42 }, status: 400, code: "malformed_json", field: "body"},
			"Malformed":    {raw: `{"trigger_event":`, status: 400, code: "malformed_json"},
			"Empty":        {raw: ``, status: 400, code: "malformed_json"},
		} {
			t.Run(name, func(t *testing.T) {
				var body any = tc.raw
				if tc.change != nil {
					m := valid()
					tc.change(m)
					body = m
				}
				var res apiErrorBody
				status, raw := call(t, b.Herald, b.manage, http.MethodPost, "/api/v1/templates", body, &res)
				require.Equal(t, tc.status, status, "%s", raw)
				require.Equal(t, tc.code, res.Error.Code)
				require.Equal(t, tc.field, res.Error.Field)
				require.NotEmpty(t, res.Error.Message)
				require.NotEmpty(t, res.Error.Details)
			})
		}
		require.Equal(t, before, b.Count(`SELECT count(*) FROM templates`))
		require.Equal(t, audits, b.Count(`SELECT count(*) FROM audit_log`))
	})

	t.Run("Created", func(t *testing.T) {
		var tpl apiTemplate
		status, raw := call(t, b.Herald, b.manage, http.MethodPost, "/api/v1/templates", valid(), &tpl)
		require.Equal(t, http.StatusCreated, status, "%s", raw)
		require.Equal(t, "fr", tpl.Locale)
		require.Equal(t, 1, tpl.Version)
		require.True(t, tpl.Active)
		require.Equal(t, []string{"nickname"}, tpl.Warnings, "unknown placeholders are warnings, as in the editor")
		require.Equal(t, tpl.ID, b.find(t, "BOOKING_CONFIRMED", "EMAIL", "fr").ID)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.create' AND target_id = $1
			AND actor_type = 'api_key' AND actor_id = $2 AND tenant_id = $3`, tpl.ID.String(), b.managerKeyID, b.Tenant.ID))
	})
}

func TestAPITemplates_Versions(t *testing.T) {
	t.Parallel()
	b := setupTemplateAPI(t)
	tpl := b.find(t, "BOOKING_CONFIRMED", "EMAIL", "en")
	path := "/api/v1/templates/" + tpl.ID.String()
	update := func(base int, body string) map[string]any {
		return map[string]any{"subject": "Booking {{booking_reference}}", "body": body, "base_version": base}
	}

	t.Run("BadUpdateStoresNothing", func(t *testing.T) {
		for name, tc := range map[string]struct {
			body        any
			status      int
			code, field string
		}{
			"NoBaseVersion": {map[string]any{"subject": "s", "body": "b"}, 422, "missing_base_version", "base_version"},
			"EmptyBody":     {update(1, ""), 422, "invalid", "body"},
			"StaleVersion":  {update(7, "x"), 409, "conflict", ""},
			"UnknownField":  {map[string]any{"body": "b", "base_version": 1, "locale": "fr"}, 422, "unknown_field", "locale"},
		} {
			var res apiErrorBody
			status, raw := call(t, b.Herald, b.manage, http.MethodPut, path, tc.body, &res)
			require.Equal(t, tc.status, status, "%s: %s", name, raw)
			require.Equal(t, tc.code, res.Error.Code, name)
			require.Equal(t, tc.field, res.Error.Field, name)
		}
		require.Equal(t, 1, b.find(t, "BOOKING_CONFIRMED", "EMAIL", "en").Version, "still version 1")
	})

	t.Run("UpdateRestoreActivate", func(t *testing.T) {
		var v2 apiTemplate
		status, raw := call(t, b.Herald, b.manage, http.MethodPut, path, update(1, "Second text for {{passenger_name}}"), &v2)
		require.Equal(t, http.StatusOK, status, "%s", raw)
		require.Equal(t, 2, v2.Version)
		require.Equal(t, "Second text for {{passenger_name}}", v2.Body)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.update' AND target_id = $1 AND actor_id = $2`,
			tpl.ID.String(), b.managerKeyID))

		var versions struct {
			Versions []struct {
				Version int    `json:"version"`
				Body    string `json:"body"`
				Author  string `json:"author"`
				Current bool   `json:"current"`
			} `json:"versions"`
		}
		status, _ = call(t, b.Herald, b.read, http.MethodGet, path+"/versions", nil, &versions)
		require.Equal(t, http.StatusOK, status)
		require.Len(t, versions.Versions, 2)
		require.Equal(t, 2, versions.Versions[0].Version)
		require.True(t, versions.Versions[0].Current)
		require.Equal(t, "API key “template manager”", versions.Versions[0].Author)
		require.Equal(t, tpl.Body, versions.Versions[1].Body)

		var res apiErrorBody
		status, _ = call(t, b.Herald, b.manage, http.MethodPost, path+"/versions/1/restore", map[string]any{"base_version": 1}, &res)
		require.Equal(t, http.StatusConflict, status, "a restore from a stale page stores nothing")
		status, _ = call(t, b.Herald, b.manage, http.MethodPost, path+"/versions/1/restore", map[string]any{}, &res)
		require.Equal(t, http.StatusUnprocessableEntity, status)
		require.Equal(t, "base_version", res.Error.Field)
		status, _ = call(t, b.Herald, b.manage, http.MethodPost, path+"/versions/99/restore", map[string]any{"base_version": 2}, &res)
		require.Equal(t, http.StatusNotFound, status)

		var v3 apiTemplate
		status, raw = call(t, b.Herald, b.manage, http.MethodPost, path+"/versions/1/restore", map[string]any{"base_version": 2}, &v3)
		require.Equal(t, http.StatusOK, status, "%s", raw)
		require.Equal(t, 3, v3.Version)
		require.Equal(t, tpl.Body, v3.Body)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.restore' AND target_id = $1 AND actor_type = 'api_key'`, tpl.ID.String()))

		var off apiTemplate
		status, _ = call(t, b.Herald, b.manage, http.MethodPost, path+"/deactivate", nil, &off)
		require.Equal(t, http.StatusOK, status)
		require.False(t, off.Active)
		require.Equal(t, 3, off.Version, "activation does not change the content")
		var inactive apiTemplateList
		call(t, b.Herald, b.read, http.MethodGet, "/api/v1/templates?active=false", nil, &inactive)
		require.Len(t, inactive.Templates, 1)
		require.Equal(t, tpl.ID, inactive.Templates[0].ID)
		var on apiTemplate
		status, _ = call(t, b.Herald, b.manage, http.MethodPost, path+"/activate", nil, &on)
		require.Equal(t, http.StatusOK, status)
		require.True(t, on.Active)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.deactivate' AND target_id = $1 AND actor_type = 'api_key'`, tpl.ID.String()))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'template.reactivate' AND target_id = $1 AND actor_type = 'api_key'`, tpl.ID.String()))
	})

	t.Run("OtherTenantChangesNothing", func(t *testing.T) {
		other := b.find(t, "BOOKING_CONFIRMED", "WHATSAPP", "en")
		p := "/api/v1/templates/" + other.ID.String()
		for _, r := range []struct {
			method, path string
			body         any
		}{
			{http.MethodPut, p, update(other.Version, "hijacked")},
			{http.MethodPost, p + "/versions/1/restore", map[string]any{"base_version": other.Version}},
			{http.MethodPost, p + "/deactivate", nil},
			{http.MethodPost, p + "/activate", nil},
		} {
			var res apiErrorBody
			status, raw := call(t, b.Herald, b.other, r.method, r.path, r.body, &res)
			require.Equal(t, http.StatusNotFound, status, "%s %s: %s", r.method, r.path, raw)
			require.Equal(t, app.ENOTFOUND, res.Error.Code)
		}
		after := b.find(t, "BOOKING_CONFIRMED", "WHATSAPP", "en")
		require.Equal(t, other.Version, after.Version)
		require.True(t, after.Active)
		require.False(t, strings.Contains(after.Body, "hijacked"))
	})
}
