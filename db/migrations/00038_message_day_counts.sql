-- The dashboard's month and its 7-day chart count messages per day of the
-- tenant's timezone. From message_counts that is a month of quarters,
-- about 50,000 rows for a tenant on every channel, read on every load.
-- message_day_counts holds the same counts summed per day: 30 days are a
-- few hundred rows.
--
-- The days are summed from message_counts, not from the messages, by
-- message_day_counts_roll_up in the same transaction as
-- message_counts_roll_up: the days from the one p_from falls in onwards,
-- so each day holds exactly the quarters message_counts holds for it (the
-- day the mark's span ends in up to through, like its quarters). A full
-- recount, or a tenant whose timezone changed since the days were summed
-- (message_count_marks.day_zone), sums every day again. The reader uses
-- the days only where the period's bounds are midnights of day_zone, and
-- quarters or the messages elsewhere.

-- +goose Up
ALTER TABLE message_count_marks ADD COLUMN day_zone text;

CREATE TABLE message_day_counts (
    tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- Midnight of the tenant's timezone (day_zone) the day begins at.
    day       timestamptz NOT NULL,
    channel   text NOT NULL,
    status    text NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (tenant_id, day, channel, status)
);
ALTER TABLE message_day_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_day_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON message_day_counts USING (tenant_id = herald_tenant() OR herald_platform());

-- message_day_counts_roll_up sums message_counts into days of the tenant's
-- timezone, from the day p_from falls in (every day on p_full or a new
-- timezone), and records the timezone in the mark. It runs after
-- message_counts_roll_up, in its transaction and under its lock.
-- +goose StatementBegin
CREATE FUNCTION message_day_counts_roll_up(p_tenant uuid, p_from timestamptz, p_full boolean)
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

-- +goose Down
DROP FUNCTION message_day_counts_roll_up(uuid, timestamptz, boolean);
DROP TABLE message_day_counts;
ALTER TABLE message_count_marks DROP COLUMN day_zone;
