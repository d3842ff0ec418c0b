package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/app/provider/meta"
	"github.com/heraldhq/herald/app/provider/ses"
	"github.com/heraldhq/herald/app/provider/sns"
	"github.com/heraldhq/herald/app/provider/webhook"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/web/webtest"
)

// Secrets typed into the forms of these tests; no HTML page may contain them.
const (
	metaToken      = "EAAGm0PX4ZCpsBAKZCtokenvalue1234567890"
	metaToken2     = "EAAGm0PX4ZCpsBAKZCsecondtoken99887766"
	metaAppSecret  = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	awsKeyID       = "AKIAIOSFODNN7EXAMPLE"
	awsSecret      = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY00"
	awsSecret2     = "wJalrXUtnFEMIK7MDENGbPxRfiCYSECONDKEY11"
	awsSessionTok  = "FwoGZXIvYXdzEBYaDsessiontokenvalue4455"
	channelsPrefix = "/t/acme/channels"
)

// rawBody loads a page and returns its status and HTML as sent.
func (s *session) rawBody(path string) (int, string) {
	s.t.Helper()
	resp := s.do(httptest.NewRequest(http.MethodGet, path, nil))
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	if doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(b))); err == nil {
		if token, ok := doc.Find(`meta[name=csrf-token]`).Attr("content"); ok {
			s.csrf = token
		}
	}
	return resp.StatusCode, string(b)
}

// postRaw submits a form and returns the answer with its body read.
func (s *session) postRaw(path string, form url.Values) (*http.Response, string) {
	s.t.Helper()
	resp := s.post(path, form)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp, string(b)
}

// requireNoSecrets fails when an HTML body holds any of the secrets.
func requireNoSecrets(t *testing.T, where, body string, secrets ...string) {
	t.Helper()
	for _, sec := range secrets {
		require.NotContains(t, body, sec, "%s shows a secret", where)
	}
}

// accountsNamed returns the tenant's accounts with the name.
func (c *consoleBundle) accountsNamed(tenantID uuid.UUID, name string) []*app.ChannelAccount {
	c.T.Helper()
	var out []*app.ChannelAccount
	require.NoError(c.T, c.Services.Store.InTenant(c.Ctx, tenantID, func(tx *db.Tx) error {
		as, err := tx.ListAccounts(c.Ctx, tenantID, console.AccountFilter{}, console.PageRequest{Limit: 1000})
		for _, a := range as {
			if a.Name == name {
				out = append(out, a)
			}
		}
		return err
	}))
	return out
}

// account loads one account by id.
func (c *consoleBundle) account(tenantID, id uuid.UUID) *app.ChannelAccount {
	c.T.Helper()
	var a *app.ChannelAccount
	require.NoError(c.T, c.Services.Store.InTenant(c.Ctx, tenantID, func(tx *db.Tx) (err error) {
		a, err = tx.AccountByID(c.Ctx, tenantID, id)
		return err
	}))
	return a
}

// secretsOf decrypts an account's secrets.
func (c *consoleBundle) secretsOf(id uuid.UUID) map[string]string {
	c.T.Helper()
	m, err := c.Services.Accounts.Open(c.account(c.Tenant.ID, id))
	require.NoError(c.T, err)
	return m
}

// createdID reads the account id from the redirect after a create.
func createdID(t *testing.T, resp *http.Response) uuid.UUID {
	t.Helper()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(loc, channelsPrefix+"/"), loc)
	id, err := uuid.Parse(strings.TrimPrefix(loc, channelsPrefix+"/"))
	require.NoError(t, err)
	return id
}

func metaForm(name string) url.Values {
	return url.Values{"provider": {"meta"}, "name": {name},
		"config_phone_number_id": {"106540352242922"}, "config_waba_id": {"102290129340398"},
		"config_messaging_tier": {"TIER_2"}, "config_throughput": {""},
		"secret_access_token": {metaToken}, "secret_app_secret": {metaAppSecret}}
}

func sesForm(name string) url.Values {
	return url.Values{"provider": {"ses"}, "name": {name}, "config_region": {"eu-central-1"},
		"config_sender_email": {"bookings@acme.example"}, "config_sender_name": {"Acme Tours"},
		"config_configuration_set": {"herald-events"}, "config_reply_to": {"service@acme.example"},
		"credentials": {"keys"}, "secret_access_key_id": {awsKeyID}, "secret_secret_access_key": {awsSecret}}
}

func snsForm(name string) url.Values {
	return url.Values{"provider": {"sns"}, "name": {name}, "config_region": {"eu-west-1"},
		"config_sender_id": {"ACMETOURS"}, "config_origination_number": {""}, "config_sms_type": {"Transactional"},
		"credentials": {"keys"}, "secret_access_key_id": {awsKeyID}, "secret_secret_access_key": {awsSecret}}
}

