package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// endpointView is an endpoint as the API answers it.
type endpointView struct {
	ID                      uuid.UUID `json:"id"`
	URL                     string    `json:"url"`
	Description             string    `json:"description"`
	EventTypes              []string  `json:"event_types"`
	Enabled                 bool      `json:"enabled"`
	DisabledReason          *string   `json:"disabled_reason"`
	Secret                  string    `json:"secret"`
	PreviousSecretExpiresAt *string   `json:"previous_secret_expires_at"`
	CreatedBy               string    `json:"created_by"`
}

// rawRequest answers the status and the body as it is.
func rawRequest(t *testing.T, h *webtest.Herald, key, method, path, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.App.Test(req, -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw)
}

func TestAPI_CallbackEndpoints(t *testing.T) {
	t.Parallel()
	const hookURL = "https://hooks.acme.example/herald"

	t.Run("Lifecycle", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{NoWorkers: true})
		var created endpointView
		status := h.Request(http.MethodPost, "/api/v1/callback-endpoints", map[string]any{
			"url": hookURL, "description": "CRM", "event_types": []string{"message.failed", "message.delivered", "message.failed"},
		}, &created)
		require.Equal(t, http.StatusCreated, status)
		require.True(t, strings.HasPrefix(created.Secret, "whsec_"))
		require.Equal(t, []string{"message.delivered", "message.failed"}, created.EventTypes, "deduplicated, in a fixed order")
		require.True(t, created.Enabled)
		require.Contains(t, created.CreatedBy, "booking system")
		base := "/api/v1/callback-endpoints/" + created.ID.String()

		// The secret is never answered again, nor stored in the clear.
		for _, path := range []string{"/api/v1/callback-endpoints", base} {
			status, body := rawRequest(t, h, h.Key, http.MethodGet, path, "")
			require.Equal(t, http.StatusOK, status)
			require.Contains(t, body, created.ID.String())
			require.NotContains(t, body, `"secret"`)
			require.NotContains(t, body, strings.TrimPrefix(created.Secret, "whsec_"))
		}
		require.Zero(t, h.Count(`SELECT count(*) FROM callback_endpoints WHERE position($1::bytea IN secrets) > 0`, []byte(strings.TrimPrefix(created.Secret, "whsec_"))))

		var updated endpointView
		require.Equal(t, http.StatusOK, h.Request(http.MethodPatch, base, map[string]any{
			"url": hookURL + "/v2", "event_types": []string{"message.read"}, "enabled": false,
		}, &updated))
		require.Equal(t, hookURL+"/v2", updated.URL)
		require.Equal(t, "CRM", updated.Description, "unchanged when not named")
		require.Equal(t, []string{"message.read"}, updated.EventTypes)
		require.False(t, updated.Enabled)
		require.Contains(t, *updated.DisabledReason, "booking system")

		var enabled endpointView
		require.Equal(t, http.StatusOK, h.Request(http.MethodPatch, base, map[string]any{"enabled": true}, &enabled))
		require.True(t, enabled.Enabled)
		require.Nil(t, enabled.DisabledReason)

		var list struct {
			CallbackEndpoints []endpointView `json:"callback_endpoints"`
		}
		require.Equal(t, http.StatusOK, h.Request(http.MethodGet, "/api/v1/callback-endpoints", nil, &list))
		require.Len(t, list.CallbackEndpoints, 1)

		require.Equal(t, http.StatusNoContent, h.Request(http.MethodDelete, base, nil, nil))
		var e apiErrorBody
		require.Equal(t, http.StatusNotFound, h.Request(http.MethodGet, base, nil, &e))
		require.Equal(t, "not_found", e.Error.Code)

		for action, n := range map[string]int{"callback_endpoint.create": 1, "callback_endpoint.update": 2, "callback_endpoint.delete": 1} {
			require.Equal(t, n, h.Count(`SELECT count(*) FROM audit_log WHERE action = $1 AND actor_type = 'api_key' AND tenant_id = $2`, action, h.Tenant.ID), action)
		}
	})

	t.Run("BadInputStoresNothing", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{NoWorkers: true})
		for name, tc := range map[string]struct {
			body   string
			status int
			field  string
		}{
			"MissingURL":       {`{"event_types": ["message.sent"]}`, 422, "url"},
			"NotHTTPS":         {`{"url": "ftp://hooks.acme.example/x", "event_types": ["message.sent"]}`, 422, "url"},
			"Loopback":         {`{"url": "http://127.0.0.1:8080/x", "event_types": ["message.sent"]}`, 422, "url"},
			"Metadata":         {`{"url": "http://169.254.169.254/latest", "event_types": ["message.sent"]}`, 422, "url"},
			"InternalName":     {`{"url": "https://db.internal/x", "event_types": ["message.sent"]}`, 422, "url"},
			"Credentials":      {`{"url": "https://u:p@hooks.acme.example/x", "event_types": ["message.sent"]}`, 422, "url"},
			"NoEventTypes":     {`{"url": "` + hookURL + `", "event_types": []}`, 422, "event_types"},
			"UnknownEventType": {`{"url": "` + hookURL + `", "event_types": ["message.opened"]}`, 422, "event_types"},
			"LongDescription":  {`{"url": "` + hookURL + `", "event_types": ["message.sent"], "description": "` + strings.Repeat("x", 201) + `"}`, 422, "description"},
			"UnknownField":     {`{"url": "` + hookURL + `", "event_types": ["message.sent"], "secret": "whsec_mine"}`, 422, "secret"},
			"Malformed":        {`{"url": `, 400, ""},
			"WrongType":        {`{"url": "` + hookURL + `", "event_types": "message.sent"}`, 400, "event_types"},
		} {
			t.Run(name, func(t *testing.T) {
				var e apiErrorBody
				status := h.Request(http.MethodPost, "/api/v1/callback-endpoints", tc.body, &e)
				require.Equal(t, tc.status, status)
				require.NotEmpty(t, e.Error.Code)
				require.NotEmpty(t, e.Error.Message)
				require.Equal(t, tc.field, e.Error.Field)
			})
		}

		t.Run("EveryProblemAtOnce", func(t *testing.T) {
			var e apiErrorBody
			require.Equal(t, http.StatusUnprocessableEntity, h.Request(http.MethodPost, "/api/v1/callback-endpoints", `{"url": "", "event_types": ["x"]}`, &e))
			require.Len(t, e.Error.Details, 2)
			require.Equal(t, "url", e.Error.Details[0].Field)
			require.Equal(t, "event_types", e.Error.Details[1].Field)
		})
		require.Zero(t, h.Count(`SELECT count(*) FROM callback_endpoints`))
		require.Zero(t, h.Count(`SELECT count(*) FROM audit_log WHERE action LIKE 'callback_endpoint.%'`))

		// A bad update changes nothing either.
		var created endpointView
		require.Equal(t, http.StatusCreated, h.Request(http.MethodPost, "/api/v1/callback-endpoints",
			map[string]any{"url": hookURL, "event_types": []string{"message.sent"}}, &created))
		var e apiErrorBody
		require.Equal(t, http.StatusUnprocessableEntity, h.Request(http.MethodPatch, "/api/v1/callback-endpoints/"+created.ID.String(),
			map[string]any{"url": "http://10.0.0.1/x", "description": "changed"}, &e))
		require.Equal(t, "url", e.Error.Field)
		var got endpointView
		require.Equal(t, http.StatusOK, h.Request(http.MethodGet, "/api/v1/callback-endpoints/"+created.ID.String(), nil, &got))
		require.Equal(t, hookURL, got.URL)
		require.Empty(t, got.Description)
	})

	t.Run("OtherTenantSeesNothing", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{NoWorkers: true})
		other, err := h.Services.Tenants.Create(h.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex Travel"})
		require.NoError(t, err)
		_, otherKey, err := h.Services.APIKeys.Create(h.Ctx, app.CLIActor, other.ID, "globex system", app.Scopes...)
		require.NoError(t, err)

		var mine endpointView
		require.Equal(t, http.StatusCreated, h.Request(http.MethodPost, "/api/v1/callback-endpoints",
			map[string]any{"url": hookURL, "event_types": []string{"message.sent"}}, &mine))
		var test deliveryView
		require.Equal(t, http.StatusAccepted, h.Request(http.MethodPost, "/api/v1/callback-endpoints/"+mine.ID.String()+"/test", nil, &test))
		base := "/api/v1/callback-endpoints/" + mine.ID.String()

		var list struct {
			CallbackEndpoints []endpointView `json:"callback_endpoints"`
		}
		require.Equal(t, http.StatusOK, h.RequestWithKey(otherKey, http.MethodGet, "/api/v1/callback-endpoints", nil, &list))
		require.Empty(t, list.CallbackEndpoints)
		for _, r := range []struct{ method, path, body string }{
			{http.MethodGet, base, ""},
			{http.MethodPatch, base, `{"enabled": false}`},
			{http.MethodDelete, base, ""},
			{http.MethodPost, base + "/rotate-secret", ""},
			{http.MethodPost, base + "/test", ""},
			{http.MethodGet, base + "/deliveries", ""},
			{http.MethodPost, base + "/deliveries/" + test.ID.String() + "/replay", ""},
			{http.MethodGet, "/api/v1/callback-endpoints/not-a-uuid", ""},
			{http.MethodPost, base + "/deliveries/not-a-uuid/replay", ""},
		} {
			var e apiErrorBody
			var body any
			if r.body != "" {
				body = r.body
			}
			require.Equal(t, http.StatusNotFound, h.RequestWithKey(otherKey, r.method, r.path, body, &e), "%s %s", r.method, r.path)
			require.Equal(t, "not_found", e.Error.Code)
		}
		var got endpointView
		require.Equal(t, http.StatusOK, h.Request(http.MethodGet, base, nil, &got))
		require.True(t, got.Enabled, "untouched")
		require.Nil(t, got.PreviousSecretExpiresAt, "not rotated")
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM callback_deliveries`))

		// A delivery of another endpoint of the same tenant is not this
		// endpoint's to replay.
		var second endpointView
		require.Equal(t, http.StatusCreated, h.Request(http.MethodPost, "/api/v1/callback-endpoints",
			map[string]any{"url": hookURL + "/2", "event_types": []string{"message.sent"}}, &second))
		require.Equal(t, http.StatusNotFound, h.Request(http.MethodPost,
			"/api/v1/callback-endpoints/"+second.ID.String()+"/deliveries/"+test.ID.String()+"/replay", nil, nil))
	})
}
