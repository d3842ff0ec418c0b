-- Retention deletes old messages in batches; every row it deletes fires the
-- foreign keys that point at it, one lookup per row. Those lookups name only
-- the referencing column (`WHERE $1 = message_id`), so an index that starts
-- with tenant_id cannot serve them and each one read the whole table:
-- pruning a million messages would have scanned message_events a million
-- times. The indexes below lead with the referencing column instead. The
-- three that replace a (tenant_id, x) index serve the tenant-scoped queries
-- as well (x is a unique id, tenant_id is then checked on a row or two), so
-- the hot path keeps the same number of indexes to maintain.
--
-- webhook_receipts gets an index on message_id so a message's receipts go in
-- the same batch as the message, and contact_changes one on event_id for the
-- ON DELETE SET NULL that deleting an event fires.
--
-- Autovacuum: with the default scale factor (20%) a table of ten million
-- messages is vacuumed only after two million dead rows, so a day of pruning
-- would leave its dead rows and bloated index pages in place until the next
-- day's. One percent (plus a floor) lets vacuum follow the pruner.
--
-- Built CONCURRENTLY (outside a transaction) so that migrating a large
-- database does not block writes; each index is dropped first in case a
-- failed earlier run left an invalid one behind.

-- +goose NO TRANSACTION
-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS message_events_message_id_idx;
CREATE INDEX CONCURRENTLY message_events_message_id_idx ON message_events (message_id, id);
DROP INDEX CONCURRENTLY IF EXISTS message_events_message_idx;

DROP INDEX CONCURRENTLY IF EXISTS messages_event_id_idx;
CREATE INDEX CONCURRENTLY messages_event_id_idx ON messages (event_id) WHERE event_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS messages_event_idx;

DROP INDEX CONCURRENTLY IF EXISTS messages_fallback_of_id_idx;
CREATE INDEX CONCURRENTLY messages_fallback_of_id_idx ON messages (fallback_of) WHERE fallback_of IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS messages_fallback_of_idx;

DROP INDEX CONCURRENTLY IF EXISTS webhook_receipts_message_idx;
CREATE INDEX CONCURRENTLY webhook_receipts_message_idx ON webhook_receipts (message_id) WHERE message_id IS NOT NULL;

DROP INDEX CONCURRENTLY IF EXISTS contact_changes_event_idx;
CREATE INDEX CONCURRENTLY contact_changes_event_idx ON contact_changes (event_id) WHERE event_id IS NOT NULL;

ALTER TABLE messages SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 10000,
    autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE message_events SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 10000,
    autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE events SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 10000,
    autovacuum_analyze_scale_factor = 0.02);
ALTER TABLE webhook_receipts SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 10000,
    autovacuum_analyze_scale_factor = 0.02);

-- +goose Down
ALTER TABLE webhook_receipts RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_analyze_scale_factor);
ALTER TABLE events RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_analyze_scale_factor);
ALTER TABLE message_events RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_analyze_scale_factor);
ALTER TABLE messages RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_analyze_scale_factor);
DROP INDEX CONCURRENTLY IF EXISTS contact_changes_event_idx;
DROP INDEX CONCURRENTLY IF EXISTS webhook_receipts_message_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_fallback_of_idx ON messages (tenant_id, fallback_of) WHERE fallback_of IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS messages_fallback_of_id_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_event_idx ON messages (tenant_id, event_id);
DROP INDEX CONCURRENTLY IF EXISTS messages_event_id_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS message_events_message_idx ON message_events (tenant_id, message_id, id);
DROP INDEX CONCURRENTLY IF EXISTS message_events_message_id_idx;
