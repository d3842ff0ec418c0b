-- Two-factor sign-in for the console.
--
-- user_second_factors holds a user's TOTP (RFC 6238) secret, sealed with
-- the deployment's secret key (app.Sealer) like channel secrets, never in
-- clear. A row without confirmed_at is an enrolment begun but not yet
-- proven with a code; sign-in asks for a second factor only once it is
-- confirmed. last_step is the time step of the last code accepted: a code
-- is taken by raising it in one UPDATE ... WHERE last_step < step, so the
-- same code (or an older one) cannot be used twice, even by two requests
-- at once.
--
-- user_recovery_codes are the single-use codes shown once at enrolment;
-- only their SHA-256 is kept (they are random, 80 bits, so a fast hash is
-- enough). A code is used by setting used_at where it is still null.
--
-- tenants.require_two_factor: a manager requires a second factor of the
-- tenant's users. platform_settings is the platform's one row of settings;
-- require_operator_two_factor is the operators' counterpart.

-- +goose Up
CREATE TABLE user_second_factors (
    user_id      uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    tenant_id    uuid REFERENCES tenants (id) ON DELETE CASCADE,
    secret       bytea NOT NULL,
    key_id       text NOT NULL,
    last_step    bigint NOT NULL DEFAULT 0,
    confirmed_at timestamptz,
    created_at   timestamptz NOT NULL
);
CREATE INDEX user_second_factors_tenant_idx ON user_second_factors (tenant_id);
ALTER TABLE user_second_factors ENABLE ROW LEVEL SECURITY;
ALTER TABLE user_second_factors FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON user_second_factors USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

CREATE TABLE user_recovery_codes (
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tenant_id  uuid REFERENCES tenants (id) ON DELETE CASCADE,
    code_hash  bytea NOT NULL,
    used_at    timestamptz,
    PRIMARY KEY (user_id, code_hash)
);
CREATE INDEX user_recovery_codes_tenant_idx ON user_recovery_codes (tenant_id);
ALTER TABLE user_recovery_codes ENABLE ROW LEVEL SECURITY;
ALTER TABLE user_recovery_codes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON user_recovery_codes USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

ALTER TABLE tenants ADD COLUMN require_two_factor boolean NOT NULL DEFAULT false;

CREATE TABLE platform_settings (
    id                          boolean PRIMARY KEY DEFAULT true CHECK (id),
    require_operator_two_factor boolean NOT NULL DEFAULT false,
    updated_at                  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO platform_settings (id) VALUES (true);
ALTER TABLE platform_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE platform_settings FORCE ROW LEVEL SECURITY;
-- Every scope reads it (sign-in asks whether an operator must enrol);
-- only the platform changes it.
CREATE POLICY platform_settings_read ON platform_settings FOR SELECT USING (true);
CREATE POLICY platform_settings_write ON platform_settings FOR UPDATE
    USING ((SELECT herald_platform())) WITH CHECK ((SELECT herald_platform()));

-- +goose Down
DROP TABLE platform_settings;
ALTER TABLE tenants DROP COLUMN require_two_factor;
DROP TABLE user_recovery_codes;
DROP TABLE user_second_factors;
