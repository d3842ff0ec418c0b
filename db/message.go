package db

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx/reflectx"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/app/provider"
)

// messageColumns are the columns a message is read with: insertColumns,
// and those only the send path writes.
const messageColumns = insertColumns + `, send_started_at, send_unknown_until, previous_external_ids, acknowledged_at, ack_via, call_listed_at,
	redacted_at, redaction`

// insertColumns are the columns InsertMessages writes.
const insertColumns = `id, tenant_id, event_id, correlation_id, idempotency_key, trigger_event, channel, channel_account_id,
	template_id, template_version, locale, contact_id, conversation_id, recipient_index, to_address, subject, body, status, failed_reason,
	error_code, attempts, provider, external_message_id, fallback_of, fallback_chain, entity_type, entity_id, triggered_by,
	queued_at, sent_at, delivered_at, read_at, failed_at, stale_at, created_at, updated_at, test, expires_at, deferred_until, deferred_zone,
	whatsapp_template_only, sms_parts, sms_encoding, estimated_cost, file_id, retry_count`

// InsertMessages serves app.InsertTx, console.AccountTx and
// app.InboundTx: the messages and, for each new one, its first timeline
// entry (firsts[i] for ms[i]), in one statement however many there are, so
// a route of a thousand passengers writes its messages at once. A message
// whose idempotency key exists is left alone; inserted[i] reports whether
// ms[i] is new. A message with OpenConversation gets the contact's open
// conversation about that entity, opened by the same statement when there
// is none: one per contact and entity, however many of the contact's
// messages ask for it.
func (t *Tx) InsertMessages(ctx context.Context, ms []*app.Message, firsts []*app.MessageEvent) (inserted []bool, err error) {
	if len(ms) != len(firsts) {
		return nil, fmt.Errorf("insert messages: %d messages and %d timeline entries", len(ms), len(firsts))
	}
	for _, m := range ms {
		if m.TenantID != t.tenantID && t.tenantID != uuid.Nil {
			return nil, fmt.Errorf("insert messages: message %s of tenant %s in a transaction of tenant %s", m.ID, m.TenantID, t.tenantID)
		}
	}
	inserted = make([]bool, 0, len(ms))
	for start := 0; start < len(ms); start += InsertBatch {
		end := min(start+InsertBatch, len(ms))
		batch, err := t.insertMessages(ctx, ms[start:end], firsts[start:end])
		if err != nil {
			return nil, err
		}
		inserted = append(inserted, batch...)
	}
	return inserted, nil
}

// InsertBatch is how many messages one statement of InsertMessages stores:
// a route of more takes a statement per batch, so that the worker holds one
// batch's encoding at a time (a 20,000-passenger broadcast would otherwise
// hold all of it). A later batch finds the conversations and keys an
// earlier one stored, in the same transaction.
const InsertBatch = 1000

