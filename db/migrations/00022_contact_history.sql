-- Contacts keep who they are. A message records which recipient of its event
-- it is for (recipient_index), so a retry, a resend or a fallback reads that
-- recipient's addresses from the event instead of the contact's later ones.
-- contact_changes is every change of a contact's details: the field, the
-- value before and after, and who made it (the event that carried it, an API
-- key or a console user). opted_out lists the channels the contact asked not
-- to be sent on; routing skips them.

-- +goose Up
ALTER TABLE messages ADD COLUMN recipient_index integer CHECK (recipient_index >= 0);
ALTER TABLE contacts ADD COLUMN opted_out text[] NOT NULL DEFAULT '{}';

CREATE TABLE contact_changes (
    id          bigserial PRIMARY KEY,
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    contact_id  uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    field       text NOT NULL CHECK (field IN ('created', 'passenger_profile_id', 'name', 'phone', 'email', 'locale', 'opted_out')),
    old_value   text,
    new_value   text,
    source      text NOT NULL CHECK (source IN ('event', 'api', 'console', 'inbound')),
    event_id    uuid REFERENCES events (id) ON DELETE SET NULL,
    actor_type  text NOT NULL,
    actor_id    uuid,
    actor_label text NOT NULL DEFAULT '',
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX contact_changes_contact_idx ON contact_changes (tenant_id, contact_id, id);
ALTER TABLE contact_changes ENABLE ROW LEVEL SECURITY;
ALTER TABLE contact_changes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON contact_changes USING (tenant_id = herald_tenant() OR herald_platform());

-- The contact page lists a contact's messages and conversations.
CREATE INDEX messages_contact_idx ON messages (tenant_id, contact_id, created_at DESC) WHERE contact_id IS NOT NULL;

-- +goose Down
DROP INDEX messages_contact_idx;
DROP TABLE contact_changes;
ALTER TABLE contacts DROP COLUMN opted_out;
ALTER TABLE messages DROP COLUMN recipient_index;
