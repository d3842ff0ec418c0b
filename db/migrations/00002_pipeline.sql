-- The notification pipeline: channel accounts, templates, events (the
-- outbox), contacts, conversations, messages with their timelines, usage
-- counters for plan quotas and provider receipts.

-- +goose Up

CREATE TABLE channel_accounts (
    id               uuid PRIMARY KEY,
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel          text NOT NULL CHECK (channel IN ('WHATSAPP', 'EMAIL', 'SMS', 'WEBHOOK')),
    provider         text NOT NULL CHECK (provider IN ('meta', 'ses', 'sns', 'webhook', 'sandbox')),
    name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    status           text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'ACTIVE', 'SUSPENDED', 'DISABLED')),
    -- Non-secret settings: phone_number_id, sender_email, region, tier, ...
    config           jsonb NOT NULL DEFAULT '{}',
    -- AES-256-GCM sealed secrets; the key id names the key that sealed them.
    secrets          bytea,
    secrets_key_id   text,
    verify_token     text NOT NULL,
    suspended_reason text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX channel_accounts_tenant_idx ON channel_accounts (tenant_id, channel);
-- At most one ACTIVE account per tenant and channel: routing picks it.
CREATE UNIQUE INDEX channel_accounts_one_active ON channel_accounts (tenant_id, channel) WHERE status = 'ACTIVE';

CREATE TABLE templates (
    id                uuid PRIMARY KEY,
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    trigger_event     text NOT NULL,
    channel           text NOT NULL CHECK (channel IN ('WHATSAPP', 'EMAIL', 'SMS', 'WEBHOOK')),
    locale            text NOT NULL,
    subject           text NOT NULL DEFAULT '',
    body              text NOT NULL CHECK (length(body) BETWEEN 1 AND 20000),
    -- Meta template sends: {"name", "language", "parameters": [variable, ...]}.
    whatsapp_template jsonb,
    version           integer NOT NULL DEFAULT 1,
    is_active         boolean NOT NULL DEFAULT true,
    updated_by        uuid,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT templates_key UNIQUE (tenant_id, trigger_event, channel, locale)
);

CREATE TABLE template_versions (
    template_id       uuid NOT NULL REFERENCES templates (id) ON DELETE CASCADE,
    version           integer NOT NULL,
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    subject           text NOT NULL,
    body              text NOT NULL,
    whatsapp_template jsonb,
    is_active         boolean NOT NULL,
    updated_by        uuid,
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (template_id, version)
);
CREATE INDEX template_versions_tenant_idx ON template_versions (tenant_id, template_id);

CREATE TABLE events (
    id                uuid PRIMARY KEY,
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- The caller's event id: the idempotency key of the request.
    source_event_id   text NOT NULL CHECK (length(source_event_id) BETWEEN 1 AND 200),
    trigger_event     text NOT NULL,
    recipients        jsonb NOT NULL,
    context           jsonb NOT NULL,
    channels          text[],
    fallback_chain    text[],
    locale            text,
    entity_type       text CHECK (entity_type IN ('booking', 'trip', 'invoice')),
    entity_id         text,
    send_at           timestamptz,
    version           integer NOT NULL DEFAULT 1,
    status            text NOT NULL CHECK (status IN ('RECEIVED', 'SCHEDULED', 'AWAITING_APPROVAL', 'ROUTED', 'CANCELLED', 'REJECTED', 'FAILED')),
    error             text,
    payload_size      integer NOT NULL CHECK (payload_size <= 16384),
    api_key_id        uuid,
    decided_by        uuid,
    decided_at        timestamptz,
    decision_reason   text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    routed_at         timestamptz,
    CONSTRAINT events_source_key UNIQUE (tenant_id, source_event_id),
    CHECK ((entity_type IS NULL) = (entity_id IS NULL))
);
CREATE INDEX events_tenant_created_idx ON events (tenant_id, created_at DESC);
CREATE INDEX events_entity_idx ON events (tenant_id, entity_type, entity_id);
CREATE INDEX events_pending_idx ON events (tenant_id, send_at) WHERE status IN ('SCHEDULED', 'AWAITING_APPROVAL');

CREATE TABLE contacts (
    id                   uuid PRIMARY KEY,
    tenant_id            uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    passenger_profile_id text,
    name                 text NOT NULL DEFAULT '',
    phone                text,
    email                text,
    locale               text,
    email_complained_at  timestamptz,
    whatsapp_window_until timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX contacts_profile_key ON contacts (tenant_id, passenger_profile_id) WHERE passenger_profile_id IS NOT NULL;
CREATE INDEX contacts_phone_idx ON contacts (tenant_id, phone) WHERE phone IS NOT NULL;
CREATE INDEX contacts_email_idx ON contacts (tenant_id, email) WHERE email IS NOT NULL;

CREATE TABLE conversations (
    id         uuid PRIMARY KEY,
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    booking_id text,
    trip_id    text,
    invoice_id text,
    status     text NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'SNOOZED', 'RESOLVED')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT conversations_one_context CHECK (num_nonnulls(booking_id, trip_id, invoice_id) <= 1)
);
CREATE INDEX conversations_contact_idx ON conversations (tenant_id, contact_id);

