package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// apiAccount is a channel account as the API answers it.
type apiAccount struct {
	ID              uuid.UUID         `json:"id"`
	Channel         string            `json:"channel"`
	Provider        string            `json:"provider"`
	Name            string            `json:"name"`
	Status          string            `json:"status"`
	SuspendedReason *string           `json:"suspended_reason"`
	Config          map[string]string `json:"config"`
	CredentialsSet  bool              `json:"credentials_set"`
	SecretsSet      map[string]bool   `json:"secrets_set"`
	SigningSecret   string            `json:"signing_secret"`
}

// Secrets the tests submit; no answer may ever contain them.
const (
	apiMetaToken     = "EAAGapiTokenValue0123456789abcdefXYZ"
	apiMetaAppSecret = "apiappsecret0123456789abcdef0123"
	apiMetaToken2    = "EAAGrotatedTokenValue9876543210zyx"
)

// accountBundle is Herald with a manage key, a read key and another
// tenant's key with every scope; every raw answer is kept to check that no
// secret is ever in one.
type accountBundle struct {
	*webtest.Herald
	manage, read, other string
	manageID            uuid.UUID
	answers             []string
}

func setupAccountAPI(t *testing.T) *accountBundle {
	t.Helper()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	b := &accountBundle{Herald: h}
	k, secret, err := h.Services.APIKeys.Create(h.Ctx, app.CLIActor, h.Tenant.ID, "channel manager", app.ScopeManage)
	require.NoError(t, err)
	b.manage, b.manageID = secret, k.ID
	b.read = keyWith(t, h, h.Tenant.ID, app.ScopeRead)
	other, err := h.Services.Tenants.Create(h.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex"})
	require.NoError(t, err)
	b.other = keyWith(t, h, other.ID, app.Scopes...)
	t.Cleanup(func() {
		// The Meta webhook verify tokens are secrets too, though Herald
		// made them.
		secrets := []string{apiMetaToken, apiMetaAppSecret, apiMetaToken2}
		var tokens []string
		require.NoError(t, h.Services.Store.InPlatform(h.Ctx, func(tx *db.Tx) error {
			rows, err := tx.SQL().QueryContext(h.Ctx, `SELECT verify_token FROM channel_accounts WHERE verify_token <> ''`)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var tok string
				if err := rows.Scan(&tok); err != nil {
					return err
				}
				tokens = append(tokens, tok)
			}
			return rows.Err()
		}))
		require.NotEmpty(t, tokens, "the Meta account has a verify token")
		secrets = append(secrets, tokens...)
		for _, raw := range b.answers {
			for _, secret := range secrets {
				if strings.Contains(raw, secret) {
					t.Errorf("an answer contains a secret: %s", raw)
				}
			}
		}
	})
	return b
}

// do sends a request and keeps its raw answer.
func (b *accountBundle) do(t *testing.T, key, method, path string, body, out any) int {
	t.Helper()
	status, raw := call(t, b.Herald, key, method, path, body, out)
	b.answers = append(b.answers, string(raw))
	return status
}

func metaAccount(name string) map[string]any {
	return map[string]any{"provider": "meta", "name": name,
		"config":  map[string]any{"phone_number_id": "106540352242922", "waba_id": "102290129340398", "messaging_tier": "TIER_2"},
		"secrets": map[string]any{"access_token": apiMetaToken, "app_secret": apiMetaAppSecret}}
}

