package db

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// ExplorerMessages implements console.ConsoleMessageStore.
func (t *Tx) ExplorerMessages(ctx context.Context, tenantID uuid.UUID, f console.MessageFilter, page console.PageRequest) ([]*app.Message, error) {
	where := []string{"tenant_id = $1"}
	args := []any{tenantID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", fmt.Sprintf("$%d", len(args))))
	}
	if f.Status != "" {
		add("status = ?", f.Status)
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
		where = append(where, "status = 'SENT'", "stale_at IS NOT NULL")
	}
	args = append(args, page.Limit, page.Offset)
	ms := []*app.Message{}
	err := t.tx.SelectContext(ctx, &ms, `
		SELECT `+messageColumns+` FROM messages
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY created_at DESC, id DESC
		LIMIT $`+fmt.Sprint(len(args)-1)+` OFFSET $`+fmt.Sprint(len(args)), args...)
	return ms, mapErr(err)
}

// PanelEvents implements console.ConsoleMessageStore.
func (t *Tx) PanelEvents(ctx context.Context, tenantID uuid.UUID, entityType, entityID string, limit int) ([]*app.Event, error) {
	es := []*app.Event{}
	err := t.tx.SelectContext(ctx, &es, `
		SELECT `+eventColumns+` FROM events
		WHERE tenant_id = $1 AND entity_type = $2 AND entity_id = $3
		ORDER BY created_at DESC, id DESC LIMIT $4`, tenantID, entityType, entityID, limit)
	return es, mapErr(err)
}

// ConversationMessages implements console.ConsoleMessageStore.
func (t *Tx) ConversationMessages(ctx context.Context, tenantID, conversationID uuid.UUID, limit int) ([]*app.Message, error) {
	ms := []*app.Message{}
	err := t.tx.SelectContext(ctx, &ms, `
		SELECT `+messageColumns+` FROM messages
		WHERE tenant_id = $1 AND conversation_id = $2
		ORDER BY created_at DESC, id DESC LIMIT $3`, tenantID, conversationID, limit)
	return ms, mapErr(err)
}

// MessageTimelines implements console.ConsoleMessageStore in one query.
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

// ConversationReplies implements console.ConsoleMessageStore.
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

// ResendTemplates implements console.ConsoleMessageStore.
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

// TriggeredByLabels implements console.ConsoleMessageStore: users by e-mail
// address, API keys by name.
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

// MessageByIdempotencyKey implements console.ConsoleMessageStore.
func (t *Tx) MessageByIdempotencyKey(ctx context.Context, tenantID uuid.UUID, key string) (*app.Message, error) {
	var m app.Message
	err := t.tx.GetContext(ctx, &m, `SELECT `+messageColumns+` FROM messages WHERE tenant_id = $1 AND idempotency_key = $2`, tenantID, key)
	if err != nil {
		return nil, notFound(err, "No message with key %s.", key)
	}
	return &m, nil
}

// CancelQueuedMessage implements console.ConsoleMessageStore.
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
