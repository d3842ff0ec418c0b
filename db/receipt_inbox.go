package db

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
)

// The batch statements of the receipt inbox take their rows as one JSON
// document (jsonb_to_recordset): one parameter, whatever the batch's size,
// and no array encoding through database/sql.

// inboxRow is a receipt_inbox row as the statements exchange it.
type inboxRow struct {
	ID            int64            `json:"id,omitempty"`
	Provider      string           `json:"provider"`
	RouteTenantID *uuid.UUID       `json:"route_tenant_id"`
	ViaAccounts   []uuid.UUID      `json:"via_accounts"`
	ViaTrusted    bool             `json:"via_trusted"`
	ViaRoute      string           `json:"via_route"`
	Receipt       provider.Receipt `json:"receipt"`
	ReceivedAt    time.Time        `json:"received_at"`
	Attempts      int              `json:"attempts"`
}

// AddInboxReceipts serves app.ReceiptInbox: every receipt in one INSERT,
// committed on its own (the inbox has no row-level security: see its
// migration). The insert notifies the appliers.
func (s *Store) AddInboxReceipts(ctx context.Context, rs []app.InboxReceipt) error {
	rows := make([]inboxRow, len(rs))
	for i, r := range rs {
		rows[i] = inboxRow{Provider: r.Receipt.Provider, RouteTenantID: nilUUID(r.Via.TenantID), ViaAccounts: r.Via.Accounts,
			ViaTrusted: r.Via.Trusted, ViaRoute: r.Via.Route, Receipt: r.Receipt, ReceivedAt: r.ReceivedAt}
		if rows[i].ViaAccounts == nil {
			rows[i].ViaAccounts = []uuid.UUID{}
		}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("encode receipts: %w", err)
	}
	_, err = s.db.ExecContext(ctx, `
		INSERT INTO receipt_inbox (provider, route_tenant_id, via_accounts, via_trusted, via_route, receipt, received_at)
		SELECT provider, route_tenant_id, via_accounts, via_trusted, via_route, receipt, received_at
		FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (provider text, route_tenant_id uuid, via_accounts uuid[],
			via_trusted boolean, via_route text, receipt jsonb, received_at timestamptz)) WITH ORDINALITY
			AS r(provider, route_tenant_id, via_accounts, via_trusted, via_route, receipt, received_at, n)
		ORDER BY n`, string(doc))
	return unavailable(mapErr(err))
}

const inboxColumns = `id, provider, route_tenant_id, via_accounts::text[], via_trusted, via_route, receipt, received_at, attempts`

// ClaimInboxReceipts serves app.ReceiptInboxTx.
func (t *Tx) ClaimInboxReceipts(ctx context.Context, limit int, now time.Time) ([]*app.InboxReceipt, error) {
	return t.claimInbox(ctx, `
		SELECT `+inboxColumns+` FROM receipt_inbox WHERE available_at <= $2 ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`, limit, now)
}

// ClaimInboxReceipt serves app.ReceiptInboxTx.
func (t *Tx) ClaimInboxReceipt(ctx context.Context, id int64) (*app.InboxReceipt, error) {
	rs, err := t.claimInbox(ctx, `SELECT `+inboxColumns+` FROM receipt_inbox WHERE id = $1 FOR UPDATE SKIP LOCKED`, id)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return rs[0], nil
}

// DeleteInboxReceipts serves app.ReceiptInboxTx.
func (t *Tx) DeleteInboxReceipts(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	doc, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	_, err = t.tx.ExecContext(ctx, deleteInboxReceiptsQuery, planNow, string(doc))
	return mapErr(err)
}

// deleteInboxReceiptsQuery deletes applied receipts by id ($1, a JSON
// array), compared on the primary key as one array (id = ANY).
const deleteInboxReceiptsQuery = `
	DELETE FROM receipt_inbox WHERE id = ANY (ARRAY(SELECT jsonb_array_elements_text($1::jsonb)::bigint))`

