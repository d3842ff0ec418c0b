-- Time rules of bookings and trips: quiet hours per tenant, expiry of events
-- and messages (the EXPIRED status, seed 003), send times relative to a time
-- in the event's context, and messages deferred until quiet hours end.
--
-- Quiet hours are minutes after local midnight in the recipient's zone; a
-- start equal to the end means the tenant has none. The default is
-- 21:00-08:00.

-- +goose Up
ALTER TABLE tenants
    ADD COLUMN quiet_hours_start smallint NOT NULL DEFAULT 1260 CHECK (quiet_hours_start BETWEEN 0 AND 1439),
    ADD COLUMN quiet_hours_end   smallint NOT NULL DEFAULT 480 CHECK (quiet_hours_end BETWEEN 0 AND 1439);

-- expires_rule says where a default expiry came from (a context time such as
-- departure_at, or a time after the event was due); NULL when the request set
-- expires_at itself or there is none. send_at_rule is a relative send_at
-- ({"before"|"after": key, "offset", "zone"}), kept so that a change of the
-- context time moves the schedule.
ALTER TABLE events
    ADD COLUMN expires_at   timestamptz,
    ADD COLUMN expires_rule text,
    ADD COLUMN send_at_rule jsonb;
ALTER TABLE events DROP CONSTRAINT events_status_check;
ALTER TABLE events ADD CONSTRAINT events_status_check
    CHECK (status IN ('RECEIVED', 'SCHEDULED', 'AWAITING_APPROVAL', 'ROUTED', 'CANCELLED', 'REJECTED', 'FAILED', 'EXPIRED'));
-- Pending relative schedules of an entity, found when its time changes.
CREATE INDEX events_relative_idx ON events (tenant_id, entity_type, entity_id)
    WHERE send_at_rule IS NOT NULL AND status IN ('RECEIVED', 'SCHEDULED', 'AWAITING_APPROVAL');
-- Pending events past their expiry, found by the expiry sweep.
CREATE INDEX events_expiry_idx ON events (expires_at)
    WHERE expires_at IS NOT NULL AND status IN ('RECEIVED', 'SCHEDULED', 'AWAITING_APPROVAL');

-- deferred_until is when a message held by quiet hours may go (its dispatch
-- job is scheduled then); deferred_zone is the zone the window was read in.
ALTER TABLE messages
    ADD COLUMN expires_at     timestamptz,
    ADD COLUMN deferred_until timestamptz,
    ADD COLUMN deferred_zone  text;
ALTER TABLE messages DROP CONSTRAINT messages_status_check;
ALTER TABLE messages ADD CONSTRAINT messages_status_check
    CHECK (status IN ('QUEUED', 'SENT', 'DELIVERED', 'READ', 'FAILED', 'CANCELLED', 'EXPIRED'));
CREATE INDEX messages_expiry_idx ON messages (expires_at) WHERE expires_at IS NOT NULL AND status = 'QUEUED';

-- EXPIRED, like CANCELLED, is reached from QUEUED only and is final.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald_message_status_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  forward constant text[] := ARRAY['QUEUED', 'SENT', 'DELIVERED', 'READ'];
BEGIN
  IF NEW.status = OLD.status
     OR (NEW.status = 'FAILED' AND OLD.status IN ('QUEUED', 'SENT', 'DELIVERED'))
     OR (NEW.status IN ('CANCELLED', 'EXPIRED') AND OLD.status = 'QUEUED')
     OR (array_position(forward, NEW.status) > array_position(forward, OLD.status))
     OR (OLD.status = 'SENT' AND NEW.status = 'QUEUED' AND current_setting('herald.requeue_sent', true) = 'on')
  THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'message % cannot move from % to %', OLD.id, OLD.status, NEW.status
    USING ERRCODE = 'check_violation',
          DETAIL = 'A message status only moves forward: QUEUED, SENT, DELIVERED, READ; FAILED from QUEUED, SENT or DELIVERED; CANCELLED and EXPIRED from QUEUED.',
          HINT = 'A message''s history is not edited; send a new message instead.';
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION herald_message_status_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  forward constant text[] := ARRAY['QUEUED', 'SENT', 'DELIVERED', 'READ'];
BEGIN
  IF NEW.status = OLD.status
     OR (NEW.status = 'FAILED' AND OLD.status IN ('QUEUED', 'SENT', 'DELIVERED'))
     OR (NEW.status = 'CANCELLED' AND OLD.status = 'QUEUED')
     OR (array_position(forward, NEW.status) > array_position(forward, OLD.status))
     OR (OLD.status = 'SENT' AND NEW.status = 'QUEUED' AND current_setting('herald.requeue_sent', true) = 'on')
  THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'message % cannot move from % to %', OLD.id, OLD.status, NEW.status
    USING ERRCODE = 'check_violation',
          DETAIL = 'A message status only moves forward: QUEUED, SENT, DELIVERED, READ; FAILED from QUEUED, SENT or DELIVERED; CANCELLED from QUEUED.',
          HINT = 'A message''s history is not edited; send a new message instead.';
END
$$;
-- +goose StatementEnd
DROP INDEX messages_expiry_idx;
ALTER TABLE messages DROP CONSTRAINT messages_status_check;
ALTER TABLE messages ADD CONSTRAINT messages_status_check
    CHECK (status IN ('QUEUED', 'SENT', 'DELIVERED', 'READ', 'FAILED', 'CANCELLED'));
ALTER TABLE messages DROP COLUMN expires_at, DROP COLUMN deferred_until, DROP COLUMN deferred_zone;
DROP INDEX events_expiry_idx;
DROP INDEX events_relative_idx;
ALTER TABLE events DROP CONSTRAINT events_status_check;
ALTER TABLE events ADD CONSTRAINT events_status_check
    CHECK (status IN ('RECEIVED', 'SCHEDULED', 'AWAITING_APPROVAL', 'ROUTED', 'CANCELLED', 'REJECTED', 'FAILED'));
ALTER TABLE events DROP COLUMN expires_at, DROP COLUMN expires_rule, DROP COLUMN send_at_rule;
ALTER TABLE tenants DROP COLUMN quiet_hours_start, DROP COLUMN quiet_hours_end;
