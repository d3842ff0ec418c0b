package console

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// Callbacks is the console's side of status callbacks: a signed-in user
// manages the tenant's endpoints and reads and replays their deliveries.
// Every call requires app.PermCallbacks in the tenant, so support users
// neither see nor change them.
type Callbacks struct {
	Callbacks *app.Callbacks
}

// List returns the tenant's endpoints.
func (s *Callbacks) List(ctx context.Context, actor *app.User, tenantID uuid.UUID) ([]*app.CallbackEndpoint, error) {
	if err := requireTenantAccess(actor, app.PermCallbacks, tenantID); err != nil {
		return nil, err
	}
	return s.Callbacks.List(ctx, tenantID)
}

// Create makes an endpoint and returns its secret, shown once.
func (s *Callbacks) Create(ctx context.Context, actor *app.User, tenantID uuid.UUID, in app.CallbackEndpointInput) (*app.CallbackEndpoint, string, error) {
	if err := requireTenantAccess(actor, app.PermCallbacks, tenantID); err != nil {
		return nil, "", err
	}
	return s.Callbacks.Create(ctx, actor.Actor(), tenantID, in)
}

// Deliveries returns an endpoint with its latest deliveries.
func (s *Callbacks) Deliveries(ctx context.Context, actor *app.User, tenantID, id uuid.UUID) (*app.CallbackEndpoint, []*app.CallbackDelivery, error) {
	if err := requireTenantAccess(actor, app.PermCallbacks, tenantID); err != nil {
		return nil, nil, err
	}
	return s.Callbacks.Deliveries(ctx, tenantID, id)
}

// SetEnabled enables or disables an endpoint.
func (s *Callbacks) SetEnabled(ctx context.Context, actor *app.User, tenantID, id uuid.UUID, enabled bool) (*app.CallbackEndpoint, error) {
	if err := requireTenantAccess(actor, app.PermCallbacks, tenantID); err != nil {
		return nil, err
	}
	return s.Callbacks.Update(ctx, actor.Actor(), tenantID, id, app.CallbackEndpointUpdate{Enabled: &enabled})
}

// RotateSecret gives the endpoint a new secret, shown once.
func (s *Callbacks) RotateSecret(ctx context.Context, actor *app.User, tenantID, id uuid.UUID) (*app.CallbackEndpoint, string, error) {
	if err := requireTenantAccess(actor, app.PermCallbacks, tenantID); err != nil {
		return nil, "", err
	}
	return s.Callbacks.RotateSecret(ctx, actor.Actor(), tenantID, id)
}

// Delete removes an endpoint with its deliveries.
func (s *Callbacks) Delete(ctx context.Context, actor *app.User, tenantID, id uuid.UUID) error {
	if err := requireTenantAccess(actor, app.PermCallbacks, tenantID); err != nil {
		return err
	}
	return s.Callbacks.Delete(ctx, actor.Actor(), tenantID, id)
}

// Replay posts a finished delivery again.
func (s *Callbacks) Replay(ctx context.Context, actor *app.User, tenantID, endpointID, deliveryID uuid.UUID) (*app.CallbackDelivery, error) {
	if err := requireTenantAccess(actor, app.PermCallbacks, tenantID); err != nil {
		return nil, err
	}
	return s.Callbacks.Replay(ctx, actor.Actor(), tenantID, endpointID, deliveryID)
}

// SendTest posts a callback.test event to the endpoint.
func (s *Callbacks) SendTest(ctx context.Context, actor *app.User, tenantID, id uuid.UUID) (*app.CallbackDelivery, error) {
	if err := requireTenantAccess(actor, app.PermCallbacks, tenantID); err != nil {
		return nil, err
	}
	return s.Callbacks.SendTest(ctx, actor.Actor(), tenantID, id)
}
