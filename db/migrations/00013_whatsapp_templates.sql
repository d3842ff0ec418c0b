-- WhatsApp business-initiated messages: the customer-service window is per
-- business number (channel account), so inbound messages remember the
-- account they came through; and each account's Meta message templates
-- with their review status, synced from the Graph API and Meta's
-- message_template_status_update webhook.

-- +goose Up
ALTER TABLE inbound_messages ADD COLUMN channel_account_id uuid REFERENCES channel_accounts (id) ON DELETE SET NULL;
CREATE INDEX inbound_messages_window_idx ON inbound_messages (tenant_id, channel_account_id, from_address, received_at DESC)
    WHERE channel = 'WHATSAPP';

CREATE TABLE meta_templates (
    tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel_account_id uuid NOT NULL REFERENCES channel_accounts (id) ON DELETE CASCADE,
    name               text NOT NULL,
    language           text NOT NULL,
    meta_id            text NOT NULL DEFAULT '',
    status             text NOT NULL,
    category           text NOT NULL DEFAULT '',
    rejected_reason    text NOT NULL DEFAULT '',
    body               text NOT NULL DEFAULT '',
    synced_at          timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, channel_account_id, name, language)
);
ALTER TABLE meta_templates ENABLE ROW LEVEL SECURITY;
ALTER TABLE meta_templates FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON meta_templates USING (tenant_id = herald_tenant() OR herald_platform());

-- +goose Down
DROP TABLE meta_templates;
DROP INDEX inbound_messages_window_idx;
ALTER TABLE inbound_messages DROP COLUMN channel_account_id;
