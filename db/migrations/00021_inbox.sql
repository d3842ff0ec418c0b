-- A trip inbox: conversations that staff work through.
--
-- A conversation is OPEN, SNOOZED or RESOLVED (seed 000 §10). Staff may
-- assign it to one of the tenant's users. last_inbound_at is when the
-- passenger last wrote (a message that asks for an answer: not a STOP or
-- START keyword, not a quick-reply button), last_reply_at when staff last
-- answered; a conversation is unanswered while it is OPEN and the first is
-- later than the second. The inbox lists unanswered conversations first,
-- oldest question first, from the partial index below.
--
-- A message.inbound callback belongs to an inbound message, not to a
-- message Herald sent: callback_deliveries names it in its own column,
-- once per endpoint.

-- +goose Up
ALTER TABLE conversations
    ADD COLUMN assigned_to     uuid REFERENCES users (id) ON DELETE SET NULL,
    ADD COLUMN last_inbound_at timestamptz,
    ADD COLUMN last_reply_at   timestamptz,
    ADD COLUMN status_at       timestamptz;
CREATE INDEX conversations_inbox_idx ON conversations (tenant_id, last_inbound_at)
    WHERE status = 'OPEN' AND last_inbound_at IS NOT NULL;
CREATE INDEX conversations_trip_idx ON conversations (tenant_id, trip_id) WHERE trip_id IS NOT NULL;

CREATE INDEX inbound_messages_conversation_idx ON inbound_messages (tenant_id, conversation_id, received_at DESC)
    WHERE conversation_id IS NOT NULL;

ALTER TABLE callback_deliveries
    ADD COLUMN inbound_message_id uuid REFERENCES inbound_messages (id) ON DELETE CASCADE;
CREATE UNIQUE INDEX callback_deliveries_inbound_once ON callback_deliveries (endpoint_id, inbound_message_id, event_type)
    WHERE inbound_message_id IS NOT NULL;

-- +goose Down
DROP INDEX callback_deliveries_inbound_once;
ALTER TABLE callback_deliveries DROP COLUMN inbound_message_id;
DROP INDEX inbound_messages_conversation_idx;
DROP INDEX conversations_trip_idx;
DROP INDEX conversations_inbox_idx;
ALTER TABLE conversations DROP COLUMN status_at, DROP COLUMN last_reply_at, DROP COLUMN last_inbound_at, DROP COLUMN assigned_to;