// insertMessages is InsertMessages for one batch, in one statement.
func (t *Tx) insertMessages(ctx context.Context, ms []*app.Message, firsts []*app.MessageEvent) ([]bool, error) {
	// Each message's document is encoded and dropped in turn: the batch's
	// JSON is all that is held.
	input := []byte{'['}
	for i, m := range ms {
		doc, err := t.messageDoc(m, firsts[i])
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("encode messages: %w", err)
		}
		if i > 0 {
			input = append(input, ',')
		}
		input = append(input, b...)
	}
	input = append(input, ']')
	// input is one row per message: the message's columns as a messages
	// row, and the timeline entry and conversation fields beside them.
	// want holds each contact and entity asking for a conversation once,
	// with the id and time of its first message; found is its open
	// conversation, and opened the ones it lacked.
	rows, err := t.tx.QueryxContext(ctx, `
		WITH input AS (
			SELECT j.ord, m.*, e.*
			FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS j(doc, ord)
			CROSS JOIN LATERAL jsonb_populate_record(NULL::messages, j.doc) AS m
			CROSS JOIN LATERAL jsonb_to_record(j.doc) AS e(entry_from text, entry_to text, entry_source text, entry_detail jsonb,
				entry_at timestamptz, conv_type text, conv_entity_id text, conv_id uuid)
		), want AS (
			SELECT DISTINCT ON (contact_id, conv_type, conv_entity_id) tenant_id, contact_id, conv_type, conv_entity_id, conv_id, created_at
			FROM input WHERE conv_type IS NOT NULL AND conversation_id IS NULL
			ORDER BY contact_id, conv_type, conv_entity_id, ord
		), found AS (
			SELECT w.*, (
				SELECT c.id FROM conversations c
				WHERE c.tenant_id = w.tenant_id AND c.contact_id = w.contact_id AND c.status <> 'RESOLVED'
					AND CASE w.conv_type WHEN 'booking' THEN c.booking_id WHEN 'trip' THEN c.trip_id ELSE c.invoice_id END = w.conv_entity_id
				ORDER BY c.created_at DESC LIMIT 1) AS found_id
			FROM want w
		), opened AS (
			INSERT INTO conversations (id, tenant_id, contact_id, booking_id, trip_id, invoice_id, status, created_at, updated_at)
			SELECT conv_id, tenant_id, contact_id, CASE WHEN conv_type = 'booking' THEN conv_entity_id END,
				CASE WHEN conv_type = 'trip' THEN conv_entity_id END, CASE WHEN conv_type = 'invoice' THEN conv_entity_id END,
				'OPEN', created_at, created_at
			FROM found WHERE found_id IS NULL
		), planned AS (
			SELECT i.*, coalesce(i.conversation_id, f.found_id, f.conv_id) AS conv
			FROM input i LEFT JOIN found f ON f.contact_id = i.contact_id AND f.conv_type = i.conv_type AND f.conv_entity_id = i.conv_entity_id
		), inserted AS (
			INSERT INTO messages (`+insertColumns+`)
			SELECT `+strings.ReplaceAll(insertColumns, "conversation_id", "conv")+` FROM planned ORDER BY ord
			ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
			RETURNING id
		), entry AS (
			INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, detail, at)
			SELECT r.tenant_id, r.id, r.entry_from, r.entry_to, r.entry_source, coalesce(r.entry_detail, '{}'), r.entry_at
			FROM planned r JOIN inserted USING (id) ORDER BY r.ord
		)
		SELECT r.inserted IS NOT NULL AS inserted, r.conv
		FROM (SELECT planned.ord, planned.conv, inserted.id AS inserted FROM planned LEFT JOIN inserted USING (id)) r ORDER BY r.ord`, string(input))
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	inserted := make([]bool, 0, len(ms))
	for rows.Next() {
		var ok bool
		var conv *uuid.UUID
		if err := rows.Scan(&ok, &conv); err != nil {
			return nil, mapErr(err)
		}
		ms[len(inserted)].ConversationID = conv
		inserted = append(inserted, ok)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	if len(inserted) != len(ms) {
		return nil, fmt.Errorf("insert messages: %d results for %d messages", len(inserted), len(ms))
	}
	return inserted, nil
}

