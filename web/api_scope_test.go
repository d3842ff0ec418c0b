package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// apiCall sends an API request with key and returns the status and the raw
// answer. It uses no require, so goroutines of a concurrency test may call
// it.
func apiCall(h *webtest.Herald, key, method, path string, body any) (int, []byte, error) {
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return 0, nil, err
		}
		raw = j
	}
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, r)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	check := req.Clone(req.Context())
	resp, err := h.App.Test(req, -1)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err == nil {
		// Errorf only, so a goroutine may call this: the exchange must
		// match the OpenAPI document like every API test's.
		webtest.CheckContract(h.T, webtest.Exchange{Request: check, RequestBody: raw, Response: resp, ResponseBody: answer})
	}
	return resp.StatusCode, answer, err
}

// call sends a request through the harness's RequestWithKey (which checks
// answers against the API's contract where the harness does) and decodes
// the answer into out unless out is nil; it returns the status and the raw
// answer.
func call(t *testing.T, h *webtest.Herald, key, method, path string, body, out any) (int, []byte) {
	t.Helper()
	var raw json.RawMessage
	status := h.RequestWithKey(key, method, path, body, &raw)
	if out != nil && len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, out), "body: %s", raw)
	}
	return status, raw
}

// keyWith creates an API key of the tenant with exactly the scopes and
// returns its secret.
func keyWith(t *testing.T, h *webtest.Herald, tenantID uuid.UUID, scopes ...string) string {
	t.Helper()
	_, secret, err := h.Services.APIKeys.Create(h.Ctx, app.CLIActor, tenantID, "key with "+strings.Join(scopes, "+"), scopes...)
	require.NoError(t, err)
	return secret
}

// apiRouteScopes is every /api/v1 route with the scope it requires. A new
// route fails TestAPIScopes_Routes until it is listed here, so that its
// scope is a decision, not an accident.
var apiRouteScopes = map[string]string{
	"GET /api/v1/tenant":                                              app.ScopeRead,
	"GET /api/v1/uploads/:id":                                         app.ScopeRead,
	"GET /api/v1/uploads/:id/errors":                                  app.ScopeRead,
	"POST /api/v1/uploads":                                            app.ScopeSend,
	"POST /api/v1/uploads/:id/start":                                  app.ScopeSend,
	"PATCH /api/v1/tenant":                                            app.ScopeManage,
	"GET /api/v1/events":                                              app.ScopeRead,
	"POST /api/v1/events":                                             app.ScopeManage,
	"GET /api/v1/events/:name":                                        app.ScopeRead,
	"PUT /api/v1/events/:name":                                        app.ScopeManage,
	"DELETE /api/v1/events/:name":                                     app.ScopeManage,
	"GET /api/v1/events/:name/versions":                               app.ScopeRead,
	"GET /api/v1/events/:name/versions/:version":                      app.ScopeRead,
	"GET /api/v1/limits":                                              app.ScopeRead,
	"GET /api/v1/budgets":                                             app.ScopeRead,
	"POST /api/v1/notifications":                                      app.ScopeSend,
	"GET /api/v1/notifications":                                       app.ScopeRead,
	"GET /api/v1/notifications/:id":                                   app.ScopeRead,
	"PATCH /api/v1/notifications/:id":                                 app.ScopeManage,
	"DELETE /api/v1/notifications/:id":                                app.ScopeManage,
	"POST /api/v1/notifications/:id/approve":                          app.ScopeApprove,
	"POST /api/v1/notifications/:id/reject":                           app.ScopeApprove,
	"GET /api/v1/messages":                                            app.ScopeRead,
	"GET /api/v1/messages/:id":                                        app.ScopeRead,
	"POST /api/v1/bookings/:id/resend":                                app.ScopeSend,
	"POST /api/v1/messages/:id/retry":                                 app.ScopeSend,
	"GET /api/v1/conversations":                                       app.ScopeRead,
	"GET /api/v1/conversations/:id":                                   app.ScopeRead,
	"POST /api/v1/conversations/:id/replies":                          app.ScopeSend,
	"POST /api/v1/conversations/:id/status":                           app.ScopeSend,
	"GET /api/v1/delivery-deadlines":                                  app.ScopeRead,
	"GET /api/v1/trips/:id/reach":                                     app.ScopeRead,
	"PUT /api/v1/delivery-deadlines":                                  app.ScopeManage,
	"GET /api/v1/confirmation-windows":                                app.ScopeRead,
	"PUT /api/v1/confirmation-windows":                                app.ScopeManage,
	"GET /api/v1/branding":                                            app.ScopeRead,
	"PUT /api/v1/branding":                                            app.ScopeManage,
	"GET /api/v1/alerts/settings":                                     app.ScopeRead,
	"PUT /api/v1/alerts/settings":                                     app.ScopeManage,
	"GET /api/v1/scheduled-notifications":                             app.ScopeRead,
	"GET /api/v1/approvals":                                           app.ScopeRead,
	"GET /api/v1/approvals/:id":                                       app.ScopeRead,
	"GET /api/v1/templates":                                           app.ScopeRead,
	"POST /api/v1/templates":                                          app.ScopeManage,
	"GET /api/v1/templates/:id":                                       app.ScopeRead,
	"PUT /api/v1/templates/:id":                                       app.ScopeManage,
	"GET /api/v1/templates/:id/versions":                              app.ScopeRead,
	"POST /api/v1/templates/:id/versions/:version/restore":            app.ScopeManage,
	"POST /api/v1/templates/:id/activate":                             app.ScopeManage,
	"POST /api/v1/templates/:id/deactivate":                           app.ScopeManage,
	"GET /api/v1/channel-accounts":                                    app.ScopeRead,
	"POST /api/v1/channel-accounts":                                   app.ScopeManage,
	"GET /api/v1/channel-accounts/:id":                                app.ScopeRead,
	"PATCH /api/v1/channel-accounts/:id":                              app.ScopeManage,
	"POST /api/v1/channel-accounts/:id/activate":                      app.ScopeManage,
	"POST /api/v1/channel-accounts/:id/suspend":                       app.ScopeManage,
	"POST /api/v1/channel-accounts/:id/test":                          app.ScopeManage,
	"GET /api/v1/callback-endpoints":                                  app.ScopeRead,
	"POST /api/v1/callback-endpoints":                                 app.ScopeManage,
	"GET /api/v1/callback-endpoints/:id":                              app.ScopeRead,
	"PATCH /api/v1/callback-endpoints/:id":                            app.ScopeManage,
	"DELETE /api/v1/callback-endpoints/:id":                           app.ScopeManage,
	"POST /api/v1/callback-endpoints/:id/rotate-secret":               app.ScopeManage,
	"POST /api/v1/callback-endpoints/:id/test":                        app.ScopeManage,
	"GET /api/v1/callback-endpoints/:id/deliveries":                   app.ScopeRead,
	"POST /api/v1/callback-endpoints/:id/deliveries/:delivery/replay": app.ScopeManage,
	"GET /api/v1/contacts":                                            app.ScopeRead,
	"GET /api/v1/contacts/:id":                                        app.ScopeRead,
	"PATCH /api/v1/contacts/:id":                                      app.ScopeManage,
	"POST /api/v1/contacts/:id/opt-out":                               app.ScopeManage,
	"POST /api/v1/contacts/:id/opt-in":                                app.ScopeManage,
	"POST /api/v1/contacts/:id/erase":                                 app.ScopeManage,
}

