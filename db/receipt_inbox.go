package db

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
)

// The batch statements of the receipt inbox take their rows as one JSON
// document (jsonb_to_recordset): one parameter, whatever the batch's size,
// and no array encoding through database/sql.

// inboxRow is a receipt_inbox row as the statements exchange it.
type inboxRow struct {
	Provider      string           `json:"provider"`
	RouteTenantID *uuid.UUID       `json:"route_tenant_id"`
	ViaAccounts   []uuid.UUID      `json:"via_accounts"`
	ViaTrusted    bool             `json:"via_trusted"`
	ViaRoute      string           `json:"via_route"`
	ViaTopic      *string          `json:"via_account_topic"`
	Receipt       provider.Receipt `json:"receipt"`
	ReceivedAt    time.Time        `json:"received_at"`
	AvailableAt   time.Time        `json:"available_at"`
}

// AddInboxReceipts serves app.ReceiptInbox: every receipt in one INSERT,
// committed on its own (the inbox has no row-level security: see
// db/migrations). The insert notifies the appliers.
func (s *Store) AddInboxReceipts(ctx context.Context, rs []app.InboxReceipt) error {
	return addInboxReceipts(ctx, s.db, rs)
}

// AddInboxReceipts serves app.SMSLogTx: the same INSERT in the
// transaction, which commits it together with the delivery-log cursor's
// move (the inbox notifies the appliers at the commit).
func (t *Tx) AddInboxReceipts(ctx context.Context, rs []app.InboxReceipt) error {
	return addInboxReceipts(ctx, t.tx, rs)
}

func addInboxReceipts(ctx context.Context, db sqlx.ExecerContext, rs []app.InboxReceipt) error {
	rows := make([]inboxRow, len(rs))
	for i, r := range rs {
		// Postgres rounds the text of a time to the microsecond, which may
		// be later than the instant, while a time passed as a parameter is
		// truncated: truncated here, a receipt available "now" is due at
		// the same now.
		rows[i] = inboxRow{Provider: r.Receipt.Provider, RouteTenantID: nilUUID(r.Via.TenantID), ViaAccounts: r.Via.Accounts,
			ViaTrusted: r.Via.Trusted, ViaRoute: r.Via.Route, ViaTopic: r.Via.AccountTopic, Receipt: r.Receipt, ReceivedAt: r.ReceivedAt.Truncate(time.Microsecond),
			AvailableAt: r.AvailableAt.Truncate(time.Microsecond)}
		if r.AvailableAt.Before(r.ReceivedAt) {
			rows[i].AvailableAt = r.ReceivedAt
		}
		if rows[i].ViaAccounts == nil {
			rows[i].ViaAccounts = []uuid.UUID{}
		}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("encode receipts: %w", err)
	}
	_, err = db.ExecContext(ctx, `
		INSERT INTO receipt_inbox (provider, route_tenant_id, via_accounts, via_trusted, via_route, via_account_topic, receipt,
			received_at, available_at)
		SELECT provider, route_tenant_id, via_accounts, via_trusted, via_route, via_account_topic, receipt, received_at, available_at
		FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (provider text, route_tenant_id uuid, via_accounts uuid[],
			via_trusted boolean, via_route text, via_account_topic text, receipt jsonb, received_at timestamptz,
			available_at timestamptz)) WITH ORDINALITY
			AS r(provider, route_tenant_id, via_accounts, via_trusted, via_route, via_account_topic, receipt, received_at,
				available_at, n)
		ORDER BY n`, string(doc))
	return unavailable(mapErr(err))
}