// messageDoc is m's row for InsertMessages: its insertColumns by name, as
// each would go in a parameter, with the first timeline entry and the
// conversation to find or open beside them.
func (t *Tx) messageDoc(m *app.Message, first *app.MessageEvent) (map[string]any, error) {
	v := reflect.Indirect(reflect.ValueOf(m))
	fields := t.tx.Mapper.TypeMap(v.Type()).Names
	doc := make(map[string]any, len(insertColumnNames)+8)
	for _, col := range insertColumnNames {
		f, ok := fields[col]
		if !ok {
			return nil, fmt.Errorf("insert messages: no field for column %s", col)
		}
		// Read-only: the traversal must not fill m's nil pointers.
		v, err := jsonParam(reflectx.FieldByIndexesReadOnly(v, f.Index))
		if err != nil {
			return nil, fmt.Errorf("insert messages: column %s: %w", col, err)
		}
		doc[col] = v
	}
	detail := json.RawMessage("{}")
	if len(first.Detail) > 0 {
		b, err := json.Marshal(first.Detail)
		if err != nil {
			return nil, fmt.Errorf("encode timeline detail: %w", err)
		}
		detail = b
	}
	doc["entry_from"], doc["entry_to"], doc["entry_source"] = first.FromStatus, first.ToStatus, first.Source
	doc["entry_detail"], doc["entry_at"] = detail, microseconds(first.At)
	if o := m.OpenConversation; o != nil && m.ConversationID == nil && m.ContactID != nil {
		if conversationColumn[o.Type] == "" {
			return nil, app.Errorf(app.EINVALID, "Unknown conversation type %q.", o.Type)
		}
		doc["conv_type"], doc["conv_entity_id"], doc["conv_id"] = o.Type, o.ID, uuid.New()
	}
	return doc, nil
}

// insertColumnNames are insertColumns one by one.
var insertColumnNames = func() []string {
	names := strings.Split(insertColumns, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	return names
}()

// jsonParam is f as JSON that Postgres reads into its column as it would
// the parameter database/sql sends: nil for a nil pointer, a driver.Valuer's
// value, and times to the microsecond, cut as a parameter's are (Postgres
// would round the extra digits of a text time instead).
func jsonParam(f reflect.Value) (any, error) {
	if f.Kind() == reflect.Pointer && f.IsNil() {
		return nil, nil
	}
	switch v := f.Interface().(type) {
	case time.Time:
		return microseconds(v), nil
	case *time.Time:
		return microseconds(*v), nil
	case driver.Valuer:
		dv, err := v.Value()
		if b, ok := dv.([]byte); ok {
			return string(b), err
		}
		return dv, err
	default:
		return v, nil
	}
}

// microseconds is at as Postgres stores it.
func microseconds(at time.Time) string { return at.Truncate(time.Microsecond).Format(time.RFC3339Nano) }

// MessageByID serves app.MessagesTx, console.AccountTx and
// console.MessageTx.
func (t *Tx) MessageByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*app.Message, error) {
	q := `SELECT ` + messageColumns + ` FROM messages WHERE tenant_id = $1 AND id = $2`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	var m app.Message
	if err := t.tx.GetContext(ctx, &m, q, tenantID, id); err != nil {
		return nil, notFound(err, "Message %s not found.", id)
	}
	return &m, nil
}

// MessagesByEvent serves app.IntakeTx.
func (t *Tx) MessagesByEvent(ctx context.Context, tenantID, eventID uuid.UUID) ([]*app.Message, error) {
	ms := []*app.Message{}
	err := t.tx.SelectContext(ctx, &ms, `
		SELECT `+messageColumns+` FROM messages WHERE tenant_id = $1 AND event_id = $2 ORDER BY created_at, id`, tenantID, eventID)
	return ms, mapErr(err)
}

// MessagesByEntity serves app.MessagesTx and console.MessageTx, newest
// first.
func (t *Tx) MessagesByEntity(ctx context.Context, tenantID uuid.UUID, entityType, entityID string) ([]*app.Message, error) {
	ms := []*app.Message{}
	err := t.tx.SelectContext(ctx, &ms, `
		SELECT `+messageColumns+` FROM messages WHERE tenant_id = $1 AND entity_type = $2 AND entity_id = $3
		ORDER BY created_at DESC, id LIMIT 1000`, tenantID, entityType, entityID)
	return ms, mapErr(err)
}

