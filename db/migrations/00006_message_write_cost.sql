-- What a delivered message costs Postgres to write, through the data model.
--
-- A read receipt rewrites no index. Every status change used to add an
-- entry to each of the messages table's indexes, because `status` is in
-- seven of them (a key, an included column or a partial index's
-- condition), and Postgres updates a row in place (HOT) only when no
-- indexed column changes. The indexes now hold `phase`, the status with
-- READ folded into DELIVERED: it tells every state an index serves apart
-- (QUEUED for the queue and expiry, SENT for stale and overdue messages,
-- FAILED, CANCELLED and EXPIRED for the explorer) and does not change when
-- a delivered message is read, the most frequent change after the send.
-- The explorer's status filter reads the phase in the index and checks the
-- status on the row: exact for every status but READ and DELIVERED, which
-- share their entries.
--
-- Room for the update in place. A message's row changes four times in a
-- few seconds (the send's start, the send, delivered, read): a HOT update
-- needs free space on the row's own page, which a table filled to 100%
-- never has.
--
-- No row lock on a parent per message. The foreign keys from messages (to
-- the tenant, event, account, template, contact and conversation), from
-- receipts (to the tenant) and from timeline entries (to the message) had
-- Postgres look up and share-lock the parent row for every insert: twelve
-- statements inside each delivered message, the costliest on the tenant's
-- one row, which every concurrent send of the tenant locked (a MultiXact
-- each time). Their rows are written only by Herald's store, from ids read
-- in the same transaction, and the parents are never deleted while a
-- message names them: tenants, accounts, templates, contacts and
-- conversations are never deleted (suspended or disabled instead), an
-- event only once no message names it (PruneEvents), and retention
-- deletes a message's timeline and receipts before the message
-- (PruneMessages). What the keys guarded against does not happen; what
-- they cost happened on every send. A fallback's link to its original
-- stays a foreign key: retention relies on it to clear the link.

-- +goose Up
ALTER TABLE messages DROP CONSTRAINT messages_tenant_id_fkey,
    DROP CONSTRAINT messages_event_id_fkey,
    DROP CONSTRAINT messages_channel_account_id_fkey,
    DROP CONSTRAINT messages_template_id_fkey,
    DROP CONSTRAINT messages_contact_id_fkey,
    DROP CONSTRAINT messages_conversation_id_fkey;
ALTER TABLE webhook_receipts DROP CONSTRAINT webhook_receipts_tenant_id_fkey;
ALTER TABLE message_events DROP CONSTRAINT message_events_message_id_fkey;

DROP INDEX messages_status_created_idx;
DROP INDEX messages_channel_created_idx;
DROP INDEX messages_trigger_created_idx;
DROP INDEX messages_queued_idx;
DROP INDEX messages_sent_idx;
DROP INDEX messages_expiry_idx;
DROP INDEX messages_stale_list_idx;

-- Adding a stored column rewrites the table, which then takes the new
-- fill factor on every page.
ALTER TABLE messages SET (fillfactor = 75);
ALTER TABLE messages
    ADD COLUMN phase text NOT NULL GENERATED ALWAYS AS (CASE WHEN status = 'READ' THEN 'DELIVERED' ELSE status END) STORED;

-- The queue (stuck messages, the dashboard's waiting work), expiry, and
-- SENT messages without a receipt (stale marking, overdue deadlines).
CREATE INDEX messages_queued_idx ON messages (queued_at) WHERE phase = 'QUEUED';
CREATE INDEX messages_expiry_idx ON messages (expires_at) WHERE expires_at IS NOT NULL AND phase = 'QUEUED';
CREATE INDEX messages_sent_idx ON messages (sent_at) WHERE phase = 'SENT' AND stale_at IS NULL;
-- The explorer's filters (see 00001_baseline.sql): each starts with the
-- tenant and the filtered column, ends in the page order, and carries the
-- other filters' columns.
CREATE INDEX messages_phase_created_idx ON messages (tenant_id, phase, created_at DESC, id DESC) INCLUDE (channel, trigger_event);
CREATE INDEX messages_channel_created_idx ON messages (tenant_id, channel, created_at DESC, id DESC) INCLUDE (phase, trigger_event);
CREATE INDEX messages_trigger_created_idx ON messages (tenant_id, trigger_event, created_at DESC, id DESC) INCLUDE (phase, channel);
-- The explorer's list of stale messages.
CREATE INDEX messages_stale_list_idx ON messages (tenant_id, created_at DESC) WHERE phase = 'SENT' AND stale_at IS NOT NULL;

-- +goose Down
DROP INDEX messages_stale_list_idx;
DROP INDEX messages_trigger_created_idx;
DROP INDEX messages_channel_created_idx;
DROP INDEX messages_phase_created_idx;
DROP INDEX messages_sent_idx;
DROP INDEX messages_expiry_idx;
DROP INDEX messages_queued_idx;
ALTER TABLE messages DROP COLUMN phase;
ALTER TABLE messages RESET (fillfactor);
CREATE INDEX messages_queued_idx ON messages (queued_at) WHERE status = 'QUEUED';
CREATE INDEX messages_sent_idx ON messages (sent_at) WHERE status = 'SENT' AND stale_at IS NULL;
CREATE INDEX messages_expiry_idx ON messages (expires_at) WHERE expires_at IS NOT NULL AND status = 'QUEUED';
CREATE INDEX messages_status_created_idx ON messages (tenant_id, status, created_at DESC, id DESC) INCLUDE (channel, trigger_event);
CREATE INDEX messages_channel_created_idx ON messages (tenant_id, channel, created_at DESC, id DESC) INCLUDE (status, trigger_event);
CREATE INDEX messages_trigger_created_idx ON messages (tenant_id, trigger_event, created_at DESC, id DESC) INCLUDE (status, channel);
CREATE INDEX messages_stale_list_idx ON messages (tenant_id, created_at DESC) WHERE status = 'SENT' AND stale_at IS NOT NULL;
ALTER TABLE message_events ADD CONSTRAINT message_events_message_id_fkey
    FOREIGN KEY (message_id) REFERENCES messages(id) ON DELETE CASCADE;
ALTER TABLE webhook_receipts ADD CONSTRAINT webhook_receipts_tenant_id_fkey
    FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;
ALTER TABLE messages ADD CONSTRAINT messages_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE,
    ADD CONSTRAINT messages_event_id_fkey FOREIGN KEY (event_id) REFERENCES events(id) ON DELETE SET NULL,
    ADD CONSTRAINT messages_channel_account_id_fkey FOREIGN KEY (channel_account_id) REFERENCES channel_accounts(id) ON DELETE SET NULL,
    ADD CONSTRAINT messages_template_id_fkey FOREIGN KEY (template_id) REFERENCES templates(id) ON DELETE SET NULL,
    ADD CONSTRAINT messages_contact_id_fkey FOREIGN KEY (contact_id) REFERENCES contacts(id) ON DELETE SET NULL,
    ADD CONSTRAINT messages_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES conversations(id) ON DELETE SET NULL;
