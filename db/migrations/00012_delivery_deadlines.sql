-- A tenant's delivery deadlines: a message of the event (or of any event,
-- '*') on the channel that is still not DELIVERED this many minutes after it
-- was sent continues its fallback chain (WhatsApp not delivered within 15
-- minutes -> SMS). No row, no deadline: the default is off. The maintenance
-- scan finds overdue messages by their sent time and asks, per message,
-- whether a fallback already names it.

-- +goose Up
CREATE TABLE delivery_deadlines (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    trigger_event text NOT NULL,
    channel       text NOT NULL,
    minutes       integer NOT NULL CHECK (minutes BETWEEN 1 AND 1440),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, trigger_event, channel)
);
ALTER TABLE delivery_deadlines ENABLE ROW LEVEL SECURITY;
ALTER TABLE delivery_deadlines FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON delivery_deadlines USING (tenant_id = herald_tenant() OR herald_platform());
CREATE INDEX messages_fallback_of_idx ON messages (tenant_id, fallback_of) WHERE fallback_of IS NOT NULL;

-- +goose Down
DROP INDEX messages_fallback_of_idx;
DROP TABLE delivery_deadlines;
