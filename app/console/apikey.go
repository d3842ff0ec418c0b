package console

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// APIKeyRow is one row of the console's API key list. It carries neither
// the secret (never stored) nor its hash.
type APIKeyRow struct {
	ID         uuid.UUID  `db:"id"`
	Name       string     `db:"name"`
	Prefix     string     `db:"prefix"`
	CreatedBy  *uuid.UUID `db:"created_by"`
	LastUsedAt *time.Time `db:"last_used_at"`
	RevokedAt  *time.Time `db:"revoked_at"`
	CreatedAt  time.Time  `db:"created_at"`
	// Scopes say what the key may do through the API.
	Scopes app.StringList `db:"scopes"`
	// CreatorEmail is the address of the tenant user who created the key;
	// nil when an operator (whom the tenant cannot see) or the command line
	// did.
	CreatorEmail *string `db:"creator_email"`
}

// APIKeys is the console's side of API keys: listing, creating and revoking
// them as a signed-in user.
type APIKeys struct {
	*app.APIKeys
	Store app.Store[APIKeyTx]
}

// APIKeyTx reads a tenant's API keys for the console.
type APIKeyTx interface {
	app.Tx
	// ListAPIKeys returns the tenant's keys, newest first.
	ListAPIKeys(ctx context.Context, tenantID uuid.UUID, page PageRequest) ([]*APIKeyRow, error)
}

// List returns one page of the tenant's API keys, newest first, and
// whether more follow.
func (s *APIKeys) List(ctx context.Context, actor *app.User, tenantID uuid.UUID, page PageRequest) ([]*APIKeyRow, bool, error) {
	if err := requireTenantAccess(actor, app.PermAPIKeys, tenantID); err != nil {
		return nil, false, err
	}
	var rows []*APIKeyRow
	err := s.Store.InTenant(ctx, tenantID, func(tx APIKeyTx) (err error) {
		rows, err = tx.ListAPIKeys(ctx, tenantID, page)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	rows, more := Page(rows, page)
	return rows, more, nil
}

// CreateAs makes a key with the scopes for the tenant on behalf of a
// console user and returns its secret, which is shown once and never
// stored. The user chooses the scopes: at least one.
func (s *APIKeys) CreateAs(ctx context.Context, actor *app.User, tenantID uuid.UUID, name string, scopes []string) (*app.APIKey, string, error) {
	if err := requireTenantAccess(actor, app.PermAPIKeys, tenantID); err != nil {
		return nil, "", err
	}
	if len(scopes) == 0 {
		// Create would fall back to the defaults; a person creating a key
		// says what it may do.
		_, err := app.NormalizeScopes(nil)
		return nil, "", err
	}
	return s.Create(ctx, actor.Actor(), tenantID, name, scopes...)
}

// Revoke revokes one of the tenant's keys on behalf of a console user; the
// API refuses it from the next request on. A key of another tenant is
// ENOTFOUND.
func (s *APIKeys) Revoke(ctx context.Context, actor *app.User, tenantID, keyID uuid.UUID) (*app.APIKey, error) {
	if err := requireTenantAccess(actor, app.PermAPIKeys, tenantID); err != nil {
		return nil, err
	}
	return s.APIKeys.Revoke(ctx, actor.Actor(), tenantID, keyID)
}
