-- The delivery promise each tenant sees: the share of its messages handed
-- to the provider within 10 s of being due, and the time to delivered and
-- to read, per channel and day, for the tenant on its dashboard and for
-- the operator across tenants.
--
-- message_latency_counts held one histogram per quarter and channel, the
-- time to delivered. It now holds three, told apart by measure:
-- 'delivered' (as before), 'read' (created to read), and 'handover' (due
-- to handed over: see message_counts_roll_up). The roll-up that fills them
-- is the same periodic recount, one statement more per measure, never
-- the send path. Rows already there are 'delivered' ones.

-- +goose Up
ALTER TABLE message_latency_counts
    ADD COLUMN measure text NOT NULL DEFAULT 'delivered' CHECK (measure IN ('delivered', 'read', 'handover'));
ALTER TABLE message_latency_counts DROP CONSTRAINT message_latency_counts_pkey;
ALTER TABLE message_latency_counts ADD PRIMARY KEY (tenant_id, bucket, channel, measure, bin);
ALTER TABLE message_latency_counts ALTER COLUMN measure DROP DEFAULT;
-- The operator's promise table reads a week of every tenant's rows.
CREATE INDEX message_latency_counts_bucket_idx ON message_latency_counts (bucket);

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
    INSERT INTO message_latency_counts (tenant_id, bucket, channel, measure, bin, count)
    SELECT p_tenant, date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00'), channel, 'delivered',
        width_bucket(extract(epoch FROM coalesce(delivered_at, read_at) - created_at)::double precision, message_latency_bounds()),
        count(*)
    FROM messages
    WHERE tenant_id = p_tenant AND created_at >= p_from AND created_at < p_through
        AND status IN ('DELIVERED', 'READ') AND coalesce(delivered_at, read_at) IS NOT NULL
    GROUP BY 2, 3, 4, 5;
    INSERT INTO message_latency_counts (tenant_id, bucket, channel, measure, bin, count)
    SELECT p_tenant, date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00'), channel, 'read',
        width_bucket(extract(epoch FROM read_at - created_at)::double precision, message_latency_bounds()),
        count(*)
    FROM messages
    WHERE tenant_id = p_tenant AND created_at >= p_from AND created_at < p_through
        AND status = 'READ' AND read_at IS NOT NULL
    GROUP BY 2, 3, 4, 5;
    -- The delivery promise: how long after it was due each message was
    -- handed to the provider. Due is when its event was accepted, or the
    -- event's send_at, or the end of the quiet hours it waited for,
    -- whichever is latest; a message without an event (a resend, a
    -- reply) is due when it was created. A fallback is not a first
    -- handover, and a test is not a passenger's message. A message still
    -- queued counts with its wait so far, so a stuck backlog shows.
    INSERT INTO message_latency_counts (tenant_id, bucket, channel, measure, bin, count)
    SELECT p_tenant, date_bin('15 minutes', msg.created_at, timestamptz '2000-01-01 00:00:00+00'), msg.channel, 'handover',
        width_bucket(greatest(extract(epoch FROM coalesce(msg.sent_at, p_now)
            - greatest(coalesce(e.created_at, msg.created_at), coalesce(e.send_at, '-infinity'), coalesce(msg.deferred_until, '-infinity'))), 0)::double precision,
            message_latency_bounds()),
        count(*)
    FROM messages msg
    LEFT JOIN events e ON e.id = msg.event_id AND e.tenant_id = p_tenant
    WHERE msg.tenant_id = p_tenant AND msg.created_at >= p_from AND msg.created_at < p_through
        AND msg.fallback_of IS NULL AND NOT msg.test
        AND (msg.sent_at IS NOT NULL OR (msg.status = 'QUEUED' AND coalesce(msg.deferred_until, msg.created_at) < p_now))
    GROUP BY 2, 3, 4, 5;
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
DROP INDEX message_latency_counts_bucket_idx;
DELETE FROM message_latency_counts WHERE measure <> 'delivered';
ALTER TABLE message_latency_counts DROP CONSTRAINT message_latency_counts_pkey;
ALTER TABLE message_latency_counts ADD PRIMARY KEY (tenant_id, bucket, channel, bin);
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
ALTER TABLE message_latency_counts DROP COLUMN measure;
