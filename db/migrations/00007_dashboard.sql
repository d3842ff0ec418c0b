-- Dashboard: the count of a tenant's stale messages (and the messages
-- explorer's stale filter) without reading every message of the tenant.
-- Few messages are ever stale, so the partial index stays small, and the
-- send path never writes it (only maintenance marks messages stale).

-- +goose Up
CREATE INDEX messages_stale_idx ON messages (tenant_id, stale_at DESC) WHERE stale_at IS NOT NULL;

-- +goose Down
DROP INDEX messages_stale_idx;
