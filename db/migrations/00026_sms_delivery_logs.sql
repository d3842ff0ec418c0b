-- SMS delivery receipts read from CloudWatch Logs.
--
-- SNS writes the delivery status of each SMS only to the account's log
-- groups sns/<region>/<aws-account>/DirectPublishToPhoneNumber (and
-- .../Failure). The worker reads them with each SNS account's own keys and
-- keeps, per account, region and log group, where it is
-- (sms_log_cursors): the time window it pages through (window_start,
-- window_end) and the page token within it (next_token; NULL once the
-- window was read to its end). The next window starts a little before the
-- last one ended, since CloudWatch takes events in late. A page's receipts
-- and the cursor's move are one transaction of the account's tenant, and
-- version makes the move conditional on the cursor being as the run read
-- it, so two runs of one account never move it backwards.
--
-- sms_log_readers is what the account page shows: when the reader last ran
-- and read, and its last error (cleared by the next good run).

-- +goose Up
CREATE TABLE sms_log_cursors (
    tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel_account_id uuid NOT NULL,
    region             text NOT NULL CHECK (region ~ '^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$'),
    log_group          text NOT NULL CHECK (length(log_group) BETWEEN 1 AND 512),
    window_start       timestamptz NOT NULL,
    window_end         timestamptz NOT NULL CHECK (window_end >= window_start),
    next_token         text CHECK (length(next_token) <= 8192),
    version            bigint NOT NULL DEFAULT 1,
    read_at            timestamptz NOT NULL,
    events             bigint NOT NULL DEFAULT 0,
    receipts           bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, channel_account_id, region, log_group),
    FOREIGN KEY (channel_account_id) REFERENCES channel_accounts (id) ON DELETE CASCADE
);
ALTER TABLE sms_log_cursors ENABLE ROW LEVEL SECURITY;
ALTER TABLE sms_log_cursors FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON sms_log_cursors USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

CREATE TABLE sms_log_readers (
    tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel_account_id uuid NOT NULL REFERENCES channel_accounts (id) ON DELETE CASCADE,
    region             text NOT NULL DEFAULT '',
    ran_at             timestamptz NOT NULL,
    -- The last run that read every group it was due to read, or up to its
    -- page budget, without an error.
    read_at            timestamptz,
    last_error         text NOT NULL DEFAULT '' CHECK (length(last_error) <= 2000),
    last_error_at      timestamptz,
    PRIMARY KEY (tenant_id, channel_account_id)
);
ALTER TABLE sms_log_readers ENABLE ROW LEVEL SECURITY;
ALTER TABLE sms_log_readers FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON sms_log_readers USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- +goose Down
DROP TABLE sms_log_readers;
DROP TABLE sms_log_cursors;
