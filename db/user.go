package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

const userColumns = `id, tenant_id, email, name, password_hash, role, session_version, disabled_at, last_login_at, must_change_password, created_at, updated_at`

// userReadColumns are userColumns and what reads add: since when the user
// has a second factor (a confirmed authenticator app or a security key),
// and whether their tenant (or, for operators,
// the platform) requires one.
const userReadColumns = userColumns + `,
	LEAST((SELECT f.confirmed_at FROM user_second_factors f WHERE f.user_id = users.id),
		(SELECT min(k.created_at) FROM user_security_keys k WHERE k.user_id = users.id)) AS two_factor_at,
	COALESCE(CASE WHEN users.tenant_id IS NULL THEN (SELECT p.require_operator_two_factor FROM platform_settings p)
		ELSE (SELECT tn.require_two_factor FROM tenants tn WHERE tn.id = users.tenant_id) END, false) AS two_factor_required`

// CreateUser serves app.UserTx and console.UserTx.
func (t *Tx) CreateUser(ctx context.Context, u *app.User) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO users (`+userColumns+`)
		VALUES (:id, :tenant_id, :email, :name, :password_hash, :role, :session_version, :disabled_at, :last_login_at, :must_change_password, :created_at, :updated_at)`, u)
	return mapErr(err)
}

// UsersByEmail serves app.UserTx and console.SessionTx: every account
// under the address, in every tenant and among operators, oldest first.
// Addresses are stored lower-cased. It runs in platform scope only: no
// tenant learns of another tenant's accounts.
func (t *Tx) UsersByEmail(ctx context.Context, email string) ([]*app.User, error) {
	rows := []*app.User{}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT `+userReadColumns+` FROM users WHERE email = lower($1)
		ORDER BY created_at, id`, email)
	return rows, mapErr(err)
}

// UserByID serves console.SessionTx.
func (t *Tx) UserByID(ctx context.Context, id uuid.UUID) (*app.User, error) {
	var u app.User
	err := t.tx.GetContext(ctx, &u, `SELECT `+userReadColumns+` FROM users WHERE id = $1`, id)
	if err != nil {
		return nil, notFound(err, "User %s not found.", id)
	}
	return &u, nil
}

// CountOperators serves app.UserTx.
func (t *Tx) CountOperators(ctx context.Context) (int, error) {
	var n int
	err := t.tx.GetContext(ctx, &n, `SELECT count(*) FROM users WHERE role = 'operator' AND tenant_id IS NULL`)
	return n, mapErr(err)
}

// ListTenantUsers serves console.UserTx.
func (t *Tx) ListTenantUsers(ctx context.Context, tenantID uuid.UUID, page console.PageRequest) ([]*app.User, error) {
	rows := []*app.User{}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT `+userReadColumns+` FROM users
		WHERE tenant_id = $1
		ORDER BY created_at DESC, id DESC
		LIMIT $2 OFFSET $3`, tenantID, page.Limit, page.Offset)
	return rows, mapErr(err)
}

// TenantUser serves console.UserTx.
func (t *Tx) TenantUser(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*app.User, error) {
	q := `SELECT ` + userReadColumns + ` FROM users WHERE tenant_id = $1 AND id = $2`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	var u app.User
	if err := t.tx.GetContext(ctx, &u, q, tenantID, id); err != nil {
		return nil, notFound(err, "User %s not found.", id)
	}
	return &u, nil
}

// LockTenantUsers serves console.UserTx. with a lock on the tenant's row.
// FOR NO KEY UPDATE conflicts with itself but not with the key-share locks
// that inserts referencing the tenant take, so the pipeline is not held up.
func (t *Tx) LockTenantUsers(ctx context.Context, tenantID uuid.UUID) error {
	var one int
	err := t.tx.GetContext(ctx, &one, `SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE`, tenantID)
	return notFound(err, "Tenant %s not found.", tenantID)
}

// LockActiveManagers serves console.UserTx.
func (t *Tx) LockActiveManagers(ctx context.Context, tenantID uuid.UUID) ([]uuid.UUID, error) {
	ids := []uuid.UUID{}
	err := t.tx.SelectContext(ctx, &ids, `
		SELECT id FROM users
		WHERE tenant_id = $1 AND role = 'manager' AND disabled_at IS NULL
		ORDER BY id
		FOR UPDATE`, tenantID)
	return ids, mapErr(err)
}

// UpdateTenantUser serves console.UserTx.
func (t *Tx) UpdateTenantUser(ctx context.Context, u *app.User) error {
	res, err := t.tx.NamedExecContext(ctx, `
		UPDATE users SET role = :role, disabled_at = :disabled_at, session_version = :session_version,
		       password_hash = :password_hash, must_change_password = :must_change_password, updated_at = :updated_at
		WHERE tenant_id = :tenant_id AND id = :id`, u)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return app.Errorf(app.ENOTFOUND, "User %s not found.", u.ID)
	}
	return nil
}
