package db

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

var dispatchQuery = `
	SELECT ` + prefixed("m", messageColumns) + `, ` + prefixed("t", tenantColumns) + `, ` + prefixed("a", accountColumns) + `,
		(SELECT coalesce(sum(u.count), 0) FROM usage_counters u
		 WHERE u.tenant_id = m.tenant_id AND u.channel = m.channel AND u.month = $3) AS used
	FROM messages m
	JOIN tenants t ON t.id = m.tenant_id
	JOIN channel_accounts a ON a.tenant_id = m.tenant_id AND a.id = m.channel_account_id
	WHERE m.tenant_id = $1 AND m.id = $2`

// MessageForDispatch returns the message with its tenant, its channel
// account and the tenant's usage of its channel in the month, in one round
// trip; Tenant and Account are nil when it has no account. It serves
// app.DispatchTx. in one statement. A message without a channel account
// comes alone.
func (t *Tx) MessageForDispatch(ctx context.Context, tenantID, id uuid.UUID, month time.Time) (*app.DispatchState, error) {
	var row struct {
		Message app.Message        `db:"m"`
		Tenant  app.Tenant         `db:"t"`
		Account app.ChannelAccount `db:"a"`
		Used    int                `db:"used"`
	}
	err := t.tx.GetContext(ctx, &row, dispatchQuery, tenantID, id, month)
	if isNoRows(err) {
		m, err := t.MessageByID(ctx, tenantID, id, false)
		if err != nil {
			return nil, err
		}
		return &app.DispatchState{Message: m}, nil
	}
	if err != nil {
		return nil, mapErr(err)
	}
	return &app.DispatchState{Message: &row.Message, Tenant: &row.Tenant, Account: &row.Account, Used: row.Used}, nil
}

// RecordSent serves app.DispatchTx: the status change, the timeline entry
// and the usage count in one statement, the last two only when the message
// was still QUEUED. Usage is spread over shards (see migration 00003) so
// that concurrent sends of a tenant do not queue on one row.
func (t *Tx) RecordSent(ctx context.Context, s app.SentRecord) (bool, error) {
	detail, err := json.Marshal(s.Detail)
	if err != nil {
		return false, fmt.Errorf("encode timeline detail: %w", err)
	}
	var n int
	err = t.tx.GetContext(ctx, &n, `
		WITH sent AS (
			UPDATE messages SET status = 'SENT', provider = $3, external_message_id = $4, attempts = greatest(attempts + 1, $5), sent_at = $6,
				failed_reason = NULL, error_code = NULL, updated_at = $6
			WHERE tenant_id = $1 AND id = $2 AND status = 'QUEUED'
			RETURNING tenant_id, id
		), timeline AS (
			INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, detail, at)
			SELECT tenant_id, id, 'QUEUED', 'SENT', $7, $8, $6 FROM sent
		), usage AS (
			INSERT INTO usage_counters (tenant_id, channel, month, shard, count)
			SELECT tenant_id, $9, $10, $11, 1 FROM sent
			ON CONFLICT (tenant_id, channel, month, shard) DO UPDATE SET count = usage_counters.count + excluded.count
		)
		SELECT count(*) FROM sent`,
		s.TenantID, s.MessageID, s.Provider, s.ExternalID, s.Attempt, s.At,
		app.SourceDispatch, string(detail), s.Channel, s.UsageMonth, rand.IntN(16))
	if err != nil {
		return false, mapErr(err)
	}
	return n == 1, nil
}
