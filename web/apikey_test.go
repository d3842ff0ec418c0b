package web_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

func TestConsoleTenants_APIKeys(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	manager := c.signIn(asManager)

	t.Run("List", func(t *testing.T) {
		doc := manager.page("/t/acme/api-keys")
		rows := doc.Find("table.apikey-list tbody tr")
		require.Equal(t, 1, rows.Length())
		cells := rows.First().Find("td")
		require.Equal(t, "booking system", text(cells.Eq(0)))
		require.Equal(t, c.Key[:11]+"…", text(cells.Eq(1)))
		require.Equal(t, "send, read, manage, approve", text(cells.Eq(2)))
		require.Equal(t, "herald admin (command line)", text(cells.Eq(3)))
		require.Equal(t, "ACTIVE", text(cells.Eq(6)))
		require.NotContains(t, doc.Text(), c.Key)

		_, resp := c.signIn(asSupport).get("/t/acme/api-keys")
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	})

	t.Run("BadNameStoresNothing", func(t *testing.T) {
		keys := c.Count(`SELECT count(*) FROM api_keys`)
		for _, tc := range []struct{ name, want string }{
			{"  ", "Name is required"},
			{strings.Repeat("k", 101), "at most 100 characters"},
		} {
			manager.page("/t/acme/api-keys")
			doc, resp := manager.postPage("/t/acme/api-keys", url.Values{"name": {tc.name}, "scopes": {"send"}})
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			require.Contains(t, fieldError(doc, "input[name=name]"), tc.want)
			require.Equal(t, 1, doc.Find("table.apikey-list tbody tr").Length(), "the list is still shown")
		}
		require.Equal(t, keys, c.Count(`SELECT count(*) FROM api_keys`))
	})

	var secret string
	t.Run("ShownOnce", func(t *testing.T) {
		manager.page("/t/acme/api-keys")
		resp := manager.post("/t/acme/api-keys", url.Values{"name": {"Website"}, "scopes": {"send", "read"}})
		require.Equal(t, http.StatusOK, resp.StatusCode, "the secret is in this answer, not behind a redirect")
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		for _, ck := range resp.Cookies() {
			require.NotEqual(t, "herald_flash", ck.Name, "the secret never travels in a cookie")
		}
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
		require.NoError(t, err)
		secret = doc.Find("input.secret-value").AttrOr("value", "")
		require.True(t, strings.HasPrefix(secret, "hk_"), "secret %q", secret)
		require.Contains(t, text(doc.Find(".secret-note")), "only time it is shown")

		// It works against the API.
		var tenant struct{ Slug string }
		require.Equal(t, http.StatusOK, c.RequestWithKey(secret, http.MethodGet, "/api/v1/tenant", nil, &tenant))
		require.Equal(t, "acme", tenant.Slug)

		// Never again: not in the list, not in the audit log, not in the database.
		doc = manager.page("/t/acme/api-keys")
		require.NotContains(t, doc.Text(), secret)
		row := doc.Find("table.apikey-list tbody tr").First()
		require.Equal(t, "Website", text(row.Find("td").Eq(0)))
		require.Equal(t, secret[:11]+"…", text(row.Find("td").Eq(1)))
		require.Equal(t, "send, read", text(row.Find("td").Eq(2)))
		require.Equal(t, "manager@acme.test", text(row.Find("td").Eq(3)))
		require.NotEqual(t, "–", text(row.Find("td").Eq(5)), "last used is recorded")
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE metadata::text LIKE '%' || $1 || '%'`, secret[11:]))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'api_key.create' AND actor_id = $2 AND metadata->>'name' = 'Website'`, c.Tenant.ID, c.users[asManager].ID))
		require.Zero(t, c.Count(`SELECT count(*) FROM api_keys WHERE prefix = $1 OR name = $1`, secret))
	})

	t.Run("Revoke", func(t *testing.T) {
		// The newest key is the one made above.
		id := uuid.MustParse(manager.page("/t/acme/api-keys").Find("table.apikey-list tbody tr").First().AttrOr("data-key", ""))
		doc := manager.page("/t/acme/api-keys")
		form := doc.Find(`form[action="/t/acme/api-keys/` + id.String() + `/revoke"]`)
		require.Equal(t, 1, form.Length())
		require.Contains(t, form.AttrOr("data-confirm", ""), "cannot be undone", "revoking asks first")

		resp := manager.post("/t/acme/api-keys/"+id.String()+"/revoke", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc = manager.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "revoked")
		require.Equal(t, "REVOKED", text(doc.Find(`tr[data-key="`+id.String()+`"] .badge`)))
		require.Equal(t, 0, doc.Find(`form[action="/t/acme/api-keys/`+id.String()+`/revoke"]`).Length())
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'api_key.revoke' AND target_id = $1 AND metadata->>'name' = 'Website'`, id.String()))

		var apiErr webtest.APIError
		require.Equal(t, http.StatusUnauthorized, c.RequestWithKey(secret, http.MethodGet, "/api/v1/tenant", nil, &apiErr))
		require.Equal(t, "unauthorized", apiErr.Error.Code)
		require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/tenant", nil, nil), "the other key still works")

		// Revoking twice is harmless and audited once.
		require.Equal(t, http.StatusSeeOther, manager.post("/t/acme/api-keys/"+id.String()+"/revoke", nil).StatusCode)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'api_key.revoke' AND target_id = $1`, id.String()))
	})

	t.Run("AnotherTenantsKey", func(t *testing.T) {
		k, globexSecret, err := c.Services.APIKeys.Create(c.Ctx, app.CLIActor, c.other.ID, "globex system")
		require.NoError(t, err)
		manager.page("/t/acme/api-keys")
		resp := manager.post("/t/acme/api-keys/"+k.ID.String()+"/revoke", nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Equal(t, http.StatusOK, c.RequestWithKey(globexSecret, http.MethodGet, "/api/v1/tenant", nil, nil))
		require.NotContains(t, manager.page("/t/acme/api-keys").Text(), "globex system")
		_, resp = manager.get("/t/globex/api-keys")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	t.Run("OperatorCreates", func(t *testing.T) {
		ops := c.signIn(asOperator)
		ops.page("/t/globex/api-keys")
		resp := ops.post("/t/globex/api-keys", url.Values{"name": {"made by ops"}, "scopes": {"send", "read"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		doc := c.signIn(asOtherManager).page("/t/globex/api-keys")
		require.Equal(t, "Herald operator", text(doc.Find("tbody tr").First().Find("td").Eq(3)))
	})
}
