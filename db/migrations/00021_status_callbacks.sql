-- Status callbacks: a tenant's endpoints receive its messages' status changes
-- (message.sent, .delivered, .read, .failed, .fallback) as JSON posts signed
-- per Standard Webhooks. A delivery row and its job are inserted in the
-- transaction that changes the status, so a callback exists exactly when the
-- change committed; the unique key makes a second copy of the same change (a
-- duplicate receipt, a resent message) a no-op.

-- +goose Up
CREATE TABLE callback_endpoints (
    id                  uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    url                 text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    description         text NOT NULL DEFAULT '' CHECK (length(description) <= 200),
    event_types         text[] NOT NULL CHECK (cardinality(event_types) > 0),
    enabled             boolean NOT NULL DEFAULT true,
    -- Why Herald (or a person) disabled it; NULL while enabled.
    disabled_reason     text,
    -- AES-256-GCM sealed {"current": "whsec_...", "previous": "whsec_..."}.
    secrets             bytea NOT NULL,
    secrets_key_id      text NOT NULL,
    -- The previous secret signs too until then (rotation grace period).
    previous_expires_at timestamptz,
    -- Start of the current run of failed attempts; NULL after a success.
    failing_since       timestamptz,
    created_by          text NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX callback_endpoints_tenant_idx ON callback_endpoints (tenant_id, created_at);
ALTER TABLE callback_endpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE callback_endpoints FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON callback_endpoints USING (tenant_id = herald_tenant() OR herald_platform());

CREATE TABLE callback_deliveries (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    endpoint_id     uuid NOT NULL REFERENCES callback_endpoints (id) ON DELETE CASCADE,
    -- NULL for test events, which belong to no message.
    message_id      uuid REFERENCES messages (id) ON DELETE CASCADE,
    event_type      text NOT NULL,
    -- json, not jsonb: the exact bytes that were signed are sent again on
    -- every retry and replay.
    payload         json NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
    -- Every POST made; round_attempts counts those since the delivery was
    -- (re)started, against the retry schedule.
    attempts        integer NOT NULL DEFAULT 0,
    round_attempts  integer NOT NULL DEFAULT 0,
    last_status     integer,
    last_error      text,
    last_attempt_at timestamptz,
    next_attempt_at timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT callback_deliveries_once UNIQUE (endpoint_id, message_id, event_type)
);
CREATE INDEX callback_deliveries_endpoint_idx ON callback_deliveries (tenant_id, endpoint_id, created_at DESC);
CREATE INDEX callback_deliveries_message_idx ON callback_deliveries (message_id) WHERE message_id IS NOT NULL;
ALTER TABLE callback_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE callback_deliveries FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON callback_deliveries USING (tenant_id = herald_tenant() OR herald_platform());

-- +goose Down
DROP TABLE callback_deliveries;
DROP TABLE callback_endpoints;
