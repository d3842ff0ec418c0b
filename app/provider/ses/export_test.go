package ses

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/heraldhq/herald/app/provider"
)

// ClientFor exposes the client cache to the tests.
func (p *Provider) ClientFor(ctx context.Context, a provider.Account) (*sesv2.Client, error) {
	c, _, err := p.client(ctx, a)
	return c, err
}

// CachedClients counts the cached clients.
func (p *Provider) CachedClients() int {
	return p.clients.Len()
}
