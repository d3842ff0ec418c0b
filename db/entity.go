package db

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// entityLockClass is the first key of every entity lock
// (pg_advisory_xact_lock(class, hash)), so that they never meet other
// advisory locks (River's take one bigint key); the second is
// hashtext(tenant/type/id). Two entities sharing a hash only wait for each
// other.
const entityLockClass = 0x68726c64

// entityLockKey is the SQL of the second key of an entity's lock, for the
// tenant in tenant, the type and id in the given expressions.
func entityLockKey(tenant, typ, id string) string {
	return fmt.Sprintf("hashtext(%s::text || '/' || %s || '/' || %s)", tenant, typ, id)
}

// LockEntities serves app.EntityTx: one statement takes the locks, left to
// right, until the transaction ends.
func (t *Tx) LockEntities(ctx context.Context, tenantID uuid.UUID, exclusive bool, refs ...app.Entity) error {
	if len(refs) == 0 {
		return nil
	}
	fn := "pg_advisory_xact_lock_shared"
	if exclusive {
		fn = "pg_advisory_xact_lock"
	}
	calls := make([]string, len(refs))
	args := []any{tenantID}
	for i, r := range refs {
		args = append(args, r.Type, r.ID)
		calls[i] = fmt.Sprintf("%s(%d, %s)", fn, entityLockClass, entityLockKey("$1", fmt.Sprintf("$%d::text", len(args)-1), fmt.Sprintf("$%d::text", len(args))))
	}
	_, err := t.tx.ExecContext(ctx, `SELECT `+strings.Join(calls, ", "), args...)
	return mapErr(err)
}

// supersededBy is the first accepted event that supersedes the event e (a
// lateral subquery over e): one about e's own entity, or about the trip
// of e's booking (named in its context, or learnt).
const supersededBy = `
	SELECT s.event_id, s.trigger_event FROM entity_supersessions s
	WHERE s.tenant_id = e.tenant_id AND e.trigger_event = ANY (s.supersedes) AND s.event_id <> e.id
	  AND ((s.entity_type = e.entity_type AND s.entity_id = e.entity_id)
	    OR (e.entity_type = 'booking' AND s.entity_type = 'trip'
	      AND (s.entity_id = e.context->>'trip_id'
	        OR s.entity_id IN (SELECT tb.trip_id FROM trip_bookings tb WHERE tb.tenant_id = e.tenant_id AND tb.booking_id = e.entity_id))))
	ORDER BY s.created_at, s.event_id LIMIT 1`

// SupersedingEvent serves app.EntityTx in one statement: the booking's trip
// is learnt (a booking that left its trip stays out; a moved booking
// follows), and the supersession looked up. Call it after LockEntities.
// It returns nil when nothing supersedes the event.
func (t *Tx) SupersedingEvent(ctx context.Context, tenantID uuid.UUID, q app.SupersessionQuery) (*app.SupersedingRef, error) {
	var learnFrom *uuid.UUID
	if q.LearnFrom != uuid.Nil {
		learnFrom = &q.LearnFrom
	}
	var refs []app.SupersedingRef
	err := t.tx.SelectContext(ctx, &refs, `
		WITH learn AS (
			INSERT INTO trip_bookings (tenant_id, booking_id, trip_id, learnt_from, learnt_at)
			SELECT $1, $3, $4, $5, $6 WHERE $5::uuid IS NOT NULL
			ON CONFLICT (tenant_id, booking_id) DO UPDATE SET trip_id = excluded.trip_id, learnt_from = excluded.learnt_from,
				learnt_at = excluded.learnt_at
			WHERE trip_bookings.left_at IS NULL AND trip_bookings.trip_id <> excluded.trip_id
		)
		SELECT s.event_id, s.trigger_event FROM entity_supersessions s
		WHERE $7 AND s.tenant_id = $1 AND $8 = ANY (s.supersedes)
		  AND ((s.entity_type = $2 AND s.entity_id = $3)
		    OR ($2 = 'booking' AND s.entity_type = 'trip'
		      AND (s.entity_id = $4 OR s.entity_id IN (SELECT tb.trip_id FROM trip_bookings tb WHERE tb.tenant_id = $1 AND tb.booking_id = $3))))
		ORDER BY s.created_at, s.event_id LIMIT 1`,
		tenantID, q.Entity.Type, q.Entity.ID, q.TripID, learnFrom, q.At, q.Check, q.TriggerEvent)
	if err != nil || len(refs) == 0 {
		return nil, mapErr(err)
	}
	return &refs[0], nil
}