CREATE TABLE messages (
    id                  uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    event_id            uuid REFERENCES events (id) ON DELETE SET NULL,
    -- The source event id; fallback messages share it with their original.
    correlation_id      text NOT NULL,
    idempotency_key     text NOT NULL,
    trigger_event       text NOT NULL,
    channel             text NOT NULL CHECK (channel IN ('WHATSAPP', 'EMAIL', 'SMS', 'WEBHOOK')),
    channel_account_id  uuid REFERENCES channel_accounts (id) ON DELETE SET NULL,
    template_id         uuid REFERENCES templates (id) ON DELETE SET NULL,
    template_version    integer,
    locale              text,
    contact_id          uuid REFERENCES contacts (id) ON DELETE SET NULL,
    conversation_id     uuid REFERENCES conversations (id) ON DELETE SET NULL,
    to_address          text NOT NULL DEFAULT '',
    subject             text NOT NULL DEFAULT '',
    body                text NOT NULL DEFAULT '',
    status              text NOT NULL CHECK (status IN ('QUEUED', 'SENT', 'DELIVERED', 'READ', 'FAILED', 'CANCELLED')),
    failed_reason       text,
    error_code          text,
    attempts            integer NOT NULL DEFAULT 0,
    provider            text,
    external_message_id text,
    fallback_of         uuid REFERENCES messages (id) ON DELETE SET NULL,
    fallback_chain      text[] NOT NULL DEFAULT '{}',
    entity_type         text,
    entity_id           text,
    triggered_by        uuid,
    queued_at           timestamptz NOT NULL DEFAULT now(),
    sent_at             timestamptz,
    delivered_at        timestamptz,
    read_at             timestamptz,
    failed_at           timestamptz,
    stale_at            timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT messages_idempotency_key UNIQUE (tenant_id, idempotency_key)
);
CREATE UNIQUE INDEX messages_external_key ON messages (provider, external_message_id) WHERE external_message_id IS NOT NULL;
CREATE INDEX messages_tenant_created_idx ON messages (tenant_id, created_at DESC);
CREATE INDEX messages_event_idx ON messages (tenant_id, event_id);
CREATE INDEX messages_entity_idx ON messages (tenant_id, entity_type, entity_id);
CREATE INDEX messages_queued_idx ON messages (queued_at) WHERE status = 'QUEUED';
CREATE INDEX messages_sent_idx ON messages (sent_at) WHERE status = 'SENT' AND stale_at IS NULL;

CREATE TABLE message_events (
    id          bigserial PRIMARY KEY,
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    message_id  uuid NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    from_status text,
    to_status   text,
    source      text NOT NULL CHECK (source IN ('routing', 'dispatch', 'webhook', 'console', 'api', 'system')),
    detail      jsonb NOT NULL DEFAULT '{}',
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX message_events_message_idx ON message_events (tenant_id, message_id, id);

CREATE TABLE usage_counters (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel   text NOT NULL,
    month     date NOT NULL,
    count     integer NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, channel, month)
);

CREATE TABLE webhook_receipts (
    id          bigserial PRIMARY KEY,
    tenant_id   uuid REFERENCES tenants (id) ON DELETE CASCADE,
    provider    text NOT NULL,
    receipt_id  text NOT NULL,
    message_id  uuid,
    status      text,
    signature_ok boolean NOT NULL DEFAULT true,
    body        jsonb NOT NULL DEFAULT '{}',
    outcome     text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT webhook_receipts_key UNIQUE (provider, receipt_id)
);
CREATE INDEX webhook_receipts_tenant_idx ON webhook_receipts (tenant_id, received_at);

ALTER TABLE channel_accounts ENABLE ROW LEVEL SECURITY;
ALTER TABLE channel_accounts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON channel_accounts USING (tenant_id = herald_tenant() OR herald_platform());
ALTER TABLE templates ENABLE ROW LEVEL SECURITY;
ALTER TABLE templates FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON templates USING (tenant_id = herald_tenant() OR herald_platform());
ALTER TABLE template_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE template_versions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON template_versions USING (tenant_id = herald_tenant() OR herald_platform());
ALTER TABLE events ENABLE ROW LEVEL SECURITY;
ALTER TABLE events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON events USING (tenant_id = herald_tenant() OR herald_platform());
ALTER TABLE contacts ENABLE ROW LEVEL SECURITY;
ALTER TABLE contacts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON contacts USING (tenant_id = herald_tenant() OR herald_platform());
ALTER TABLE conversations ENABLE ROW LEVEL SECURITY;
ALTER TABLE conversations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON conversations USING (tenant_id = herald_tenant() OR herald_platform());
ALTER TABLE messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE messages FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON messages USING (tenant_id = herald_tenant() OR herald_platform());
ALTER TABLE message_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_events USING (tenant_id = herald_tenant() OR herald_platform());
ALTER TABLE usage_counters ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage_counters FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON usage_counters USING (tenant_id = herald_tenant() OR herald_platform());
ALTER TABLE webhook_receipts ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhook_receipts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON webhook_receipts USING (tenant_id = herald_tenant() OR herald_platform());

-- +goose Down
DROP TABLE webhook_receipts;
DROP TABLE usage_counters;
DROP TABLE message_events;
DROP TABLE messages;
DROP TABLE conversations;
DROP TABLE contacts;
DROP TABLE events;
DROP TABLE template_versions;
DROP TABLE templates;
DROP TABLE channel_accounts;
