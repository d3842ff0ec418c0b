-- Limits in one statement.
--
-- The API's authentication lookup also returns the key's tenant's locale
-- and time zone: intake's limits need the tenant's country (which SMS are
-- international) and its day (when the daily caps start over), and reading
-- them with the key, which a process caches, spares every request a read of
-- the tenant's row. A changed locale or zone reaches intake within the API
-- key cache's TTL, as a suspension does.

-- +goose Up
DROP FUNCTION herald_api_key_auth(bytea);
-- +goose StatementBegin
CREATE FUNCTION herald_api_key_auth(h bytea)
RETURNS TABLE (
    id uuid, tenant_id uuid, name text, prefix text, hash bytea, created_by uuid,
    last_used_at timestamptz, revoked_at timestamptz, created_at timestamptz, scopes text[], tenant_status text,
    tenant_locale text, tenant_timezone text
)
LANGUAGE plpgsql AS $$
DECLARE
  prev text := coalesce(current_setting('herald.scope', true), '');
BEGIN
  PERFORM set_config('herald.scope', 'platform', true);
  RETURN QUERY
    SELECT k.id, k.tenant_id, k.name, k.prefix, k.hash, k.created_by,
           k.last_used_at, k.revoked_at, k.created_at, k.scopes, t.status, t.default_locale, t.timezone
    FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
    WHERE k.hash = h;
  PERFORM set_config('herald.scope', prev, true);
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION herald_api_key_auth(bytea);
-- +goose StatementBegin
CREATE FUNCTION herald_api_key_auth(h bytea)
RETURNS TABLE (
    id uuid, tenant_id uuid, name text, prefix text, hash bytea, created_by uuid,
    last_used_at timestamptz, revoked_at timestamptz, created_at timestamptz, scopes text[], tenant_status text
)
LANGUAGE plpgsql AS $$
DECLARE
  prev text := coalesce(current_setting('herald.scope', true), '');
BEGIN
  PERFORM set_config('herald.scope', 'platform', true);
  RETURN QUERY
    SELECT k.id, k.tenant_id, k.name, k.prefix, k.hash, k.created_by,
           k.last_used_at, k.revoked_at, k.created_at, k.scopes, t.status
    FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
    WHERE k.hash = h;
  PERFORM set_config('herald.scope', prev, true);
END
$$;
-- +goose StatementEnd
