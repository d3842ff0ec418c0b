package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/app/provider/sns"
	"github.com/heraldhq/herald/web/webtest"
)

func TestConsoleChannels_SMSLogKeysMatchAdapter(t *testing.T) {
	t.Parallel()
	require.Equal(t, sns.ConfigLogRegion, console.KeySNSLogRegion)
	require.Equal(t, sns.ConfigLogEndpoint, console.KeySNSLogEndpoint)
}

// smsLogAWS answers STS's GetCallerIdentity and CloudWatch Logs'
// FilterLogEvents: no log group while missing is set, else empty groups.
func smsLogAWS(t *testing.T, missing *atomic.Bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Amz-Target") == "" {
			form, _ := url.ParseQuery(string(body))
			require.Equal(t, "GetCallerIdentity", form.Get("Action"))
			fmt.Fprint(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>`+
				`<Arn>arn:aws:iam::210987654321:user/herald</Arn><UserId>AIDA</UserId><Account>210987654321</Account>`+
				`</GetCallerIdentityResult></GetCallerIdentityResponse>`)
			return
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		if missing.Load() {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"__type":"ResourceNotFoundException","message":"The specified log group does not exist."}`)
			return
		}
		fmt.Fprint(w, `{"events":[],"searchedLogStreams":[]}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestConsoleChannels_SMSDeliveryLogs(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	s := c.signIn(asManager)
	s.page(channelsPrefix + "/new?provider=sns")
	id := createdID(t, s.post(channelsPrefix, with(snsForm("SMS logs"), "config_delivery_log_region", "eu-central-1")))
	require.Equal(t, "eu-central-1", c.account(c.Tenant.ID, id).Config["delivery_log_region"])

	doc := s.page(channelsPrefix + "/" + id.String())
	setup := text(doc.Find(".channel-setup"))
	require.Contains(t, setup, "logs:FilterLogEvents")
	require.Contains(t, setup, "sns/eu-central-1/<account id>/DirectPublishToPhoneNumber")
	require.NotContains(t, setup, "subscription filter", "no forwarding to build any more")
	require.Contains(t, text(doc.Find(".sms-delivery-logs")), "Not read yet")

	// The reader runs (as the worker does) against AWS stand-ins: first
	// without log groups, then with them.
	var missing atomic.Bool
	missing.Store(true)
	srv := smsLogAWS(t, &missing)
	c.Services.SMSLogs.Log.(*sns.DeliveryLogs).Endpoint = srv.URL
	sb := c.accountsNamed(c.Tenant.ID, "Sandbox SMS")[0]
	require.NoError(t, c.Services.Accounts.SetStatus(c.Ctx, app.CLIActor, c.Tenant.ID, sb.ID, app.AccountDisabled, ""))
	require.NoError(t, c.Services.Accounts.SetStatus(c.Ctx, app.CLIActor, c.Tenant.ID, id, app.AccountActive, ""))
	_, err := c.Services.SMSLogs.Read(c.Ctx, c.Tenant.ID, id)
	require.NoError(t, err)
	doc = s.page(channelsPrefix + "/" + id.String())
	logs := doc.Find(".sms-delivery-logs")
	require.Contains(t, text(logs.Find(".sms-logs-error")), "turn on SMS delivery status logging")
	require.Equal(t, "–", text(logs.Find(".sms-logs-read")), "never read well yet")
	require.Equal(t, "eu-central-1", text(logs.Find(".sms-logs-region")))

	missing.Store(false)
	_, err = c.Services.SMSLogs.Read(c.Ctx, c.Tenant.ID, id)
	require.NoError(t, err)
	doc = s.page(channelsPrefix + "/" + id.String())
	logs = doc.Find(".sms-delivery-logs")
	require.Contains(t, text(logs.Find(".sms-logs-error")), "a later read succeeded")
	rows := logs.Find("table.sms-log-cursors tbody tr")
	require.Equal(t, 2, rows.Length())
	require.Contains(t, text(rows), "sns/eu-central-1/210987654321/DirectPublishToPhoneNumber/Failure")
	require.NotContains(t, text(logs), "secret", "no secret on the page")
}

func TestConsoleChannels_SMSLogSettingsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, env, field, value, refused string
	}{
		{"Region", app.EnvDev, "config_delivery_log_region", "mars-north-1a", "not an AWS region"},
		{"ForeignEndpoint", app.EnvProd, "config_delivery_log_endpoint_url", "https://logs.attacker.example", "AWS"},
		{"EndpointWithQuery", app.EnvDev, "config_delivery_log_endpoint_url", "http://localhost:4566/?x=1", "without credentials or query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := setupConsole(t, webtest.Options{NoWorkers: true, Config: func(cfg *app.Config) { cfg.Env = tc.env }})
			s := c.signIn(asManager)
			s.page(channelsPrefix + "/new?provider=sns")
			resp, body := s.postRaw(channelsPrefix, with(snsForm("SNS "+tc.name), tc.field, tc.value))
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
			require.NoError(t, err)
			require.Contains(t, text(doc.Find(`[name=`+tc.field+`] ~ .field-error`)), tc.refused)
			require.Empty(t, c.accountsNamed(c.Tenant.ID, "SNS "+tc.name), "nothing stored")
		})
	}
}
