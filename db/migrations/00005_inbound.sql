-- Messages people send to a tenant (WhatsApp replies), kept on the
-- contact's conversation.

-- +goose Up
CREATE TABLE inbound_messages (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    contact_id      uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    conversation_id uuid REFERENCES conversations (id) ON DELETE SET NULL,
    channel         text NOT NULL CHECK (channel IN ('WHATSAPP', 'EMAIL', 'SMS')),
    provider        text NOT NULL,
    external_id     text NOT NULL,
    from_address    text NOT NULL,
    kind            text NOT NULL DEFAULT 'text',
    body            text NOT NULL DEFAULT '',
    received_at     timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT inbound_messages_external_key UNIQUE (provider, external_id)
);
CREATE INDEX inbound_messages_contact_idx ON inbound_messages (tenant_id, contact_id, received_at DESC);
ALTER TABLE inbound_messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE inbound_messages FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON inbound_messages USING (tenant_id = herald_tenant() OR herald_platform());

-- +goose Down
DROP TABLE inbound_messages;
