package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// Security keys and their ceremonies: like second factors, every statement
// names the user and the user's tenant (NULL for an operator), matched
// with IS NOT DISTINCT FROM.

const securityKeyColumns = `id, user_id, tenant_id, name, credential_id, public_key, sign_count, credential, created_at, last_used_at`

// SecurityKeys serves console.TwoFactorTx.
func (t *Tx) SecurityKeys(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID) ([]*console.SecurityKey, error) {
	keys := []*console.SecurityKey{}
	err := t.tx.SelectContext(ctx, &keys, `
		SELECT `+securityKeyColumns+` FROM user_security_keys
		WHERE tenant_id IS NOT DISTINCT FROM $1 AND user_id = $2
		ORDER BY created_at, id`, tenantID, userID)
	return keys, mapErr(err)
}

// InsertSecurityKey serves console.TwoFactorTx.
func (t *Tx) InsertSecurityKey(ctx context.Context, k *console.SecurityKey) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO user_security_keys (`+securityKeyColumns+`)
		VALUES (:id, :user_id, :tenant_id, :name, :credential_id, :public_key, :sign_count, :credential, :created_at, :last_used_at)`, k)
	return mapErr(err)
}

// DeleteSecurityKey serves console.TwoFactorTx.
func (t *Tx) DeleteSecurityKey(ctx context.Context, tenantID *uuid.UUID, userID, id uuid.UUID) (*console.SecurityKey, error) {
	var k console.SecurityKey
	err := t.tx.GetContext(ctx, &k, `
		DELETE FROM user_security_keys
		WHERE tenant_id IS NOT DISTINCT FROM $1 AND user_id = $2 AND id = $3
		RETURNING `+securityKeyColumns, tenantID, userID, id)
	if err != nil {
		return nil, notFound(err, "Security key %s not found.", id)
	}
	return &k, nil
}

// DeleteSecurityKeys serves console.TwoFactorTx.
func (t *Tx) DeleteSecurityKeys(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID) (int, error) {
	res, err := t.tx.ExecContext(ctx, `
		DELETE FROM user_security_keys WHERE tenant_id IS NOT DISTINCT FROM $1 AND user_id = $2`, tenantID, userID)
	if err != nil {
		return 0, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// TakeSignCount serves console.TwoFactorTx. The condition is checked again
// once a concurrent update of the row commits, so of two assertions with
// one counter only the first passes.
func (t *Tx) TakeSignCount(ctx context.Context, tenantID *uuid.UUID, userID, id uuid.UUID, count int64, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE user_security_keys SET sign_count = $4, last_used_at = $5
		WHERE tenant_id IS NOT DISTINCT FROM $1 AND user_id = $2 AND id = $3
			AND (sign_count < $4 OR (sign_count = 0 AND $4 = 0))`, tenantID, userID, id, count, at)
	if err != nil {
		return false, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// SaveCeremony serves console.TwoFactorTx: it replaces the user's ceremony
// of the same purpose.
func (t *Tx) SaveCeremony(ctx context.Context, c *console.Ceremony) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO webauthn_ceremonies (user_id, purpose, tenant_id, binding, session_version, session_data, expires_at)
		VALUES (:user_id, :purpose, :tenant_id, :binding, :session_version, :session_data, :expires_at)
		ON CONFLICT (user_id, purpose) DO UPDATE SET binding = EXCLUDED.binding,
			session_version = EXCLUDED.session_version, session_data = EXCLUDED.session_data, expires_at = EXCLUDED.expires_at`, c)
	return mapErr(err)
}

// TakeCeremony serves console.TwoFactorTx.
func (t *Tx) TakeCeremony(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID, purpose string) (*console.Ceremony, error) {
	var c console.Ceremony
	err := t.tx.GetContext(ctx, &c, `
		DELETE FROM webauthn_ceremonies
		WHERE tenant_id IS NOT DISTINCT FROM $1 AND user_id = $2 AND purpose = $3
		RETURNING user_id, purpose, tenant_id, binding, session_version, session_data, expires_at`, tenantID, userID, purpose)
	if err != nil {
		return nil, notFound(err, "No security key request under way.")
	}
	return &c, nil
}

// BumpUserSessions serves console.TwoFactorTx: it ends every session of
// the tenant's (or, with a nil tenant, the platform's) user.
func (t *Tx) BumpUserSessions(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID, at time.Time) error {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE users SET session_version = session_version + 1, updated_at = $3
		WHERE tenant_id IS NOT DISTINCT FROM $1 AND id = $2`, tenantID, userID, at)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return app.Errorf(app.ENOTFOUND, "User %s not found.", userID)
	}
	return nil
}
