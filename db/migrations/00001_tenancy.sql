-- Tenancy and identity: tenants, console users, API keys and the audit log,
-- with row-level security on every tenant-owned table.

-- +goose Up

-- The tenant a transaction is scoped to, set with SET LOCAL by the store.
-- An unset or emptied setting yields NULL, which matches no row.
-- +goose StatementBegin
CREATE FUNCTION herald_tenant() RETURNS uuid
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT nullif(current_setting('herald.tenant_id', true), '')::uuid
$$;
-- +goose StatementEnd

-- True only inside an explicitly platform-scoped transaction.
-- +goose StatementBegin
CREATE FUNCTION herald_platform() RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT coalesce(current_setting('herald.scope', true), '') = 'platform'
$$;
-- +goose StatementEnd

CREATE TABLE tenants (
    id             uuid PRIMARY KEY,
    slug           text NOT NULL CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$'),
    name           text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    plan           text NOT NULL DEFAULT 'FREE' CHECK (plan IN ('FREE', 'PRO', 'ENTERPRISE')),
    default_locale text NOT NULL DEFAULT 'de-DE',
    timezone       text NOT NULL DEFAULT 'Europe/Berlin',
    retention_days integer CHECK (retention_days BETWEEN 1 AND 3650),
    status         text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'SUSPENDED')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tenants_slug_key UNIQUE (slug)
);

CREATE TABLE users (
    id              uuid PRIMARY KEY,
    tenant_id       uuid REFERENCES tenants (id) ON DELETE CASCADE,
    email           text NOT NULL CHECK (email = lower(email) AND email LIKE '%_@_%'),
    name            text NOT NULL DEFAULT '',
    password_hash   bytea NOT NULL,
    role            text NOT NULL CHECK (role IN ('operator', 'manager', 'support')),
    session_version integer NOT NULL DEFAULT 1,
    disabled_at     timestamptz,
    last_login_at   timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    -- Operators run the platform; everyone else belongs to exactly one tenant.
    CONSTRAINT users_role_tenant CHECK ((role = 'operator') = (tenant_id IS NULL))
);
CREATE UNIQUE INDEX users_email_key ON users (email);
CREATE INDEX users_tenant_idx ON users (tenant_id, created_at DESC);

CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    prefix       text NOT NULL,
    hash         bytea NOT NULL,
    created_by   uuid REFERENCES users (id) ON DELETE SET NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT api_keys_hash_key UNIQUE (hash)
);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id, created_at DESC);

CREATE TABLE audit_log (
    id          bigserial PRIMARY KEY,
    tenant_id   uuid REFERENCES tenants (id) ON DELETE CASCADE,
    actor_type  text NOT NULL CHECK (actor_type IN ('user', 'api_key', 'system', 'cli')),
    actor_id    uuid,
    actor_label text NOT NULL DEFAULT '',
    action      text NOT NULL,
    target_type text NOT NULL DEFAULT '',
    target_id   text NOT NULL DEFAULT '',
    metadata    jsonb NOT NULL DEFAULT '{}',
    at          timestamptz NOT NULL DEFAULT now(),
    prev_hash   bytea,
    hash        bytea NOT NULL
);
CREATE INDEX audit_log_tenant_idx ON audit_log (tenant_id, id DESC);
CREATE INDEX audit_log_platform_idx ON audit_log (id DESC) WHERE tenant_id IS NULL;

-- The canonical text an audit entry's hash covers. Verification recomputes it.
-- +goose StatementBegin
CREATE FUNCTION audit_log_digest(e audit_log) RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
  SELECT sha256(convert_to(concat_ws('|',
      coalesce(encode(e.prev_hash, 'hex'), ''),
      coalesce(e.tenant_id::text, ''),
      e.actor_type, coalesce(e.actor_id::text, ''), e.actor_label,
      e.action, e.target_type, e.target_id, e.metadata::text,
      to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')), 'UTF8'))
$$;
-- +goose StatementEnd

-- Chains each entry to the previous one of the same tenant (or of the
-- platform). The advisory lock serialises writers of one chain, and the id is
-- drawn after the lock so that id order is chain order.
-- +goose StatementBegin
CREATE FUNCTION audit_log_chain() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('herald.audit'), hashtext(coalesce(NEW.tenant_id::text, 'platform')));
  NEW.id := nextval(pg_get_serial_sequence('audit_log', 'id'));
  SELECT a.hash INTO NEW.prev_hash FROM audit_log a
   WHERE a.tenant_id IS NOT DISTINCT FROM NEW.tenant_id
   ORDER BY a.id DESC LIMIT 1;
  NEW.hash := audit_log_digest(NEW);
  RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_log_chain BEFORE INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_chain();

-- The log is append-only: entries are never edited (retention may delete the
-- oldest, which verification tolerates by trusting the first prev_hash).
-- +goose StatementBegin
CREATE FUNCTION audit_log_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log entries cannot be changed' USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd
CREATE TRIGGER audit_log_immutable BEFORE UPDATE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_immutable();

-- Row-level security. FORCE makes it apply to the table owner, which is the
-- role Herald connects as.
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON tenants USING (id = herald_tenant() OR herald_platform());

ALTER TABLE users ENABLE ROW LEVEL SECURITY;
ALTER TABLE users FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON users USING (tenant_id = herald_tenant() OR herald_platform());

ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON api_keys USING (tenant_id = herald_tenant() OR herald_platform());

ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON audit_log USING (tenant_id = herald_tenant() OR herald_platform());

-- +goose Down
DROP TABLE audit_log CASCADE;
DROP FUNCTION IF EXISTS audit_log_immutable();
DROP FUNCTION IF EXISTS audit_log_chain();
DROP TABLE api_keys;
DROP TABLE users;
DROP TABLE tenants;
DROP FUNCTION herald_platform();
DROP FUNCTION herald_tenant();
