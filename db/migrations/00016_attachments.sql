-- Files that travel with messages (tickets, invoices, calendar entries).
--
-- One row per file of a request: event-wide (recipient_index NULL) or for
-- one recipient (a ticket per passenger). A message carries its event's
-- event-wide files and its recipient's own, so retries, fallbacks and
-- resends find them through the message's event_id and recipient_index;
-- no link table is needed. The bytes are stored once: given inline, at
-- intake; given by URL, by the first dispatch that fetches them, under the
-- condition that none are stored yet, so concurrent dispatches of the
-- event's messages keep the first copy and every message (and every retry)
-- sends the same bytes, whose size and sha256 are recorded here as proof of
-- what was sent. A URL that cannot be fetched records fetch_error instead,
-- which fails the messages that carry the file. Retention deletes the rows
-- with their event (ON DELETE CASCADE), which it prunes once the event's
-- messages are gone. token_nonce makes the file's public short link
-- (/f/<token>) unguessable even to someone who knows the ids.

-- +goose Up
CREATE TABLE attachments (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    event_id        uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    recipient_index integer CHECK (recipient_index >= 0),
    position        integer NOT NULL CHECK (position >= 0),
    filename        text NOT NULL CHECK (length(filename) BETWEEN 1 AND 255),
    content_type    text NOT NULL CHECK (length(content_type) BETWEEN 1 AND 100),
    source_url      text CHECK (length(source_url) <= 2048),
    -- The caller's declared sha256 (lower-case hex), checked against the bytes.
    declared_sha256 text CHECK (declared_sha256 ~ '^[0-9a-f]{64}$'),
    content         bytea,
    size_bytes      bigint CHECK (size_bytes >= 0),
    sha256          text CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    fetched_at      timestamptz,
    fetch_error     text CHECK (length(fetch_error) <= 1000),
    created_at      timestamptz NOT NULL,
    CHECK (source_url IS NOT NULL OR content IS NOT NULL),
    CHECK ((content IS NULL) = (sha256 IS NULL) AND (content IS NULL) = (size_bytes IS NULL)),
    CHECK (content IS NULL OR fetch_error IS NULL),
    UNIQUE NULLS NOT DISTINCT (tenant_id, event_id, recipient_index, position)
);
CREATE INDEX attachments_tenant_event_idx ON attachments (tenant_id, event_id);
-- Deleting an event finds its files by event id.
CREATE INDEX attachments_event_idx ON attachments (event_id);
ALTER TABLE attachments ENABLE ROW LEVEL SECURITY;
ALTER TABLE attachments FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON attachments USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- +goose Down
DROP TABLE attachments;
