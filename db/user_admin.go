package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// ListTenantUsers implements console.UserAdminStore.
func (t *Tx) ListTenantUsers(ctx context.Context, tenantID uuid.UUID, page console.PageRequest) ([]*app.User, error) {
	rows := []*app.User{}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT `+userColumns+` FROM users
		WHERE tenant_id = $1
		ORDER BY created_at DESC, id DESC
		LIMIT $2 OFFSET $3`, tenantID, page.Limit, page.Offset)
	return rows, mapErr(err)
}

// TenantUser implements console.UserAdminStore.
func (t *Tx) TenantUser(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*app.User, error) {
	q := `SELECT ` + userColumns + ` FROM users WHERE tenant_id = $1 AND id = $2`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	var u app.User
	if err := t.tx.GetContext(ctx, &u, q, tenantID, id); err != nil {
		return nil, notFound(err, "User %s not found.", id)
	}
	return &u, nil
}

// LockTenantUsers implements console.UserAdminStore with a lock on the tenant's
// row. FOR NO KEY UPDATE conflicts with itself but not with the key-share
// locks that inserts referencing the tenant take, so the pipeline is not
// held up.
func (t *Tx) LockTenantUsers(ctx context.Context, tenantID uuid.UUID) error {
	var one int
	err := t.tx.GetContext(ctx, &one, `SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE`, tenantID)
	return notFound(err, "Tenant %s not found.", tenantID)
}

// LockActiveManagers implements console.UserAdminStore.
func (t *Tx) LockActiveManagers(ctx context.Context, tenantID uuid.UUID) ([]uuid.UUID, error) {
	ids := []uuid.UUID{}
	err := t.tx.SelectContext(ctx, &ids, `
		SELECT id FROM users
		WHERE tenant_id = $1 AND role = 'manager' AND disabled_at IS NULL
		ORDER BY id
		FOR UPDATE`, tenantID)
	return ids, mapErr(err)
}

// UpdateTenantUser implements console.UserAdminStore.
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
