package db

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

const accountColumns = `id, tenant_id, channel, provider, name, status, config, secrets, secrets_key_id, verify_token, webhook_token, suspended_reason, created_at, updated_at`

// CreateAccount serves app.AccountTx, app.ProvisionTx and console.AccountTx.
func (t *Tx) CreateAccount(ctx context.Context, a *app.ChannelAccount) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO channel_accounts (`+accountColumns+`)
		VALUES (:id, :tenant_id, :channel, :provider, :name, :status, :config, :secrets, :secrets_key_id, :verify_token,
			coalesce(nullif(:webhook_token, ''), replace(CAST(gen_random_uuid() AS text), '-', '') || replace(CAST(gen_random_uuid() AS text), '-', '')),
			:suspended_reason, :created_at, :updated_at)`, a)
	return mapErr(err)
}

// AccountByID serves console.AccountTx.
func (t *Tx) AccountByID(ctx context.Context, tenantID, id uuid.UUID) (*app.ChannelAccount, error) {
	var a app.ChannelAccount
	err := t.tx.GetContext(ctx, &a, `SELECT `+accountColumns+` FROM channel_accounts WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return nil, notFound(err, "Channel account %s not found.", id)
	}
	return &a, nil
}

// ActiveAccount returns the tenant's ACTIVE account on the channel. It
// serves app.PlanTx and console.AccountTx.
func (t *Tx) ActiveAccount(ctx context.Context, tenantID uuid.UUID, ch app.Channel) (*app.ChannelAccount, error) {
	if a, ok := t.route.activeAccount(tenantID, ch); ok {
		if a == nil {
			return nil, app.Errorf(app.ENOTFOUND, "No ACTIVE %s account.", ch)
		}
		return a, nil
	}
	var a app.ChannelAccount
	err := t.tx.GetContext(ctx, &a, `
		SELECT `+accountColumns+` FROM channel_accounts
		WHERE tenant_id = $1 AND channel = $2 AND status = 'ACTIVE'`, tenantID, ch)
	if err != nil {
		return nil, notFound(err, "No ACTIVE %s account.", ch)
	}
	return &a, nil
}

// SetAccountStatus serves app.AccountTx, app.DispatchTx and
// console.AccountTx.
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

// AccountsByProvider returns the tenant's accounts with a provider that are
// not DISABLED. It serves app.HookTx.
func (t *Tx) AccountsByProvider(ctx context.Context, tenantID uuid.UUID, provider string) ([]*app.ChannelAccount, error) {
	as := []*app.ChannelAccount{}
	err := t.tx.SelectContext(ctx, &as, `
		SELECT `+accountColumns+` FROM channel_accounts
		WHERE tenant_id = $1 AND provider = $2 AND status <> 'DISABLED' ORDER BY created_at`, tenantID, provider)
	return as, mapErr(err)
}

// AccountsByConfig serves app.HookTx: the provider's accounts of every
// tenant, whatever their status, whose settings equal match (a missing
// setting equals ""). It runs in platform scope: Amazon's webhooks are
// shared by tenants.
func (t *Tx) AccountsByConfig(ctx context.Context, provider string, match map[string]string) ([]*app.ChannelAccount, error) {
	where, args := []string{"provider = $1"}, []any{provider}
	for _, k := range slices.Sorted(maps.Keys(match)) {
		args = append(args, k, match[k])
		where = append(where, fmt.Sprintf("coalesce(config->>$%d, '') = $%d", len(args)-1, len(args)))
	}
	as := []*app.ChannelAccount{}
	err := t.tx.SelectContext(ctx, &as, `
		SELECT `+accountColumns+` FROM channel_accounts
		WHERE `+strings.Join(where, " AND ")+` ORDER BY created_at LIMIT 1000`, args...)
	return as, mapErr(err)
}

// AccountsByID serves app.ReceiptInboxTx, in platform scope.
func (t *Tx) AccountsByID(ctx context.Context, ids []uuid.UUID) ([]*app.ChannelAccount, error) {
	as := []*app.ChannelAccount{}
	if len(ids) == 0 {
		return as, nil
	}
	err := t.tx.SelectContext(ctx, &as, `SELECT `+accountColumns+` FROM channel_accounts WHERE id = ANY ($1::uuid[]) ORDER BY id`, uuidArray(ids))
	return as, mapErr(err)
}

