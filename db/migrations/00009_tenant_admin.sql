-- Console administration of tenants and their users: why a tenant is
-- suspended, temporary passwords that must be replaced at the first
-- sign-in, and an API-key lookup that also says whether the key's tenant
-- is suspended.

-- +goose Up

ALTER TABLE tenants
    ADD COLUMN suspended_at     timestamptz,
    ADD COLUMN suspended_reason text NOT NULL DEFAULT '' CHECK (length(suspended_reason) <= 500);

-- Tenants suspended before the console (the CLI could always suspend) get
-- a suspension time and reason, so that the check below holds for them.
-- The tenants table forces row-level security even on its owner: the
-- update runs in the platform scope, for this migration's transaction only.
SELECT set_config('herald.scope', 'platform', true);
UPDATE tenants SET suspended_at = updated_at, suspended_reason = 'Suspended before the console'
WHERE status = 'SUSPENDED' AND suspended_at IS NULL;

-- A suspended tenant says why; an active one carries no stale reason.
ALTER TABLE tenants
    ADD CONSTRAINT tenants_suspension CHECK ((status = 'SUSPENDED') = (suspended_at IS NOT NULL));

-- Set when a manager or operator hands out a generated password: the user
-- must choose their own before anything else.
ALTER TABLE users ADD COLUMN must_change_password boolean NOT NULL DEFAULT false;

CREATE INDEX tenants_created_idx ON tenants (created_at DESC, id DESC);

-- Like herald_api_key_by_hash, with the key's tenant status, so that the
-- API refuses the keys of a suspended tenant without a second round trip.
-- +goose StatementBegin
CREATE FUNCTION herald_api_key_auth(h bytea)
RETURNS TABLE (
    id uuid, tenant_id uuid, name text, prefix text, hash bytea, created_by uuid,
    last_used_at timestamptz, revoked_at timestamptz, created_at timestamptz, tenant_status text
)
LANGUAGE plpgsql AS $$
DECLARE
  prev text := coalesce(current_setting('herald.scope', true), '');
BEGIN
  PERFORM set_config('herald.scope', 'platform', true);
  RETURN QUERY
    SELECT k.id, k.tenant_id, k.name, k.prefix, k.hash, k.created_by,
           k.last_used_at, k.revoked_at, k.created_at, t.status
    FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
    WHERE k.hash = h;
  PERFORM set_config('herald.scope', prev, true);
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION herald_api_key_auth(bytea);
DROP INDEX tenants_created_idx;
ALTER TABLE users DROP COLUMN must_change_password;
ALTER TABLE tenants DROP CONSTRAINT tenants_suspension,
    DROP COLUMN suspended_reason,
    DROP COLUMN suspended_at;
