-- Receipts that overtake the send they are about (Meta posts "sent", even
-- "delivered", before its answer to the send has been committed) are kept as
-- pending, with what authenticated them, and applied in the transaction that
-- records the message's external id, in the order of their own timestamps.
-- Maintenance deletes those still pending after the horizon.
--
-- The send is recorded in its tenant's scope, and a pending receipt of a
-- route tenants share (SES, SNS) has no tenant yet: a tenant's scope may see
-- a pending receipt when it came through one of the tenant's own accounts,
-- and no other.

-- +goose Up
ALTER TABLE webhook_receipts
    ADD COLUMN external_id text,
    ADD COLUMN at timestamptz,
    ADD COLUMN via_accounts uuid[] NOT NULL DEFAULT '{}',
    ADD COLUMN via_trusted boolean NOT NULL DEFAULT false,
    ADD COLUMN via_route text NOT NULL DEFAULT '';
CREATE INDEX webhook_receipts_pending_idx ON webhook_receipts (provider, external_id) WHERE outcome = 'pending';
CREATE INDEX webhook_receipts_pending_age_idx ON webhook_receipts (received_at) WHERE outcome IN ('pending', 'unknown');
DROP POLICY tenant_scope ON webhook_receipts;
CREATE POLICY tenant_scope ON webhook_receipts USING (
    tenant_id = herald_tenant() OR herald_platform()
    OR (outcome = 'pending' AND EXISTS (
        SELECT FROM channel_accounts a WHERE a.id = ANY (via_accounts) AND a.tenant_id = herald_tenant())));

-- +goose Down
DROP POLICY tenant_scope ON webhook_receipts;
CREATE POLICY tenant_scope ON webhook_receipts USING (tenant_id = herald_tenant() OR herald_platform());
DROP INDEX webhook_receipts_pending_age_idx;
DROP INDEX webhook_receipts_pending_idx;
ALTER TABLE webhook_receipts
    DROP COLUMN via_route,
    DROP COLUMN via_trusted,
    DROP COLUMN via_accounts,
    DROP COLUMN at,
    DROP COLUMN external_id;
