-- Staff hear first: alerts to a tenant's own staff.
--
-- A tenant's alert settings (at most one row per tenant): the staff
-- e-mail addresses, its Slack and Microsoft Teams incoming-webhook URLs
-- (secrets: sealed with the channel secrets' key, never shown again; the
-- host is kept apart so the console can say where alerts go), the minutes
-- after which an open breaker, a broadcast waiting for approval and an
-- unanswered passenger reply are reported, and the local time of the
-- daily digest (NULL: no digest).
--
-- staff_alerts is what was raised and where it went. Raising takes a
-- transaction-level advisory lock on (tenant, kind, subject) before it
-- looks for an earlier alert within the cool-down, so two workers or two
-- checks never raise one alert twice.

-- +goose Up
CREATE TABLE alert_settings (
    tenant_id          uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    staff_emails       text[] NOT NULL DEFAULT '{}' CHECK (cardinality(staff_emails) <= 20),
    webhooks           bytea,
    webhooks_key_id    text,
    slack_host         text NOT NULL DEFAULT '' CHECK (length(slack_host) <= 255),
    teams_host         text NOT NULL DEFAULT '' CHECK (length(teams_host) <= 255),
    breaker_minutes    integer NOT NULL DEFAULT 10 CHECK (breaker_minutes BETWEEN 1 AND 1440),
    approval_minutes   integer NOT NULL DEFAULT 30 CHECK (approval_minutes BETWEEN 1 AND 10080),
    unanswered_minutes integer NOT NULL DEFAULT 60 CHECK (unanswered_minutes BETWEEN 1 AND 10080),
    digest_minute      integer CHECK (digest_minute BETWEEN 0 AND 1439),
    updated_by         uuid,
    updated_at         timestamptz NOT NULL
);
ALTER TABLE alert_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE alert_settings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON alert_settings USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

CREATE TABLE staff_alerts (
    id          uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind ~ '^[a-z0-9_]{1,40}$'),
    subject_key text NOT NULL CHECK (length(subject_key) <= 300),
    title       text NOT NULL CHECK (length(title) <= 300),
    body        text NOT NULL CHECK (length(body) <= 20000),
    raised_at   timestamptz NOT NULL,
    -- The targets ("email:<address>", "slack", "teams") that took it, and
    -- the last refusal of one that did not.
    delivered   text[] NOT NULL DEFAULT '{}',
    last_error  text NOT NULL DEFAULT ''
);
CREATE INDEX staff_alerts_subject_idx ON staff_alerts (tenant_id, kind, subject_key, raised_at DESC);
CREATE INDEX staff_alerts_recent_idx ON staff_alerts (tenant_id, raised_at DESC);
ALTER TABLE staff_alerts ENABLE ROW LEVEL SECURITY;
ALTER TABLE staff_alerts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON staff_alerts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- +goose Down
DROP TABLE staff_alerts;
DROP TABLE alert_settings;
