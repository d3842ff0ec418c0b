-- "Not acknowledged by T": an ACKNOWLEDGED deadline may be counted back
-- from the departure instead of forward from the send.
--
-- A rule gives exactly one of minutes (after the send) and
-- before_departure_minutes (the message is overdue at the departure less
-- that many minutes); only an ACKNOWLEDGED rule may give the latter. The
-- departure is read from the event's context by herald_departure_at: an
-- RFC 3339 departure_at, else departure_date with departure_time (or
-- boarding_time) in the tenant's time zone. A context it cannot read has
-- no departure (NULL), so one malformed event never stops the scan.

-- +goose Up
ALTER TABLE delivery_deadlines ALTER COLUMN minutes DROP NOT NULL,
    ADD COLUMN before_departure_minutes integer CHECK (before_departure_minutes BETWEEN 1 AND 10080),
    ADD CONSTRAINT delivery_deadlines_one_rule CHECK ((minutes IS NULL) <> (before_departure_minutes IS NULL)),
    ADD CONSTRAINT delivery_deadlines_departure_ack CHECK (before_departure_minutes IS NULL OR stage = 'ACKNOWLEDGED');

-- +goose StatementBegin
CREATE FUNCTION herald_departure_at(ctx jsonb, tz text) RETURNS timestamptz
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
  clock text := coalesce(ctx->>'departure_time', ctx->>'boarding_time');
BEGIN
  IF ctx->>'departure_at' ~ '^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$' THEN
    RETURN (ctx->>'departure_at')::timestamptz;
  END IF;
  IF ctx->>'departure_date' ~ '^\d{4}-\d{2}-\d{2}$' AND clock ~ '^\d{1,2}:\d{2}$' THEN
    RETURN ((ctx->>'departure_date') || ' ' || clock)::timestamp AT TIME ZONE tz;
  END IF;
  RETURN NULL;
EXCEPTION WHEN others THEN
  RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION herald_departure_at(jsonb, text);
DELETE FROM delivery_deadlines WHERE minutes IS NULL;
ALTER TABLE delivery_deadlines DROP CONSTRAINT delivery_deadlines_departure_ack, DROP CONSTRAINT delivery_deadlines_one_rule,
    DROP COLUMN before_departure_minutes, ALTER COLUMN minutes SET NOT NULL;