// ListAccounts serves console.AccountTx.
func (t *Tx) ListAccounts(ctx context.Context, tenantID uuid.UUID, f console.AccountFilter, page console.PageRequest) ([]*app.ChannelAccount, error) {
	where, args := []string{"tenant_id = $1"}, []any{tenantID}
	if f.Channel != "" {
		args = append(args, f.Channel)
		where = append(where, fmt.Sprintf("channel = $%d", len(args)))
	}
	if f.Status != "" {
		args = append(args, f.Status)
		where = append(where, fmt.Sprintf("status = $%d", len(args)))
	}
	args = append(args, page.Limit, page.Offset)
	as := []*app.ChannelAccount{}
	err := t.tx.SelectContext(ctx, &as, `SELECT `+accountColumns+` FROM channel_accounts
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY created_at DESC, id DESC
		LIMIT $`+fmt.Sprint(len(args)-1)+` OFFSET $`+fmt.Sprint(len(args)), args...)
	return as, mapErr(err)
}

// AccountForUpdate serves console.AccountTx.
func (t *Tx) AccountForUpdate(ctx context.Context, tenantID, id uuid.UUID) (*app.ChannelAccount, error) {
	var a app.ChannelAccount
	err := t.tx.GetContext(ctx, &a, `SELECT `+accountColumns+` FROM channel_accounts WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id)
	if err != nil {
		return nil, notFound(err, "Channel account %s not found.", id)
	}
	return &a, nil
}

// UpdateAccount serves console.AccountTx.
func (t *Tx) UpdateAccount(ctx context.Context, a *app.ChannelAccount) error {
	res, err := t.tx.NamedExecContext(ctx, `
		UPDATE channel_accounts
		SET name = :name, config = :config, secrets = :secrets, secrets_key_id = :secrets_key_id, updated_at = :updated_at
		WHERE tenant_id = :tenant_id AND id = :id`, a)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return app.Errorf(app.ENOTFOUND, "Channel account %s not found.", a.ID)
	}
	return nil
}

// RateBuckets serves console.AccountTx. Buckets are keyed by tenant and
// account, so the keys the caller builds from its own accounts scope it.
func (t *Tx) RateBuckets(ctx context.Context, keys []string) (map[string]console.RateBucket, error) {
	out := map[string]console.RateBucket{}
	if len(keys) == 0 {
		return out, nil
	}
	var rows []struct {
		Key string `db:"key"`
		console.RateBucket
	}
	if err := t.tx.SelectContext(ctx, &rows, `SELECT key, tokens, refilled_at FROM rate_buckets WHERE key = ANY($1)`, app.StringList(keys)); err != nil {
		return nil, mapErr(err)
	}
	for _, r := range rows {
		out[r.Key] = r.RateBucket
	}
	return out, nil
}

// AstrayReceipts serves console.AccountTx through the index of the
// receipts kept as an account's (only foreign receipts are): at most
// limit+1 of them are counted, so that an account whose every event goes
// astray costs the page no more than that.
func (t *Tx) AstrayReceipts(ctx context.Context, tenantID, accountID uuid.UUID, limit int) (console.AstrayReceipts, error) {
	var a console.AstrayReceipts
	err := t.tx.GetContext(ctx, &a, `
		WITH newest AS (
			SELECT received_at, body FROM webhook_receipts
			WHERE tenant_id = $1 AND channel_account_id = $2 AND outcome = 'foreign'
			ORDER BY received_at DESC LIMIT $3 + 1
		)
		SELECT count(*) AS count, max(received_at) AS last_at,
			coalesce((SELECT body->>'account_ref' FROM newest ORDER BY received_at DESC LIMIT 1), '') AS configuration_set
		FROM newest`, tenantID, accountID, limit)
	return a, mapErr(err)
}

// BreakerStates serves console.AccountTx. from the audit entries the
// breakers write on every transition.
func (t *Tx) BreakerStates(ctx context.Context, tenantID uuid.UUID, accountIDs []uuid.UUID) (map[uuid.UUID]console.BreakerTransition, error) {
	out := map[uuid.UUID]console.BreakerTransition{}
	if len(accountIDs) == 0 {
		return out, nil
	}
	ids := make([]string, len(accountIDs))
	for i, id := range accountIDs {
		ids[i] = id.String()
	}
	var rows []struct {
		TargetID string    `db:"target_id"`
		From     string    `db:"from_state"`
		To       string    `db:"to_state"`
		At       time.Time `db:"at"`
	}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT DISTINCT ON (target_id) target_id, coalesce(metadata->>'from', '') AS from_state,
		       coalesce(metadata->>'to', '') AS to_state, at
		FROM audit_log
		WHERE tenant_id = $1 AND target_type = 'channel_account' AND target_id = ANY($2) AND action = 'channel_account.breaker'
		ORDER BY target_id, id DESC`, tenantID, app.StringList(ids))
	if err != nil {
		return nil, mapErr(err)
	}
	for _, r := range rows {
		id, err := uuid.Parse(r.TargetID)
		if err != nil {
			continue
		}
		out[id] = console.BreakerTransition{From: r.From, To: r.To, At: r.At}
	}
	return out, nil
}

