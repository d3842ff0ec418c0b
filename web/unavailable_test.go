package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/web/webtest"
)

// TestServer_DatabaseUnavailable cuts the connection between Herald and
// Postgres (a proxy in between, as a database restart does): the API
// answers 503 with Retry-After and its JSON error, stores nothing, the
// console shows a readable page, and both work again once it is back.
func TestServer_DatabaseUnavailable(t *testing.T) {
	t.Parallel()
	var proxy *dbtest.Proxy
	c := setupConsole(t, webtest.Options{NoWorkers: true, Config: func(cfg *app.Config) {
		proxy, cfg.DatabaseURL = dbtest.NewProxy(t, cfg.DatabaseURL)
	}})
	manager := c.signIn(asManager)
	id := c.Submit(webtest.Notification("evt-1", "BK-1"))

	apiGet := func() *http.Response {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/notifications/"+id.String(), nil)
		req.Header.Set("Authorization", "Bearer "+c.Key)
		return c.Do(t, req) // checked against the OpenAPI document
	}
	proxy.Cut()

	resp := apiGet()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "5", resp.Header.Get("Retry-After"))
	var body struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, app.EUNAVAILABLE, body.Error.Code)
	require.Contains(t, body.Error.Message, "try again")

	// A submission while the database is away is refused, not half kept.
	req := httptest.NewRequest(http.MethodPost, "/api/v1/notifications", strings.NewReader(mustJSON(t, webtest.Notification("evt-2", "BK-2"))))
	req.Header.Set("Authorization", "Bearer "+c.Key)
	req.Header.Set("Content-Type", "application/json")
	resp = c.Do(t, req)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "5", resp.Header.Get("Retry-After"))

	doc, resp := manager.get("/t/acme/")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "5", resp.Header.Get("Retry-After"))
	require.Contains(t, text(doc.Find("main")), "cannot reach its database", "a page a person can read")
	require.NotContains(t, text(doc.Find("body")), "conn", "no driver error on the page")

	proxy.Restore()
	resp = apiGet()
	_, _ = io.Copy(io.Discard, resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM events WHERE tenant_id = $1`, c.Tenant.ID), "the refused submission stored nothing")
	manager.page("/t/acme/")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
