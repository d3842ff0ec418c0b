-- Tenants' own trigger events, beside the built-in registry compiled
-- into Herald.
--
-- Every change of an event is a new row: version 1 when it is created,
-- one more at each edit, and a row with deleted = true when it is
-- removed. Old versions are kept and readable; the event's definition is
-- its newest row, and an event whose newest row is deleted is gone (its
-- name can be defined again, as the next version). The primary key makes
-- two concurrent writers of one version collide instead of both
-- succeeding. Names are upper snake case; the application refuses the
-- built-in events' names, which the database does not know.

-- +goose Up
CREATE TABLE tenant_events (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name        text NOT NULL CHECK (name ~ '^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$' AND length(name) <= 64),
    version     integer NOT NULL CHECK (version >= 1),
    description text NOT NULL CHECK (length(description) <= 500),
    -- [{"name": ..., "type": ..., "values": [...]}]
    variables   jsonb NOT NULL,
    channels    text[] NOT NULL,
    category    text NOT NULL CHECK (category IN ('transactional', 'optional')),
    urgent      boolean NOT NULL DEFAULT false,
    -- {"at": ..., "date": ..., "after_minutes": ...}, NULL: never expires.
    expiry      jsonb,
    supersedes  text[] NOT NULL DEFAULT '{}',
    deleted     boolean NOT NULL DEFAULT false,
    created_by  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, name, version)
);
ALTER TABLE tenant_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON tenant_events USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- +goose Down
DROP TABLE tenant_events;