// with returns a copy of form with the given fields replaced.
func with(form url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, v := range form {
		out[k] = append([]string(nil), v...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}

// vpcEndpoint is an interface endpoint's DNS name as AWS gives them.
const vpcEndpoint = "vpce-0a1b2c3d4e5f67890-k2l3m4n5.sns.eu-west-1.vpce.amazonaws.com"

func TestConsoleChannels_ProviderKeysMatchAdapters(t *testing.T) {
	t.Parallel()
	require.Equal(t, meta.ConfigPhoneNumberID, console.KeyMetaPhoneNumberID)
	require.Equal(t, meta.SecretAccessToken, console.KeyMetaAccessToken)
	require.Equal(t, ses.ConfigRegion, console.KeyAWSRegion)
	require.Equal(t, ses.ConfigSenderEmail, console.KeySESSenderEmail)
	require.Equal(t, ses.ConfigSenderName, console.KeySESSenderName)
	require.Equal(t, ses.ConfigReplyTo, console.KeySESReplyTo)
	require.Equal(t, ses.ConfigConfigurationSet, console.KeySESConfigurationSet)
	require.Equal(t, ses.SecretAccessKeyID, console.KeyAWSAccessKeyID)
	require.Equal(t, ses.SecretSecretAccessKey, console.KeyAWSSecretAccessKey)
	require.Equal(t, ses.SecretSessionToken, console.KeyAWSSessionToken)
	require.Equal(t, ses.ConfigEndpoint, console.KeyAWSEndpoint)
	require.Equal(t, sns.ConfigEndpoint, console.KeyAWSEndpoint)
	require.Equal(t, sns.ConfigSenderID, console.KeySNSSenderID)
	require.Equal(t, sns.ConfigOriginationNumber, console.KeySNSOriginationNumber)
	require.Equal(t, sns.ConfigSMSType, console.KeySNSSMSType)
	require.Equal(t, webhook.ConfigURL, console.KeyWebhookURL)
	require.Equal(t, webhook.SecretSigningSecret, console.KeyWebhookSigningSecret)
}

func TestConsoleChannels_List(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	s := c.signIn(asManager)

	doc := s.page(channelsPrefix)
	rows := doc.Find("table.channel-accounts tbody tr")
	require.Equal(t, 3, rows.Length(), "acme starts with its three sandbox accounts")
	require.Contains(t, text(rows), "Sandbox EMAIL")
	require.Equal(t, "ACTIVE", text(rows.First().Find(".account-status .badge")))
	require.Equal(t, "CLOSED", text(rows.First().Find(".breaker .badge")))
	require.Contains(t, text(rows.First().Find(".rate")), "unlimited")
	require.Equal(t, 1, doc.Find(`a.button[href="/t/acme/channels/new"]`).Length(), "Add account")
	require.Equal(t, "Channels", text(doc.Find(`.mainnav a[aria-current="page"]`)))

	// A rate-limited account shows its bucket, taken from Postgres.
	id := createdID(t, s.post(channelsPrefix, sesForm("SES main")))
	doc = s.page(channelsPrefix)
	row := doc.Find(`tr[data-account="` + id.String() + `"]`)
	require.Equal(t, "PENDING", text(row.Find(".account-status .badge")))
	require.Contains(t, text(row.Find(".rate")), "14/s, burst 14")
	require.Contains(t, text(row.Find(".rate")), "full, never used")
	c.Exec(`INSERT INTO rate_buckets (key, tokens, refilled_at) VALUES ($1, 3, now())`, "rate:"+c.Tenant.ID.String()+":"+id.String())
	doc = s.page(channelsPrefix)
	tokens := text(doc.Find(`tr[data-account="` + id.String() + `"] .rate`))
	require.Regexp(t, `\d+\.\d of 14 tokens now`, tokens)
	require.NotContains(t, tokens, "never used")

	// Breaker transitions recorded by the dispatcher show up.
	c.Exec(`INSERT INTO audit_log (tenant_id, actor_type, actor_label, action, target_type, target_id, metadata)
		VALUES ($1, 'system', 'herald', 'channel_account.breaker', 'channel_account', $2, '{"from":"closed","to":"open","provider":"ses"}')`,
		c.Tenant.ID, id.String())
	doc = s.page(channelsPrefix)
	require.Equal(t, "OPEN", text(doc.Find(`tr[data-account="`+id.String()+`"] .breaker .badge`)))

	// Filters, newest first.
	doc = s.page(channelsPrefix + "?status=PENDING")
	require.Equal(t, 1, doc.Find("table.channel-accounts tbody tr").Length())
	doc = s.page(channelsPrefix + "?channel=SMS&status=PENDING")
	require.Contains(t, text(doc.Find(".empty")), "No account matches")
	doc = s.page(channelsPrefix)
	require.Equal(t, id.String(), doc.Find("table.channel-accounts tbody tr").First().AttrOr("data-account", ""))

	t.Run("EmptyState", func(t *testing.T) {
		s := c.signIn(asOtherManager)
		c.Exec(`DELETE FROM channel_accounts WHERE tenant_id = $1`, c.other.ID)
		doc := s.page("/t/globex/channels")
		require.Contains(t, text(doc.Find(".empty")), "No channel accounts yet")
		require.Equal(t, 2, doc.Find(`a[href="/t/globex/channels/new"]`).Length())
	})
}

func TestConsoleChannels_Create(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	s := c.signIn(asManager)
	accounts := func() int { return c.Count(`SELECT count(*) FROM channel_accounts WHERE tenant_id = $1`, c.Tenant.ID) }
	before := accounts()

	t.Run("ProviderFirst", func(t *testing.T) {
		doc := s.page(channelsPrefix + "/new")
		require.Equal(t, 5, doc.Find(".provider-choice").Length())
		doc = s.page(channelsPrefix + "/new?provider=meta")
		require.Equal(t, 1, doc.Find(`input[name=config_phone_number_id]`).Length())
		require.Equal(t, 1, doc.Find(`input[name=secret_access_token][type=password]`).Length())
		require.Equal(t, 0, doc.Find(`input[name=config_region]`).Length())
		doc = s.page(channelsPrefix + "/new?provider=ses")
		require.Equal(t, 1, doc.Find(`input[name=config_region]`).Length())
		require.Equal(t, 1, doc.Find(`input[name=credentials][value=keys]`).Length())
		require.Equal(t, 0, doc.Find(`input[name=credentials][value=default]`).Length(), "managers are not offered the platform's credentials")
		doc = s.page(channelsPrefix + "/new?provider=sns")
		require.Equal(t, "Transactional", doc.Find(`select[name=config_sms_type] option[selected]`).AttrOr("value", ""))
		doc = s.page(channelsPrefix + "/new?provider=webhook")
		require.Equal(t, 1, doc.Find(`input[name=config_url]`).Length())
		require.Equal(t, 0, doc.Find(`input[type=password]`).Length(), "Herald generates the signing secret")
		doc = s.page(channelsPrefix + "/new?provider=sandbox")
		require.Equal(t, 4, doc.Find(`select[name=channel] option[value!=""]`).Length())
		_, resp := s.get(channelsPrefix + "/new?provider=twilio")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	bad := []struct {
		name  string
		form  url.Values
		field string
		want  string
	}{
		{"NoProvider", url.Values{"name": {"x"}}, "", "Choose the provider"},
		{"MetaNoName", with(metaForm(""), "name", ""), "name", "Name is required"},
		{"MetaPhoneNumberNotID", with(metaForm("m"), "config_phone_number_id", "+4915112345678"), "config_phone_number_id", "not the phone number"},
		{"MetaNoWABA", with(metaForm("m"), "config_waba_id", ""), "config_waba_id", "required"},
		{"MetaNoToken", with(metaForm("m"), "secret_access_token", ""), "secret_access_token", "Access token is required"},
		{"MetaTokenWithSpace", with(metaForm("m"), "secret_access_token", "EAAG with spaces in the token"), "secret_access_token", "must not contain spaces"},
		{"MetaUnknownTier", with(metaForm("m"), "config_messaging_tier", "TIER_9"), "config_messaging_tier", "not one of the choices"},
		{"SESBadRegion", with(sesForm("s"), "config_region", "Frankfurt"), "config_region", "not an AWS region"},
		{"SESBadFrom", with(sesForm("s"), "config_sender_email", "Acme <bookings@acme.example>"), "config_sender_email", "not an e-mail address"},
		{"SESBadReplyTo", with(sesForm("s"), "config_reply_to", "not an address"), "config_reply_to", "e-mail addresses"},
		{"SESBadConfigSet", with(sesForm("s"), "config_configuration_set", "has spaces"), "config_configuration_set", "configuration set"},
		{"SESSecretWithoutID", with(sesForm("s"), "secret_access_key_id", ""), "secret_access_key_id", "access key ID"},
		{"SESBadKeyID", with(sesForm("s"), "secret_access_key_id", "akia-lower"), "secret_access_key_id", "capital letters"},
		{"SNSBadSenderID", with(snsForm("n"), "config_sender_id", "123456"), "config_sender_id", "at least one letter"},
		{"SNSBadOrigination", with(snsForm("n"), "config_origination_number", "0151 1234"), "config_origination_number", "E.164"},
		{"SNSBadType", with(snsForm("n"), "config_sms_type", "Urgent"), "config_sms_type", "not one of the choices"},
		{"SESEndpointWithQuery", with(sesForm("s"), "config_endpoint_url", "https://"+vpcEndpoint+"/?a=1"), "config_endpoint_url", "endpoint's URL"},
		{"SNSEndpointNotURL", with(snsForm("n"), "config_endpoint_url", "vpce endpoint"), "config_endpoint_url", "endpoint's URL"},
		{"WebhookNoURL", url.Values{"provider": {"webhook"}, "name": {"w"}}, "config_url", "required"},
		{"WebhookLoopback", url.Values{"provider": {"webhook"}, "name": {"w"}, "config_url": {"https://127.0.0.1/hook"}}, "config_url", "loopback"},
		{"WebhookMetadata", url.Values{"provider": {"webhook"}, "name": {"w"}, "config_url": {"https://169.254.169.254/latest/meta-data"}}, "config_url", "metadata"},
		{"WebhookInternalName", url.Values{"provider": {"webhook"}, "name": {"w"}, "config_url": {"https://vault.internal/hook"}}, "config_url", "internal name"},
		{"WebhookCredentials", url.Values{"provider": {"webhook"}, "name": {"w"}, "config_url": {"https://u:p@hooks.example.com/"}}, "config_url", "user name or password"},
		{"SandboxNoChannel", url.Values{"provider": {"sandbox"}, "name": {"sb"}}, "channel", "Choose the channel"},
	}
	for _, tc := range bad {
		t.Run("Bad/"+tc.name, func(t *testing.T) {
			s.page(channelsPrefix + "/new")
			resp, body := s.postRaw(channelsPrefix, tc.form)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
			require.NoError(t, err)
			if tc.field == "" {
				require.Contains(t, text(doc.Find(".flash-error")), tc.want)
			} else {
				errText := text(doc.Find(`[name=` + tc.field + `] ~ .field-error`))
				require.Contains(t, errText, tc.want, "error under %s", tc.field)
			}
			requireNoSecrets(t, tc.name, body, metaToken, metaAppSecret, awsSecret, awsKeyID)
			require.Equal(t, before, accounts(), "nothing stored")
		})
	}
	t.Run("Bad/TypedSettingsKept", func(t *testing.T) {
		s.page(channelsPrefix + "/new?provider=ses")
		doc, resp := s.postPage(channelsPrefix, with(sesForm("Kept"), "config_region", "nowhere"))
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Equal(t, "bookings@acme.example", doc.Find(`input[name=config_sender_email]`).AttrOr("value", ""))
		require.Equal(t, "Kept", doc.Find(`input[name=name]`).AttrOr("value", ""))
		require.Empty(t, doc.Find(`input[name=secret_secret_access_key]`).AttrOr("value", ""))
	})

	good := []struct {
		name     string
		form     url.Values
		channel  app.Channel
		config   map[string]string
		secrets  map[string]string
		provider string
	}{
		{"Meta", metaForm("WhatsApp main"), app.WhatsApp,
			map[string]string{"phone_number_id": "106540352242922", "waba_id": "102290129340398", "messaging_tier": "TIER_2"},
			map[string]string{"access_token": metaToken, "app_secret": metaAppSecret}, "meta"},
		{"SES", sesForm("Bookings e-mail"), app.Email,
			map[string]string{"region": "eu-central-1", "sender_email": "bookings@acme.example", "sender_name": "Acme Tours",
				"configuration_set": "herald-events", "reply_to": "service@acme.example"},
			map[string]string{"access_key_id": awsKeyID, "secret_access_key": awsSecret}, "ses"},
		{"SNS", snsForm("SMS main"), app.SMS,
			map[string]string{"region": "eu-west-1", "sender_id": "ACMETOURS", "sms_type": "Transactional"},
			map[string]string{"access_key_id": awsKeyID, "secret_access_key": awsSecret}, "sns"},
		{"SNSVPCEndpoint", with(snsForm("SMS VPC"), "config_endpoint_url", "https://"+vpcEndpoint), app.SMS,
			map[string]string{"region": "eu-west-1", "sender_id": "ACMETOURS", "sms_type": "Transactional", "endpoint_url": "https://" + vpcEndpoint},
			map[string]string{"access_key_id": awsKeyID, "secret_access_key": awsSecret}, "sns"},
		{"Sandbox", url.Values{"provider": {"sandbox"}, "name": {"Sandbox hooks"}, "channel": {"WEBHOOK"}}, app.Webhook,
			map[string]string{}, map[string]string{}, "sandbox"},
	}
	for _, tc := range good {
		t.Run("Good/"+tc.name, func(t *testing.T) {
			s.page(channelsPrefix + "/new?provider=" + tc.provider)
			resp := s.post(channelsPrefix, tc.form)
			id := createdID(t, resp)
			a := c.account(c.Tenant.ID, id)
			require.Equal(t, tc.channel, a.Channel)
			require.Equal(t, app.AccountPending, a.Status)
			for k, v := range tc.config {
				require.Equal(t, v, a.Config[k], k)
			}
			for k, v := range tc.secrets {
				require.NotContains(t, string(a.Secrets), v, "sealed at rest")
				require.NotContains(t, a.Config, k, "secrets never in the config")
			}
			got := c.secretsOf(id)
			for k, v := range tc.secrets {
				require.Equal(t, v, got[k], k)
			}
			doc := s.follow(resp)
			require.Contains(t, text(doc.Find(".flash")), "was created")
			require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.create' AND target_id = $1 AND actor_id = $2`,
				id.String(), c.users[asManager].ID))
		})
	}
	t.Run("AuditHoldsNoSecrets", func(t *testing.T) {
		for _, sec := range []string{metaToken, metaAppSecret, awsKeyID, awsSecret} {
			require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE metadata::text LIKE '%' || $1 || '%'`, sec))
		}
	})
	t.Run("NoCSRF", func(t *testing.T) {
		n := accounts()
		resp := s.post(channelsPrefix, with(metaForm("forged"), "csrf", "forged"))
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Equal(t, n, accounts())
	})
}

func TestConsoleChannels_Secrets(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	s := c.signIn(asManager)
	s.page(channelsPrefix + "/new?provider=meta")
	metaID := createdID(t, s.post(channelsPrefix, metaForm("WhatsApp main")))
	s.page(channelsPrefix + "/new?provider=ses")
	sesID := createdID(t, s.post(channelsPrefix, with(sesForm("Bookings e-mail"), "secret_session_token", awsSessionTok)))
	all := []string{metaToken, metaToken2, metaAppSecret, awsKeyID, awsSecret, awsSecret2, awsSessionTok}

	t.Run("NeverInHTML", func(t *testing.T) {
		for _, path := range []string{
			channelsPrefix, channelsPrefix + "/" + metaID.String(), channelsPrefix + "/" + metaID.String() + "/edit",
			channelsPrefix + "/" + metaID.String() + "/test", channelsPrefix + "/" + sesID.String(),
			channelsPrefix + "/" + sesID.String() + "/edit", channelsPrefix + "/new?provider=ses",
		} {
			status, body := s.rawBody(path)
			require.Equal(t, http.StatusOK, status, path)
			requireNoSecrets(t, path, body, all...)
		}
		doc := s.page(channelsPrefix + "/" + metaID.String() + "/edit")
		doc.Find(`input[type=password]`).Each(func(_ int, in *goquery.Selection) {
			_, has := in.Attr("value")
			require.False(t, has, "secret inputs carry no value")
		})
		require.Equal(t, "A value is stored. Leave blank to keep it.", text(doc.Find(`input[name=secret_access_token] ~ .secret-state`)))
	})

	t.Run("BlankKeeps", func(t *testing.T) {
		s.page(channelsPrefix + "/" + metaID.String() + "/edit")
		resp := s.post(channelsPrefix+"/"+metaID.String(), with(metaForm("WhatsApp renamed"), "secret_access_token", "", "secret_app_secret", "", "config_waba_id", "999999999"))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(s.follow(resp).Find(".flash")), "saved")
		got := c.secretsOf(metaID)
		require.Equal(t, metaToken, got["access_token"])
		require.Equal(t, metaAppSecret, got["app_secret"])
		a := c.account(c.Tenant.ID, metaID)
		require.Equal(t, "WhatsApp renamed", a.Name)
		require.Equal(t, "999999999", a.Config["waba_id"])
	})

	t.Run("TypedReplaces", func(t *testing.T) {
		s.page(channelsPrefix + "/" + metaID.String() + "/edit")
		resp := s.post(channelsPrefix+"/"+metaID.String(), with(metaForm("WhatsApp renamed"), "secret_access_token", metaToken2, "secret_app_secret", ""))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		got := c.secretsOf(metaID)
		require.Equal(t, metaToken2, got["access_token"])
		require.Equal(t, metaAppSecret, got["app_secret"], "the blank one stays")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.update' AND target_id = $1
			AND metadata->'secrets_set' @> '["access_token"]'`, metaID.String()))
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE metadata::text LIKE '%' || $1 || '%'`, metaToken2))
	})

	t.Run("ClearOptional", func(t *testing.T) {
		doc := s.page(channelsPrefix + "/" + sesID.String() + "/edit")
		require.Equal(t, 1, doc.Find(`input[name=clear_session_token]`).Length())
		require.Equal(t, 0, doc.Find(`input[name=clear_secret_access_key]`).Length(), "a required key cannot be cleared")
		form := with(sesForm("Bookings e-mail"), "secret_access_key_id", "", "secret_secret_access_key", awsSecret2, "clear_session_token", "1")
		resp := s.post(channelsPrefix+"/"+sesID.String(), form)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		got := c.secretsOf(sesID)
		require.Equal(t, awsKeyID, got["access_key_id"])
		require.Equal(t, awsSecret2, got["secret_access_key"])
		require.NotContains(t, got, "session_token")
	})

	t.Run("BadEditStoresNothing", func(t *testing.T) {
		before := c.account(c.Tenant.ID, sesID)
		s.page(channelsPrefix + "/" + sesID.String() + "/edit")
		resp, body := s.postRaw(channelsPrefix+"/"+sesID.String(), with(sesForm("Changed name"), "config_region", "mars-1", "secret_secret_access_key", awsSecret))
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, body, "not an AWS region")
		requireNoSecrets(t, "edit with errors", body, all...)
		after := c.account(c.Tenant.ID, sesID)
		require.Equal(t, before.Name, after.Name)
		require.Equal(t, before.Secrets, after.Secrets)
		require.Equal(t, awsSecret2, c.secretsOf(sesID)["secret_access_key"])
	})
}

func TestConsoleChannels_DefaultCredentials(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	manager, operator := c.signIn(asManager), c.signIn(asOperator)
	// Posting adds the session's CSRF token to the form, so each post gets a copy.
	defaults := with(sesForm("Platform e-mail"), "credentials", "default", "secret_access_key_id", "", "secret_secret_access_key", "")
	defaultForm := func(kv ...string) url.Values { return with(defaults, kv...) }
	n := func() int { return c.Count(`SELECT count(*) FROM channel_accounts WHERE tenant_id = $1`, c.Tenant.ID) }
	before := n()

	t.Run("RefusedForManager", func(t *testing.T) {
		manager.page(channelsPrefix + "/new?provider=ses")
		doc, resp := manager.postPage(channelsPrefix, defaultForm())
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, text(doc.Find(`fieldset.credentials .field-error`)), "Only Herald's operators")
		require.Equal(t, before, n())

		// Leaving the keys out does not reach the chain either.
		doc, resp = manager.postPage(channelsPrefix, defaultForm("credentials", "keys"))
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, text(doc.Find(`[name=secret_access_key_id] ~ .field-error`)), "access key ID")
		require.Equal(t, before, n())
	})

	t.Run("EndpointNeedsKeys", func(t *testing.T) {
		operator.page(channelsPrefix + "/new?provider=ses")
		doc, resp := operator.postPage(channelsPrefix, defaultForm("config_endpoint_url", "https://"+vpcEndpoint))
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, text(doc.Find(`[name=config_endpoint_url] ~ .field-error`)), "own access keys")
		require.Equal(t, before, n())
	})

	var id uuid.UUID
	t.Run("AllowedForOperator", func(t *testing.T) {
		doc := operator.page(channelsPrefix + "/new?provider=ses")
		require.Equal(t, 1, doc.Find(`input[name=credentials][value=default]`).Length())
		id = createdID(t, operator.post(channelsPrefix, defaultForm()))
		require.Empty(t, c.secretsOf(id))
		doc = operator.page(channelsPrefix + "/" + id.String())
		require.Contains(t, text(doc.Find("dl.facts")), "Herald's default credential chain")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.create' AND target_id = $1
			AND metadata->'config'->'credentials'->>'to' = 'default'`, id.String()))
	})

	t.Run("ManagerCannotKeepItOnTheChain", func(t *testing.T) {
		manager.page(channelsPrefix + "/" + id.String() + "/edit")
		resp, _ := manager.postRaw(channelsPrefix+"/"+id.String(), defaultForm("credentials", "keys", "name", "Renamed"))
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Equal(t, "Platform e-mail", c.account(c.Tenant.ID, id).Name)

		// With its own keys the account leaves the chain.
		resp = manager.post(channelsPrefix+"/"+id.String(), with(sesForm("Own keys"), "credentials", "keys"))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, awsKeyID, c.secretsOf(id)["access_key_id"])

		// And a manager cannot put it back.
		resp, _ = manager.postRaw(channelsPrefix+"/"+id.String(), defaultForm("name", "Back"))
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Equal(t, awsKeyID, c.secretsOf(id)["access_key_id"])
	})

	t.Run("ServiceRefusesToo", func(t *testing.T) {
		_, _, err := c.Server.Accounts.Create(c.Ctx, c.users[asManager], c.Tenant.ID, console.AccountForm{
			Provider: "sns", Name: "direct", Credentials: console.CredentialsDefault,
			Config: map[string]string{"region": "eu-west-1", "sms_type": "Transactional"},
		})
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
		require.Equal(t, "credentials", app.ErrorField(err))
		_, _, err = c.Server.Accounts.Create(c.Ctx, c.users[asSupport], c.Tenant.ID, console.AccountForm{Provider: "sandbox", Name: "x", Channel: "SMS"})
		require.Equal(t, app.EFORBIDDEN, app.ErrorCode(err))
	})
}

