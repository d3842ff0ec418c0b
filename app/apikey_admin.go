package app

import (
	"context"
	"time"

	"github.com/google/uuid"
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
	// CreatorEmail is the address of the tenant user who created the key;
	// nil when an operator (whom the tenant cannot see) or the command line
	// did.
	CreatorEmail *string `db:"creator_email"`
}

// APIKeyAdminStore reads a tenant's API keys for the console.
type APIKeyAdminStore interface {
	// ListAPIKeys returns the tenant's keys, newest first.
	ListAPIKeys(ctx context.Context, tenantID uuid.UUID, page PageRequest) ([]*APIKeyRow, error)
	// APIKeyByID returns one of the tenant's keys.
	APIKeyByID(ctx context.Context, tenantID, id uuid.UUID) (*APIKeyRow, error)
}

// List returns one page of the tenant's API keys, newest first, and
// whether more follow.
func (s *APIKeys) List(ctx context.Context, actor *User, tenantID uuid.UUID, page PageRequest) ([]*APIKeyRow, bool, error) {
	if err := requireTenantAccess(actor, PermAPIKeys, tenantID); err != nil {
		return nil, false, err
	}
	var rows []*APIKeyRow
	err := s.Store.InTenant(ctx, tenantID, func(tx Tx) (err error) {
		rows, err = tx.ListAPIKeys(ctx, tenantID, page)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	rows, more := Page(rows, page)
	return rows, more, nil
}

// CreateAs makes a key for the tenant on behalf of a console user and
// returns its secret, which is shown once and never stored.
func (s *APIKeys) CreateAs(ctx context.Context, actor *User, tenantID uuid.UUID, name string) (*APIKey, string, error) {
	if err := requireTenantAccess(actor, PermAPIKeys, tenantID); err != nil {
		return nil, "", err
	}
	return s.Create(ctx, actor.Actor(), tenantID, name)
}

// RevokeAs revokes one of the tenant's keys on behalf of a console user;
// the API refuses it from the next request on. A key of another tenant is
// ENOTFOUND.
func (s *APIKeys) RevokeAs(ctx context.Context, actor *User, tenantID, keyID uuid.UUID) (*APIKeyRow, error) {
	if err := requireTenantAccess(actor, PermAPIKeys, tenantID); err != nil {
		return nil, err
	}
	var k *APIKeyRow
	err := s.Store.InTenant(ctx, tenantID, func(tx Tx) (err error) {
		if k, err = tx.APIKeyByID(ctx, tenantID, keyID); err != nil {
			return err
		}
		if k.RevokedAt != nil {
			return nil
		}
		now := s.Now()
		if err := tx.RevokeAPIKey(ctx, tenantID, keyID, now); err != nil {
			return err
		}
		k.RevokedAt = &now
		return tx.InsertAudit(ctx, actor.Actor().Entry(&tenantID, "api_key.revoke", "api_key", keyID.String(), map[string]any{
			"name": k.Name, "prefix": k.Prefix,
		}))
	})
	// After the commit, so that no lookup can cache the key as it was.
	s.forget(keyID)
	if err != nil {
		return nil, err
	}
	return k, nil
}
