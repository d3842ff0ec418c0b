-- The channel-account pages: an account's recent messages and its history
-- (status changes, edits, breaker transitions) without scanning the
-- tenant's whole message table or audit log.

-- +goose Up
CREATE INDEX messages_account_idx ON messages (tenant_id, channel_account_id, created_at DESC)
    WHERE channel_account_id IS NOT NULL;
CREATE INDEX audit_log_target_idx ON audit_log (tenant_id, target_type, target_id, id DESC);

-- +goose Down
DROP INDEX audit_log_target_idx;
DROP INDEX messages_account_idx;
