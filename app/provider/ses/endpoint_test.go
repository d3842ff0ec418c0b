package ses_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsclient/awsclienttest"
	"github.com/heraldhq/herald/app/provider/ses"
)

// vpcEndpoint is an interface endpoint's DNS name as AWS gives them.
const vpcEndpoint = "vpce-0a1b2c3d4e5f67890-k2l3m4n5.email.eu-central-1.vpce.amazonaws.com"

func TestProvider_SendAccountEndpoint(t *testing.T) {
	t.Parallel()

	t.Run("VPCEndpoint", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		tlsFake := httptest.NewTLSServer(b.fake)
		t.Cleanup(tlsFake.Close)
		client, asked := awsclienttest.DialTo(t, tlsFake)
		b.provider = &ses.Provider{HTTPClient: client}
		b.account.Config["endpoint_url"] = "https://" + vpcEndpoint

		id, err := b.provider.Send(context.Background(), b.outbound(t))
		require.NoError(t, err)
		require.Equal(t, messageID, id)
		require.Equal(t, []string{vpcEndpoint + ":443"}, asked())
		reqs := b.fake.Requests()
		require.Len(t, reqs, 1)
		require.Equal(t, "/v2/email/outbound-emails", reqs[0].Path)
		require.Contains(t, reqs[0].Header.Get("Authorization"), "/eu-central-1/ses/aws4_request", "signed for SES in the account's region")
	})

	t.Run("EmulatorInDevelopment", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.provider = &ses.Provider{AnyEndpoint: true}
		b.account.Config["endpoint_url"] = b.fake.srv.URL

		id, err := b.provider.Send(context.Background(), b.outbound(t))
		require.NoError(t, err)
		require.Equal(t, messageID, id)
		require.Len(t, b.fake.Requests(), 1)
	})

	t.Run("ChangedEndpointNewClient", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.provider = &ses.Provider{AnyEndpoint: true}
		c1, err := b.provider.ClientFor(context.Background(), b.account)
		require.NoError(t, err)
		b.account.Config["endpoint_url"] = b.fake.srv.URL
		c2, err := b.provider.ClientFor(context.Background(), b.account)
		require.NoError(t, err)
		require.NotSame(t, c1, c2)
		require.Equal(t, 1, b.provider.CachedClients())
	})

	refused := []struct {
		name, endpoint, code string
	}{
		{"Loopback", "http://127.0.0.1:8005", "config_invalid_endpoint"},
		{"MetadataService", "https://169.254.169.254", "config_invalid_endpoint"},
		{"OtherHost", "https://ses.example.com", "config_invalid_endpoint"},
		{"LookAlikeHost", "https://email.eu-central-1.amazonaws.com.example.com", "config_invalid_endpoint"},
		{"PlainHTTP", "http://" + vpcEndpoint, "config_invalid_endpoint"},
		{"OtherPort", "https://" + vpcEndpoint + ":8443", "config_invalid_endpoint"},
		{"Credentials", "https://user:pass@" + vpcEndpoint, "config_invalid_endpoint"},
		{"Query", "https://" + vpcEndpoint + "/?x=1", "config_invalid_endpoint"},
		{"NotAURL", "vpce endpoint", "config_invalid_endpoint"},
	}
	for _, tt := range refused {
		t.Run("Refused/"+tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			client, asked := awsclienttest.RefusingClient(t)
			b.provider = &ses.Provider{HTTPClient: client}
			b.account.Config["endpoint_url"] = tt.endpoint

			_, err := b.provider.Send(context.Background(), b.outbound(t))
			pe := requireProviderError(t, err)
			require.Equal(t, tt.code, pe.Code)
			require.Equal(t, provider.Permanent, pe.Class)
			require.True(t, pe.Account, "the tenant must fix the account")
			require.Empty(t, asked(), "nothing is sent")
		})
	}

	t.Run("Refused/DefaultCredentials", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.provider = &ses.Provider{AnyEndpoint: true}
		b.account.Secrets = nil
		b.account.Config["endpoint_url"] = b.fake.srv.URL

		_, err := b.provider.Send(context.Background(), b.outbound(t))
		pe := requireProviderError(t, err)
		require.Equal(t, "config_endpoint_needs_keys", pe.Code)
		require.True(t, pe.Account)
		require.Empty(t, b.fake.Requests(), "the server's credentials never sign a request to an account's endpoint")
	})
}

// TestProvider_SendEnvironmentEndpoint cannot run in parallel: it sets the
// standard endpoint variables, which accounts with their own keys follow.
func TestProvider_SendEnvironmentEndpoint(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_SESV2", "")
	t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "")

	t.Run("ServiceVariable", func(t *testing.T) {
		b := setup(t)
		t.Setenv("AWS_ENDPOINT_URL_SESV2", b.fake.srv.URL)
		b.provider = &ses.Provider{}
		_, err := b.provider.Send(context.Background(), b.outbound(t))
		require.NoError(t, err)
		require.Len(t, b.fake.Requests(), 1)
		require.Contains(t, b.fake.Requests()[0].Header.Get("Authorization"), "Credential="+testKeyID+"/", "with the account's keys")
	})

	t.Run("GlobalVariable", func(t *testing.T) {
		b := setup(t)
		t.Setenv("AWS_ENDPOINT_URL", b.fake.srv.URL)
		b.provider = &ses.Provider{}
		_, err := b.provider.Send(context.Background(), b.outbound(t))
		require.NoError(t, err)
		require.Len(t, b.fake.Requests(), 1)
	})

	t.Run("ServiceVariableBeatsGlobal", func(t *testing.T) {
		b := setup(t)
		other := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(other.Close)
		t.Setenv("AWS_ENDPOINT_URL", other.URL)
		t.Setenv("AWS_ENDPOINT_URL_SESV2", b.fake.srv.URL)
		b.provider = &ses.Provider{}
		_, err := b.provider.Send(context.Background(), b.outbound(t))
		require.NoError(t, err)
		require.Len(t, b.fake.Requests(), 1)
	})

	t.Run("AccountEndpointBeatsVariable", func(t *testing.T) {
		b := setup(t)
		other := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(other.Close)
		t.Setenv("AWS_ENDPOINT_URL_SESV2", other.URL)
		b.provider = &ses.Provider{AnyEndpoint: true}
		b.account.Config["endpoint_url"] = b.fake.srv.URL
		_, err := b.provider.Send(context.Background(), b.outbound(t))
		require.NoError(t, err)
		require.Len(t, b.fake.Requests(), 1)
	})

	t.Run("IgnoreConfiguredEndpoints", func(t *testing.T) {
		b := setup(t)
		t.Setenv("AWS_ENDPOINT_URL_SESV2", b.fake.srv.URL)
		t.Setenv("AWS_ENDPOINT_URL", b.fake.srv.URL)
		t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
		client, asked := awsclienttest.RefusingClient(t)
		b.provider = &ses.Provider{HTTPClient: client}
		_, err := b.provider.Send(context.Background(), b.outbound(t))
		require.Equal(t, "connection_error", requireProviderError(t, err).Code)
		require.Equal(t, []string{"email.eu-central-1.amazonaws.com:443"}, asked(), "the region's endpoint")
		require.Empty(t, b.fake.Requests())
	})

	t.Run("NoVariable", func(t *testing.T) {
		b := setup(t)
		client, asked := awsclienttest.RefusingClient(t)
		b.provider = &ses.Provider{HTTPClient: client}
		_, err := b.provider.Send(context.Background(), b.outbound(t))
		require.Error(t, err)
		require.Equal(t, []string{"email.eu-central-1.amazonaws.com:443"}, asked())
	})
}
