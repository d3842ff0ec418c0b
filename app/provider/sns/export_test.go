package sns

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/heraldhq/herald/app/provider"
)

// ClientFor exposes the client cache to the tests.
func (p *Provider) ClientFor(ctx context.Context, a provider.Account) (*sns.Client, error) {
	c, _, err := p.client(ctx, a)
	return c, err
}

// CachedClients counts the cached clients.
func (p *Provider) CachedClients() int {
	return p.clients.Len()
}