// CancelQueuedMessages serves app.IntakeTx, with a timeline entry for each.
func (t *Tx) CancelQueuedMessages(ctx context.Context, tenantID, eventID uuid.UUID, at time.Time) (int, error) {
	var ids []uuid.UUID
	err := t.tx.SelectContext(ctx, &ids, `
		UPDATE messages SET status = 'CANCELLED', updated_at = $3
		WHERE tenant_id = $1 AND event_id = $2 AND status = 'QUEUED'
		RETURNING id`, tenantID, eventID, at)
	if err != nil {
		return 0, mapErr(err)
	}
	if len(ids) > 0 {
		_, err = t.tx.ExecContext(ctx, `
			INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, at)
			SELECT $1, id, 'QUEUED', 'CANCELLED', 'api', $3 FROM unnest($2::uuid[]) AS id`,
			tenantID, uuidArray(ids), at)
	}
	return len(ids), mapErr(err)
}

// MarkFailed moves a message in one of the from statuses to FAILED. It
// serves app.DispatchTx.
func (t *Tx) MarkFailed(ctx context.Context, tenantID, id uuid.UUID, from []string, reason, code string, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE messages SET status = 'FAILED', failed_reason = $4, error_code = nullif($5, ''), failed_at = $6, updated_at = $6,
			attempts = attempts + 1
		WHERE tenant_id = $1 AND id = $2 AND status = ANY($3)`, tenantID, id, app.StringList(from), reason, code, at)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// MarkExpired serves app.DispatchTx.
func (t *Tx) MarkExpired(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE messages SET status = 'EXPIRED', failed_reason = $3, updated_at = $4
		WHERE tenant_id = $1 AND id = $2 AND status = 'QUEUED'`, tenantID, id, app.ReasonExpired, at)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RequeueSent serves app.ReceiptApplyTx: a SENT message the provider
// reported rate-limited, or outside WhatsApp's window (templateOnly), goes
// back to QUEUED, without its provider id, to be sent again, with a
// timeline entry; false when it was no longer SENT.
func (t *Tx) RequeueSent(ctx context.Context, tenantID, id uuid.UUID, templateOnly bool, detail map[string]any, at time.Time) (bool, error) {
	d, err := json.Marshal(detail)
	if err != nil {
		return false, fmt.Errorf("encode timeline detail: %w", err)
	}
	// The status guard (herald_message_status_guard) refuses this step
	// back unless the transaction says it is this one.
	if _, err := t.tx.ExecContext(ctx, `SELECT set_config('herald.requeue_sent', 'on', true)`); err != nil {
		return false, mapErr(err)
	}
	var n int
	err = t.tx.GetContext(ctx, &n, `
		WITH requeued AS (
			UPDATE messages SET status = 'QUEUED', external_message_id = NULL, sent_at = NULL, stale_at = NULL, queued_at = $4, updated_at = $4,
				previous_external_ids = previous_external_ids || external_message_id,
				whatsapp_template_only = whatsapp_template_only OR $6
			WHERE tenant_id = $1 AND id = $2 AND status = 'SENT'
			RETURNING tenant_id, id
		), timeline AS (
			INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, detail, at)
			SELECT tenant_id, id, 'SENT', 'QUEUED', $5, $3, $4 FROM requeued
		)
		SELECT count(*) FROM requeued`, tenantID, id, string(d), at, app.SourceWebhook, templateOnly)
	if err != nil {
		return false, mapErr(err)
	}
	return n == 1, nil
}

// SetExternalID serves app.ReceiptApplyTx.
func (t *Tx) SetExternalID(ctx context.Context, tenantID, id uuid.UUID, provider, externalID string) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE messages SET provider = $3, external_message_id = $4, updated_at = now()
		WHERE tenant_id = $1 AND id = $2 AND external_message_id IS NULL`, tenantID, id, provider, externalID)
	return mapErr(err)
}

// CountAttempt serves app.DispatchTx: a provider call that will be retried
// is an attempt too.
func (t *Tx) CountAttempt(ctx context.Context, tenantID, id uuid.UUID) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE messages SET attempts = attempts + 1, updated_at = now() WHERE tenant_id = $1 AND id = $2 AND status = 'QUEUED'`, tenantID, id)
	return mapErr(err)
}