// supersededEntity matches rows (with entity_type and entity_id columns)
// about the superseding entity ($2, $3), or, when it is a trip, about a
// booking known on it.
const supersededEntity = `((entity_type = $2 AND entity_id = $3)
	OR ($2 = 'trip' AND entity_type = 'booking'
	  AND entity_id IN (SELECT tb.booking_id FROM trip_bookings tb WHERE tb.tenant_id = $1 AND tb.trip_id = $3)))`

// Supersede serves app.EntityTx. Call it after LockEntities took the
// entity exclusively. A trip's bookings are locked exclusively first, so
// that an event about one of them that does not name the trip waits for
// the supersession or is seen by it. Events are cancelled in a statement
// of their own before the messages: one that waits for a routing
// transaction holding an event sees that transaction's messages in the
// next statement.
func (t *Tx) Supersede(ctx context.Context, s app.Supersession) (app.SupersedeResult, error) {
	var res app.SupersedeResult
	if s.Entity.Type == app.EntityTrip {
		if _, err := t.tx.ExecContext(ctx, `
			SELECT count(pg_advisory_xact_lock(`+fmt.Sprint(entityLockClass)+`, `+entityLockKey("$1", "'booking'", "b.booking_id")+`))
			FROM (SELECT booking_id FROM trip_bookings WHERE tenant_id = $1 AND trip_id = $2 ORDER BY booking_id) b`,
			s.TenantID, s.Entity.ID); err != nil {
			return res, mapErr(err)
		}
	}
	reason := app.SupersededReason(s.Event.ID)
	types := app.StringList(s.Supersedes)
	err := t.tx.GetContext(ctx, &res.Events, `
		WITH recorded AS (
			INSERT INTO entity_supersessions (tenant_id, entity_type, entity_id, event_id, trigger_event, supersedes, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING
		), leaves AS (
			INSERT INTO trip_bookings (tenant_id, booking_id, trip_id, learnt_at, left_at, left_by)
			SELECT $1, $3, $9, $7, $7, $4 WHERE $10
			ON CONFLICT (tenant_id, booking_id) DO UPDATE SET left_at = excluded.left_at, left_by = excluded.left_by
			WHERE trip_bookings.left_at IS NULL
		), cancelled AS (
			UPDATE events SET status = 'CANCELLED', status_reason = $8, updated_at = $7
			WHERE tenant_id = $1 AND status IN ('RECEIVED', 'SCHEDULED', 'AWAITING_APPROVAL') AND trigger_event = ANY ($6)
			  AND id <> $4 AND `+supersededEntity+`
			RETURNING id
		)
		SELECT count(*) FROM cancelled`,
		s.TenantID, s.Entity.Type, s.Entity.ID, s.Event.ID, s.Event.TriggerEvent, types, s.At, reason, s.TripID, s.LeavesTrip)
	if err != nil {
		return res, mapErr(err)
	}
	cancelled, err := json.Marshal(map[string]any{"superseded_by": s.Event.ID.String(), "superseding_event": s.Event.TriggerEvent})
	if err != nil {
		return res, err
	}
	left, err := json.Marshal(map[string]any{"superseded_by": s.Event.ID.String(), "superseding_event": s.Event.TriggerEvent,
		"note": "Not cancelled: its send had started when " + s.Event.TriggerEvent + " was accepted."})
	if err != nil {
		return res, err
	}
	err = t.tx.GetContext(ctx, &res, `
		WITH cancelled AS (
			UPDATE messages SET status = 'CANCELLED', failed_reason = $5, updated_at = $4
			WHERE tenant_id = $1 AND status = 'QUEUED' AND send_started_at IS NULL AND trigger_event = ANY ($6) AND `+supersededEntity+`
			RETURNING tenant_id, id
		), cancelled_entries AS (
			INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, detail, at)
			SELECT tenant_id, id, 'QUEUED', 'CANCELLED', 'system', $7, $4 FROM cancelled
		), sending AS (
			SELECT tenant_id, id FROM messages
			WHERE tenant_id = $1 AND status = 'QUEUED' AND send_started_at IS NOT NULL AND trigger_event = ANY ($6) AND `+supersededEntity+`
		), sending_entries AS (
			INSERT INTO message_events (tenant_id, message_id, source, detail, at)
			SELECT tenant_id, id, 'system', $8, $4 FROM sending
		)
		SELECT $9::int AS events, (SELECT count(*) FROM cancelled) AS messages, (SELECT count(*) FROM sending) AS sending`,
		s.TenantID, s.Entity.Type, s.Entity.ID, s.At, reason, types, string(cancelled), string(left), res.Events)
	return res, mapErr(err)
}

