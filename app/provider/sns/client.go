package sns

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsclient"
)

// Account settings and secrets the adapter reads.
const (
	ConfigRegion            = awsclient.ConfigRegion
	ConfigSenderID          = "sender_id"
	ConfigOriginationNumber = "origination_number"
	// ConfigSMSType is Transactional (the default) or Promotional.
	ConfigSMSType = "sms_type"
	// ConfigEndpoint replaces the region's endpoint (a VPC endpoint; an
	// emulator where AnyEndpoint allows it); it needs the account's own
	// keys.
	ConfigEndpoint = awsclient.ConfigEndpoint

	SecretAccessKeyID     = awsclient.SecretAccessKeyID
	SecretSecretAccessKey = awsclient.SecretSecretAccessKey
	// SecretSessionToken is optional, for temporary credentials.
	SecretSessionToken = awsclient.SecretSessionToken
)

// client returns the account's SNS client, building it on first use, and
// whether the account brings its own keys.
func (p *Provider) client(ctx context.Context, a provider.Account) (*sns.Client, bool, error) {
	ep := awsclient.Endpoints{Override: p.Endpoint, AnyHost: p.AnyEndpoint}
	return p.clients.Client(ctx, a, "SNS", ep, func(cfg aws.Config) *sns.Client {
		return sns.NewFromConfig(cfg, p.options)
	})
}

// options turns the SDK's retries off: the dispatcher's queue owns
// retries, and an SDK retry inside a send would hide attempts from it and
// multiply them.
func (p *Provider) options(o *sns.Options) {
	o.Retryer, o.RetryMaxAttempts = aws.NopRetryer{}, 1
	o.HTTPClient = p.clients.HTTPClient(p.HTTPClient)
	// Keep error bodies: some answers name their code where the SDK does
	// not look for it.
	o.APIOptions = append(o.APIOptions, awsclient.KeepErrorBody)
}
