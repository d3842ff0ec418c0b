package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// Second factors: every statement names the user and the user's tenant
// (NULL for an operator), matched with IS NOT DISTINCT FROM.

// SecondFactor serves console.TwoFactorTx.
func (t *Tx) SecondFactor(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID) (*console.SecondFactor, error) {
	var f console.SecondFactor
	err := t.tx.GetContext(ctx, &f, `
		SELECT user_id, tenant_id, secret, key_id, last_step, confirmed_at, created_at
		FROM user_second_factors WHERE tenant_id IS NOT DISTINCT FROM $1 AND user_id = $2`, tenantID, userID)
	if err != nil {
		return nil, notFound(err, "User %s has no second factor.", userID)
	}
	return &f, nil
}

// BeginSecondFactor serves console.TwoFactorTx: it replaces an
// unconfirmed enrolment, never a confirmed one.
func (t *Tx) BeginSecondFactor(ctx context.Context, f *console.SecondFactor) error {
	res, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO user_second_factors (user_id, tenant_id, secret, key_id, last_step, confirmed_at, created_at)
		VALUES (:user_id, :tenant_id, :secret, :key_id, 0, NULL, :created_at)
		ON CONFLICT (user_id) DO UPDATE SET secret = EXCLUDED.secret, key_id = EXCLUDED.key_id, created_at = EXCLUDED.created_at
		WHERE user_second_factors.confirmed_at IS NULL`, f)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return app.Errorf(app.ECONFLICT, "The user has a second factor already.")
	}
	return nil
}

// ConfirmSecondFactor serves console.TwoFactorTx.
func (t *Tx) ConfirmSecondFactor(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID, step int64, at time.Time) error {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE user_second_factors SET confirmed_at = $3, last_step = $4
		WHERE tenant_id IS NOT DISTINCT FROM $1 AND user_id = $2 AND confirmed_at IS NULL`, tenantID, userID, at, step)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return app.Errorf(app.ENOTFOUND, "No enrolment of user %s to confirm.", userID)
	}
	return nil
}

// TakeTimeStep serves console.TwoFactorTx. The condition on last_step is
// checked again once a concurrent update of the row commits, so of two
// requests with one code only the first passes.
func (t *Tx) TakeTimeStep(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID, step int64) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE user_second_factors SET last_step = $3
		WHERE tenant_id IS NOT DISTINCT FROM $1 AND user_id = $2 AND confirmed_at IS NOT NULL AND last_step < $3`, tenantID, userID, step)
	if err != nil {
		return false, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// DeleteSecondFactor serves console.TwoFactorTx.
func (t *Tx) DeleteSecondFactor(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		DELETE FROM user_second_factors WHERE tenant_id IS NOT DISTINCT FROM $1 AND user_id = $2 AND confirmed_at IS NOT NULL`, tenantID, userID)
	if err != nil {
		return false, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// ReplaceRecoveryCodes serves console.TwoFactorTx.
func (t *Tx) ReplaceRecoveryCodes(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID, hashes [][]byte) error {
	if _, err := t.tx.ExecContext(ctx, `
		DELETE FROM user_recovery_codes WHERE tenant_id IS NOT DISTINCT FROM $1 AND user_id = $2`, tenantID, userID); err != nil {
		return mapErr(err)
	}
	for _, h := range hashes {
		if _, err := t.tx.ExecContext(ctx, `
			INSERT INTO user_recovery_codes (user_id, tenant_id, code_hash) VALUES ($1, $2, $3)`, userID, tenantID, h); err != nil {
			return mapErr(err)
		}
	}
	return nil
}

// UseRecoveryCode serves console.TwoFactorTx.
func (t *Tx) UseRecoveryCode(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID, hash []byte, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE user_recovery_codes SET used_at = $4
		WHERE tenant_id IS NOT DISTINCT FROM $1 AND user_id = $2 AND code_hash = $3 AND used_at IS NULL`, tenantID, userID, hash, at)
	if err != nil {
		return false, mapErr(err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// CountRecoveryCodes serves console.TwoFactorTx.
func (t *Tx) CountRecoveryCodes(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID) (int, error) {
	var n int
	err := t.tx.GetContext(ctx, &n, `
		SELECT count(*) FROM user_recovery_codes
		WHERE tenant_id IS NOT DISTINCT FROM $1 AND user_id = $2 AND used_at IS NULL`, tenantID, userID)
	return n, mapErr(err)
}

// SetTenantTwoFactor serves console.TwoFactorTx.
func (t *Tx) SetTenantTwoFactor(ctx context.Context, tenantID uuid.UUID, required bool, at time.Time) error {
	res, err := t.tx.ExecContext(ctx, `UPDATE tenants SET require_two_factor = $2, updated_at = $3 WHERE id = $1`, tenantID, required, at)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return app.Errorf(app.ENOTFOUND, "Tenant %s not found.", tenantID)
	}
	return nil
}

// TenantTwoFactor serves console.TwoFactorTx.
func (t *Tx) TenantTwoFactor(ctx context.Context, tenantID uuid.UUID) (bool, error) {
	var required bool
	err := t.tx.GetContext(ctx, &required, `SELECT require_two_factor FROM tenants WHERE id = $1`, tenantID)
	if err != nil {
		return false, notFound(err, "Tenant %s not found.", tenantID)
	}
	return required, nil
}

// SetOperatorTwoFactor serves console.TwoFactorTx.
func (t *Tx) SetOperatorTwoFactor(ctx context.Context, required bool, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE platform_settings SET require_operator_two_factor = $1, updated_at = $2`, required, at)
	return mapErr(err)
}

// OperatorTwoFactor serves console.TwoFactorTx.
func (t *Tx) OperatorTwoFactor(ctx context.Context) (bool, error) {
	var required bool
	err := t.tx.GetContext(ctx, &required, `SELECT COALESCE((SELECT require_operator_two_factor FROM platform_settings), false)`)
	return required, mapErr(err)
}

// ListOperators serves console.TwoFactorTx.
func (t *Tx) ListOperators(ctx context.Context) ([]*app.User, error) {
	rows := []*app.User{}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT `+userReadColumns+` FROM users WHERE tenant_id IS NULL AND role = 'operator'
		ORDER BY created_at, id`)
	return rows, mapErr(err)
}
