-- Per-tenant identity and sign-in throttling that cannot be turned against
-- the people it protects.
--
-- A console account is unique per (tenant, e-mail address); operators, who
-- belong to no tenant, are unique among operators. One person may hold
-- accounts in several tenants under one address, and inviting an address
-- never reveals whether it is used in another tenant.
--
-- login_throttle replaces login_failures: counts are kept per (account,
-- client address), per client address and per account, each with a time
-- before which the next attempt is refused (exponential backoff), instead
-- of a lock that anyone could set off by typing someone's address.
--
-- login_failure_windows aggregates failed sign-ins for the audit log, which
-- is append-only: one row per (address typed, client address) counts the
-- failures of the current window, and the audit log gets one entry when a
-- window opens, one when throttling starts and one summary when it closes.

-- +goose Up
DROP INDEX users_email_key;
CREATE UNIQUE INDEX users_tenant_email_key ON users (tenant_id, email) WHERE tenant_id IS NOT NULL;
CREATE UNIQUE INDEX users_operator_email_key ON users (email) WHERE tenant_id IS NULL;
-- Sign-in looks accounts up by address alone.
CREATE INDEX users_email_idx ON users (email);

DROP TABLE login_failures;

-- Platform data: a key names an e-mail address, a client address or both,
-- never a tenant, so only platform-scoped transactions may touch it.
CREATE TABLE login_throttle (
    key           text PRIMARY KEY,
    failures      integer NOT NULL CHECK (failures >= 0),
    last_at       timestamptz NOT NULL,
    blocked_until timestamptz
);
CREATE INDEX login_throttle_last_idx ON login_throttle (last_at);

ALTER TABLE login_throttle ENABLE ROW LEVEL SECURITY;
ALTER TABLE login_throttle FORCE ROW LEVEL SECURITY;
CREATE POLICY login_throttle_platform ON login_throttle
    USING (herald_platform()) WITH CHECK (herald_platform());

CREATE TABLE login_failure_windows (
    email        text NOT NULL,
    client       text NOT NULL,
    failures     integer NOT NULL DEFAULT 0 CHECK (failures >= 0),
    refused      integer NOT NULL DEFAULT 0 CHECK (refused >= 0),
    first_at     timestamptz NOT NULL,
    last_at      timestamptz NOT NULL,
    throttled_at timestamptz,
    PRIMARY KEY (email, client)
);
CREATE INDEX login_failure_windows_first_idx ON login_failure_windows (first_at);

ALTER TABLE login_failure_windows ENABLE ROW LEVEL SECURITY;
ALTER TABLE login_failure_windows FORCE ROW LEVEL SECURITY;
CREATE POLICY login_failure_windows_platform ON login_failure_windows
    USING (herald_platform()) WITH CHECK (herald_platform());

-- +goose Down
DROP TABLE login_failure_windows;
DROP TABLE login_throttle;
CREATE TABLE login_failures (
    key          text PRIMARY KEY,
    failures     integer NOT NULL CHECK (failures > 0),
    window_start timestamptz NOT NULL,
    last_at      timestamptz NOT NULL
);
CREATE INDEX login_failures_last_idx ON login_failures (last_at);
ALTER TABLE login_failures ENABLE ROW LEVEL SECURITY;
ALTER TABLE login_failures FORCE ROW LEVEL SECURITY;
CREATE POLICY login_failures_platform ON login_failures
    USING (herald_platform()) WITH CHECK (herald_platform());
DROP INDEX users_email_idx;
DROP INDEX users_operator_email_key;
DROP INDEX users_tenant_email_key;
CREATE UNIQUE INDEX users_email_key ON users (email);
