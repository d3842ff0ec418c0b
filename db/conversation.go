package db

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

const conversationColumns = `id, tenant_id, contact_id, booking_id, trip_id, invoice_id, status, assigned_to, last_inbound_at, last_reply_at, status_at, created_at, updated_at`

// conversationUnanswered is the condition of a conversation whose
// passenger wrote last (app.Conversation.Unanswered), on alias c; the
// inbox index covers its first two terms.
const conversationUnanswered = `(c.status = 'OPEN' AND c.last_inbound_at IS NOT NULL AND (c.last_reply_at IS NULL OR c.last_reply_at < c.last_inbound_at))`

// ConversationByID serves app.InboxTx.
func (t *Tx) ConversationByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*app.Conversation, error) {
	q := `SELECT ` + conversationColumns + `, erased_at FROM conversations WHERE tenant_id = $1 AND id = $2`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	var c app.Conversation
	if err := t.tx.GetContext(ctx, &c, q, tenantID, id); err != nil {
		return nil, notFound(err, "Conversation %s not found.", id)
	}
	return &c, nil
}

// ReplyConversation serves app.InboundTx: the contact's newest conversation
// not resolved, else its newest resolved one.
func (t *Tx) ReplyConversation(ctx context.Context, tenantID, contactID uuid.UUID) (*app.Conversation, error) {
	var c app.Conversation
	err := t.tx.GetContext(ctx, &c, `
		SELECT `+conversationColumns+` FROM conversations
		WHERE tenant_id = $1 AND contact_id = $2
		ORDER BY status <> 'RESOLVED' DESC, greatest(updated_at, last_inbound_at) DESC, created_at DESC LIMIT 1
		FOR UPDATE`, tenantID, contactID)
	if err != nil {
		return nil, notFound(err, "No conversation.")
	}
	return &c, nil
}

// InsertConversation serves app.InboundTx.
func (t *Tx) InsertConversation(ctx context.Context, c *app.Conversation) error {
	_, err := t.tx.NamedExecContext(ctx, `
		INSERT INTO conversations (`+conversationColumns+`)
		VALUES (:id, :tenant_id, :contact_id, :booking_id, :trip_id, :invoice_id, :status, :assigned_to, :last_inbound_at,
			:last_reply_at, :status_at, :created_at, :updated_at)`, c)
	return mapErr(err)
}

// MoveConversation serves app.ConversationTx: a conditional UPDATE, so the
// status changes only from the one the caller read.
func (t *Tx) MoveConversation(ctx context.Context, tenantID, id uuid.UUID, from, to string, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE conversations SET status = $4, status_at = $5, updated_at = $5
		WHERE tenant_id = $1 AND id = $2 AND status = $3`, tenantID, id, from, to, at)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ConversationHeard serves app.InboundTx.
func (t *Tx) ConversationHeard(ctx context.Context, tenantID, id uuid.UUID, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE conversations SET last_inbound_at = greatest(last_inbound_at, $3), updated_at = greatest(updated_at, $3)
		WHERE tenant_id = $1 AND id = $2`, tenantID, id, at)
	return mapErr(err)
}

// MarkConversationReplied serves app.InboxTx.
func (t *Tx) MarkConversationReplied(ctx context.Context, tenantID, id uuid.UUID, at time.Time) error {
	_, err := t.tx.ExecContext(ctx, `
		UPDATE conversations SET last_reply_at = greatest(last_reply_at, $3), updated_at = $3
		WHERE tenant_id = $1 AND id = $2`, tenantID, id, at)
	return mapErr(err)
}

