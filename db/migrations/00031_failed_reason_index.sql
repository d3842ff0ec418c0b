-- The messages explorer filters on failed_reason: the dashboard's top
-- failure reasons link to the messages that failed for each. Like the
-- explorer's other filters the index starts with the tenant and the
-- filtered column and ends in the explorer's order. It is partial: only
-- failed messages (and those a fallback replaced) carry a reason, and the
-- explorer's plans see the value, so `failed_reason = $1` proves the
-- index's condition. Built CONCURRENTLY so that migrating a large database
-- does not block writes.

-- +goose NO TRANSACTION
-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS messages_failed_reason_idx;
CREATE INDEX CONCURRENTLY messages_failed_reason_idx ON messages (tenant_id, failed_reason, created_at DESC, id DESC)
    WHERE failed_reason IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS messages_failed_reason_idx;
