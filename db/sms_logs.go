package db

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
)

// smsLogCursorColumns are the columns of sms_log_cursors app.SMSLogCursor
// holds; a window read to its end has no token (NULL, read as "").
const smsLogCursorColumns = `tenant_id, channel_account_id, region, log_group, window_start, window_end,
	coalesce(next_token, '') AS next_token, version, read_at, events, receipts`

// SMSLogAccounts serves app.SMSLogTx, in the platform scope.
func (t *Tx) SMSLogAccounts(ctx context.Context) ([]*app.ChannelAccount, error) {
	as := []*app.ChannelAccount{}
	err := t.tx.SelectContext(ctx, &as, `
		SELECT `+accountColumns+` FROM channel_accounts
		WHERE provider = 'sns' AND status = 'ACTIVE'
		ORDER BY tenant_id, created_at`)
	return as, mapErr(err)
}

// SMSLogCursor serves app.SMSLogTx.
func (t *Tx) SMSLogCursor(ctx context.Context, tenantID, accountID uuid.UUID, region, group string) (*app.SMSLogCursor, error) {
	var c app.SMSLogCursor
	err := t.tx.GetContext(ctx, &c, `
		SELECT `+smsLogCursorColumns+` FROM sms_log_cursors
		WHERE tenant_id = $1 AND channel_account_id = $2 AND region = $3 AND log_group = $4`,
		tenantID, accountID, region, group)
	if isNoRows(err) {
		return nil, app.Errorf(app.ENOTFOUND, "No cursor of log group %s.", group)
	}
	return &c, mapErr(err)
}

// MoveSMSLogCursor serves app.SMSLogTx in one statement: the insert of a
// new cursor conflicts with one another read stored meanwhile, and the
// update of a stored one matches only the version it was read at, so a
// cursor never moves from a state another read has left.
func (t *Tx) MoveSMSLogCursor(ctx context.Context, c *app.SMSLogCursor) (bool, error) {
	var version int64
	err := t.tx.GetContext(ctx, &version, `
		INSERT INTO sms_log_cursors AS c (tenant_id, channel_account_id, region, log_group, window_start, window_end,
			next_token, version, read_at, events, receipts)
		VALUES ($1, $2, $3, $4, $5, $6, nullif($7, ''), $8 + 1, $9, $10, $11)
		ON CONFLICT (tenant_id, channel_account_id, region, log_group) DO UPDATE SET
			window_start = excluded.window_start, window_end = excluded.window_end, next_token = excluded.next_token,
			version = excluded.version, read_at = excluded.read_at, events = excluded.events, receipts = excluded.receipts
		WHERE c.version = $8
		RETURNING version`,
		c.TenantID, c.AccountID, c.Region, c.Group, c.WindowStart, c.WindowEnd, c.NextToken, c.Version, c.ReadAt, c.Events, c.Receipts)
	if isNoRows(err) {
		return false, nil
	}
	if err != nil {
		return false, mapErr(err)
	}
	c.Version = version
	return true, nil
}

// SMSLogReceiptsDue serves app.SMSLogTx in one statement. A message is
// looked up by the unique (provider, external_message_id) index, within
// the tenant only: a record naming another tenant's message is not the
// reader's, and is never stored.
func (t *Tx) SMSLogReceiptsDue(ctx context.Context, tenantID uuid.UUID, rs []provider.Receipt) (map[string]bool, error) {
	due := map[string]bool{}
	if len(rs) == 0 {
		return due, nil
	}
	type row struct {
		ExternalID string `json:"external_id"`
		ReceiptID  string `json:"receipt_id"`
	}
	rows := make([]row, len(rs))
	for i, r := range rs {
		rows[i] = row{r.ExternalID, r.ReceiptID}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return nil, fmt.Errorf("encode receipts: %w", err)
	}
	var ids []string
	err = t.tx.SelectContext(ctx, &ids, `
		SELECT DISTINCT r.receipt_id
		FROM jsonb_to_recordset($2::jsonb) AS r(external_id text, receipt_id text)
		JOIN messages m ON m.tenant_id = $1 AND m.provider = 'sns' AND m.external_message_id = r.external_id
		WHERE NOT EXISTS (SELECT FROM webhook_receipts w WHERE w.provider = 'sns' AND w.receipt_id = r.receipt_id)
		  AND NOT EXISTS (SELECT FROM receipt_inbox i WHERE i.provider = 'sns' AND i.external_id = r.external_id
			AND i.receipt->>'ReceiptID' = r.receipt_id)`, tenantID, string(doc))
	if err != nil {
		return nil, mapErr(err)
	}
	for _, id := range ids {
		due[id] = true
	}
	return due, nil
}

// RecordSMSLogRun serves app.SMSLogTx.
func (t *Tx) RecordSMSLogRun(ctx context.Context, r app.SMSLogRun) error {
	_, err := t.tx.ExecContext(ctx, `
		INSERT INTO sms_log_readers AS s (tenant_id, channel_account_id, region, ran_at, read_at, last_error, last_error_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (tenant_id, channel_account_id) DO UPDATE SET
			region = CASE WHEN excluded.region = '' THEN s.region ELSE excluded.region END,
			ran_at = excluded.ran_at, read_at = coalesce(excluded.read_at, s.read_at),
			last_error = CASE WHEN excluded.last_error = '' THEN s.last_error ELSE excluded.last_error END,
			last_error_at = coalesce(excluded.last_error_at, s.last_error_at)`,
		r.TenantID, r.AccountID, r.Region, r.RanAt, r.ReadAt, r.LastError, r.LastErrorAt)
	return mapErr(err)
}

// SMSLogState serves app.SMSLogTx.
func (t *Tx) SMSLogState(ctx context.Context, tenantID, accountID uuid.UUID) (app.SMSLogState, error) {
	var st app.SMSLogState
	var run app.SMSLogRun
	err := t.tx.GetContext(ctx, &run, `
		SELECT tenant_id, channel_account_id, region, ran_at, read_at, last_error, last_error_at
		FROM sms_log_readers WHERE tenant_id = $1 AND channel_account_id = $2`, tenantID, accountID)
	switch {
	case err == nil:
		st.Run = &run
	case !isNoRows(err):
		return st, mapErr(err)
	}
	st.Cursors = []*app.SMSLogCursor{}
	err = t.tx.SelectContext(ctx, &st.Cursors, `
		SELECT `+smsLogCursorColumns+` FROM sms_log_cursors
		WHERE tenant_id = $1 AND channel_account_id = $2 ORDER BY read_at DESC, log_group`, tenantID, accountID)
	return st, mapErr(err)
}
