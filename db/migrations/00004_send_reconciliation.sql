-- A provider call whose answer Herald never read (it cut the call at its
-- time budget, the connection broke after the request was written, or the
-- process stopped mid-call) may have reached the provider. Such a send is
-- reconciled with the provider before anything is sent again:
--
-- * messages.send_unknown_until: the send's outcome is unknown, and Herald
--   waits until then for the provider's own confirmation (a receipt that
--   echoes Herald's message id: Meta's biz_opaque_callback_data, SES's
--   message_id tag). The dispatch claim decides once it has passed: the
--   registry's urgent events are sent again, others fail outcome_unknown.
-- * messages.previous_external_ids: the provider ids of attempts the
--   provider refused after accepting them (a rate limit or a closed
--   WhatsApp window, requeued): a late receipt of one of those is about an
--   earlier attempt, never a confirmation of the current one.
-- * receipt_inbox.message_ref: the message id a receipt echoes, so that the
--   applier finds the message of a send whose provider id it never learned.
--
-- * confirmation_windows: a tenant's own window per event ('*': every
--   event), in seconds; without one, five minutes (one for urgent events).
--
-- New columns without a default, or with a constant one, rewrite no rows
-- of messages; the inbox is a queue, a few rows deep, and is rewritten.

-- +goose Up
ALTER TABLE messages
    ADD COLUMN send_unknown_until timestamptz,
    ADD COLUMN previous_external_ids text[] NOT NULL DEFAULT '{}';
ALTER TABLE receipt_inbox
    ADD COLUMN message_ref uuid GENERATED ALWAYS AS ((receipt->>'MessageRef')::uuid) STORED;
CREATE TABLE confirmation_windows (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    trigger_event text NOT NULL,
    seconds       integer NOT NULL CHECK (seconds BETWEEN 0 AND 86400),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, trigger_event)
);
ALTER TABLE confirmation_windows ENABLE ROW LEVEL SECURITY;
ALTER TABLE confirmation_windows FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON confirmation_windows USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- +goose Down
DROP TABLE confirmation_windows;
ALTER TABLE receipt_inbox DROP COLUMN message_ref;
ALTER TABLE messages DROP COLUMN previous_external_ids, DROP COLUMN send_unknown_until;
