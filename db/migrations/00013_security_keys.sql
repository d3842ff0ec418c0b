-- Security keys (WebAuthn) as a second factor of console sign-in.
--
-- user_security_keys holds a user's registered keys: the credential id the
-- authenticator chose (unique across the platform, so an assertion names
-- one key only), the COSE public key, and the library's credential record
-- (flags, transports, AAGUID) as JSON. sign_count is the authenticator's
-- signature counter as last seen: a sign-in raises it in one UPDATE ...
-- WHERE sign_count < new, so a counter that does not move forward (a
-- cloned key, or a replay) is refused, even for two requests at once.
-- Authenticators without a counter always send 0; 0 after 0 passes.
-- tenant_id is the user's tenant, NULL for an operator, as in
-- user_second_factors.
--
-- webauthn_ceremonies holds the challenge of a registration or sign-in
-- under way, one per user and purpose (a new one replaces the old): the
-- library's session data, the session it belongs to (binding) and the
-- user's session version, and when it expires. Finishing deletes it first,
-- so a challenge answers once whatever the outcome.

-- +goose Up
CREATE TABLE user_security_keys (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tenant_id     uuid REFERENCES tenants (id) ON DELETE CASCADE,
    name          text NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
    credential_id bytea NOT NULL UNIQUE,
    public_key    bytea NOT NULL,
    sign_count    bigint NOT NULL DEFAULT 0,
    credential    jsonb NOT NULL,
    created_at    timestamptz NOT NULL,
    last_used_at  timestamptz
);
CREATE INDEX user_security_keys_user_idx ON user_security_keys (user_id);
CREATE INDEX user_security_keys_tenant_idx ON user_security_keys (tenant_id);
ALTER TABLE user_security_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE user_security_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON user_security_keys USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

CREATE TABLE webauthn_ceremonies (
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose         text NOT NULL CHECK (purpose IN ('register', 'sign_in')),
    tenant_id       uuid REFERENCES tenants (id) ON DELETE CASCADE,
    binding         text NOT NULL,
    session_version integer NOT NULL,
    session_data    jsonb NOT NULL,
    expires_at      timestamptz NOT NULL,
    PRIMARY KEY (user_id, purpose)
);
CREATE INDEX webauthn_ceremonies_tenant_idx ON webauthn_ceremonies (tenant_id);
ALTER TABLE webauthn_ceremonies ENABLE ROW LEVEL SECURITY;
ALTER TABLE webauthn_ceremonies FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON webauthn_ceremonies USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- +goose Down
DROP TABLE webauthn_ceremonies;
DROP TABLE user_security_keys;
