-- The dashboard's month: messages per day, delivery rate and time to
-- delivered per channel, the top failure reasons, and per template how
-- many messages were sent, delivered, read and failed, over the last 30
-- days of a tenant that may hold ten million messages.
--
-- All of it is counted by the same periodic recount that keeps
-- message_counts (message_counts_roll_up), in the same spans and under the
-- same mark, so the send path writes nothing more: every figure is a
-- count of messages grouped by when they were created and what they are
-- now.
--
-- message_latency_counts is a histogram of the time from a message's
-- creation to its delivery, per quarter hour and channel, in fixed bins
-- (below 1 s, 1-2 s, 2-5 s, ... 6-24 h, a day or more). Histograms add up
-- across quarters and days where medians do not, so any period's median is
-- read off the summed bins (the bin holding the middle message, and a
-- linear guess within it); an exact median would need every message's time.
--
-- message_failure_counts counts failed messages per quarter, channel and
-- failed_reason (a short code such as quota_exceeded or meta_131026).
--
-- message_template_counts counts messages per hour, template and status.
-- Hours rather than quarters: a tenant has dozens of templates, and the
-- templates list sums them all; an hour is a quarter of the rows, and
-- every timezone but a handful (India, Nepal, ...) starts its days on one.
--
-- message_count_marks.week_at says when the last 8 days were recounted:
-- the recount covers the last two hours every minute, the last 8 days
-- every hour and the whole 31 days every 6 hours, so that a status that
-- changes days after the message was created shows within hours without
-- rereading a month of messages every hour.

-- +goose Up
ALTER TABLE message_count_marks ADD COLUMN week_at timestamptz NOT NULL DEFAULT 'epoch';

CREATE TABLE message_latency_counts (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    bucket    timestamptz NOT NULL,
    channel   text NOT NULL,
    -- 0 below the first bound of message_latency_bounds(), n from its
    -- n-th bound up to the next one (or for ever after the last).
    bin       smallint NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (tenant_id, bucket, channel, bin)
);
ALTER TABLE message_latency_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_latency_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_latency_counts USING (tenant_id = herald_tenant() OR herald_platform());

CREATE TABLE message_failure_counts (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    bucket    timestamptz NOT NULL,
    channel   text NOT NULL,
    reason    text NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (tenant_id, bucket, channel, reason)
);
ALTER TABLE message_failure_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_failure_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_failure_counts USING (tenant_id = herald_tenant() OR herald_platform());

CREATE TABLE message_template_counts (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- The hour the messages were created in.
    bucket      timestamptz NOT NULL,
    template_id uuid NOT NULL,
    status      text NOT NULL,
    count       bigint NOT NULL,
    PRIMARY KEY (tenant_id, bucket, template_id, status)
);
-- One template's page reads its own rows only.
CREATE INDEX message_template_counts_template_idx ON message_template_counts (tenant_id, template_id, bucket);
ALTER TABLE message_template_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_template_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_template_counts USING (tenant_id = herald_tenant() OR herald_platform());

-- message_latency_bounds are the histogram's bin bounds in seconds; the
-- console's copy (console.LatencyBounds) must say the same.
-- +goose StatementBegin
CREATE FUNCTION message_latency_bounds() RETURNS double precision[] LANGUAGE sql IMMUTABLE AS $$
    SELECT ARRAY[1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400]::double precision[]
$$;
-- +goose StatementEnd

