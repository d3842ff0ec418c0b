-- The delivery promise per day, read from days. The dashboard's promise
-- table read every quarter-hour histogram of the tenant's last seven days
-- from message_latency_counts (three measures, every channel, every bin:
-- some 8,000 rows at 3M messages, grouped by the tenant's day on each
-- load), and took longer than every other read of the page together.
-- message_latency_day_counts holds the same histograms summed per day of
-- the tenant's timezone, as message_day_counts does for the status counts:
-- summed by message_day_counts_roll_up from the quarters, in the roll-up's
-- transaction, so each day holds exactly the quarters rolled up for it.

-- +goose Up
CREATE TABLE message_latency_day_counts (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- Midnight of the tenant's timezone (message_count_marks.day_zone).
    day       timestamptz NOT NULL,
    channel   text NOT NULL,
    measure   text NOT NULL CHECK (measure IN ('delivered', 'read', 'handover')),
    bin       integer NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (tenant_id, day, channel, measure, bin)
);
ALTER TABLE message_latency_day_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_latency_day_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_latency_day_counts USING (tenant_id = (SELECT herald_tenant()) OR (SELECT herald_platform()));

-- The days of what is rolled up already, in the timezone the status days
-- were summed in.
INSERT INTO message_latency_day_counts (tenant_id, day, channel, measure, bin, count)
SELECT c.tenant_id, date_trunc('day', c.bucket, m.day_zone), c.channel, c.measure, c.bin, sum(c.count)
FROM message_latency_counts c JOIN message_count_marks m ON m.tenant_id = c.tenant_id
WHERE m.day_zone IS NOT NULL
GROUP BY 1, 2, 3, 4, 5;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION message_day_counts_roll_up(p_tenant uuid, p_from timestamptz, p_full boolean)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    m message_count_marks;
    tz text;
    d0 timestamptz;
    n bigint;
BEGIN
    SELECT * INTO m FROM message_count_marks WHERE tenant_id = p_tenant;
    SELECT timezone INTO tz FROM tenants WHERE id = p_tenant;
    IF m.tenant_id IS NULL OR tz IS NULL THEN
        RETURN 0;
    END IF;
    d0 := p_from;
    IF p_full OR m.day_zone IS DISTINCT FROM tz THEN
        DELETE FROM message_day_counts WHERE tenant_id = p_tenant;
        DELETE FROM message_latency_day_counts WHERE tenant_id = p_tenant;
        d0 := m.since;
    END IF;
    d0 := date_trunc('day', d0, tz);
    DELETE FROM message_day_counts WHERE tenant_id = p_tenant AND day >= d0;
    INSERT INTO message_day_counts (tenant_id, day, channel, status, count)
    SELECT p_tenant, date_trunc('day', bucket, tz), channel, status, sum(count)
    FROM message_counts WHERE tenant_id = p_tenant AND bucket >= d0
    GROUP BY 2, 3, 4;
    GET DIAGNOSTICS n = ROW_COUNT;
    DELETE FROM message_latency_day_counts WHERE tenant_id = p_tenant AND day >= d0;
    INSERT INTO message_latency_day_counts (tenant_id, day, channel, measure, bin, count)
    SELECT p_tenant, date_trunc('day', bucket, tz), channel, measure, bin, sum(count)
    FROM message_latency_counts WHERE tenant_id = p_tenant AND bucket >= d0
    GROUP BY 2, 3, 4, 5;
    IF m.day_zone IS DISTINCT FROM tz THEN
        UPDATE message_count_marks SET day_zone = tz WHERE tenant_id = p_tenant;
    END IF;
    RETURN n;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION message_day_counts_roll_up(p_tenant uuid, p_from timestamptz, p_full boolean)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    m message_count_marks;
    tz text;
    d0 timestamptz;
    n bigint;
BEGIN
    SELECT * INTO m FROM message_count_marks WHERE tenant_id = p_tenant;
    SELECT timezone INTO tz FROM tenants WHERE id = p_tenant;
    IF m.tenant_id IS NULL OR tz IS NULL THEN
        RETURN 0;
    END IF;
    d0 := p_from;
    IF p_full OR m.day_zone IS DISTINCT FROM tz THEN
        DELETE FROM message_day_counts WHERE tenant_id = p_tenant;
        d0 := m.since;
    END IF;
    d0 := date_trunc('day', d0, tz);
    DELETE FROM message_day_counts WHERE tenant_id = p_tenant AND day >= d0;
    INSERT INTO message_day_counts (tenant_id, day, channel, status, count)
    SELECT p_tenant, date_trunc('day', bucket, tz), channel, status, sum(count)
    FROM message_counts WHERE tenant_id = p_tenant AND bucket >= d0
    GROUP BY 2, 3, 4;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF m.day_zone IS DISTINCT FROM tz THEN
        UPDATE message_count_marks SET day_zone = tz WHERE tenant_id = p_tenant;
    END IF;
    RETURN n;
END
$$;
-- +goose StatementEnd
DROP TABLE message_latency_day_counts;
