-- Bookings and trips: cancellations that supersede pending messages, and
-- trip audiences.
--
-- entity_supersessions: an accepted event that makes other events about the
-- same booking or trip pointless (a cancellation) leaves one row here, with
-- the trigger events it supersedes. Intake reads it for every later event of
-- those types about the entity (stored CANCELLED at once), and routing reads
-- it once more when the event's time comes, so the order of arrival does not
-- matter.
--
-- trip_bookings: which trip a booking is on, learnt from events that name
-- both (conversation_context booking plus context.trip_id). left_at is set
-- when the booking is cancelled: it no longer belongs to the trip's audience,
-- and a later event about it does not bring it back.
--
-- events.audience: {"trip_id"} when the event targets a trip's passengers
-- instead of listing recipients; routing expands it and stores the expanded
-- recipients. events.status_reason says why an event ended as it did
-- (superseded_by:<event id>).

-- +goose Up
ALTER TABLE events ADD COLUMN audience jsonb, ADD COLUMN status_reason text;

CREATE TABLE entity_supersessions (
    tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    entity_type   text NOT NULL CHECK (entity_type IN ('booking', 'trip', 'invoice')),
    entity_id     text NOT NULL,
    event_id      uuid NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    trigger_event text NOT NULL,
    supersedes    text[] NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, entity_type, entity_id, event_id)
);
CREATE INDEX entity_supersessions_event_idx ON entity_supersessions (event_id);
ALTER TABLE entity_supersessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE entity_supersessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON entity_supersessions USING (tenant_id = herald_tenant() OR herald_platform());

CREATE TABLE trip_bookings (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    booking_id  text NOT NULL,
    trip_id     text NOT NULL,
    -- The event that taught it; learnt before that event is stored, so no
    -- foreign key (retention may remove the event).
    learnt_from uuid,
    learnt_at   timestamptz NOT NULL,
    left_at     timestamptz,
    left_by     uuid REFERENCES events (id) ON DELETE SET NULL,
    PRIMARY KEY (tenant_id, booking_id)
);
CREATE INDEX trip_bookings_trip_idx ON trip_bookings (tenant_id, trip_id);
CREATE INDEX trip_bookings_left_idx ON trip_bookings (left_by) WHERE left_by IS NOT NULL;
ALTER TABLE trip_bookings ENABLE ROW LEVEL SECURITY;
ALTER TABLE trip_bookings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON trip_bookings USING (tenant_id = herald_tenant() OR herald_platform());

-- The trip page finds a trip's passengers through their conversations about
-- its bookings.
CREATE INDEX conversations_booking_idx ON conversations (tenant_id, booking_id) WHERE booking_id IS NOT NULL;

-- +goose Down
DROP INDEX conversations_booking_idx;
DROP TABLE trip_bookings;
DROP TABLE entity_supersessions;
ALTER TABLE events DROP COLUMN status_reason, DROP COLUMN audience;
