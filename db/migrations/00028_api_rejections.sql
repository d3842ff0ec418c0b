-- Rejected API requests are kept per tenant so that a tenant can see why
-- nothing was sent: what was asked, what Herald answered, when. The body is
-- stored redacted (the application masks it before it gets here).
--
-- The table is a ring of at most N rows per tenant: a request takes the
-- tenant's next sequence number from api_rejection_counters (an upsert that
-- locks the tenant's counter row until the statement's transaction ends) and
-- writes slot seq % N, overwriting the oldest. Taking the number and writing
-- the row is one statement, so concurrent rejections never race a count
-- against a delete, the cap is exact, and a flood of bad requests rewrites
-- the same N rows instead of growing the table. Retention deletes rows older
-- than the tenant's retention; their slots are reused later.
--
-- Events keep the routing decision per recipient and channel (template and
-- locale path, account, or why a channel was skipped) in routing, written by
-- the UPDATE that already marks an event ROUTED.

-- +goose Up
CREATE TABLE api_rejection_counters (
    tenant_id uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    seq bigint NOT NULL
);

CREATE TABLE api_rejections (
    tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    slot integer NOT NULL,
    id uuid NOT NULL,
    seq bigint NOT NULL,
    at timestamptz NOT NULL,
    method text NOT NULL,
    path text NOT NULL,
    status integer NOT NULL,
    code text NOT NULL,
    message text NOT NULL,
    field text,
    event_id text,
    api_key_prefix text,
    request_id text NOT NULL DEFAULT '',
    -- The request body, redacted and capped, as text (it need not be JSON).
    body text NOT NULL DEFAULT '',
    body_size integer NOT NULL DEFAULT 0,
    -- Rejections of the tenant not kept just before this one, because they
    -- came faster than Herald records them.
    suppressed integer NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, slot)
);
CREATE UNIQUE INDEX api_rejections_id_idx ON api_rejections (tenant_id, id);
CREATE INDEX api_rejections_recent_idx ON api_rejections (tenant_id, at DESC, id DESC);
CREATE INDEX api_rejections_event_idx ON api_rejections (tenant_id, event_id, at DESC, id DESC) WHERE event_id IS NOT NULL;

ALTER TABLE api_rejection_counters ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_rejection_counters FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON api_rejection_counters USING (tenant_id = herald_tenant() OR herald_platform());
ALTER TABLE api_rejections ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_rejections FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON api_rejections USING (tenant_id = herald_tenant() OR herald_platform());

-- A rejected key (unknown secret, revoked, suspended tenant) still names
-- its tenant by its visible prefix; this finds the tenant without opening
-- the platform scope to the caller. No tenant when the prefix is unknown or
-- (it never is in practice) shared by keys of two tenants.
CREATE INDEX api_keys_prefix_idx ON api_keys (prefix);
-- +goose StatementBegin
CREATE FUNCTION herald_api_key_prefix_tenant(p text)
RETURNS uuid
LANGUAGE plpgsql AS $$
DECLARE
  prev text := coalesce(current_setting('herald.scope', true), '');
  found uuid;
BEGIN
  PERFORM set_config('herald.scope', 'platform', true);
  SELECT CASE WHEN count(DISTINCT k.tenant_id) = 1 THEN min(k.tenant_id::text)::uuid END
    INTO found FROM api_keys k WHERE k.prefix = p;
  PERFORM set_config('herald.scope', prev, true);
  RETURN found;
END
$$;
-- +goose StatementEnd

ALTER TABLE events ADD COLUMN routing jsonb;

-- +goose Down
ALTER TABLE events DROP COLUMN routing;
DROP FUNCTION herald_api_key_prefix_tenant(text);
DROP INDEX api_keys_prefix_idx;
DROP TABLE api_rejections;
DROP TABLE api_rejection_counters;
