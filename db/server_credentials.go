package db

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// RecordCredentialRefusal serves app.CredentialTx in one upsert, which
// concurrent refusals of the account take one after the other on its row.
// A spell whose last refusal is window old or older ends: r starts a new
// one. alerted_refusal names the refusal of the spell that raised the last
// alert; the refusal that raises the next one, after window, says so by
// naming itself. Every right-hand side reads the row as it was.
func (t *Tx) RecordCredentialRefusal(ctx context.Context, r app.CredentialRefusal, window time.Duration) (bool, error) {
	var alert bool
	err := t.tx.GetContext(ctx, &alert, `
		INSERT INTO server_credential_refusals AS s (tenant_id, channel_account_id, provider, code, reason,
			first_at, last_at, refusals, alerted_at, alerted_refusal)
		VALUES ($1, $2, $3, $4, $5, $6, $6, 1, $6, 1)
		ON CONFLICT (tenant_id, channel_account_id) DO UPDATE SET
			provider = excluded.provider, code = excluded.code, reason = excluded.reason,
			first_at = CASE WHEN s.last_at <= $6 - $7 * interval '1 second' THEN excluded.first_at ELSE s.first_at END,
			refusals = CASE WHEN s.last_at <= $6 - $7 * interval '1 second' THEN 1 ELSE s.refusals + 1 END,
			alerted_at = CASE WHEN s.alerted_at <= $6 - $7 * interval '1 second' THEN excluded.alerted_at ELSE s.alerted_at END,
			alerted_refusal = CASE
				WHEN s.last_at <= $6 - $7 * interval '1 second' THEN 1
				WHEN s.alerted_at <= $6 - $7 * interval '1 second' THEN s.refusals + 1
				ELSE s.alerted_refusal END,
			last_at = greatest(s.last_at, excluded.last_at)
		RETURNING refusals = alerted_refusal`,
		r.TenantID, r.AccountID, r.Provider, r.Code, r.Reason, r.LastAt, window.Seconds())
	return alert, mapErr(err)
}

// refusalColumns are the columns of server_credential_refusals (alias s)
// that app.CredentialRefusal holds.
const refusalColumns = `s.tenant_id, s.channel_account_id, s.provider, s.code, s.reason, s.first_at, s.last_at, s.refusals`

// ClearCredentialRefusal serves app.CredentialTx.
func (t *Tx) ClearCredentialRefusal(ctx context.Context, tenantID, accountID uuid.UUID) (*app.CredentialRefusal, error) {
	var r app.CredentialRefusal
	err := t.tx.GetContext(ctx, &r, `
		DELETE FROM server_credential_refusals s WHERE s.tenant_id = $1 AND s.channel_account_id = $2
		RETURNING `+refusalColumns, tenantID, accountID)
	if isNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr(err)
	}
	return &r, nil
}

// refusalsQuery reads spells with their tenant's and account's names;
// $1 is the earliest last refusal, further conditions follow.
const refusalsQuery = `
	SELECT ` + refusalColumns + `, t.slug AS tenant_slug, t.name AS tenant_name, a.name AS account_name, a.channel
	FROM server_credential_refusals s
	JOIN tenants t ON t.id = s.tenant_id
	JOIN channel_accounts a ON a.tenant_id = s.tenant_id AND a.id = s.channel_account_id
	WHERE s.last_at > $1`

// CredentialRefusals serves app.CredentialTx, in platform scope. The
// table holds at most one row per channel account, so every spell is read:
// /readyz counts them all.
func (t *Tx) CredentialRefusals(ctx context.Context, since time.Time) ([]*app.CredentialRefusal, error) {
	rs := []*app.CredentialRefusal{}
	err := t.tx.SelectContext(ctx, &rs, refusalsQuery+` ORDER BY s.last_at DESC, s.channel_account_id`, since)
	return rs, mapErr(err)
}

// TenantCredentialRefusals serves app.CredentialTx.
func (t *Tx) TenantCredentialRefusals(ctx context.Context, tenantID uuid.UUID, since time.Time) ([]*app.CredentialRefusal, error) {
	rs := []*app.CredentialRefusal{}
	err := t.tx.SelectContext(ctx, &rs, refusalsQuery+` AND s.tenant_id = $2 ORDER BY s.last_at DESC, s.channel_account_id`, since, tenantID)
	return rs, mapErr(err)
}