// inboxQuery reads inbox receipts (the rows of the sub-select named i,
// which takes $1 as its first parameter) with the message that has each
// one's provider id, as the transaction's scope sees it, or else the
// message whose id it echoes (message_ref, by_ref). The lookup is a
// LATERAL on the unique (provider, external_message_id) index and the
// primary key: the key columns are plain columns, so that Postgres may use
// the indexes under row-level security (a JSON field access is not
// leakproof), and the LIMIT keeps the lookup from being flattened into a
// join planned for an empty table.
func inboxQuery(rows, lock string) string {
	return `
	SELECT i.id, i.provider, i.route_tenant_id, i.via_accounts::text[], i.via_trusted, i.via_route, i.via_account_topic,
		i.receipt, i.received_at, i.attempts, m.tenant_id, m.id, m.channel_account_id, m.by_ref,
		EXISTS (SELECT FROM webhook_receipts w WHERE w.provider = i.provider AND w.receipt_id = i.receipt->>'ReceiptID') AS seen
	FROM (` + rows + `) i
	LEFT JOIN LATERAL (
		SELECT tenant_id, id, channel_account_id, false AS by_ref FROM messages
		WHERE provider = i.provider AND external_message_id = i.external_id
		UNION ALL
		SELECT tenant_id, id, channel_account_id, true FROM messages WHERE id = i.message_ref
		ORDER BY by_ref LIMIT 1) m ON true
	ORDER BY i.id` + lock
}

// matchInboxQuery reads up to $1 receipts available at $2, oldest first.
var matchInboxQuery = inboxQuery(`SELECT * FROM receipt_inbox WHERE available_at <= $2 ORDER BY id LIMIT $1`, "")

// claimInboxQuery locks the receipts with the ids $1 still available at
// $2, skipping those another transaction holds.
var claimInboxQuery = inboxQuery(`SELECT * FROM receipt_inbox WHERE id = ANY ($1::bigint[]) AND available_at <= $2`,
	" FOR UPDATE OF i SKIP LOCKED")

// deleteInboxReceiptsQuery deletes settled receipts by id ($1).
const deleteInboxReceiptsQuery = `DELETE FROM receipt_inbox WHERE id = ANY ($1::bigint[])`

// MatchInboxReceipts serves app.ReceiptInboxTx.
func (t *Tx) MatchInboxReceipts(ctx context.Context, limit int, now time.Time) ([]*app.InboxReceipt, error) {
	return t.readInbox(ctx, matchInboxQuery, limit, now)
}

// ClaimInboxReceipts serves app.ReceiptInboxTx.
func (t *Tx) ClaimInboxReceipts(ctx context.Context, ids []int64, now time.Time) ([]*app.InboxReceipt, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return t.readInbox(ctx, claimInboxQuery, int64Array(ids), now)
}

// DeleteInboxReceipts serves app.ReceiptInboxTx.
func (t *Tx) DeleteInboxReceipts(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := t.tx.ExecContext(ctx, deleteInboxReceiptsQuery, planNow, int64Array(ids))
	return mapErr(err)
}

// ParkInboxReceipts serves app.ReceiptInboxTx: the receipts wait with no
// time of their own until RecordSent wakes them (or maintenance deletes
// them after the horizon, PrunePendingReceipts). herald_park_receipts (see
// db/migrations) takes the lock that RecordSent's wake takes, then looks
// for each receipt's message once more: a send recorded meanwhile is found,
// and its receipt stays due. It returns the ids it parked.
func (t *Tx) ParkInboxReceipts(ctx context.Context, ids []int64) ([]int64, error) {
	parked := []int64{}
	if len(ids) == 0 {
		return parked, nil
	}
	err := t.tx.SelectContext(ctx, &parked, `SELECT herald_park_receipts($1::bigint[])`, planNow, int64Array(ids))
	return parked, mapErr(err)
}

// planNow, passed first to a statement on receipt_inbox, has Postgres plan
// it for the inbox as it is, every time (pgx's unnamed statement) rather
// than once per connection. The inbox is a queue, empty most of the time
// and thousands of receipts deep in a burst: a plan kept from an empty
// inbox scans it whole, for every claim and every delete of a batch, until
// the table is next analyzed (the delete took 1.1 ms a batch on average
// over a benchmark run, the deeper the inbox the longer).
var planNow = pgx.QueryExecModeExec

