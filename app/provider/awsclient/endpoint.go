package awsclient

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
)

// ConfigEndpoint is the account setting that replaces the regional
// endpoint of the account's service: a VPC interface endpoint
// (https://vpce-….email.eu-central-1.vpce.amazonaws.com) or, in
// development, an emulator.
const ConfigEndpoint = "endpoint_url"

// awsDomains are the domains AWS's service and VPC endpoints live under.
// An account may only point its requests there, so that a tenant cannot
// make Herald's workers post to a host of the tenant's choosing inside
// Herald's network.
var awsDomains = []string{".amazonaws.com", ".amazonaws.com.cn", ".api.aws"}

// Endpoints says where an adapter's clients send their requests. The
// zero value uses each account's endpoint, else the environment's
// (AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL), else the region's.
type Endpoints struct {
	// Override replaces the endpoint of every account, its own and the
	// environment's; tests point it at a local fake.
	Override string
	// AnyHost lets accounts name any http or https endpoint, such as an
	// emulator on localhost. For development only: production accepts
	// https endpoints under AWS's domains.
	AnyHost bool
}

// CheckEndpoint validates an account's endpoint URL and returns it
// normalised. Unless anyHost, it must be https on a host under AWS's
// domains; either way it carries no credentials, query or fragment.
func CheckEndpoint(raw string, anyHost bool) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	switch {
	case err != nil || u.Host == "" || !u.IsAbs():
		return "", fmt.Errorf("%q is not an absolute URL such as https://vpce-0123.email.eu-central-1.vpce.amazonaws.com", raw)
	case u.User != nil:
		return "", fmt.Errorf("the endpoint URL must not contain credentials")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", fmt.Errorf("the endpoint URL must not have a query or a fragment")
	case anyHost && (u.Scheme == "https" || u.Scheme == "http"):
		return u.String(), nil
	case u.Scheme != "https":
		return "", fmt.Errorf("the endpoint URL must use https")
	case u.Port() != "" && u.Port() != "443":
		return "", fmt.Errorf("the endpoint URL must use port 443")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	for _, d := range awsDomains {
		if strings.HasSuffix(host, d) {
			return u.String(), nil
		}
	}
	return "", fmt.Errorf("the endpoint must be an AWS endpoint (a host under amazonaws.com), such as a VPC endpoint")
}

// endpointSource hands the SDK the environment's endpoint settings and
// nothing else of it: clients of accounts with their own keys follow
// AWS_ENDPOINT_URL_SESV2, AWS_ENDPOINT_URL_SNS and
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS like every SDK client does, without
// taking the server's credentials or profile.
type endpointSource struct{ env config.EnvConfig }

// GetServiceBaseEndpoint reads AWS_ENDPOINT_URL_<SERVICE>.
func (s endpointSource) GetServiceBaseEndpoint(ctx context.Context, sdkID string) (string, bool, error) {
	return s.env.GetServiceBaseEndpoint(ctx, sdkID)
}

// GetIgnoreConfiguredEndpoints reads AWS_IGNORE_CONFIGURED_ENDPOINT_URLS.
func (s endpointSource) GetIgnoreConfiguredEndpoints(ctx context.Context) (bool, bool, error) {
	return s.env.GetIgnoreConfiguredEndpoints(ctx)
}

// ignored says whether the environment asks to ignore configured
// endpoints.
func (s endpointSource) ignored() bool {
	return s.env.IgnoreConfiguredEndpoints != nil && *s.env.IgnoreConfiguredEndpoints
}