// AssignConversation serves app.InboxTx: only to an active user of the
// same tenant, checked in the statement itself.
func (t *Tx) AssignConversation(ctx context.Context, tenantID, id uuid.UUID, userID *uuid.UUID, at time.Time) (bool, error) {
	res, err := t.tx.ExecContext(ctx, `
		UPDATE conversations SET assigned_to = $3, updated_at = $4
		WHERE tenant_id = $1 AND id = $2
		  AND ($3::uuid IS NULL OR EXISTS (SELECT 1 FROM users u WHERE u.id = $3 AND u.tenant_id = $1 AND u.disabled_at IS NULL))`,
		tenantID, id, userID, at)
	if err != nil {
		return false, mapErr(err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// AssignableUsers serves app.InboxTx: the tenant's active users.
func (t *Tx) AssignableUsers(ctx context.Context, tenantID uuid.UUID) ([]*app.User, error) {
	us := []*app.User{}
	err := t.tx.SelectContext(ctx, &us, `
		SELECT `+userColumns+` FROM users WHERE tenant_id = $1 AND disabled_at IS NULL ORDER BY email`, tenantID)
	return us, mapErr(err)
}

// UnansweredConversations serves app.InboxTx: the tenant's open
// conversations whose passenger wrote last, before before.
func (t *Tx) UnansweredConversations(ctx context.Context, tenantID uuid.UUID, before time.Time) (int, error) {
	var n int
	err := t.tx.GetContext(ctx, &n, `
		SELECT count(*) FROM conversations c
		WHERE c.tenant_id = $1 AND `+conversationUnanswered+` AND c.last_inbound_at < $2`, tenantID, before)
	return n, mapErr(err)
}

// ListConversations serves app.InboxTx: conversations a passenger wrote
// in, unanswered first (longest waiting first), then the newest.
func (t *Tx) ListConversations(ctx context.Context, tenantID uuid.UUID, f app.InboxFilter) ([]*app.InboxItem, error) {
	where, args := []string{"c.tenant_id = $1", "c.last_inbound_at IS NOT NULL"}, []any{tenantID}
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	switch f.Status {
	case "":
		where = append(where, "c.status <> 'RESOLVED'")
	case "ALL":
	default:
		where = append(where, "c.status = "+arg(f.Status))
	}
	if f.TripID != "" {
		p := arg(f.TripID)
		where = append(where, "(c.trip_id = "+p+" OR c.booking_id IN (SELECT tb.booking_id FROM trip_bookings tb WHERE tb.tenant_id = $1 AND tb.trip_id = "+p+" AND tb.left_at IS NULL))")
	}
	if f.BookingID != "" {
		where = append(where, "c.booking_id = "+arg(f.BookingID))
	}
	if f.AssignedTo != nil {
		where = append(where, "c.assigned_to = "+arg(*f.AssignedTo))
	}
	if f.Unanswered {
		where = append(where, conversationUnanswered)
	}
	items := []*app.InboxItem{}
	err := t.tx.SelectContext(ctx, &items, `
		SELECT c.id, c.tenant_id, c.contact_id, c.booking_id, c.trip_id, c.invoice_id, c.status, c.assigned_to, c.last_inbound_at,
			c.last_reply_at, c.status_at, c.created_at, c.updated_at,
			ct.name AS contact_name, ct.phone AS contact_phone, u.email AS assigned_email,
			li.body AS last_body, li.channel AS last_channel, li.received_at AS last_at,
			(SELECT count(*) FROM inbound_messages w WHERE w.tenant_id = c.tenant_id AND w.conversation_id = c.id
				AND w.received_at > coalesce(c.last_reply_at, '-infinity')) AS waiting
		FROM conversations c
		JOIN contacts ct ON ct.tenant_id = c.tenant_id AND ct.id = c.contact_id
		LEFT JOIN users u ON u.tenant_id = c.tenant_id AND u.id = c.assigned_to
		LEFT JOIN LATERAL (
			SELECT i.body, i.channel, i.received_at FROM inbound_messages i
			WHERE i.tenant_id = c.tenant_id AND i.conversation_id = c.id ORDER BY i.received_at DESC LIMIT 1) li ON true
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY `+conversationUnanswered+` DESC,
			CASE WHEN `+conversationUnanswered+` THEN c.last_inbound_at END ASC, c.last_inbound_at DESC, c.id
		LIMIT `+arg(f.Limit), args...)
	return items, mapErr(err)
}

// InsertInboundCallbackDeliveries serves app.InboundTx.
func (t *Tx) InsertInboundCallbackDeliveries(ctx context.Context, tenantID uuid.UUID, endpointIDs []uuid.UUID, inboundID uuid.UUID,
	eventType string, payload []byte, at time.Time) ([]uuid.UUID, error) {
	ids := []uuid.UUID{}
	err := t.tx.SelectContext(ctx, &ids, `
		INSERT INTO callback_deliveries (id, tenant_id, endpoint_id, inbound_message_id, event_type, payload, next_attempt_at, created_at, updated_at)
		SELECT gen_random_uuid(), $1, e, $3, $4, $5::json, $6, $6, $6 FROM unnest($2::uuid[]) AS e
		ON CONFLICT (endpoint_id, inbound_message_id, event_type) WHERE inbound_message_id IS NOT NULL DO NOTHING
		RETURNING id`, tenantID, uuidArray(endpointIDs), inboundID, eventType, string(payload), at)
	return ids, mapErr(err)
}
