-- Console sign-in: failed attempts counted per account and per network
-- address, shared by every web process.

-- +goose Up

-- Platform data: no tenant owns a row (a key names an e-mail address or an
-- IP address), so only platform-scoped transactions may touch it.
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

-- +goose Down
DROP TABLE login_failures;
