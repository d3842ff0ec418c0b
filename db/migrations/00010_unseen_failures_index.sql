-- The foreign receipts kept as a channel account's (00009), counted on the
-- account's page. webhook_receipts is large, so the index is built
-- CONCURRENTLY, outside a transaction, after dropping an invalid one a
-- failed run left; it holds only the account's rows.

-- +goose NO TRANSACTION
-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS webhook_receipts_account_idx;
CREATE INDEX CONCURRENTLY webhook_receipts_account_idx ON webhook_receipts (tenant_id, channel_account_id, received_at)
    WHERE channel_account_id IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS webhook_receipts_account_idx;
