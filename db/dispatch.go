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
		EXISTS (SELECT FROM server_credential_refusals r WHERE r.tenant_id = a.tenant_id AND r.channel_account_id = a.id)
			AS credentials_refused,
		(SELECT l.max_sms_parts FROM tenant_limits l WHERE l.tenant_id = m.tenant_id) AS max_sms_parts,
		(SELECT row_to_json(b) FROM tenant_branding b WHERE b.tenant_id = m.tenant_id AND m.channel = 'EMAIL') AS branding,
		EXISTS (SELECT FROM delivery_deadlines d WHERE d.tenant_id = m.tenant_id AND d.trigger_event = m.trigger_event
			AND d.stage = 'ACKNOWLEDGED') AS ack_marked
	FROM messages m
	JOIN tenants t ON t.id = m.tenant_id
	JOIN channel_accounts a ON a.tenant_id = m.tenant_id AND a.id = m.channel_account_id
	WHERE m.tenant_id = $1 AND m.id = $2`

// MessageForDispatch returns the message with its tenant and its channel
// account in one round trip; Tenant and Account are nil when it has no
// account. It serves app.DispatchTx. (The quota is not read here: the send
// reserves it, see ReserveQuota.)
func (t *Tx) MessageForDispatch(ctx context.Context, tenantID, id uuid.UUID) (*app.DispatchState, error) {
	var row struct {
		Message app.Message        `db:"m"`
		Tenant  app.Tenant         `db:"t"`
		Account app.ChannelAccount `db:"a"`
		// The account is in a spell of refusals of the server's
		// credentials: a primary-key probe of a table that is empty while
		// they work, which spares every other send a statement to end it.
		CredentialsRefused bool `db:"credentials_refused"`
		MaxSMSParts        *int `db:"max_sms_parts"`
		// Branding is the tenant's e-mail branding as JSON, on e-mail.
		Branding []byte `db:"branding"`
		// AckMarked: the tenant marked the event as asking for
		// acknowledgement (an ACKNOWLEDGED deadline of its own).
		AckMarked bool `db:"ack_marked"`
	}
	err := t.tx.GetContext(ctx, &row, dispatchQuery, tenantID, id)
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
	st := &app.DispatchState{Message: &row.Message, Tenant: &row.Tenant, Account: &row.Account, CredentialsRefused: row.CredentialsRefused,
		MaxSMSParts: row.MaxSMSParts, AckMarked: row.AckMarked}
	if row.Branding != nil {
		st.Branding = &app.Branding{}
		if err := json.Unmarshal(row.Branding, st.Branding); err != nil {
			return nil, fmt.Errorf("read tenant %s's branding: %w", tenantID, err)
		}
	}
	return st, nil
}

// usageShards is how many rows a tenant's usage of a channel in a month is
// spread over (usage_counters.shard in db/migrations).
const usageShards = app.UsageShards

// RecordSent serves app.SendTx: the status change, the timeline entry and
// the usage count in one statement, the last two only when the message was
// still QUEUED, and the count only once per message and month (a send again
// after a provider's rate-limit receipt is the same message). Usage is
// spread over shards (app.UsageShards) so that concurrent sends of a tenant
// do not queue on one row. The marker of the provider call goes, the
// receipts that overtook the send are woken in the inbox, and the endpoints
// subscribed to s.CallbackEvent come back with it.
func (t *Tx) RecordSent(ctx context.Context, s app.SentRecord) (app.SentResult, error) {
	detail, err := json.Marshal(s.Detail)
	if err != nil {
		return app.SentResult{}, fmt.Errorf("encode timeline detail: %w", err)
	}
	shard := rand.IntN(usageShards)
	var row struct {
		N           int            `db:"n"`
		Subscribers app.StringList `db:"subscribers"`
		Woken       int            `db:"woken"`
		Current     *string        `db:"current"`
	}
	err = t.tx.GetContext(ctx, &row, `
		WITH before AS (
			SELECT counted_month FROM messages WHERE tenant_id = $1 AND id = $2
		), sent AS (
			UPDATE messages SET status = 'SENT', provider = $3, external_message_id = $4, attempts = greatest(attempts + 1, $5), sent_at = $6,
				failed_reason = NULL, error_code = NULL, updated_at = $6, counted_month = $10,
				send_started_at = NULL, send_started_by = NULL, send_attempt = NULL, send_unknown_until = NULL
			WHERE tenant_id = $1 AND id = $2 AND status = 'QUEUED'
			RETURNING tenant_id, id
		), timeline AS (
			INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, detail, at)
			SELECT tenant_id, id, 'QUEUED', 'SENT', $7, $8, $6 FROM sent
		), usage AS (
			INSERT INTO usage_counters (tenant_id, channel, month, shard, count)
			SELECT tenant_id, $9, $10, $11, 1 FROM sent
			WHERE (SELECT counted_month FROM before) IS DISTINCT FROM $10::date
			ON CONFLICT (tenant_id, channel, month, shard) DO UPDATE SET count = usage_counters.count + excluded.count
		), woke AS (
			-- Receipts that overtook this send wait parked in the inbox:
			-- they are due now (herald_wake_receipts in db/migrations).
			SELECT herald_wake_receipts($3, $4, $6, '`+app.ReceiptInboxChannel+`') AS n FROM sent
		)
		SELECT (SELECT count(*) FROM sent) AS n,
			CASE WHEN EXISTS (SELECT 1 FROM sent) THEN ARRAY(
				SELECT id::text FROM callback_endpoints
				WHERE tenant_id = $1 AND enabled AND $12 = ANY (event_types) ORDER BY id)
			END AS subscribers,
			(SELECT coalesce(sum(n), 0) FROM woke) AS woken,
			-- A message that did not move: the id it has (another attempt's).
			CASE WHEN NOT EXISTS (SELECT FROM sent) THEN
				(SELECT external_message_id FROM messages WHERE tenant_id = $1 AND id = $2) END AS current`,
		s.TenantID, s.MessageID, s.Provider, s.ExternalID, s.Attempt, s.At,
		app.SourceDispatch, string(detail), s.Channel, s.UsageMonth, shard, s.CallbackEvent)
	if err != nil {
		return app.SentResult{}, mapErr(err)
	}
	res := app.SentResult{Moved: row.N == 1, Subscribers: make([]uuid.UUID, 0, len(row.Subscribers))}
	if row.Current != nil {
		res.Current = *row.Current
	}
	for _, id := range row.Subscribers {
		u, err := uuid.Parse(id)
		if err != nil {
			return app.SentResult{}, err
		}
		res.Subscribers = append(res.Subscribers, u)
	}
	return res, nil
}

// LockSend serves app.DispatchTx: it locks the message for the start of a
// send and returns the marker of an earlier provider call whose outcome was
// never recorded, if any, the month whose quota the message holds, whether
// the message is still QUEUED, and with optOut whether its contact opted out
// of its channel.
func (t *Tx) LockSend(ctx context.Context, tenantID, id uuid.UUID, optOut bool) (*app.SendMarker, *time.Time, bool, bool, error) {
	var row struct {
		At       *time.Time `db:"send_started_at"`
		By       *uuid.UUID `db:"send_started_by"`
		Attempt  *int       `db:"send_attempt"`
		Unknown  *time.Time `db:"send_unknown_until"`
		Quota    *time.Time `db:"quota_month"`
		Queued   bool       `db:"queued"`
		OptedOut bool       `db:"opted_out"`
	}
	query := `
		SELECT send_started_at, send_started_by, send_attempt, send_unknown_until, quota_month, status = 'QUEUED' AS queued,
			false AS opted_out FROM messages
		WHERE tenant_id = $1 AND id = $2 FOR UPDATE`
	if optOut {
		// The contact's row is share-locked: an opt-out updating it either
		// committed before (and is seen, the lock reading the newest
		// version) or waits for this transaction.
		query = `
		SELECT m.send_started_at, m.send_started_by, m.send_attempt, m.send_unknown_until, m.quota_month, m.status = 'QUEUED' AS queued,
			COALESCE((SELECT m.channel = ANY (c.opted_out) FROM contacts c
				WHERE c.tenant_id = m.tenant_id AND c.id = m.contact_id FOR SHARE), false) AS opted_out
		FROM messages m
		WHERE m.tenant_id = $1 AND m.id = $2 FOR UPDATE OF m`
	}
	if err := t.tx.GetContext(ctx, &row, query, tenantID, id); err != nil {
		return nil, nil, false, false, notFound(err, "message %s not found", id)
	}
	if row.At == nil || row.By == nil {
		return nil, row.Quota, row.Queued, row.OptedOut, nil
	}
	m := &app.SendMarker{At: *row.At, By: *row.By, UnknownUntil: row.Unknown}
	if row.Attempt != nil {
		m.Attempt = *row.Attempt
	}
	return m, row.Quota, row.Queued, row.OptedOut, nil
}

// ReserveQuota serves app.DispatchTx: it takes one of the month's quota
// for the message unless the message holds one already, in one statement
// that refuses at the limit, so that concurrent sends of every worker
// process together never exceed it. A reservation the message holds for
// another month (its send moved into this one) is given back. The month's
// row starts from what usage_counters counted before reservations
// existed. It returns whether the message holds a reservation now, and the
// month's use. Call it after LockSend, in the same transaction, and record
// the hold with the call's marker (MarkSendStarted with QuotaMonth): one
// change of the message's row for both.
//
// The message's estimated cost is taken from the month's budget of the
// channel (tenant_limits, read by the same statement) in the same UPDATE,
// under the same row lock: a send whose cost would pass the budget is
// refused (BudgetRefused) however many workers send at once, and an
// operator's new budget counts from the next send on.
func (t *Tx) ReserveQuota(ctx context.Context, tenantID, id uuid.UUID, ch app.Channel, month time.Time, limit int, cost *app.Money, held *time.Time) (app.QuotaTake, error) {
	if held != nil && held.Equal(month) {
		var used int
		err := t.tx.GetContext(ctx, &used, `SELECT used FROM quota_usage WHERE tenant_id = $1 AND channel = $2 AND month = $3`, tenantID, ch, month)
		if isNoRows(err) {
			err = nil // the message holds its place; the row's figure is gone
		}
		return app.QuotaTake{OK: true, Used: used}, mapErr(err)
	}
	if held != nil {
		if err := t.releaseQuota(ctx, tenantID, id, ch, *held); err != nil {
			return app.QuotaTake{}, err
		}
	}
	var amount app.Money
	if cost != nil {
		amount = *cost
	}
	if _, err := t.tx.ExecContext(ctx, `
		INSERT INTO quota_usage (tenant_id, channel, month, used)
		SELECT $1, $2, $3, coalesce(sum(count), 0) FROM usage_counters WHERE tenant_id = $1 AND channel = $2 AND month = $3
		ON CONFLICT (tenant_id, channel, month) DO NOTHING`, tenantID, ch, month); err != nil {
		return app.QuotaTake{}, mapErr(err)
	}
	var row struct {
		Used   int        `db:"used"`
		Spent  app.Money  `db:"spent"`
		Budget *app.Money `db:"budget"`
	}
	err := t.tx.GetContext(ctx, &row, `
		UPDATE quota_usage SET used = used + 1, spent = spent + $5
		WHERE tenant_id = $1 AND channel = $2 AND month = $3 AND ($4 < 0 OR used < $4)
			AND ($5 = 0 OR spent + $5 <= coalesce((`+budgetOf+`), spent + $5))
		RETURNING used, spent, NULL::bigint AS budget`, tenantID, ch, month, limit, amount)
	if isNoRows(err) {
		err = t.tx.GetContext(ctx, &row, `
			SELECT used, spent, (`+budgetOf+`) AS budget FROM quota_usage WHERE tenant_id = $1 AND channel = $2 AND month = $3`, tenantID, ch, month)
		take := app.QuotaTake{Used: row.Used, Spent: row.Spent}
		if (limit < 0 || row.Used < limit) && row.Budget != nil {
			take.BudgetRefused, take.Budget = true, *row.Budget
		}
		return take, mapErr(err)
	}
	return app.QuotaTake{OK: err == nil, Used: row.Used, Spent: row.Spent}, mapErr(err)
}

// budgetOf reads the tenant's ($1) budget of the channel ($2).
const budgetOf = `SELECT CASE $2::text WHEN 'EMAIL' THEN l.budget_email WHEN 'SMS' THEN l.budget_sms
	WHEN 'WHATSAPP' THEN l.budget_whatsapp END FROM tenant_limits l WHERE l.tenant_id = $1`

// ReleaseQuota serves app.DispatchTx: the message gives back the
// reservation it holds, if any (a send that ended without going out).
func (t *Tx) ReleaseQuota(ctx context.Context, tenantID, id uuid.UUID) error {
	var row struct {
		Channel app.Channel `db:"channel"`
		Month   *time.Time  `db:"quota_month"`
	}
	err := t.tx.GetContext(ctx, &row, `SELECT channel, quota_month FROM messages WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id)
	if err != nil {
		return notFound(err, "message %s not found", id)
	}
	if row.Month == nil {
		return nil
	}
	return t.releaseQuota(ctx, tenantID, id, row.Channel, *row.Month)
}