// planNow, passed first to a statement on receipt_inbox, has Postgres plan
// it for the inbox as it is, every time (pgx's unnamed statement) rather
// than once per connection. The inbox is a queue, empty most of the time
// and thousands of receipts deep in a burst: a plan kept from an empty
// inbox scans it whole, for every claim and every delete of a batch, until
// the table is next analyzed (the delete took 1.1 ms a batch on average
// over a benchmark run, the deeper the inbox the longer).
var planNow = pgx.QueryExecModeExec

func (t *Tx) claimInbox(ctx context.Context, q string, args ...any) ([]*app.InboxReceipt, error) {
	rows, err := t.tx.QueryContext(ctx, q, append([]any{planNow}, args...)...)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []*app.InboxReceipt
	for rows.Next() {
		in := &app.InboxReceipt{}
		var tenantID *uuid.UUID
		var accounts app.StringList
		var receipt []byte
		if err := rows.Scan(&in.ID, &in.Receipt.Provider, &tenantID, &accounts, &in.Via.Trusted, &in.Via.Route,
			&receipt, &in.ReceivedAt, &in.Attempts); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(receipt, &in.Receipt); err != nil {
			// One unreadable row must not hold up the others.
			in.Unreadable = fmt.Errorf("inbox receipt %d: %w", in.ID, err)
		}
		if tenantID != nil {
			in.Via.TenantID = *tenantID
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

// receiptKeys is the JSON document of receipt keys the batch statements
// take.
func receiptKeys(keys []app.ReceiptKey) (string, error) {
	type key struct {
		P string `json:"p"`
		E string `json:"e"`
	}
	ks := make([]key, len(keys))
	for i, k := range keys {
		ks[i] = key{k.Provider, k.ExternalID}
	}
	doc, err := json.Marshal(ks)
	return string(doc), err
}

// LockReceiptKeys serves app.ReceiptInboxTx: LockReceipts's advisory lock
// for every key, taken in the order of the lock ids, so that two appliers
// never wait for each other in a circle.
func (t *Tx) LockReceiptKeys(ctx context.Context, keys []app.ReceiptKey) error {
	if len(keys) == 0 {
		return nil
	}
	doc, err := receiptKeys(keys)
	if err != nil {
		return err
	}
	_, err = t.tx.ExecContext(ctx, `
		SELECT pg_advisory_xact_lock(h) FROM (
			SELECT DISTINCT hashtextextended((k->>'p') || ':' || (k->>'e'), 11) AS h
			FROM jsonb_array_elements($1::jsonb) AS k ORDER BY 1) AS locks`, doc)
	return mapErr(err)
}

// MessagesByExternalIDs serves app.ReceiptInboxTx, in platform scope as
// MessageByExternalID, locking the messages.
func (t *Tx) MessagesByExternalIDs(ctx context.Context, keys []app.ReceiptKey) ([]*app.Message, error) {
	ms := []*app.Message{}
	if len(keys) == 0 {
		return ms, nil
	}
	providers, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		providers[i], ids[i] = k.Provider, k.ExternalID
	}
	err := t.tx.SelectContext(ctx, &ms, messagesByExternalIDsQuery, app.StringList(providers), app.StringList(ids))
	return ms, mapErr(err)
}

// messagesByExternalIDsQuery finds and locks, in the order of their ids,
// the messages a batch of receipts is about: each key ($1 providers, $2
// external ids, pairwise) looked up on the unique (provider,
// external_message_id) index.
//
// The keys are plain text columns (unnest of two arrays) rather than fields
// of a JSON document: under row-level security Postgres may take a join
// condition into an index lookup only if every function in it is
// leakproof, and a JSON field access (->>) is not. With the keys read from
// JSON, every batch of receipts scanned the whole messages table, about a
// second at a million messages. The LATERAL lookup (OFFSET 0 keeps it from
// being flattened into a join) has no other plan, even one made while the
// table was empty.
const messagesByExternalIDsQuery = `
	SELECT ` + messageColumns + ` FROM messages
	WHERE id IN (
		SELECT m.id FROM unnest($1::text[], $2::text[]) AS k (p, e) CROSS JOIN LATERAL (
			SELECT id FROM messages
			WHERE provider = k.p AND external_message_id = k.e AND external_message_id IS NOT NULL OFFSET 0) m)
	ORDER BY id FOR UPDATE`

// StatusCallbackTenants serves app.ReceiptInboxTx.
func (t *Tx) StatusCallbackTenants(ctx context.Context, tenantIDs []uuid.UUID) (map[uuid.UUID]bool, error) {
	var ids []uuid.UUID
	err := t.tx.SelectContext(ctx, &ids, `
		SELECT DISTINCT tenant_id FROM callback_endpoints
		WHERE tenant_id = ANY($1::uuid[]) AND enabled AND event_types && $2::text[]`,
		uuidArray(tenantIDs), app.StringList(app.StatusCallbackEvents()))
	if err != nil {
		return nil, mapErr(err)
	}
	out := make(map[uuid.UUID]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// StoreReceipts serves app.ReceiptInboxTx: StoreReceipt, StorePendingReceipt
// and RecordReceipt's row for a whole batch, in one statement. A row is
// stored when its key is new, or over a row kept as 'unknown' (before
// pending receipts existed), or, for a matched receipt, over its pending
// row.
func (t *Tx) StoreReceipts(ctx context.Context, rs []app.StoredReceipt) (map[app.ReceiptKey]bool, error) {
	out := map[app.ReceiptKey]bool{}
	if len(rs) == 0 {
		return out, nil
	}
	type row struct {
		TenantID    *uuid.UUID  `json:"tenant_id"`
		MessageID   *uuid.UUID  `json:"message_id"`
		Provider    string      `json:"provider"`
		ReceiptID   string      `json:"receipt_id"`
		Status      string      `json:"status"`
		Body        string      `json:"body"`
		Outcome     string      `json:"outcome"`
		ReceivedAt  *time.Time  `json:"received_at"`
		ExternalID  *string     `json:"external_id"`
		At          *time.Time  `json:"at"`
		ViaAccounts []uuid.UUID `json:"via_accounts"`
		ViaTrusted  bool        `json:"via_trusted"`
		ViaRoute    string      `json:"via_route"`
	}
	rows := make([]row, len(rs))
	for i, s := range rs {
		r := s.Receipt
		rows[i] = row{TenantID: s.TenantID, MessageID: s.MessageID, Provider: r.Provider, ReceiptID: r.ReceiptID, Status: r.Status,
			Body: receiptBody(r), Outcome: s.Outcome, ViaAccounts: []uuid.UUID{}}
		if s.Outcome == app.ReceiptPending {
			at, received, ext := r.At, s.ReceivedAt, r.ExternalID
			rows[i].At, rows[i].ReceivedAt, rows[i].ExternalID = &at, &received, &ext
			rows[i].ViaTrusted, rows[i].ViaRoute = s.Via.Trusted, s.Via.Route
			if s.Via.Accounts != nil {
				rows[i].ViaAccounts = s.Via.Accounts
			}
		}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return nil, fmt.Errorf("encode receipts: %w", err)
	}
	qr, err := t.tx.QueryContext(ctx, `
		INSERT INTO webhook_receipts (tenant_id, message_id, provider, receipt_id, status, body, outcome, received_at,
			external_id, at, via_accounts, via_trusted, via_route)
		SELECT tenant_id, message_id, provider, receipt_id, status, body::jsonb, outcome, coalesce(received_at, now()),
			external_id, at, via_accounts, via_trusted, via_route
		FROM jsonb_to_recordset($1::jsonb) AS r(tenant_id uuid, message_id uuid, provider text, receipt_id text, status text,
			body text, outcome text, received_at timestamptz, external_id text, at timestamptz, via_accounts uuid[],
			via_trusted boolean, via_route text)
		ON CONFLICT (provider, receipt_id) DO UPDATE
			SET tenant_id = excluded.tenant_id, message_id = excluded.message_id, outcome = excluded.outcome,
				received_at = excluded.received_at, external_id = excluded.external_id, at = excluded.at,
				via_accounts = excluded.via_accounts, via_trusted = excluded.via_trusted, via_route = excluded.via_route
			WHERE webhook_receipts.outcome = 'unknown'
				OR (excluded.outcome = 'matched' AND webhook_receipts.outcome = 'pending')
		RETURNING provider, receipt_id`, string(doc))
	if err != nil {
		return nil, mapErr(err)
	}
	defer qr.Close()
	for qr.Next() {
		var k app.ReceiptKey
		if err := qr.Scan(&k.Provider, &k.ExternalID); err != nil {
			return nil, err
		}
		out[k] = true
	}
	return out, qr.Err()
}

// ApplyReceiptMoves serves app.ReceiptInboxTx in one UPDATE.
func (t *Tx) ApplyReceiptMoves(ctx context.Context, moves []app.ReceiptMove) error {
	if len(moves) == 0 {
		return nil
	}
	type row struct {
		TenantID    uuid.UUID  `json:"tenant_id"`
		MessageID   uuid.UUID  `json:"message_id"`
		From        string     `json:"from_status"`
		To          string     `json:"to_status"`
		DeliveredAt *time.Time `json:"delivered_at"`
		ReadAt      *time.Time `json:"read_at"`
		Moved       bool       `json:"moved"`
	}
	rows := make([]row, len(moves))
	for i, m := range moves {
		rows[i] = row{m.TenantID, m.MessageID, m.From, m.To, m.DeliveredAt, m.ReadAt, m.Moved}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("encode message moves: %w", err)
	}
	res, err := t.tx.ExecContext(ctx, `
		UPDATE messages AS m SET status = v.to_status, delivered_at = v.delivered_at, read_at = v.read_at,
			stale_at = CASE WHEN v.moved THEN NULL ELSE m.stale_at END, updated_at = now()
		FROM jsonb_to_recordset($1::jsonb) AS v(tenant_id uuid, message_id uuid, from_status text, to_status text,
			delivered_at timestamptz, read_at timestamptz, moved boolean)
		WHERE m.tenant_id = v.tenant_id AND m.id = v.message_id AND m.status = v.from_status`, string(doc))
	if err != nil {
		return mapErr(err)
	}
	// The messages are locked since they were read: a move that finds its
	// message elsewhere is a bug, and the batch must not commit half of it.
	if n, err := res.RowsAffected(); err != nil || n != int64(len(moves)) {
		return fmt.Errorf("apply receipts: %d of %d messages moved (%v)", n, len(moves), err)
	}
	return nil
}

// InsertMessageEvents serves app.ReceiptInboxTx in one INSERT, in order.
func (t *Tx) InsertMessageEvents(ctx context.Context, es []*app.MessageEvent) error {
	if len(es) == 0 {
		return nil
	}
	type row struct {
		TenantID   uuid.UUID       `json:"tenant_id"`
		MessageID  uuid.UUID       `json:"message_id"`
		FromStatus *string         `json:"from_status"`
		ToStatus   *string         `json:"to_status"`
		Source     string          `json:"source"`
		Detail     json.RawMessage `json:"detail"`
		At         time.Time       `json:"at"`
	}
	rows := make([]row, len(es))
	for i, e := range es {
		detail := json.RawMessage("{}")
		if len(e.Detail) > 0 {
			var err error
			if detail, err = json.Marshal(e.Detail); err != nil {
				return fmt.Errorf("encode timeline detail: %w", err)
			}
		}
		rows[i] = row{e.TenantID, e.MessageID, e.FromStatus, e.ToStatus, e.Source, detail, e.At}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return fmt.Errorf("encode timeline entries: %w", err)
	}
	_, err = t.tx.ExecContext(ctx, `
		INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, detail, at)
		SELECT tenant_id, message_id, from_status, to_status, source, detail, at
		FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (tenant_id uuid, message_id uuid, from_status text, to_status text,
			source text, detail jsonb, at timestamptz)) WITH ORDINALITY
			AS e(tenant_id, message_id, from_status, to_status, source, detail, at, n)
		ORDER BY n`, string(doc))
	return mapErr(err)
}

func nilUUID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}
