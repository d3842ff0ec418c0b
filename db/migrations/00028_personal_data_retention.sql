-- Retention of everything personal, and erasure of a contact on request.
--
-- Retention no longer deletes a finished message: it removes the message's
-- personal data (address, subject, rendered body; its timeline, receipts
-- and callback deliveries, whose details and payloads repeat them) and
-- keeps the row with its facts: tenant, event type, channel, status, times,
-- cost, SMS parts, provider, template. Dashboards, usage, cost month to
-- date, the trend and the templates' counts all read the messages table,
-- so they count a message the same before and after (as GOV.UK Notify
-- keeps its notification history). redacted_at says when the personal
-- data went and redaction why ('retention' or 'erasure'); a page that
-- shows such a message says so.
--
-- A contact or a conversation is never deleted (nothing references them
-- by foreign key, see 00006, and a deleted contact would make an erasure
-- request impossible to repeat): its personal data is blanked and
-- erased_at set. A blanked contact has no identifier left, so routing never
-- matches it again; a passenger who books again is a new contact.
--
-- The partial indexes let retention find what it has still to do without
-- walking the rows it already did, which stay for good:
-- messages_unredacted_created_idx for messages, contacts_unerased_idx and
-- conversations_unerased_idx by last change, inbound_messages_received_idx
-- for inbound texts by age, and callback_deliveries_inbound_idx for the
-- cascade that deleting an inbound message fires.

-- +goose Up
ALTER TABLE messages ADD COLUMN redacted_at timestamptz,
    ADD COLUMN redaction text;
ALTER TABLE messages ADD CONSTRAINT messages_redaction_check
    CHECK ((redacted_at IS NULL) = (redaction IS NULL) AND redaction IN ('retention', 'erasure')) NOT VALID;
CREATE INDEX messages_unredacted_created_idx ON messages (tenant_id, created_at) WHERE redacted_at IS NULL;

ALTER TABLE contacts ADD COLUMN erased_at timestamptz,
    ADD COLUMN erasure text CHECK (erasure IN ('retention', 'erasure'));
CREATE INDEX contacts_unerased_idx ON contacts (tenant_id, updated_at) WHERE erased_at IS NULL;

ALTER TABLE conversations ADD COLUMN erased_at timestamptz;
CREATE INDEX conversations_unerased_idx ON conversations (tenant_id, updated_at) WHERE erased_at IS NULL;

CREATE INDEX inbound_messages_received_idx ON inbound_messages (tenant_id, received_at);
CREATE INDEX callback_deliveries_inbound_idx ON callback_deliveries (inbound_message_id) WHERE inbound_message_id IS NOT NULL;

-- +goose Down
DROP INDEX callback_deliveries_inbound_idx;
DROP INDEX inbound_messages_received_idx;
DROP INDEX conversations_unerased_idx;
ALTER TABLE conversations DROP COLUMN erased_at;
DROP INDEX contacts_unerased_idx;
ALTER TABLE contacts DROP COLUMN erasure, DROP COLUMN erased_at;
DROP INDEX messages_unredacted_created_idx;
ALTER TABLE messages DROP CONSTRAINT messages_redaction_check, DROP COLUMN redaction, DROP COLUMN redacted_at;