// SetFailedReason serves app.ReceiptApplyTx: a FAILED message's reason,
// once its fallback is queued.
func (t *Tx) SetFailedReason(ctx context.Context, tenantID, id uuid.UUID, reason string) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE messages SET failed_reason = $3, updated_at = now()
		WHERE tenant_id = $1 AND id = $2 AND status = 'FAILED'`, tenantID, id, reason)
	return mapErr(err)
}

// InsertMessageEvent serves app.DispatchTx and console.MessageTx.
func (t *Tx) InsertMessageEvent(ctx context.Context, e *app.MessageEvent) error {
	detail := []byte("{}")
	if len(e.Detail) > 0 {
		var err error
		if detail, err = json.Marshal(e.Detail); err != nil {
			return fmt.Errorf("encode timeline detail: %w", err)
		}
	}
	err := t.tx.QueryRowxContext(ctx, `
		INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, detail, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		e.TenantID, e.MessageID, e.FromStatus, e.ToStatus, e.Source, string(detail), e.At).Scan(&e.ID)
	return mapErr(err)
}

// Timeline serves app.MessagesTx and console.AccountTx, oldest first.
func (t *Tx) Timeline(ctx context.Context, tenantID, messageID uuid.UUID) ([]*app.MessageEvent, error) {
	rows, err := t.tx.QueryxContext(ctx, `
		SELECT id, tenant_id, message_id, from_status, to_status, source, detail, at
		FROM message_events WHERE tenant_id = $1 AND message_id = $2 ORDER BY id`, tenantID, messageID)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []*app.MessageEvent{}
	for rows.Next() {
		var e app.MessageEvent
		var detail []byte
		if err := rows.Scan(&e.ID, &e.TenantID, &e.MessageID, &e.FromStatus, &e.ToStatus, &e.Source, &detail, &e.At); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(detail, &e.Detail); err != nil {
			return nil, err
		}
		out = append(out, &e)
	}
	return out, rows.Err()
}