func TestConsoleChannels_ActivateSuspend(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	s := c.signIn(asManager)
	s.page(channelsPrefix + "/new?provider=meta")
	metaID := createdID(t, s.post(channelsPrefix, metaForm("WhatsApp main")))
	sandboxWA := c.accountsNamed(c.Tenant.ID, "Sandbox WHATSAPP")[0]
	detail := channelsPrefix + "/" + metaID.String()

	t.Run("RefusedWhileAnotherIsActive", func(t *testing.T) {
		doc := s.page(detail)
		require.Contains(t, text(doc.Find(".activate-conflict")), "Sandbox WHATSAPP is the active WHATSAPP account")
		resp := s.post(detail+"/activate", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc = s.follow(resp)
		require.Contains(t, text(doc.Find(".flash-error")), "Sandbox WHATSAPP is the active WHATSAPP account")
		require.Equal(t, app.AccountPending, c.account(c.Tenant.ID, metaID).Status)
		require.Equal(t, app.AccountActive, c.account(c.Tenant.ID, sandboxWA.ID).Status)
	})

	t.Run("ReplaceSuspendsTheOther", func(t *testing.T) {
		s.page(detail)
		resp := s.post(detail+"/activate", url.Values{"replace": {"1"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(s.follow(resp).Find(".flash")), "active")
		require.Equal(t, app.AccountActive, c.account(c.Tenant.ID, metaID).Status)
		other := c.account(c.Tenant.ID, sandboxWA.ID)
		require.Equal(t, app.AccountSuspended, other.Status)
		require.Contains(t, *other.SuspendedReason, "Replaced by WhatsApp main")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.status' AND target_id = $1
			AND actor_id = $2 AND metadata->>'status' = 'ACTIVE'`, metaID.String(), c.users[asManager].ID))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.status' AND target_id = $1
			AND actor_id = $2 AND metadata->>'status' = 'SUSPENDED'`, sandboxWA.ID.String(), c.users[asManager].ID))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM channel_accounts WHERE tenant_id = $1 AND channel = 'WHATSAPP' AND status = 'ACTIVE'`, c.Tenant.ID))

		// The suspended account shows its reason, on its page and in the list.
		doc := s.page(channelsPrefix + "/" + sandboxWA.ID.String())
		require.Contains(t, text(doc.Find(".suspended-reason")), "Replaced by WhatsApp main")
		require.Contains(t, text(doc.Find(".account-history")), "channel_account.status")
		doc = s.page(channelsPrefix)
		require.Contains(t, text(doc.Find(`tr[data-account="`+sandboxWA.ID.String()+`"] .suspended-reason`)), "Replaced by")
	})

	t.Run("AlreadyActive", func(t *testing.T) {
		s.page(detail)
		doc := s.follow(s.post(detail+"/activate", nil))
		require.Contains(t, text(doc.Find(".flash-error")), "already active")
	})

	t.Run("SuspendNeedsReason", func(t *testing.T) {
		s.page(detail)
		doc, resp := s.postPage(detail+"/suspend", url.Values{"reason": {"   "}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, text(doc.Find(`textarea[name=reason] ~ .field-error`)), "Say why")
		require.Equal(t, app.AccountActive, c.account(c.Tenant.ID, metaID).Status)
		doc, resp = s.postPage(detail+"/suspend", url.Values{"reason": {strings.Repeat("x", 501)}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, text(doc.Find(`.field-error`)), "at most 500")
	})

	t.Run("Suspend", func(t *testing.T) {
		s.page(detail)
		resp := s.post(detail+"/suspend", url.Values{"reason": {"Meta flagged the number; checking with support."}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc := s.follow(resp)
		require.Contains(t, text(doc.Find(".suspended-reason")), "Meta flagged the number")
		a := c.account(c.Tenant.ID, metaID)
		require.Equal(t, app.AccountSuspended, a.Status)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.status' AND target_id = $1
			AND actor_id = $2 AND metadata->>'reason' = 'Meta flagged the number; checking with support.'`, metaID.String(), c.users[asManager].ID))
		for _, sec := range []string{metaToken, metaAppSecret} {
			require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE metadata::text LIKE '%' || $1 || '%'`, sec))
		}
	})

	t.Run("ReactivateWhenChannelFree", func(t *testing.T) {
		// No account of the channel is active now: activation needs no replace.
		s.page(detail)
		require.Equal(t, http.StatusSeeOther, s.post(detail+"/activate", nil).StatusCode)
		a := c.account(c.Tenant.ID, metaID)
		require.Equal(t, app.AccountActive, a.Status)
		require.Nil(t, a.SuspendedReason)
	})

	t.Run("IncompleteAccountNotActivated", func(t *testing.T) {
		a, _, err := c.Server.Accounts.Create(c.Ctx, c.users[asManager], c.Tenant.ID, console.AccountForm{Provider: "sandbox", Name: "Spare", Channel: "WEBHOOK"})
		require.NoError(t, err)
		require.NoError(t, c.Server.Accounts.Activate(c.Ctx, c.users[asManager], c.Tenant.ID, a.ID, false))
		// A webhook account whose secret went missing cannot go live.
		c.Exec(`UPDATE channel_accounts SET provider = 'webhook', config = '{"url":"https://hooks.example.com/x"}', status = 'PENDING' WHERE id = $1`, a.ID)
		err = c.Server.Accounts.Activate(c.Ctx, c.users[asManager], c.Tenant.ID, a.ID, true)
		require.Equal(t, app.ECONFLICT, app.ErrorCode(err))
		require.Contains(t, app.ErrorMessage(err), "signing secret")
	})
}

func TestConsoleChannels_WebhookSecret(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	// Production rules: https only.
	c.Server.Accounts.CheckWebhookURLFunc = func(raw string) error { return webhook.CheckURL(raw, false) }
	s := c.signIn(asManager)

	s.page(channelsPrefix + "/new?provider=webhook")
	doc, resp := s.postPage(channelsPrefix, url.Values{"provider": {"webhook"}, "name": {"Plain"}, "config_url": {"http://hooks.example.com/herald"}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, text(doc.Find(`[name=config_url] ~ .field-error`)), "https://")
	require.Empty(t, c.accountsNamed(c.Tenant.ID, "Plain"))

	resp, body := s.postRaw(channelsPrefix, url.Values{"provider": {"webhook"}, "name": {"Booking system"}, "config_url": {"https://hooks.example.com/herald"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	shown := text(doc.Find(".secret-value"))
	require.True(t, strings.HasPrefix(shown, "whsec_"), shown)
	created := c.accountsNamed(c.Tenant.ID, "Booking system")
	require.Len(t, created, 1)
	id := created[0].ID
	require.Equal(t, shown, c.secretsOf(id)["signing_secret"])
	require.Equal(t, "https://hooks.example.com/herald", created[0].Config["url"])
	require.Contains(t, resp.Header.Get("Cache-Control"), "no-store")

	t.Run("NeverAgain", func(t *testing.T) {
		for _, path := range []string{channelsPrefix, channelsPrefix + "/" + id.String(), channelsPrefix + "/" + id.String() + "/edit",
			channelsPrefix + "/" + id.String() + "/test"} {
			status, body := s.rawBody(path)
			require.Equal(t, http.StatusOK, status)
			requireNoSecrets(t, path, body, shown)
		}
		doc := s.page(channelsPrefix + "/" + id.String())
		require.Contains(t, text(doc.Find(".webhook-headers")), "Herald-Signature")
		require.Contains(t, text(doc.Find(".webhook-headers")), "Herald-Timestamp")
		require.Contains(t, text(doc.Find(".webhook-headers")), `timestamp + "." + raw body`)
	})

	t.Run("Rotate", func(t *testing.T) {
		s.page(channelsPrefix + "/" + id.String())
		resp, body := s.postRaw(channelsPrefix+"/"+id.String()+"/rotate", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		rotated := text(doc.Find(".secret-value"))
		require.NotEqual(t, shown, rotated)
		require.Equal(t, rotated, c.secretsOf(id)["signing_secret"])
		_, page := s.rawBody(channelsPrefix + "/" + id.String())
		requireNoSecrets(t, "account page", page, shown, rotated)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.rotate_secret' AND target_id = $1`, id.String()))
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE metadata::text LIKE '%whsec_%'`))

		// Only webhook accounts have one.
		sb := c.accountsNamed(c.Tenant.ID, "Sandbox SMS")[0]
		doc = s.follow(s.post(channelsPrefix+"/"+sb.ID.String()+"/rotate", nil))
		require.Contains(t, text(doc.Find(".flash-error")), "Only webhook accounts")
	})
}

func TestConsoleChannels_Setup(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	s := c.signIn(asManager)
	s.page(channelsPrefix + "/new?provider=meta")
	metaID := createdID(t, s.post(channelsPrefix, metaForm("WhatsApp main")))
	s.page(channelsPrefix + "/new?provider=ses")
	sesID := createdID(t, s.post(channelsPrefix, sesForm("Bookings e-mail")))
	s.page(channelsPrefix + "/new?provider=sns")
	snsID := createdID(t, s.post(channelsPrefix, snsForm("SMS main")))
	base := strings.TrimSuffix(c.Config.BaseURL.String(), "/")

	doc := s.page(channelsPrefix + "/" + metaID.String())
	metaAcct := c.account(c.Tenant.ID, metaID)
	require.Len(t, metaAcct.WebhookToken, 52, "an unguessable path of its own")
	require.Equal(t, base+"/webhooks/meta/a/"+metaAcct.WebhookToken, text(doc.Find(".channel-setup .webhook-url")))
	require.Equal(t, c.account(c.Tenant.ID, metaID).VerifyToken, text(doc.Find(".channel-setup .verify-token")))
	require.Contains(t, text(doc.Find("dl.facts")), meta.DefaultVersion)

	doc = s.page(channelsPrefix + "/" + sesID.String())
	require.Equal(t, base+"/webhooks/ses", text(doc.Find(".channel-setup .webhook-url")))
	require.Contains(t, text(doc.Find(".channel-setup")), "herald-events")
	require.Contains(t, text(doc.Find(".channel-setup")), "subscribe the topic with protocol HTTPS")

	doc = s.page(channelsPrefix + "/" + snsID.String())
	require.Equal(t, base+"/webhooks/sns-sms", text(doc.Find(".channel-setup .webhook-url")))

	sb := c.accountsNamed(c.Tenant.ID, "Sandbox EMAIL")[0]
	doc = s.page(channelsPrefix + "/" + sb.ID.String())
	table := text(doc.Find(".channel-setup table.sandbox-addresses"))
	for _, want := range []string{"fail@", "flaky@", "bounce@", "…0000", "not on WhatsApp"} {
		require.Contains(t, table, want)
	}
	require.Contains(t, text(doc.Find(".recent-messages, .empty")), "Nothing sent")

	// The verify token answers Meta's subscription check.
	resp, err := c.App.Test(httptest.NewRequest(http.MethodGet, "/webhooks/meta/a/"+metaAcct.WebhookToken+"?hub.mode=subscribe&hub.challenge=42&hub.verify_token="+
		c.account(c.Tenant.ID, metaID).VerifyToken, nil), -1)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestConsoleChannels_TestSend(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})
	s := c.signIn(asManager)
	email := c.accountsNamed(c.Tenant.ID, "Sandbox EMAIL")[0]
	sms := c.accountsNamed(c.Tenant.ID, "Sandbox SMS")[0]
	path := channelsPrefix + "/" + email.ID.String() + "/test"

	waitStatus := func(id uuid.UUID, want ...string) *app.Message {
		t.Helper()
		var m *app.Message
		require.Eventually(t, func() bool {
			d, err := c.Services.Messages.Get(c.Ctx, c.Tenant.ID, id)
			require.NoError(t, err)
			m = d.Message
			for _, w := range want {
				if m.Status == w {
					return true
				}
			}
			return false
		}, dbtest.HangGuard, 50*time.Millisecond, "message %s never reached %v", id, want)
		return m
	}
	messageOf := func(resp *http.Response) uuid.UUID {
		t.Helper()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		loc := resp.Header.Get("Location")
		prefix := path + "/"
		require.True(t, strings.HasPrefix(loc, prefix), loc)
		return uuid.MustParse(strings.TrimPrefix(loc, prefix))
	}

	t.Run("Delivered", func(t *testing.T) {
		doc := s.page(path)
		require.Empty(t, doc.Find(`input[name=to]`).AttrOr("value", ""), "no default recipient")
		require.Equal(t, "email", doc.Find(`input[name=to]`).AttrOr("type", ""))
		require.Contains(t, text(doc.Find("table.sandbox-addresses")), "bounce@")
		resp := s.post(path, url.Values{"to": {"anna@example.com"}})
		id := messageOf(resp)
		doc = s.follow(resp)
		require.Contains(t, text(doc.Find(".flash")), "queued")
		require.Contains(t, doc.Find(`#test-result a[href="/t/acme/messages/`+id.String()+`"]`).Text(), id.String())

		m := waitStatus(id, app.MessageDelivered, app.MessageRead)
		require.Equal(t, c.users[asManager].ID, *m.TriggeredBy)
		require.Equal(t, email.ID, *m.ChannelAccountID)
		require.Equal(t, console.TestTrigger, m.TriggerEvent)
		require.True(t, m.Test)
		require.Equal(t, "anna@example.com", m.ToAddress)
		tl := c.Timeline(id)
		require.GreaterOrEqual(t, len(tl), 3, "queued, sent, delivered")
		require.Equal(t, app.SourceConsole, tl[0].Source)
		require.Equal(t, app.SourceDispatch, tl[1].Source)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'channel_account.test_send' AND target_id = $1 AND actor_id = $2`,
			email.ID.String(), c.users[asManager].ID))

		doc = s.page(path + "/" + id.String())
		require.Contains(t, []string{"DELIVERED", "READ"}, doc.Find("#test-result").AttrOr("data-status", ""))
		_, polling := doc.Find("#test-result").Attr("hx-get")
		require.False(t, polling, "a settled message is not polled")
		doc = s.page(channelsPrefix + "/" + email.ID.String())
		require.Equal(t, 1, doc.Find("table.recent-messages tbody tr").Length())
	})

	t.Run("SandboxSpecialAddressFails", func(t *testing.T) {
		s.page(path)
		id := messageOf(s.post(path, url.Values{"to": {"fail@example.com"}}))
		m := waitStatus(id, app.MessageFailed)
		require.Equal(t, "sandbox_rejected", *m.ErrorCode)
	})

	t.Run("SandboxSMS", func(t *testing.T) {
		p := channelsPrefix + "/" + sms.ID.String() + "/test"
		doc := s.page(p)
		require.Equal(t, "tel", doc.Find(`input[name=to]`).AttrOr("type", ""))
		resp := s.post(p, url.Values{"to": {"+4915123450002"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		id := uuid.MustParse(resp.Header.Get("Location")[strings.LastIndex(resp.Header.Get("Location"), "/")+1:])
		m := waitStatus(id, app.MessageFailed)
		require.NotNil(t, m.SentAt, "bounce: failed after it was sent")
	})

	t.Run("BadRecipient", func(t *testing.T) {
		n := c.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1`, c.Tenant.ID)
		s.page(path)
		doc, resp := s.postPage(path, url.Values{"to": {"not an address"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, text(doc.Find(`input[name=to] ~ .field-error`)), "not an e-mail address")
		require.Equal(t, "not an address", doc.Find(`input[name=to]`).AttrOr("value", ""))
		p := channelsPrefix + "/" + sms.ID.String() + "/test"
		s.page(p)
		doc, _ = s.postPage(p, url.Values{"to": {"0151 1234"}})
		require.Contains(t, text(doc.Find(`.field-error`)), "not a phone number")
		doc, _ = s.postPage(p, url.Values{"to": {""}})
		require.Contains(t, text(doc.Find(`.field-error`)), "Enter the phone number")
		require.Equal(t, n, c.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1`, c.Tenant.ID))
	})

	t.Run("PendingAccount", func(t *testing.T) {
		// A callback endpoint listens to every status: a test makes none.
		_, _, err := c.Services.Callbacks.Create(c.Ctx, app.CLIActor, c.Tenant.ID, app.CallbackEndpointInput{
			URL: "https://hooks.example.com/herald", EventTypes: app.CallbackEventTypes,
		})
		require.NoError(t, err)
		a, _, err := c.Server.Accounts.Create(c.Ctx, c.users[asManager], c.Tenant.ID, console.AccountForm{Provider: "sandbox", Name: "Spare e-mail", Channel: "EMAIL"})
		require.NoError(t, err)
		p := channelsPrefix + "/" + a.ID.String() + "/test"
		doc := s.page(p)
		require.NotContains(t, text(doc.Find(".flash")), "activate it first")
		require.Contains(t, text(doc.Find(".flash-info")), "without activating it")
		resp := s.post(p, url.Values{"to": {" Anna@Example.com "}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		loc := resp.Header.Get("Location")
		id := uuid.MustParse(loc[strings.LastIndex(loc, "/")+1:])
		m := waitStatus(id, app.MessageDelivered, app.MessageRead)
		require.True(t, m.Test)
		require.Equal(t, a.ID, *m.ChannelAccountID)
		require.Equal(t, "anna@example.com", m.ToAddress, "the address is normalised")
		require.Equal(t, app.AccountPending, c.account(c.Tenant.ID, a.ID).Status, "a test does not activate the account")
		require.Equal(t, app.AccountActive, c.account(c.Tenant.ID, email.ID).Status, "live traffic stays on the active account")
		require.Zero(t, c.Count(`SELECT count(*) FROM callback_deliveries WHERE message_id = $1`, id))

		// The test page shows no Retry, and the console refuses one.
		doc = s.page("/t/acme/messages/" + id.String())
		require.Contains(t, text(doc.Find(".badge")), "test")
		require.Zero(t, doc.Find(`form[action$="/retry"]`).Length())
	})

	t.Run("FailedTestIsNotRetried", func(t *testing.T) {
		s.page(path)
		id := messageOf(s.post(path, url.Values{"to": {"fail@example.com"}}))
		waitStatus(id, app.MessageFailed)
		doc := s.page(path + "/" + id.String())
		require.NotEmpty(t, text(doc.Find(".test-failure")), "the provider's reason in words")
		doc = s.page("/t/acme/messages/" + id.String())
		require.Zero(t, doc.Find(`form[action$="/retry"]`).Length(), "no Retry button on a test")
		_, err := c.Server.MessageConsole.Retry(c.Ctx, c.users[asManager], c.Tenant.ID, id, app.RetryOptions{})
		require.Equal(t, app.ECONFLICT, app.ErrorCode(err))
		require.Contains(t, app.ErrorMessage(err), "never retried")
		require.Zero(t, c.Count(`SELECT count(*) FROM messages WHERE idempotency_key = $1`, "retry:"+id.String()))
	})

	t.Run("SuspendedAccountRefused", func(t *testing.T) {
		a, _, err := c.Server.Accounts.Create(c.Ctx, c.users[asManager], c.Tenant.ID, console.AccountForm{Provider: "sandbox", Name: "Old SMS", Channel: "SMS"})
		require.NoError(t, err)
		require.NoError(t, c.Server.Accounts.Suspend(c.Ctx, c.users[asManager], c.Tenant.ID, a.ID, "Provider contract ended"))
		p := channelsPrefix + "/" + a.ID.String() + "/test"
		s.page(p)
		doc, resp := s.postPage(p, url.Values{"to": {"+4915112345678"}})
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, text(doc.Find(".flash-error")), "sends nothing, tests included")
		require.Zero(t, c.Count(`SELECT count(*) FROM messages WHERE channel_account_id = $1`, a.ID))
	})

	t.Run("OtherAccountsMessage", func(t *testing.T) {
		var id uuid.UUID
		require.NoError(t, c.Services.Store.InTenant(c.Ctx, c.Tenant.ID, func(tx *db.Tx) error {
			ms, err := tx.MessagesByAccount(c.Ctx, c.Tenant.ID, email.ID, 1)
			id = ms[0].ID
			return err
		}))
		_, resp := s.get(channelsPrefix + "/" + sms.ID.String() + "/test/" + id.String())
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

func TestConsoleChannels_Access(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	var channelRoutes []string
	for _, r := range c.Server.ConsoleRoutes() {
		if strings.HasPrefix(r.Path, "/t/:tenant/channels") {
			require.Equal(t, app.PermChannels, r.Perm, r.Path)
			channelRoutes = append(channelRoutes, r.Method+" "+r.Path)
		}
	}
	require.Len(t, channelRoutes, 15)
	acmeAccount := c.accountsNamed(c.Tenant.ID, "Sandbox EMAIL")[0]
	globexAccount := c.accountsNamed(c.other.ID, "Sandbox EMAIL")[0]
	fill := func(route string, id uuid.UUID) string {
		p := strings.Replace(route, ":tenant", "acme", 1)
		p = strings.Replace(p, ":id", id.String(), 1)
		return strings.Replace(p, ":message", uuid.NewString(), 1)
	}

	t.Run("SupportForbiddenEverywhere", func(t *testing.T) {
		s := c.signIn(asSupport)
		doc := s.page("/t/acme/")
		require.Zero(t, doc.Find(`.mainnav a[href="/t/acme/channels"]`).Length(), "no Channels nav for support")
		for _, r := range channelRoutes {
			method, route, _ := strings.Cut(r, " ")
			path := fill(route, acmeAccount.ID)
			var status int
			if method == http.MethodGet {
				_, resp := s.get(path)
				status = resp.StatusCode
			} else {
				status = s.post(path, url.Values{"reason": {"x"}, "to": {"a@example.com"}}).StatusCode
			}
			require.Equal(t, http.StatusForbidden, status, r)
		}
		require.Equal(t, app.AccountActive, c.account(c.Tenant.ID, acmeAccount.ID).Status)
	})

	t.Run("OtherTenantsAccountsAre404", func(t *testing.T) {
		s := c.signIn(asManager)
		s.page(channelsPrefix)
		for _, r := range channelRoutes {
			method, route, _ := strings.Cut(r, " ")
			if !strings.Contains(route, ":id") {
				continue
			}
			path := fill(route, globexAccount.ID)
			var status int
			if method == http.MethodGet {
				_, resp := s.get(path)
				status = resp.StatusCode
			} else {
				status = s.post(path, url.Values{"reason": {"taking over"}, "to": {"a@example.com"}, "replace": {"1"}}).StatusCode
			}
			require.Equal(t, http.StatusNotFound, status, r)
		}
		require.Equal(t, app.AccountActive, c.account(c.other.ID, globexAccount.ID).Status)
		_, resp := s.get(channelsPrefix + "/not-a-uuid")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)

		// Globex's manager cannot reach acme's pages at all.
		other := c.signIn(asOtherManager)
		_, resp = other.get(channelsPrefix + "/" + acmeAccount.ID.String())
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	t.Run("OperatorWorksInAnyTenant", func(t *testing.T) {
		s := c.signIn(asOperator)
		doc := s.page("/t/globex/channels/" + globexAccount.ID.String())
		require.Equal(t, "Sandbox EMAIL", text(doc.Find("h1")))
	})
}

// TestConsoleChannels_EndpointRules checks that outside development the
// form refuses an endpoint the AWS adapters would refuse at the first send
// (a host outside AWS's domains, plain http), and that development accepts
// an emulator's.
func TestConsoleChannels_EndpointRules(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name     string
		env      string
		endpoint string
		refused  string
	}{
		{"ProdForeignHost", app.EnvProd, "https://ses.attacker.example", "AWS"},
		{"ProdPlainHTTP", app.EnvProd, "http://" + vpcEndpoint, "https"},
		{"ProdVPCEndpoint", app.EnvProd, "https://" + vpcEndpoint, ""},
		{"DevEmulator", app.EnvDev, "http://localhost:4566", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := setupConsole(t, webtest.Options{NoWorkers: true, Config: func(cfg *app.Config) { cfg.Env = tc.env }})
			s := c.signIn(asManager)
			s.page(channelsPrefix + "/new")
			resp, body := s.postRaw(channelsPrefix, with(sesForm("SES "+tc.name), "config_endpoint_url", tc.endpoint))
			named := c.accountsNamed(c.Tenant.ID, "SES "+tc.name)
			if tc.refused == "" {
				require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
				require.Len(t, named, 1)
				return
			}
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
			require.NoError(t, err)
			require.Contains(t, text(doc.Find(`[name=config_endpoint_url] ~ .field-error`)), tc.refused)
			require.Empty(t, named, "nothing stored")
		})
	}
}