// AccountAudit serves console.AccountTx.
func (t *Tx) AccountAudit(ctx context.Context, tenantID, accountID uuid.UUID, limit int) ([]*app.AuditEntry, error) {
	var rows []struct {
		app.AuditEntry
		MetadataJSON []byte `db:"metadata"`
	}
	err := t.tx.SelectContext(ctx, &rows, `
		SELECT id, tenant_id, actor_type, actor_id, actor_label, action, target_type, target_id, metadata, at, prev_hash, hash
		FROM audit_log
		WHERE tenant_id = $1 AND target_type = 'channel_account' AND target_id = $2
		ORDER BY id DESC LIMIT $3`, tenantID, accountID.String(), limit)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make([]*app.AuditEntry, len(rows))
	for i := range rows {
		e := rows[i].AuditEntry
		if err := json.Unmarshal(rows[i].MetadataJSON, &e.Metadata); err != nil {
			return nil, fmt.Errorf("audit entry %d metadata: %w", e.ID, err)
		}
		out[i] = &e
	}
	return out, nil
}

// MessagesByAccount serves console.AccountTx, newest first.
func (t *Tx) MessagesByAccount(ctx context.Context, tenantID, accountID uuid.UUID, limit int) ([]*app.Message, error) {
	ms := []*app.Message{}
	err := t.tx.SelectContext(ctx, &ms, `
		SELECT `+messageColumns+` FROM messages
		WHERE tenant_id = $1 AND channel_account_id = $2
		ORDER BY created_at DESC, id DESC LIMIT $3`, tenantID, accountID, limit)
	return ms, mapErr(err)
}

// TestSendsSince serves console.AccountTx. The advisory lock is the
// tenant's own, so that two tests of a tenant count one after the other
// while nothing else waits on it.
func (t *Tx) TestSendsSince(ctx context.Context, tenantID uuid.UUID, since time.Time) (int, error) {
	if _, err := t.tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('herald.test_send:' || $1::text, 0))`, tenantID); err != nil {
		return 0, mapErr(err)
	}
	var n int
	err := t.tx.GetContext(ctx, &n, `
		SELECT count(*) FROM messages WHERE tenant_id = $1 AND test AND created_at >= $2`, tenantID, since)
	return n, mapErr(err)
}

// AccountByWebhookToken serves app.HookTx (platform scope): the account
// whose Meta webhook path carries token.
func (t *Tx) AccountByWebhookToken(ctx context.Context, token string) (*app.ChannelAccount, error) {
	var a app.ChannelAccount
	err := t.tx.GetContext(ctx, &a, `SELECT `+accountColumns+` FROM channel_accounts WHERE webhook_token = $1 AND status <> 'DISABLED'`, token)
	if err != nil {
		return nil, notFound(err, "No account has this webhook path.")
	}
	return &a, nil
}