func TestAPIAccounts_Create(t *testing.T) {
	t.Parallel()
	b := setupAccountAPI(t)

	t.Run("BadInputStoresNothing", func(t *testing.T) {
		accounts, audits := b.Count(`SELECT count(*) FROM channel_accounts`), b.Count(`SELECT count(*) FROM audit_log`)
		for name, tc := range map[string]struct {
			body        any
			status      int
			code, field string
		}{
			"NoProvider":       {map[string]any{"name": "x"}, 422, "invalid", "provider"},
			"UnknownProvider":  {map[string]any{"provider": "twilio", "name": "x"}, 422, "invalid", "provider"},
			"SandboxNoChannel": {map[string]any{"provider": "sandbox", "name": "x"}, 422, "invalid", "channel"},
			"NoName":           {withField(metaAccount(""), "name", ""), 422, "invalid", "name"},
			"PhoneNotID": {withConfig(metaAccount("m"), "phone_number_id", "+4915112345678"),
				422, "invalid", "config.phone_number_id"},
			"BadTier":        {withConfig(metaAccount("m"), "messaging_tier", "TIER_9"), 422, "invalid", "config.messaging_tier"},
			"NoToken":        {withSecret(metaAccount("m"), "access_token", ""), 422, "invalid", "secrets.access_token"},
			"ShortToken":     {withSecret(metaAccount("m"), "access_token", "short"), 422, "invalid", "secrets.access_token"},
			"UnknownSetting": {withConfig(metaAccount("m"), "colour", "blue"), 422, "unknown_setting", "config.colour"},
			"SecretAsSetting": {withConfig(metaAccount("m"), "access_token", apiMetaToken), 422, "unknown_setting",
				"config.access_token"},
			"SettingAsSecret": {withSecret(metaAccount("m"), "waba_id", "102290129340398"), 422, "unknown_secret", "secrets.waba_id"},
			"PlatformCredentials": {map[string]any{"provider": "ses", "name": "s", "credentials": "default",
				"config": map[string]any{"region": "eu-central-1", "sender_email": "bookings@acme.example"}}, 422, "invalid", "credentials"},
			"WebhookLoopback": {map[string]any{"provider": "webhook", "name": "w", "config": map[string]any{"url": "https://127.0.0.1/hook"}},
				422, "invalid", "config.url"},
			"UnknownField": {withField(metaAccount("m"), "status", "ACTIVE"), 422, "unknown_field", "status"},
			"Malformed":    {`{"provider": "meta",`, 400, "malformed_json", ""},
		} {
			var res apiErrorBody
			status := b.do(t, b.manage, http.MethodPost, "/api/v1/channel-accounts", tc.body, &res)
			require.Equal(t, tc.status, status, name)
			require.Equal(t, tc.code, res.Error.Code, name)
			require.Equal(t, tc.field, res.Error.Field, name)
			require.NotEmpty(t, res.Error.Details, name)
		}
		require.Equal(t, accounts, b.Count(`SELECT count(*) FROM channel_accounts`))
		require.Equal(t, audits, b.Count(`SELECT count(*) FROM audit_log`))
	})

	t.Run("Meta", func(t *testing.T) {
		var a apiAccount
		require.Equal(t, http.StatusCreated, b.do(t, b.manage, http.MethodPost, "/api/v1/channel-accounts", metaAccount("WhatsApp main"), &a))
		require.Equal(t, "WHATSAPP", a.Channel)
		require.Equal(t, app.AccountPending, a.Status)
		require.Equal(t, "106540352242922", a.Config["phone_number_id"])
		require.True(t, a.CredentialsSet)
		require.Equal(t, map[string]bool{"access_token": true, "app_secret": true}, a.SecretsSet)
		require.Empty(t, a.SigningSecret)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.create' AND target_id = $1
			AND actor_type = 'api_key' AND actor_id = $2`, a.ID.String(), b.manageID))
		require.Zero(t, b.Count(`SELECT count(*) FROM audit_log WHERE metadata::text LIKE '%' || $1 || '%'`, apiMetaToken))
		require.Zero(t, b.Count(`SELECT count(*) FROM channel_accounts WHERE secrets::text LIKE '%' || $1 || '%'`, apiMetaToken),
			"sealed at rest")

		var got apiAccount
		require.Equal(t, http.StatusOK, b.do(t, b.read, http.MethodGet, "/api/v1/channel-accounts/"+a.ID.String(), nil, &got))
		require.Equal(t, a.ID, got.ID)
		require.True(t, got.CredentialsSet)
		var list struct {
			ChannelAccounts []apiAccount `json:"channel_accounts"`
		}
		require.Equal(t, http.StatusOK, b.do(t, b.read, http.MethodGet, "/api/v1/channel-accounts?channel=WHATSAPP&status=pending", nil, &list))
		require.Len(t, list.ChannelAccounts, 1)
		require.Equal(t, a.ID, list.ChannelAccounts[0].ID)
		require.True(t, list.ChannelAccounts[0].CredentialsSet)
	})

	t.Run("WebhookSigningSecretOnce", func(t *testing.T) {
		var a apiAccount
		require.Equal(t, http.StatusCreated, b.do(t, b.manage, http.MethodPost, "/api/v1/channel-accounts",
			map[string]any{"provider": "webhook", "name": "Our hook", "config": map[string]any{"url": "https://hooks.example.com/herald"}}, &a))
		require.True(t, strings.HasPrefix(a.SigningSecret, "whsec_"), "the generated secret is in the answer that made it")
		require.True(t, a.SecretsSet["signing_secret"])
		var got apiAccount
		_, raw := call(t, b.Herald, b.read, http.MethodGet, "/api/v1/channel-accounts/"+a.ID.String(), nil, &got)
		require.NotContains(t, string(raw), a.SigningSecret, "and never again")
		require.Empty(t, got.SigningSecret)
		_, raw = call(t, b.Herald, b.read, http.MethodGet, "/api/v1/channel-accounts", nil, nil)
		require.NotContains(t, string(raw), a.SigningSecret)
	})

	t.Run("BadFilters", func(t *testing.T) {
		for query, field := range map[string]string{"channel=FAX": "channel", "status=GONE": "status", "offset=x": "offset"} {
			var res apiErrorBody
			require.Equal(t, http.StatusUnprocessableEntity, b.do(t, b.read, http.MethodGet, "/api/v1/channel-accounts?"+query, nil, &res), query)
			require.Equal(t, field, res.Error.Field)
		}
	})
}

func TestAPIAccounts_Change(t *testing.T) {
	t.Parallel()
	b := setupAccountAPI(t)
	var meta apiAccount
	require.Equal(t, http.StatusCreated, b.do(t, b.manage, http.MethodPost, "/api/v1/channel-accounts", metaAccount("WhatsApp main"), &meta))
	path := "/api/v1/channel-accounts/" + meta.ID.String()

	t.Run("BadUpdateStoresNothing", func(t *testing.T) {
		audits := b.Count(`SELECT count(*) FROM audit_log`)
		for name, tc := range map[string]struct {
			body        any
			code, field string
		}{
			"BadSetting":    {map[string]any{"name": "Renamed", "config": map[string]any{"waba_id": "abc"}}, "invalid", "config.waba_id"},
			"ClearRequired": {map[string]any{"config": map[string]any{"phone_number_id": nil}}, "invalid", "config.phone_number_id"},
			"EmptyName":     {map[string]any{"name": " "}, "invalid", "name"},
			"UnknownClear":  {map[string]any{"clear_secrets": []string{"password"}}, "unknown_secret", "clear_secrets[0]"},
			"UnknownField":  {map[string]any{"provider": "ses"}, "unknown_field", "provider"},
		} {
			var res apiErrorBody
			require.Equal(t, http.StatusUnprocessableEntity, b.do(t, b.manage, http.MethodPatch, path, tc.body, &res), name)
			require.Equal(t, tc.code, res.Error.Code, name)
			require.Equal(t, tc.field, res.Error.Field, name)
		}
		var got apiAccount
		b.do(t, b.read, http.MethodGet, path, nil, &got)
		require.Equal(t, "WhatsApp main", got.Name)
		require.Equal(t, "102290129340398", got.Config["waba_id"])
		require.Equal(t, audits, b.Count(`SELECT count(*) FROM audit_log`))
	})

	t.Run("Update", func(t *testing.T) {
		var a apiAccount
		require.Equal(t, http.StatusOK, b.do(t, b.manage, http.MethodPatch, path,
			map[string]any{"name": "WhatsApp Berlin", "config": map[string]any{"messaging_tier": "TIER_3"}, "secrets": map[string]any{"access_token": apiMetaToken2}}, &a))
		require.Equal(t, "WhatsApp Berlin", a.Name)
		require.Equal(t, "TIER_3", a.Config["messaging_tier"])
		require.Equal(t, "106540352242922", a.Config["phone_number_id"], "settings not named keep their value")
		require.Equal(t, map[string]bool{"access_token": true, "app_secret": true}, a.SecretsSet, "secrets not named stay stored")
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.update' AND target_id = $1
			AND actor_id = $2 AND metadata->'secrets_set' ? 'access_token'`, meta.ID.String(), b.manageID))
		acct := b.ActiveAccount(app.WhatsApp)
		stored, err := b.Services.Accounts.Open(acct)
		require.NoError(t, err)
		require.NotEqual(t, apiMetaToken2, stored["access_token"], "the sandbox account is still the active one")
	})

	t.Run("ActivateSuspendTest", func(t *testing.T) {
		var res apiErrorBody
		require.Equal(t, http.StatusConflict, b.do(t, b.manage, http.MethodPost, path+"/activate", nil, &res))
		require.Equal(t, "channel_has_active_account", res.Error.Code, "the sandbox is WhatsApp's active account")

		var a apiAccount
		require.Equal(t, http.StatusOK, b.do(t, b.manage, http.MethodPost, path+"/activate", map[string]any{"replace": true}, &a))
		require.Equal(t, app.AccountActive, a.Status)
		require.Equal(t, meta.ID, b.ActiveAccount(app.WhatsApp).ID)
		stored, err := b.Services.Accounts.Open(b.ActiveAccount(app.WhatsApp))
		require.NoError(t, err)
		require.Equal(t, apiMetaToken2, stored["access_token"], "the update stored the new token")
		require.Equal(t, 2, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.status' AND actor_id = $1`, b.manageID),
			"the activation and the replaced account's suspension")

		var m struct {
			Message struct {
				ID        uuid.UUID `json:"id"`
				Status    string    `json:"status"`
				ToAddress string    `json:"to_address"`
			} `json:"message"`
		}
		require.Equal(t, http.StatusUnprocessableEntity, b.do(t, b.manage, http.MethodPost, path+"/test", map[string]any{"to": "not a phone"}, &res))
		require.Equal(t, "to", res.Error.Field)
		require.Equal(t, http.StatusAccepted, b.do(t, b.manage, http.MethodPost, path+"/test", map[string]any{"to": "+4915123456789"}, &m))
		require.Equal(t, app.MessageQueued, m.Message.Status)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM messages WHERE id = $1 AND triggered_by = $2`, m.Message.ID, b.manageID))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.test_send' AND actor_id = $1`, b.manageID))

		require.Equal(t, http.StatusUnprocessableEntity, b.do(t, b.manage, http.MethodPost, path+"/suspend", map[string]any{"reason": " "}, &res))
		require.Equal(t, "reason", res.Error.Field)
		require.Equal(t, http.StatusOK, b.do(t, b.manage, http.MethodPost, path+"/suspend", map[string]any{"reason": "Token leaked"}, &a))
		require.Equal(t, app.AccountSuspended, a.Status)
		require.Equal(t, "Token leaked", *a.SuspendedReason)
	})

	t.Run("OtherTenant", func(t *testing.T) {
		for _, r := range []struct {
			method, path string
			body         any
		}{
			{http.MethodGet, path, nil},
			{http.MethodPatch, path, map[string]any{"name": "mine now"}},
			{http.MethodPost, path + "/activate", map[string]any{"replace": true}},
			{http.MethodPost, path + "/suspend", map[string]any{"reason": "mine"}},
			{http.MethodPost, path + "/test", map[string]any{"to": "+4915123456789"}},
		} {
			var res apiErrorBody
			require.Equal(t, http.StatusNotFound, b.do(t, b.other, r.method, r.path, r.body, &res), r.method+" "+r.path)
			require.Equal(t, app.ENOTFOUND, res.Error.Code)
		}
		var list struct {
			ChannelAccounts []apiAccount `json:"channel_accounts"`
		}
		b.do(t, b.other, http.MethodGet, "/api/v1/channel-accounts", nil, &list)
		for _, a := range list.ChannelAccounts {
			require.NotEqual(t, meta.ID, a.ID)
		}
		var got apiAccount
		b.do(t, b.read, http.MethodGet, path, nil, &got)
		require.Equal(t, "WhatsApp Berlin", got.Name, "unchanged by the other tenant")
	})
}

// withField returns m with key set to v.
func withField(m map[string]any, key string, v any) map[string]any {
	m[key] = v
	return m
}

// withConfig returns an account body with one setting changed.
func withConfig(m map[string]any, key, v string) map[string]any {
	m["config"].(map[string]any)[key] = v
	return m
}

// withSecret returns an account body with one secret changed.
func withSecret(m map[string]any, key, v string) map[string]any {
	m["secrets"].(map[string]any)[key] = v
	return m
}