// RecordReceipt stores a receipt of a known message once and, the first time
// only, moves the message from r.From to r.To (when r.To is set and the
// message is still in r.From) and writes the timeline entry, in one
// statement. Fresh is false for a receipt seen before; Moved says whether
// the status changed, and then the endpoints subscribed to
// rec.CallbackEvent come back with it. It serves app.ReceiptApplyTx. The receipt row
// decides freshness (unique provider and receipt id); the status change and
// the timeline entry run only when it was stored, and the entry names the
// new status only when the change happened.
func (t *Tx) RecordReceipt(ctx context.Context, rec app.ReceiptRecord) (app.RecordedReceipt, error) {
	r := rec.Receipt
	body := receiptBody(r)
	detail, err := json.Marshal(rec.Detail)
	if err != nil {
		return app.RecordedReceipt{}, fmt.Errorf("encode timeline detail: %w", err)
	}
	var to *string
	if rec.To != "" {
		to = &rec.To
	}
	res := t.tx.QueryRowxContext(ctx, `
		WITH receipt AS (
			INSERT INTO webhook_receipts (tenant_id, provider, receipt_id, message_id, status, body, outcome, received_at)
			VALUES ($1, $3, $4, $2, $5, $6, 'matched', now())
			ON CONFLICT (provider, receipt_id) DO NOTHING
			RETURNING id
		), moved AS (
			UPDATE messages SET status = $8::text,
				delivered_at = CASE WHEN $8::text IN ('DELIVERED', 'READ') THEN coalesce(delivered_at, $11) ELSE delivered_at END,
				read_at = CASE WHEN $8::text = 'READ' THEN $11 ELSE read_at END,
				failed_at = CASE WHEN $8::text = 'FAILED' THEN $11 ELSE failed_at END,
				failed_reason = CASE WHEN $8::text = 'FAILED' THEN coalesce(nullif($10, ''), 'provider_failed') ELSE failed_reason END,
				error_code = CASE WHEN $8::text = 'FAILED' THEN nullif($9, '') ELSE error_code END,
				stale_at = NULL, updated_at = now()
			WHERE tenant_id = $1 AND id = $2 AND status = $7 AND $8::text IS NOT NULL AND EXISTS (SELECT FROM receipt)
			RETURNING id
		), delivered_late AS (
			-- A delivered that comes after the read keeps its own time: the
			-- read only stood in for it.
			UPDATE messages SET delivered_at = $11, updated_at = now()
			WHERE tenant_id = $1 AND id = $2 AND status = 'READ' AND $5 = 'delivered' AND $8::text IS NULL
				AND (delivered_at IS NULL OR delivered_at > $11) AND EXISTS (SELECT FROM receipt)
		), timeline AS (
			INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, detail, at)
			SELECT $1, $2, $7, (SELECT $8::text FROM moved), $12, $13, $11
			WHERE EXISTS (SELECT FROM receipt)
		)
		SELECT EXISTS (SELECT FROM receipt) AS fresh, EXISTS (SELECT FROM moved) AS moved,
			CASE WHEN EXISTS (SELECT FROM moved) AND $14 <> '' THEN ARRAY(
				SELECT id::text FROM callback_endpoints
				WHERE tenant_id = $1 AND enabled AND $14 = ANY (event_types) ORDER BY id)
			END AS subscribers`,
		rec.TenantID, rec.MessageID, r.Provider, r.ReceiptID, r.Status, body,
		rec.From, to, r.Code, rec.FailedReason, r.At, app.SourceWebhook, string(detail), rec.CallbackEvent,
	)
	var row struct {
		Fresh       bool           `db:"fresh"`
		Moved       bool           `db:"moved"`
		Subscribers app.StringList `db:"subscribers"`
	}
	if err := res.StructScan(&row); err != nil {
		return app.RecordedReceipt{}, mapErr(err)
	}
	out := app.RecordedReceipt{Fresh: row.Fresh, Moved: row.Moved}
	for _, id := range row.Subscribers {
		u, err := uuid.Parse(id)
		if err != nil {
			return app.RecordedReceipt{}, err
		}
		out.Subscribers = append(out.Subscribers, u)
	}
	return out, nil
}

// receiptBody is what webhook_receipts keeps of a receipt.
func receiptBody(r provider.Receipt) string {
	body, _ := json.Marshal(map[string]any{"status": r.Status, "code": r.Code, "reason": r.Reason, "external_id": r.ExternalID,
		"raw": r.Raw, "complaint": r.Complaint, "account_ref": r.AccountRef})
	return string(body)
}