func (t *Tx) releaseQuota(ctx context.Context, tenantID, id uuid.UUID, ch app.Channel, month time.Time) error {
	if _, err := t.tx.ExecContext(ctx, `
		UPDATE quota_usage SET used = greatest(used - 1, 0),
			spent = greatest(spent - coalesce((SELECT estimated_cost FROM messages WHERE tenant_id = $1 AND id = $4), 0), 0)
		WHERE tenant_id = $1 AND channel = $2 AND month = $3`,
		tenantID, ch, month, id); err != nil {
		return mapErr(err)
	}
	_, err := t.tx.ExecContext(ctx, `UPDATE messages SET quota_month = NULL WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	return mapErr(err)
}

// MarkSendStarted serves app.DispatchTx: a provider call of the message
// is about to start; until its outcome is recorded, the marker stays. With
// m.QuotaMonth, the message holds that month's quota from now on.
func (t *Tx) MarkSendStarted(ctx context.Context, tenantID, id uuid.UUID, m app.SendMarker) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE messages SET send_started_at = $3, send_started_by = $4, send_attempt = $5, send_unknown_until = NULL,
			quota_month = coalesce($6, quota_month)
		WHERE tenant_id = $1 AND id = $2 AND status = 'QUEUED'`, tenantID, id, m.At, m.By, m.Attempt, m.QuotaMonth)
	return mapErr(err)
}

