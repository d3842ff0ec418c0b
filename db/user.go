package db

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const userColumns = `id, tenant_id, email, name, password_hash, role, session_version, disabled_at, last_login_at, must_change_password, created_at, updated_at`

// CreateUser implements app.UserStore.
func (t *Tx) CreateUser(ctx context.Context, u *app.User) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO users (`+userColumns+`)
		VALUES (:id, :tenant_id, :email, :name, :password_hash, :role, :session_version, :disabled_at, :last_login_at, :must_change_password, :created_at, :updated_at)`, u)
	return mapErr(err)
}

// UserByEmail implements app.UserStore. Addresses are stored lower-cased.
func (t *Tx) UserByEmail(ctx context.Context, email string) (*app.User, error) {
	var u app.User
	err := t.tx.GetContext(ctx, &u, `SELECT `+userColumns+` FROM users WHERE email = lower($1)`, email)
	if err != nil {
		return nil, notFound(err, "User %q not found.", email)
	}
	return &u, nil
}

// UserByID implements app.UserStore.
func (t *Tx) UserByID(ctx context.Context, id uuid.UUID) (*app.User, error) {
	var u app.User
	err := t.tx.GetContext(ctx, &u, `SELECT `+userColumns+` FROM users WHERE id = $1`, id)
	if err != nil {
		return nil, notFound(err, "User %s not found.", id)
	}
	return &u, nil
}

// CountOperators implements app.UserStore.
func (t *Tx) CountOperators(ctx context.Context) (int, error) {
	var n int
	err := t.tx.GetContext(ctx, &n, `SELECT count(*) FROM users WHERE role = 'operator' AND tenant_id IS NULL`)
	return n, mapErr(err)
}