func (t *Tx) readInbox(ctx context.Context, q string, args ...any) ([]*app.InboxReceipt, error) {
	rows, err := t.tx.QueryContext(ctx, q, append([]any{planNow}, args...)...)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []*app.InboxReceipt
	for rows.Next() {
		in := &app.InboxReceipt{}
		var routeTenant, tenantID, messageID *uuid.UUID
		var byRef *bool
		var accounts app.StringList
		var receipt []byte
		if err := rows.Scan(&in.ID, &in.Receipt.Provider, &routeTenant, &accounts, &in.Via.Trusted, &in.Via.Route, &in.Via.AccountTopic,
			&receipt, &in.ReceivedAt, &in.Attempts, &tenantID, &messageID, &in.Target.AccountID, &byRef, &in.Seen); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(receipt, &in.Receipt); err != nil {
			// One unreadable row must not hold up the others.
			in.Unreadable = fmt.Errorf("inbox receipt %d: %w", in.ID, err)
		}
		if routeTenant != nil {
			in.Via.TenantID = *routeTenant
		}
		if tenantID != nil && messageID != nil {
			in.Target.TenantID, in.Target.MessageID, in.Target.ByRef = *tenantID, *messageID, byRef != nil && *byRef
		}
		for _, a := range accounts {
			id, err := uuid.Parse(a)
			if err != nil {
				return nil, err
			}
			in.Via.Accounts = append(in.Via.Accounts, id)
		}
		out = append(out, in)
	}
	return out, rows.Err()
}

// DelayInboxReceipt serves app.ReceiptInboxTx.
func (t *Tx) DelayInboxReceipt(ctx context.Context, id int64, availableAt time.Time, lastError string) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE receipt_inbox SET attempts = attempts + 1, available_at = $2, last_error = left($3, 2000) WHERE id = $1`, planNow,
		id, availableAt, lastError)
	return mapErr(err)
}

// LockReceiptMessages serves app.ReceiptApplyTx.
func (t *Tx) LockReceiptMessages(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) ([]*app.Message, error) {
	ms := []*app.Message{}
	if len(ids) == 0 {
		return ms, nil
	}
	err := t.tx.SelectContext(ctx, &ms, `
		SELECT `+messageColumns+` FROM messages WHERE tenant_id = $1 AND id = ANY ($2::uuid[]) ORDER BY id FOR UPDATE`,
		tenantID, uuidArray(ids))
	return ms, mapErr(err)
}

// StoreForeignReceipts serves app.ReceiptInboxTx in one statement. A
// receipt's time is when the webhook received it.
func (t *Tx) StoreForeignReceipts(ctx context.Context, tenantID uuid.UUID, rs []app.ForeignReceipt) (map[string]bool, error) {
	out := map[string]bool{}
	if len(rs) == 0 {
		return out, nil
	}
	type row struct {
		Provider   string     `json:"provider"`
		ReceiptID  string     `json:"receipt_id"`
		Status     string     `json:"status"`
		Body       string     `json:"body"`
		AccountID  *uuid.UUID `json:"channel_account_id"`
		ReceivedAt *time.Time `json:"received_at"`
	}
	rows := make([]row, len(rs))
	for i, f := range rs {
		r := f.Receipt
		rows[i] = row{r.Provider, r.ReceiptID, r.Status, receiptBody(r), f.AccountID, clockParam(f.ReceivedAt)}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return nil, fmt.Errorf("encode receipts: %w", err)
	}
	var stored []string
	err = t.tx.SelectContext(ctx, &stored, `
		INSERT INTO webhook_receipts (tenant_id, provider, receipt_id, status, body, outcome, received_at, channel_account_id)
		SELECT $1, provider, receipt_id, status, body::jsonb, 'foreign', coalesce(received_at, now()), channel_account_id
		FROM jsonb_to_recordset($2::jsonb) AS r(provider text, receipt_id text, status text, body text,
			channel_account_id uuid, received_at timestamptz)
		ON CONFLICT (provider, receipt_id) DO NOTHING
		RETURNING receipt_id`, nilUUID(tenantID), string(doc))
	if err != nil {
		return nil, mapErr(err)
	}
	for _, id := range stored {
		out[id] = true
	}
	return out, nil
}

func int64Array(ids []int64) string {
	b := make([]byte, 0, 2+len(ids)*8)
	b = append(b, '{')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, '}'))
}

func nilUUID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}
