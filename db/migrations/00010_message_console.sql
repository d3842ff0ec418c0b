-- The messages explorer's filters: "did we notify this passenger?" looks a
-- phone number or e-mail address up exactly, and the dashboard's links list
-- the failed and the stale messages. Without these a tenant's whole message
-- history would be scanned for a handful of rows. The two partial indexes
-- hold only the rare rows they serve, so sending pays almost nothing for them.

-- +goose Up
CREATE INDEX messages_address_idx ON messages (tenant_id, to_address, created_at DESC);
CREATE INDEX messages_failed_idx ON messages (tenant_id, created_at DESC) WHERE status = 'FAILED';
CREATE INDEX messages_stale_list_idx ON messages (tenant_id, created_at DESC) WHERE status = 'SENT' AND stale_at IS NOT NULL;

-- +goose Down
DROP INDEX messages_stale_list_idx;
DROP INDEX messages_failed_idx;
DROP INDEX messages_address_idx;