// TripAudienceSize serves app.EntityTx.
func (t *Tx) TripAudienceSize(ctx context.Context, tenantID uuid.UUID, tripID string) (bool, int, error) {
	var row struct {
		Known      bool `db:"known"`
		Passengers int  `db:"passengers"`
	}
	err := t.tx.GetContext(ctx, &row, `
		SELECT EXISTS (SELECT 1 FROM trip_bookings WHERE tenant_id = $1 AND trip_id = $2) AS known,
			(SELECT count(DISTINCT cv.contact_id) FROM trip_bookings tb
			 JOIN conversations cv ON cv.tenant_id = tb.tenant_id AND cv.booking_id = tb.booking_id
			 WHERE tb.tenant_id = $1 AND tb.trip_id = $2 AND tb.left_at IS NULL) AS passengers`, tenantID, tripID)
	return row.Known, row.Passengers, mapErr(err)
}

// TripPassengers serves app.AudienceTx and the trip page: the contacts
// with a conversation about one of the trip's current bookings, each once,
// by booking and name.
func (t *Tx) TripPassengers(ctx context.Context, tenantID uuid.UUID, tripID string) ([]app.TripPassenger, error) {
	ps := []app.TripPassenger{}
	err := t.tx.SelectContext(ctx, &ps, `
		SELECT DISTINCT ON (c.id) tb.booking_id, c.id AS contact_id, c.name, c.phone, c.email, c.locale, c.passenger_profile_id
		FROM trip_bookings tb
		JOIN conversations cv ON cv.tenant_id = tb.tenant_id AND cv.booking_id = tb.booking_id
		JOIN contacts c ON c.tenant_id = cv.tenant_id AND c.id = cv.contact_id
		WHERE tb.tenant_id = $1 AND tb.trip_id = $2 AND tb.left_at IS NULL
		ORDER BY c.id, tb.booking_id`, tenantID, tripID)
	if err != nil {
		return nil, mapErr(err)
	}
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].BookingID != ps[j].BookingID {
			return ps[i].BookingID < ps[j].BookingID
		}
		return ps[i].Name < ps[j].Name
	})
	return ps, nil
}

// SetEventRecipients serves app.AudienceTx.
func (t *Tx) SetEventRecipients(ctx context.Context, e *app.Event) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE events SET recipients = $3 WHERE tenant_id = $1 AND id = $2`,
		e.TenantID, e.ID, string(e.Recipients))
	return mapErr(err)
}

// TripBookings serves console.TripTx: the bookings Herald learnt on the
// trip, those that left it included, by booking id.
func (t *Tx) TripBookings(ctx context.Context, tenantID uuid.UUID, tripID string) ([]*app.TripBooking, error) {
	bs := []*app.TripBooking{}
	err := t.tx.SelectContext(ctx, &bs, `
		SELECT booking_id, trip_id, learnt_from, learnt_at, left_at, left_by FROM trip_bookings
		WHERE tenant_id = $1 AND trip_id = $2 ORDER BY booking_id LIMIT 1000`, tenantID, tripID)
	return bs, mapErr(err)
}
