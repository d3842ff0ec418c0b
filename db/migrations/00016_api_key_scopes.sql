-- API keys carry scopes: what a key may do through the API.
--   send     submit notifications, resend
--   read     GET everything
--   manage   templates, channel accounts, delivery deadlines, contacts,
--            callback endpoints, rescheduling and cancelling
--   approve  approve or reject notifications awaiting approval
-- Keys that exist before this migration keep what they could do until now
-- that a booking system needs: send and read. Managing and approving are
-- granted explicitly, on a new key, by the tenant's manager.

-- +goose Up
ALTER TABLE api_keys
    ADD COLUMN scopes text[] NOT NULL DEFAULT ARRAY['send', 'read']::text[],
    ADD CONSTRAINT api_keys_scopes_known CHECK (
        cardinality(scopes) > 0 AND scopes <@ ARRAY['send', 'read', 'manage', 'approve']::text[]
    );

-- The authentication lookup returns the scopes with the key, still in one
-- round trip.
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

-- +goose Down
DROP FUNCTION herald_api_key_auth(bytea);
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
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_known, DROP COLUMN scopes;
