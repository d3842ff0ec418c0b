-- WhatsApp messaging limits and number health.
--
-- Meta limits how many unique WhatsApp users a business reaches outside
-- a customer service window (business-initiated: templates) over a
-- moving 24 hours. whatsapp_reach holds, per Meta account and recipient
-- address, when a business-initiated message last went to that user: the
-- users with a row newer than 24 hours are the ones counted. The claim of
-- a send locks the account's whatsapp_number_health row (creating it)
-- before it counts and adds, so two workers never both take the last
-- slot.
--
-- whatsapp_number_health is what Meta says about the number
-- (phone_number_quality_update, account_update webhooks): its messaging
-- limit as Meta last reported it (which takes over from the tier set on
-- the account), whether Meta flagged its quality, the newest account
-- event, when the last such webhook came, and whether Herald's app is
-- subscribed to the account's WABA (POST /{waba-id}/subscribed_apps at
-- activation).

-- +goose Up
CREATE TABLE whatsapp_number_health (
    tenant_id            uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    account_id           uuid NOT NULL REFERENCES channel_accounts (id) ON DELETE CASCADE,
    meta_tier            text CHECK (length(meta_tier) <= 40),
    tier_reported_at     timestamptz,
    flagged              boolean NOT NULL DEFAULT false,
    quality_event        text NOT NULL DEFAULT '' CHECK (length(quality_event) <= 40),
    quality_event_at     timestamptz,
    display_phone_number text NOT NULL DEFAULT '' CHECK (length(display_phone_number) <= 40),
    account_event        text NOT NULL DEFAULT '' CHECK (length(account_event) <= 60),
    account_detail       text NOT NULL DEFAULT '' CHECK (length(account_detail) <= 500),
    account_event_at     timestamptz,
    last_webhook_at      timestamptz,
    subscription         text NOT NULL DEFAULT '' CHECK (subscription IN ('', 'subscribed', 'failed')),
    subscription_error   text NOT NULL DEFAULT '' CHECK (length(subscription_error) <= 1000),
    subscription_at      timestamptz,
    PRIMARY KEY (tenant_id, account_id)
);
CREATE INDEX whatsapp_number_health_account_idx ON whatsapp_number_health (account_id);
ALTER TABLE whatsapp_number_health ENABLE ROW LEVEL SECURITY;
ALTER TABLE whatsapp_number_health FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON whatsapp_number_health USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

CREATE TABLE whatsapp_reach (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    account_id uuid NOT NULL REFERENCES channel_accounts (id) ON DELETE CASCADE,
    address    text NOT NULL CHECK (length(address) <= 40),
    last_at    timestamptz NOT NULL,
    message_id uuid NOT NULL,
    PRIMARY KEY (tenant_id, account_id, address)
);
CREATE INDEX whatsapp_reach_window_idx ON whatsapp_reach (tenant_id, account_id, last_at);
CREATE INDEX whatsapp_reach_account_idx ON whatsapp_reach (account_id);
ALTER TABLE whatsapp_reach ENABLE ROW LEVEL SECURITY;
ALTER TABLE whatsapp_reach FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON whatsapp_reach USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- +goose Down
DROP TABLE whatsapp_reach;
DROP TABLE whatsapp_number_health;
