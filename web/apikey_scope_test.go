package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestConsoleAPIKeys_Scopes creates keys with chosen scopes in the console:
// the form offers every scope (send and read ticked), the key can do what
// its scopes allow and nothing else, the list and the audit log name the
// scopes, and a choice of none (or of a scope that does not exist) stores
// nothing.
func TestConsoleAPIKeys_Scopes(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	manager := c.signIn(asManager)

	t.Run("FormOffersEveryScope", func(t *testing.T) {
		doc := manager.page("/t/acme/api-keys")
		boxes := doc.Find(`form[action="/t/acme/api-keys"] input[type=checkbox][name=scopes]`)
		require.Equal(t, len(app.Scopes), boxes.Length())
		checked := map[string]bool{}
		boxes.Each(func(i int, b *goquery.Selection) {
			require.Equal(t, app.Scopes[i], b.AttrOr("value", ""))
			_, on := b.Attr("checked")
			checked[b.AttrOr("value", "")] = on
		})
		require.Equal(t, map[string]bool{"send": true, "read": true, "manage": false, "approve": false}, checked)
	})

	t.Run("CreateWithScopes", func(t *testing.T) {
		manager.page("/t/acme/api-keys")
		doc, resp := manager.postPage("/t/acme/api-keys", url.Values{"name": {"Ops desk"}, "scopes": {"approve", "manage"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		secret := doc.Find("input.secret-value").AttrOr("value", "")
		require.NotEmpty(t, secret)
		require.Equal(t, "manage, approve", text(doc.Find(".one-time-secret .scopes")))

		row := manager.page("/t/acme/api-keys").Find("table.apikey-list tbody tr").First()
		require.Equal(t, "Ops desk", text(row.Find("td").Eq(0)))
		require.Equal(t, "manage, approve", text(row.Find("td.scopes")))

		var scopes []string
		raw := queryStringConsole(t, c, `SELECT metadata->>'scopes' FROM audit_log WHERE tenant_id = $1 AND action = 'api_key.create' AND metadata->>'name' = 'Ops desk' AND actor_id = $2`,
			c.Tenant.ID, c.users[asManager].ID)
		require.NoError(t, json.Unmarshal([]byte(raw), &scopes))
		require.Equal(t, []string{"manage", "approve"}, scopes, "the audit entry names the scopes")

		// The key does what manage allows, and cannot read or send.
		require.Equal(t, http.StatusOK, c.RequestWithKey(secret, http.MethodPut, "/api/v1/delivery-deadlines",
			map[string]any{"trigger_event": "*", "channel": "EMAIL", "minutes": 30}, nil))
		var res apiErrorBody
		require.Equal(t, http.StatusForbidden, c.RequestWithKey(secret, http.MethodGet, "/api/v1/tenant", nil, &res))
		require.Equal(t, "insufficient_scope", res.Error.Code)
		require.Equal(t, http.StatusForbidden, c.RequestWithKey(secret, http.MethodPost, "/api/v1/notifications", webtest.Notification("ops-1", "BK-O"), &res))
		require.Equal(t, "insufficient_scope", res.Error.Code)
	})

	t.Run("BadChoiceStoresNothing", func(t *testing.T) {
		keys := c.Count(`SELECT count(*) FROM api_keys`)
		for name, form := range map[string]url.Values{
			"None":    {"name": {"No scopes"}},
			"Unknown": {"name": {"Root"}, "scopes": {"send", "admin"}},
		} {
			t.Run(name, func(t *testing.T) {
				manager.page("/t/acme/api-keys")
				doc, resp := manager.postPage("/t/acme/api-keys", form)
				require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
				require.NotEmpty(t, text(doc.Find("fieldset.scopes .field-error")), "the form says what is wrong with the scopes")
				require.Equal(t, form.Get("name"), doc.Find(`input[name=name]`).AttrOr("value", ""), "the name typed is kept")
			})
		}
		require.Equal(t, keys, c.Count(`SELECT count(*) FROM api_keys`))
	})

	t.Run("NeedsCSRF", func(t *testing.T) {
		keys := c.Count(`SELECT count(*) FROM api_keys`)
		manager.page("/t/acme/api-keys")
		resp := manager.post("/t/acme/api-keys", url.Values{"csrf": {"forged"}, "name": {"Forged"}, "scopes": {"approve"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Equal(t, keys, c.Count(`SELECT count(*) FROM api_keys`))
	})
}

// queryStringConsole runs a query returning one text value in the
// platform scope.
func queryStringConsole(t *testing.T, c *consoleBundle, query string, args ...any) string {
	t.Helper()
	return queryString(t, &testBundle{Herald: c.Herald}, query, args...)
}
