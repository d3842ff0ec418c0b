package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const accountColumns = `id, tenant_id, channel, provider, name, status, config, secrets, secrets_key_id, verify_token, suspended_reason, created_at, updated_at`

// CreateAccount implements app.AccountStore.
func (t *Tx) CreateAccount(ctx context.Context, a *app.ChannelAccount) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO channel_accounts (`+accountColumns+`)
		VALUES (:id, :tenant_id, :channel, :provider, :name, :status, :config, :secrets, :secrets_key_id, :verify_token, :suspended_reason, :created_at, :updated_at)`, a)
	return mapErr(err)
}

// AccountByID implements app.AccountStore.
func (t *Tx) AccountByID(ctx context.Context, tenantID, id uuid.UUID) (*app.ChannelAccount, error) {
	var a app.ChannelAccount
	err := t.tx.GetContext(ctx, &a, `SELECT `+accountColumns+` FROM channel_accounts WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return nil, notFound(err, "Channel account %s not found.", id)
	}
	return &a, nil
}

// ActiveAccount implements app.AccountStore.
func (t *Tx) ActiveAccount(ctx context.Context, tenantID uuid.UUID, ch app.Channel) (*app.ChannelAccount, error) {
	var a app.ChannelAccount
	err := t.tx.GetContext(ctx, &a, `
		SELECT `+accountColumns+` FROM channel_accounts
		WHERE tenant_id = $1 AND channel = $2 AND status = 'ACTIVE'`, tenantID, ch)
	if err != nil {
		return nil, notFound(err, "No ACTIVE %s account.", ch)
	}
	return &a, nil
}

// SetAccountStatus implements app.AccountStore.
func (t *Tx) SetAccountStatus(ctx context.Context, tenantID, id uuid.UUID, status, reason string, at time.Time) error {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE channel_accounts SET status = $3, suspended_reason = nullif($4, ''), updated_at = $5
		WHERE tenant_id = $1 AND id = $2`, tenantID, id, status, reason, at)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return app.Errorf(app.ENOTFOUND, "Channel account %s not found.", id)
	}
	return nil
}

// AccountsByProvider implements app.AccountStore.
func (t *Tx) AccountsByProvider(ctx context.Context, tenantID uuid.UUID, provider string) ([]*app.ChannelAccount, error) {
	as := []*app.ChannelAccount{}
	err := t.tx.SelectContext(ctx, &as, `
		SELECT `+accountColumns+` FROM channel_accounts
		WHERE tenant_id = $1 AND provider = $2 AND status <> 'DISABLED' ORDER BY created_at`, tenantID, provider)
	return as, mapErr(err)
}
