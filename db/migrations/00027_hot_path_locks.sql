-- Fewer locks on the rows every send shares.
--
-- Usage counters get 256 shards instead of 16. A send counts itself in the
-- transaction that records it and holds its shard's row lock until that
-- transaction commits; with sixteen shards per tenant, channel and month,
-- the route workers of a busy tenant queued on each other's commits (4 ms a
-- send under load). Readers sum the shards, so nothing else changes.
--
-- Timeline entries and contact changes lose their own foreign key to
-- tenants. Each insert checked it with a share lock on the tenant's row, so
-- every write of every message of a tenant locked that one row (a multixact
-- per check under load). Their rows still go with their tenant: they cascade
-- from their message and their contact, which cascade from the tenant.

-- +goose Up
ALTER TABLE usage_counters DROP CONSTRAINT usage_counters_shard_check;
ALTER TABLE usage_counters ADD CONSTRAINT usage_counters_shard_check CHECK (shard BETWEEN 0 AND 255);
ALTER TABLE message_events DROP CONSTRAINT message_events_tenant_id_fkey;
ALTER TABLE contact_changes DROP CONSTRAINT contact_changes_tenant_id_fkey;

-- +goose Down
ALTER TABLE contact_changes ADD CONSTRAINT contact_changes_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;
ALTER TABLE message_events ADD CONSTRAINT message_events_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE;
-- The shards above 15 fold into the first sixteen.
INSERT INTO usage_counters (tenant_id, channel, month, shard, count)
SELECT tenant_id, channel, month, shard % 16, sum(count) FROM usage_counters WHERE shard > 15
GROUP BY tenant_id, channel, month, shard % 16
ON CONFLICT (tenant_id, channel, month, shard) DO UPDATE SET count = usage_counters.count + excluded.count;
DELETE FROM usage_counters WHERE shard > 15;
ALTER TABLE usage_counters DROP CONSTRAINT usage_counters_shard_check;
ALTER TABLE usage_counters ADD CONSTRAINT usage_counters_shard_check CHECK (shard BETWEEN 0 AND 15);