// MarkSendUnknown serves app.SendTx: the message's current call had no
// answer, and Herald waits until then for the provider's confirmation.
func (t *Tx) MarkSendUnknown(ctx context.Context, tenantID, id uuid.UUID, until time.Time) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE messages SET send_unknown_until = $3
		WHERE tenant_id = $1 AND id = $2 AND status = 'QUEUED' AND send_started_at IS NOT NULL`, tenantID, id, until)
	return mapErr(err)
}

// ConfirmWindow serves app.SendTx: the tenant's window for the event, or
// for every event ('*').
func (t *Tx) ConfirmWindow(ctx context.Context, tenantID uuid.UUID, triggerEvent string) (time.Duration, bool, error) {
	var seconds int
	err := t.tx.GetContext(ctx, &seconds, `
		SELECT seconds FROM confirmation_windows WHERE tenant_id = $1 AND trigger_event IN ($2, '`+app.AnyEvent+`')
		ORDER BY trigger_event = '`+app.AnyEvent+`' LIMIT 1`, tenantID, triggerEvent)
	if isNoRows(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, mapErr(err)
	}
	return time.Duration(seconds) * time.Second, true, nil
}

// ClearSendStarted serves app.DispatchTx: the outcome of the message's
// provider call is known (it was refused, or never made).
func (t *Tx) ClearSendStarted(ctx context.Context, tenantID, id uuid.UUID) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE messages SET send_started_at = NULL, send_started_by = NULL, send_attempt = NULL, send_unknown_until = NULL
		WHERE tenant_id = $1 AND id = $2 AND send_started_at IS NOT NULL`, tenantID, id)
	return mapErr(err)
}
