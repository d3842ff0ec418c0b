-- Pages that stay fast at ten million messages in one tenant.
--
-- The messages explorer pages by keyset, newest first: (created_at, id)
-- below the last row shown. Each filter it offers gets an index that starts
-- with the tenant and the filtered column and ends in that order, so any
-- filter and any page reads only the rows it shows. They are full indexes,
-- not partial ones: a partial index on status is never chosen by a generic
-- plan (the status is a parameter there), a full one always is. The index
-- on status replaces the partial one on FAILED messages, which it covers.
--
-- The dashboard counts messages per bucket, channel and status over the
-- last 7 days: about a million rows at this size, too many to count on
-- every page view. message_counts holds those counts per quarter of an hour
-- (every timezone's hours and days start on a quarter), recomputed by a
-- periodic job rather than by the send path, which stays one statement
-- shorter; message_count_marks says which span of a tenant's history the
-- counts cover, and the dashboard counts live what lies outside it.

-- +goose Up
DROP INDEX messages_tenant_created_idx;
CREATE INDEX messages_tenant_created_idx ON messages (tenant_id, created_at DESC, id DESC);
CREATE INDEX messages_status_created_idx ON messages (tenant_id, status, created_at DESC, id DESC) INCLUDE (channel, trigger_event);
CREATE INDEX messages_channel_created_idx ON messages (tenant_id, channel, created_at DESC, id DESC) INCLUDE (status, trigger_event);
CREATE INDEX messages_trigger_created_idx ON messages (tenant_id, trigger_event, created_at DESC, id DESC) INCLUDE (status, channel);
DROP INDEX messages_failed_idx;
DROP INDEX messages_entity_idx;
CREATE INDEX messages_entity_idx ON messages (tenant_id, entity_type, entity_id, created_at DESC, id DESC);

CREATE TABLE message_counts (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- The quarter of an hour the messages were created in.
    bucket    timestamptz NOT NULL,
    channel   text NOT NULL,
    status    text NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (tenant_id, bucket, channel, status)
);
ALTER TABLE message_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_counts USING (tenant_id = herald_tenant() OR herald_platform());

CREATE TABLE message_count_marks (
    tenant_id  uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    -- message_counts holds the tenant's counts for since <= bucket < through.
    since      timestamptz NOT NULL,
    through    timestamptz NOT NULL,
    -- When the whole span was last recomputed.
    full_at    timestamptz NOT NULL,
    CHECK (since <= through)
);
ALTER TABLE message_count_marks ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_count_marks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_count_marks USING (tenant_id = herald_tenant() OR herald_platform());

-- message_counts_roll_up recounts a tenant's messages created in
-- [p_from, p_through) (both on quarter hours) and widens the mark when the
-- span touches the one already covered; a span apart from it replaces it.
-- p_full says the span is the whole window the dashboard shows, so counts
-- before it are dropped.
-- +goose StatementBegin
CREATE FUNCTION message_counts_roll_up(p_tenant uuid, p_from timestamptz, p_through timestamptz, p_full boolean, p_now timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    m message_count_marks;
    n bigint;
BEGIN
    IF p_from >= p_through THEN
        RETURN 0;
    END IF;
    -- One recount of a tenant at a time: two would interleave deletes and
    -- inserts of the same buckets.
    PERFORM pg_advisory_xact_lock(hashtextextended('message_counts:' || p_tenant::text, 24));
    SELECT * INTO m FROM message_count_marks WHERE tenant_id = p_tenant;
    DELETE FROM message_counts WHERE tenant_id = p_tenant AND bucket >= p_from AND bucket < p_through;
    IF p_full THEN
        DELETE FROM message_counts WHERE tenant_id = p_tenant AND bucket < p_from;
    END IF;
    INSERT INTO message_counts (tenant_id, bucket, channel, status, count)
    SELECT p_tenant, date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00'), channel, status, count(*)
    FROM messages WHERE tenant_id = p_tenant AND created_at >= p_from AND created_at < p_through
    GROUP BY 2, 3, 4;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF m.tenant_id IS NULL OR p_full OR p_through < m.since OR p_from > m.through THEN
        INSERT INTO message_count_marks (tenant_id, since, through, full_at)
        VALUES (p_tenant, p_from, p_through, CASE WHEN p_full THEN p_now ELSE timestamptz 'epoch' END)
        ON CONFLICT (tenant_id) DO UPDATE SET since = excluded.since, through = excluded.through,
            full_at = CASE WHEN p_full THEN p_now ELSE message_count_marks.full_at END;
    ELSE
        UPDATE message_count_marks SET since = least(since, p_from), through = greatest(through, p_through)
        WHERE tenant_id = p_tenant;
    END IF;
    RETURN n;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION message_counts_roll_up(uuid, timestamptz, timestamptz, boolean, timestamptz);
DROP TABLE message_count_marks;
DROP TABLE message_counts;
DROP INDEX messages_entity_idx;
CREATE INDEX messages_entity_idx ON messages (tenant_id, entity_type, entity_id);
CREATE INDEX messages_failed_idx ON messages (tenant_id, created_at DESC) WHERE status = 'FAILED';
DROP INDEX messages_trigger_created_idx;
DROP INDEX messages_channel_created_idx;
DROP INDEX messages_status_created_idx;
DROP INDEX messages_tenant_created_idx;
CREATE INDEX messages_tenant_created_idx ON messages (tenant_id, created_at DESC);