func uuidArray(ids []uuid.UUID) app.StringList {
	out := make(app.StringList, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// ExplorerMessages serves console.MessageTx. It pages by keyset, newest
// first: a page after a cursor holds the rows below it in (created_at, id),
// a page before one the rows above it, read oldest first (the caller turns
// them round). Every filter has an index that starts with the tenant and
// the filtered column and ends in that order (see db/migrations), so
// a page reads about as many index entries as it shows, however deep it
// is; the plan is made for the values at hand (plan_cache_mode), so that
// Postgres weighs how rare a status or channel is.
func (t *Tx) ExplorerMessages(ctx context.Context, tenantID uuid.UUID, f console.MessageFilter, page console.PageRequest) ([]*app.Message, error) {
	where := []string{"tenant_id = $1"}
	args := []any{tenantID}
	// add appends a condition; its ? marks take vs, in order, as numbered parameters.
	add := func(cond string, vs ...any) {
		for _, v := range vs {
			args = append(args, v)
			cond = strings.Replace(cond, "?", fmt.Sprintf("$%d", len(args)), 1)
		}
		where = append(where, cond)
	}
	if f.Status != "" {
		// The indexes hold the phase. It is the status itself but for READ
		// and DELIVERED, which share theirs: only those are told apart on
		// the row, so that the others are decided in the index.
		add("phase = ?", phaseOf(f.Status))
		if f.Status == app.MessageRead || f.Status == app.MessageDelivered {
			add("status = ?", f.Status)
		}
	}
	if f.Channel != "" {
		add("channel = ?", f.Channel)
	}
	if f.Trigger != "" {
		add("trigger_event = ?", f.Trigger)
	}
	if f.EventID != nil {
		add("event_id = ?", *f.EventID)
	}
	if f.From != nil {
		add("created_at >= ?", *f.From)
	}
	if f.To != nil {
		add("created_at < ?", *f.To)
	}
	if f.Address != "" {
		add("to_address = ?", f.Address)
	}
	if f.Stale {
		where = append(where, "phase = 'SENT'", "stale_at IS NOT NULL")
	}
	if f.Reason != "" {
		add("failed_reason = ?", f.Reason)
	}
	if f.EntityType != "" {
		add("entity_type = ? AND entity_id = ?", f.EntityType, f.EntityID)
	}
	order := "created_at DESC, id DESC"
	if c := page.Cursor; c != nil {
		if c.Before {
			add("(created_at, id) > (?, ?)", c.CreatedAt, c.ID)
			order = "created_at, id"
		} else {
			add("(created_at, id) < (?, ?)", c.CreatedAt, c.ID)
		}
	}
	args = append(args, page.Limit)
	if err := t.customPlans(ctx); err != nil {
		return nil, err
	}
	// The page's ids first, then its rows: filters on status, channel and
	// event together are checked in the index (each carries the others'
	// columns), so a combination that matches few rows reads no rows it
	// rejects.
	ms := []*app.Message{}
	err := t.tx.SelectContext(ctx, &ms, `
		SELECT `+messageColumns+` FROM messages
		WHERE tenant_id = $1 AND id IN (
			SELECT id FROM messages
			WHERE `+strings.Join(where, " AND ")+`
			ORDER BY `+order+`
			LIMIT $`+fmt.Sprint(len(args))+`)
		ORDER BY `+order, args...)
	return ms, mapErr(err)
}

// phaseOf is the messages.phase of a status (db/migrations): the status,
// with READ folded into DELIVERED so that a read receipt changes no
// indexed column.
func phaseOf(status string) string {
	if status == app.MessageRead {
		return app.MessageDelivered
	}
	return status
}

// customPlans makes the rest of the transaction plan each statement for its
// own values. Transactions plan generically (see beginScoped), which suits
// the short lookups of the send path; the console's lists filter on columns
// whose values differ in frequency by orders of magnitude, and only a plan
// that sees the value can tell a rare status from a common one.
func (t *Tx) customPlans(ctx context.Context) error {
	_, err := t.tx.ExecContext(ctx, `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`)
	return mapErr(err)
}

// PanelEvents serves console.MessageTx.
func (t *Tx) PanelEvents(ctx context.Context, tenantID uuid.UUID, entityType, entityID string, limit int) ([]*app.Event, error) {
	es := []*app.Event{}
	err := t.tx.SelectContext(ctx, &es, `
		SELECT `+eventColumns+`, routing, `+eventFiles+` AS files FROM events e
		WHERE tenant_id = $1 AND entity_type = $2 AND entity_id = $3
		ORDER BY created_at DESC, id DESC LIMIT $4`, tenantID, entityType, entityID, limit)
	return es, mapErr(err)
}

// ConversationMessages serves console.MessageTx.
func (t *Tx) ConversationMessages(ctx context.Context, tenantID, conversationID uuid.UUID, limit int) ([]*app.Message, error) {
	ms := []*app.Message{}
	err := t.tx.SelectContext(ctx, &ms, `
		SELECT `+messageColumns+` FROM messages
		WHERE tenant_id = $1 AND conversation_id = $2
		ORDER BY created_at DESC, id DESC LIMIT $3`, tenantID, conversationID, limit)
	return ms, mapErr(err)
}

// MessageTimelines serves console.MessageTx. in one query.
func (t *Tx) MessageTimelines(ctx context.Context, tenantID uuid.UUID, messageIDs []uuid.UUID) (map[uuid.UUID][]*app.MessageEvent, error) {
	out := map[uuid.UUID][]*app.MessageEvent{}
	if len(messageIDs) == 0 {
		return out, nil
	}
	rows, err := t.tx.QueryxContext(ctx, `
		SELECT id, tenant_id, message_id, from_status, to_status, source, detail, at
		FROM message_events WHERE tenant_id = $1 AND message_id = ANY($2::uuid[])
		ORDER BY message_id, id`, tenantID, uuidArray(messageIDs))
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var e app.MessageEvent
		var detail []byte
		if err := rows.Scan(&e.ID, &e.TenantID, &e.MessageID, &e.FromStatus, &e.ToStatus, &e.Source, &detail, &e.At); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(detail, &e.Detail); err != nil {
			return nil, fmt.Errorf("timeline entry %d: %w", e.ID, err)
		}
		out[e.MessageID] = append(out[e.MessageID], &e)
	}
	return out, rows.Err()
}

// ConversationReplies serves console.MessageTx.
func (t *Tx) ConversationReplies(ctx context.Context, tenantID uuid.UUID, conversationIDs []uuid.UUID, limit int) ([]*app.InboundMessage, error) {
	rs := []*app.InboundMessage{}
	if len(conversationIDs) == 0 {
		return rs, nil
	}
	err := t.tx.SelectContext(ctx, &rs, `
		SELECT id, tenant_id, contact_id, conversation_id, channel, provider, external_id, from_address, kind, body, received_at, created_at
		FROM inbound_messages WHERE tenant_id = $1 AND conversation_id = ANY($2::uuid[])
		ORDER BY received_at DESC, id DESC LIMIT $3`, tenantID, uuidArray(conversationIDs), limit)
	return rs, mapErr(err)
}

// ResendTemplates serves console.MessageTx.
func (t *Tx) ResendTemplates(ctx context.Context, tenantID uuid.UUID, triggers []string) ([]*app.Template, error) {
	ts := []*app.Template{}
	if len(triggers) == 0 {
		return ts, nil
	}
	err := t.tx.SelectContext(ctx, &ts, `
		SELECT `+templateColumns+` FROM templates
		WHERE tenant_id = $1 AND is_active AND trigger_event = ANY($2)
		ORDER BY channel, trigger_event, locale`, tenantID, app.StringList(triggers))
	return ts, mapErr(err)
}

// TriggeredByLabels serves console.MessageTx: users by e-mail address, API
// keys by name.
func (t *Tx) TriggeredByLabels(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	rows, err := t.tx.QueryxContext(ctx, `
		SELECT id, email FROM users WHERE tenant_id = $1 AND id = ANY($2::uuid[])
		UNION ALL
		SELECT id, 'API key ' || name FROM api_keys WHERE tenant_id = $1 AND id = ANY($2::uuid[])`, tenantID, uuidArray(ids))
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := map[uuid.UUID]string{}
	for rows.Next() {
		var id uuid.UUID
		var label string
		if err := rows.Scan(&id, &label); err != nil {
			return nil, err
		}
		out[id] = label
	}
	return out, rows.Err()
}

// MessageByIdempotencyKey serves console.MessageTx.
func (t *Tx) MessageByIdempotencyKey(ctx context.Context, tenantID uuid.UUID, key string) (*app.Message, error) {
	var m app.Message
	err := t.tx.GetContext(ctx, &m, `SELECT `+messageColumns+` FROM messages WHERE tenant_id = $1 AND idempotency_key = $2`, tenantID, key)
	if err != nil {
		return nil, notFound(err, "No message with key %s.", key)
	}
	return &m, nil
}

// CancelQueuedMessage serves console.MessageTx.
func (t *Tx) CancelQueuedMessage(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE messages SET status = 'CANCELLED', updated_at = $3
		WHERE tenant_id = $1 AND id = $2 AND status = 'QUEUED'`, tenantID, id, at)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
