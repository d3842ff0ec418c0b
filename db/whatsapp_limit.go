package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const numberHealthColumns = `tenant_id, account_id, meta_tier, tier_reported_at, flagged, quality_event, quality_event_at,
	display_phone_number, account_event, account_detail, account_event_at, last_webhook_at,
	subscription, subscription_error, subscription_at`

// LockNumberHealth serves app.ReachTx and app.NumberHealthTx: the
// account's row, created when missing, locked until the transaction ends.
// The upsert takes the row lock in the one statement, so the first sends
// of a new account serialise as the later ones do.
func (t *Tx) LockNumberHealth(ctx context.Context, tenantID, accountID uuid.UUID) (*app.NumberHealth, error) {
	var h app.NumberHealth
	err := t.tx.GetContext(ctx, &h, `
		INSERT INTO whatsapp_number_health (tenant_id, account_id) VALUES ($1, $2)
		ON CONFLICT (tenant_id, account_id) DO UPDATE SET tenant_id = excluded.tenant_id
		RETURNING `+numberHealthColumns, tenantID, accountID)
	if err != nil {
		return nil, mapErr(err)
	}
	return &h, nil
}

// NumberHealth serves app.NumberHealthTx.
func (t *Tx) NumberHealth(ctx context.Context, tenantID, accountID uuid.UUID) (*app.NumberHealth, error) {
	var h app.NumberHealth
	err := t.tx.GetContext(ctx, &h, `SELECT `+numberHealthColumns+` FROM whatsapp_number_health
		WHERE tenant_id = $1 AND account_id = $2`, tenantID, accountID)
	if err != nil {
		return nil, notFound(err, "No number health of account %s.", accountID)
	}
	return &h, nil
}

// SaveNumberHealth serves app.NumberHealthTx.
func (t *Tx) SaveNumberHealth(ctx context.Context, h *app.NumberHealth) error {
	_, err := t.tx.NamedExecContext(ctx, `
		UPDATE whatsapp_number_health SET meta_tier = :meta_tier, tier_reported_at = :tier_reported_at, flagged = :flagged,
			quality_event = :quality_event, quality_event_at = :quality_event_at, display_phone_number = :display_phone_number,
			account_event = :account_event, account_detail = :account_detail, account_event_at = :account_event_at,
			last_webhook_at = :last_webhook_at, subscription = :subscription, subscription_error = :subscription_error,
			subscription_at = :subscription_at
		WHERE tenant_id = :tenant_id AND account_id = :account_id`, h)
	return mapErr(err)
}

// TakeReach serves app.ReachTx, with the account's health row locked
// (LockNumberHealth): it forgets the users whose 24 hours are over, then
// counts the others and adds the recipient, or refreshes its time, when
// the recipient is counted already or there is room.
func (t *Tx) TakeReach(ctx context.Context, r app.ReachTake) (app.ReachSlot, error) {
	since := r.At.Add(-r.Window)
	if _, err := t.tx.ExecContext(ctx, `DELETE FROM whatsapp_reach WHERE tenant_id = $1 AND account_id = $2 AND last_at <= $3`,
		r.TenantID, r.AccountID, since); err != nil {
		return app.ReachSlot{}, mapErr(err)
	}
	var st struct {
		Used   int        `db:"used"`
		Known  bool       `db:"known"`
		Oldest *time.Time `db:"oldest"`
	}
	if err := t.tx.GetContext(ctx, &st, `
		SELECT count(*) AS used, coalesce(bool_or(address = $3), false) AS known, min(last_at) AS oldest
		FROM whatsapp_reach WHERE tenant_id = $1 AND account_id = $2`, r.TenantID, r.AccountID, r.Address); err != nil {
		return app.ReachSlot{}, mapErr(err)
	}
	if !st.Known && r.Limit != app.Unlimited && st.Used >= r.Limit {
		slot := app.ReachSlot{Used: st.Used, FreeAt: r.At}
		if st.Oldest != nil {
			slot.FreeAt = st.Oldest.Add(r.Window)
		}
		return slot, nil
	}
	_, err := t.tx.ExecContext(ctx, `
		INSERT INTO whatsapp_reach (tenant_id, account_id, address, last_at, message_id) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (tenant_id, account_id, address) DO UPDATE
		SET last_at = greatest(whatsapp_reach.last_at, excluded.last_at), message_id = excluded.message_id`,
		r.TenantID, r.AccountID, r.Address, r.At, r.MessageID)
	if err != nil {
		return app.ReachSlot{}, mapErr(err)
	}
	used := st.Used
	if !st.Known {
		used++
	}
	return app.ReachSlot{OK: true, Used: used}, nil
}

// ReachUsed serves app.NumberHealthTx.
func (t *Tx) ReachUsed(ctx context.Context, tenantID, accountID uuid.UUID, since time.Time) (int, error) {
	var n int
	err := t.tx.GetContext(ctx, &n, `SELECT count(*) FROM whatsapp_reach WHERE tenant_id = $1 AND account_id = $2 AND last_at > $3`,
		tenantID, accountID, since)
	return n, mapErr(err)
}

// MetaAccountsOfWABA serves app.NumberHealthTx.
func (t *Tx) MetaAccountsOfWABA(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, waba string) ([]*app.ChannelAccount, error) {
	as := []*app.ChannelAccount{}
	list := make(app.StringList, len(ids))
	for i, id := range ids {
		list[i] = id.String()
	}
	err := t.tx.SelectContext(ctx, &as, `
		SELECT `+accountColumns+` FROM channel_accounts
		WHERE tenant_id = $1 AND id = ANY(CAST($2 AS uuid[])) AND provider = 'meta' AND config->>'waba_id' = $3
		ORDER BY created_at`, tenantID, list, waba)
	return as, mapErr(err)
}