// apiPathFor fills a route's parameters: random ids (which name nothing,
// so an allowed request answers 404 or 422 and changes nothing), version 1.
func apiPathFor(route string) string {
	parts := strings.Split(route, "/")
	for i, p := range parts {
		switch {
		case p == ":version":
			parts[i] = "1"
		case strings.HasPrefix(p, ":"):
			parts[i] = uuid.NewString()
		}
	}
	return strings.Join(parts, "/")
}

// TestAPIScopes_Routes checks that every route the server answers under
// /api/v1 was registered with a scope, and that the scopes are the ones
// apiRouteScopes lists.
func TestAPIScopes_Routes(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})

	scoped := map[string]string{}
	for _, r := range h.Server.APIRoutes() {
		scoped[r.Method+" "+r.Path] = r.Scope
	}
	var served []string
	for _, r := range h.App.GetRoutes(true) {
		if !strings.HasPrefix(r.Path, "/api/v1/") || r.Method == http.MethodHead {
			continue
		}
		served = append(served, r.Method+" "+r.Path)
	}
	sort.Strings(served)
	require.NotEmpty(t, served)
	for _, route := range served {
		require.Contains(t, scoped, route, "%s is served without a scope: register it through the API route group", route)
	}
	require.Equal(t, apiRouteScopes, scoped, "each route's scope (a new route needs its line in apiRouteScopes)")
}

// TestAPIScopes_EachScopeAllowsItsRoutes calls every /api/v1 route with a
// key of each single scope: the route's own scope gets past the check, any
// other is refused with 403 insufficient_scope naming the scope needed.
func TestAPIScopes_EachScopeAllowsItsRoutes(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	keys := map[string]string{}
	for _, sc := range app.Scopes {
		keys[sc] = keyWith(t, h, h.Tenant.ID, sc)
	}
	before := h.Count(`SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM templates) + (SELECT count(*) FROM channel_accounts) +
		(SELECT count(*) FROM messages) + (SELECT count(*) FROM delivery_deadlines) + (SELECT count(*) FROM confirmation_windows)`)

	for _, r := range h.Server.APIRoutes() {
		t.Run(r.Method+" "+r.Path, func(t *testing.T) {
			path := apiPathFor(r.Path)
			var body any
			if r.Method != http.MethodGet && r.Method != http.MethodDelete {
				body = "{}"
			}
			for _, sc := range app.Scopes {
				var res apiErrorBody
				status, raw := call(t, h, keys[sc], r.Method, path, body, &res)
				require.Less(t, status, 500, "%s with scope %s: %s", path, sc, raw)
				if sc == r.Scope {
					require.NotEqual(t, "insufficient_scope", res.Error.Code, "scope %s may %s %s", sc, r.Method, r.Path)
					continue
				}
				require.Equal(t, http.StatusForbidden, status, "scope %s may not %s %s: %s", sc, r.Method, r.Path, raw)
				require.Equal(t, "insufficient_scope", res.Error.Code)
				require.Contains(t, res.Error.Message, fmt.Sprintf("%q scope", r.Scope), "the answer names the scope needed")
			}
		})
	}

	t.Run("Header", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodPut, "/api/v1/delivery-deadlines", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+keys[app.ScopeRead])
		res := h.Do(t, req)
		require.Equal(t, http.StatusForbidden, res.StatusCode)
		require.Equal(t, `Bearer realm="herald", error="insufficient_scope", scope="manage"`, res.Header.Get("WWW-Authenticate"))
	})

	t.Run("RefusedStoresNothing", func(t *testing.T) {
		after := h.Count(`SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM templates) + (SELECT count(*) FROM channel_accounts) +
			(SELECT count(*) FROM messages) + (SELECT count(*) FROM delivery_deadlines) + (SELECT count(*) FROM confirmation_windows)`)
		require.Equal(t, before, after)
	})
}
