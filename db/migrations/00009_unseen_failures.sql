-- Failures nobody saw.
--
-- Refusals of the server's own AWS credentials: the default credential
-- chain that SES and SNS accounts without keys of their own send with.
-- One row per channel account in a spell of refusals, written by every
-- worker process with one upsert per refused call and deleted by the
-- account's next accepted send. first_at, last_at and refusals describe
-- the spell (a refusal after a gap longer than the alert window starts a
-- new one); alerted_at and alerted_refusal say when the last ERROR line
-- about the account was logged and which refusal of the spell raised it.
-- Each process learns from the upsert's answer whether its refusal raised
-- the alert, so the line comes once per account and window however many
-- processes and messages meet the refusal.
--
-- SES events that name another configuration set than the one of the
-- account whose message they name, arriving through a topic that account
-- hears: kept in webhook_receipts as foreign, as before, but as that
-- account's (tenant_id, channel_account_id) instead of under no tenant, so
-- that the account's console page can show them. The webhook records in
-- receipt_inbox.via_account_topic which topic setting the accounts that
-- hear the route have (the topic, or '' for a deployment topic no account
-- claims), and the applier compares it with the account's.

-- +goose Up
CREATE TABLE server_credential_refusals (
    tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel_account_id uuid NOT NULL REFERENCES channel_accounts (id) ON DELETE CASCADE,
    provider           text NOT NULL,
    -- The last refusal's AWS error code and reason.
    code               text NOT NULL,
    reason             text NOT NULL,
    first_at           timestamptz NOT NULL,
    last_at            timestamptz NOT NULL,
    refusals           bigint NOT NULL,
    alerted_at         timestamptz NOT NULL,
    alerted_refusal    bigint NOT NULL,
    PRIMARY KEY (tenant_id, channel_account_id)
);
ALTER TABLE server_credential_refusals ENABLE ROW LEVEL SECURITY;
ALTER TABLE server_credential_refusals FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON server_credential_refusals USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

ALTER TABLE receipt_inbox ADD COLUMN via_account_topic text;
-- No foreign key: receipts name no parent row they lock (see
-- 00006_message_write_cost.sql), and accounts are never deleted.
ALTER TABLE webhook_receipts ADD COLUMN channel_account_id uuid;

-- +goose Down
ALTER TABLE webhook_receipts DROP COLUMN channel_account_id;
ALTER TABLE receipt_inbox DROP COLUMN via_account_topic;
DROP TABLE server_credential_refusals;