-- message_counts_roll_up recounts a tenant's messages created in
-- [p_from, p_through) into message_counts and the three tables above
-- (message_template_counts from the hour p_from falls in), and widens the
-- mark as before. p_full drops counts before the span; a span of 8 days
-- or more sets week_at.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION message_counts_roll_up(p_tenant uuid, p_from timestamptz, p_through timestamptz, p_full boolean, p_now timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    m message_count_marks;
    n bigint;
    hour_from timestamptz := date_bin('1 hour', p_from, timestamptz '2000-01-01 00:00:00+00');
BEGIN
    IF p_from >= p_through THEN
        RETURN 0;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('message_counts:' || p_tenant::text, 24));
    SELECT * INTO m FROM message_count_marks WHERE tenant_id = p_tenant;
    DELETE FROM message_counts WHERE tenant_id = p_tenant AND bucket >= p_from AND bucket < p_through;
    DELETE FROM message_latency_counts WHERE tenant_id = p_tenant AND bucket >= p_from AND bucket < p_through;
    DELETE FROM message_failure_counts WHERE tenant_id = p_tenant AND bucket >= p_from AND bucket < p_through;
    DELETE FROM message_template_counts WHERE tenant_id = p_tenant AND bucket >= hour_from AND bucket < p_through;
    IF p_full THEN
        DELETE FROM message_counts WHERE tenant_id = p_tenant AND bucket < p_from;
        DELETE FROM message_latency_counts WHERE tenant_id = p_tenant AND bucket < p_from;
        DELETE FROM message_failure_counts WHERE tenant_id = p_tenant AND bucket < p_from;
        DELETE FROM message_template_counts WHERE tenant_id = p_tenant AND bucket < hour_from;
    END IF;
    INSERT INTO message_counts (tenant_id, bucket, channel, status, count)
    SELECT p_tenant, date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00'), channel, status, count(*)
    FROM messages WHERE tenant_id = p_tenant AND created_at >= p_from AND created_at < p_through
    GROUP BY 2, 3, 4;
    GET DIAGNOSTICS n = ROW_COUNT;
    -- Delivered and read messages, by how long they took; a read receipt
    -- that came without a delivery receipt stands for both.
    INSERT INTO message_latency_counts (tenant_id, bucket, channel, bin, count)
    SELECT p_tenant, date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00'), channel,
        width_bucket(extract(epoch FROM coalesce(delivered_at, read_at) - created_at)::double precision, message_latency_bounds()),
        count(*)
    FROM messages
    WHERE tenant_id = p_tenant AND created_at >= p_from AND created_at < p_through
        AND status IN ('DELIVERED', 'READ') AND coalesce(delivered_at, read_at) IS NOT NULL
    GROUP BY 2, 3, 4;
    INSERT INTO message_failure_counts (tenant_id, bucket, channel, reason, count)
    SELECT p_tenant, date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00'), channel,
        coalesce(failed_reason, ''), count(*)
    FROM messages
    WHERE tenant_id = p_tenant AND created_at >= p_from AND created_at < p_through AND status = 'FAILED'
    GROUP BY 2, 3, 4;
    INSERT INTO message_template_counts (tenant_id, bucket, template_id, status, count)
    SELECT p_tenant, date_bin('1 hour', created_at, timestamptz '2000-01-01 00:00:00+00'), template_id, status, count(*)
    FROM messages
    WHERE tenant_id = p_tenant AND created_at >= hour_from AND created_at < p_through AND template_id IS NOT NULL
    GROUP BY 2, 3, 4;
    IF m.tenant_id IS NULL OR p_full OR p_through < m.since OR p_from > m.through THEN
        INSERT INTO message_count_marks (tenant_id, since, through, full_at, week_at)
        VALUES (p_tenant, p_from, p_through, CASE WHEN p_full THEN p_now ELSE timestamptz 'epoch' END,
            CASE WHEN p_through - p_from >= interval '8 days' THEN p_now ELSE timestamptz 'epoch' END)
        ON CONFLICT (tenant_id) DO UPDATE SET since = excluded.since, through = excluded.through,
            full_at = CASE WHEN p_full THEN p_now ELSE message_count_marks.full_at END,
            week_at = CASE WHEN p_through - p_from >= interval '8 days' THEN p_now ELSE message_count_marks.week_at END;
    ELSE
        UPDATE message_count_marks SET since = least(since, p_from), through = greatest(through, p_through),
            week_at = CASE WHEN p_through - p_from >= interval '8 days' THEN p_now ELSE week_at END
        WHERE tenant_id = p_tenant;
    END IF;
    RETURN n;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION message_counts_roll_up(p_tenant uuid, p_from timestamptz, p_through timestamptz, p_full boolean, p_now timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    m message_count_marks;
    n bigint;
BEGIN
    IF p_from >= p_through THEN
        RETURN 0;
    END IF;
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
DROP FUNCTION message_latency_bounds();
DROP TABLE message_template_counts;
DROP TABLE message_failure_counts;
DROP TABLE message_latency_counts;
ALTER TABLE message_count_marks DROP COLUMN week_at;
