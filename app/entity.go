package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Bookings and trips. Herald knows three things about the entities its
// events are about:
//
//   - supersessions: an accepted event that makes others pointless for its
//     booking or trip (BOOKING_CANCELLED, TRIP_CANCELLED; see
//     EventDef.Supersedes). Pending events and QUEUED messages of the
//     superseded types are cancelled in the transaction that accepts it, and
//     a superseded event that arrives later is stored cancelled, so the
//     order of arrival does not matter. A message whose send has started
//     (or that was sent) is left alone: it cannot be called back.
//   - trip membership: which trip a booking is on, learnt from events about
//     a booking that name its trip in context.trip_id, and forgotten when
//     the booking is cancelled.
//   - trip audiences: an event may target {"trip_id"} instead of listing
//     recipients; routing expands it to the trip's current passengers.
//
// Concurrency: every check-then-act on an entity runs under a
// transaction-scoped lock on the entity in Postgres. Events that can be
// superseded take it shared (on the booking, and on the trip first when
// they name one); superseding events take it exclusive (a trip's also on
// each booking known on the trip). Locks are taken trip before booking, and
// no transaction holding a booking's lock waits for a trip's, so they cannot
// deadlock. Routing reads the supersessions again in the statement that
// locks the event, so an event that slipped past (its trip was learnt
// later) is cancelled when its time comes.

// Entity names a booking, trip or invoice of a tenant.
type Entity struct {
	Type string
	ID   string
}

// ReasonSupersededBy starts the reason of an event or message cancelled
// because another event made it pointless: superseded_by:<event id>.
const ReasonSupersededBy = "superseded_by:"

// SupersededReason is the cancel reason naming the superseding event.
func SupersededReason(id uuid.UUID) string { return ReasonSupersededBy + id.String() }

// SupersedingID returns the superseding event named by a cancel reason.
func SupersedingID(reason string) (uuid.UUID, bool) {
	s, ok := strings.CutPrefix(reason, ReasonSupersededBy)
	if !ok {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(s)
	return id, err == nil
}

// SupersedingRef is the accepted event that supersedes another.
type SupersedingRef struct {
	EventID      uuid.UUID `db:"event_id"`
	TriggerEvent string    `db:"trigger_event"`
}

// SupersessionQuery asks whether an event about Entity is superseded, and
// teaches Herald the booking's trip when the event names one.
type SupersessionQuery struct {
	TriggerEvent string
	Entity       Entity
	// TripID is the trip the event names (context.trip_id); "" if none.
	TripID string
	// Check: look for a superseding event (the event's type can be
	// superseded).
	Check bool
	// LearnFrom is the event that teaches the booking's trip (Entity a
	// booking and TripID set); uuid.Nil learns nothing.
	LearnFrom uuid.UUID
	At        time.Time
}

// Supersession is an accepted event cancelling what it makes pointless.
type Supersession struct {
	TenantID uuid.UUID
	Event    *Event
	Entity   Entity
	// Supersedes are the trigger events it cancels.
	Supersedes []string
	// LeavesTrip: the booking leaves its trip's audience.
	LeavesTrip bool
	// TripID is the trip the event names, if any (recorded when the
	// booking's trip was never learnt).
	TripID string
	At     time.Time
}

// SupersedeResult counts what a supersession did.
type SupersedeResult struct {
	// Events is the pending events cancelled; Messages the QUEUED messages.
	Events   int `db:"events"`
	Messages int `db:"messages"`
	// Sending is the messages left alone because their send had started.
	Sending int `db:"sending"`
}

// TripPassenger is one current passenger of a trip as Herald learnt them:
// a contact that received messages about one of the trip's bookings.
type TripPassenger struct {
	BookingID          string    `db:"booking_id"`
	ContactID          uuid.UUID `db:"contact_id"`
	Name               string    `db:"name"`
	Phone              *string   `db:"phone"`
	Email              *string   `db:"email"`
	Locale             *string   `db:"locale"`
	PassengerProfileID *string   `db:"passenger_profile_id"`
}

// EntityTx lists the statements that keep bookings and trips consistent.
type EntityTx interface {
	// LockEntities takes transaction-scoped locks on the entities, in the
	// order given: shared, or exclusive.
	LockEntities(ctx context.Context, tenantID uuid.UUID, exclusive bool, refs ...Entity) error
	// SupersedingEvent learns the booking's trip (see SupersessionQuery)
	// and returns the first accepted event that supersedes the query's
	// event for its entity or the entity's trip; nil when none does (or
	// q.Check is false).
	SupersedingEvent(ctx context.Context, tenantID uuid.UUID, q SupersessionQuery) (*SupersedingRef, error)
	// Supersede records s and cancels the pending events and the QUEUED
	// messages not being sent of the superseded types, about its entity
	// (and, for a trip, the bookings known on it); for LeavesTrip, the
	// booking leaves its trip. A trip's bookings are locked exclusively
	// first.
	Supersede(ctx context.Context, s Supersession) (SupersedeResult, error)
	// TripAudienceSize reports whether Herald knows the trip (any booking
	// was ever on it) and how many current passengers it has.
	TripAudienceSize(ctx context.Context, tenantID uuid.UUID, tripID string) (known bool, passengers int, err error)
}

// AudienceTx lists the statements routing an audience event runs.
type AudienceTx interface {
	// TripPassengers returns the trip's current passengers, by booking and
	// name.
	TripPassengers(ctx context.Context, tenantID uuid.UUID, tripID string) ([]TripPassenger, error)
	// SetEventRecipients stores the recipients an audience expanded to.
	SetEventRecipients(ctx context.Context, e *Event) error
}

// Audience targets the passengers of a trip instead of listed recipients.
type Audience struct {
	TripID string `json:"trip_id"`
}

// TripAudience returns the trip an event targets, or "".
func (e *Event) TripAudience() string {
	if len(e.Audience) == 0 {
		return ""
	}
	var a Audience
	if err := json.Unmarshal(e.Audience, &a); err != nil {
		return ""
	}
	return a.TripID
}

// ContextTripID returns the trip a context names in trip_id, or "".
func ContextTripID(ctx map[string]any) string {
	s, _ := ctx["trip_id"].(string)
	return strings.TrimSpace(s)
}

// AudienceRecipients turns a trip's passengers into an event's recipients:
// each with the name, addresses and locale Herald learnt, and their own
// name as passenger_name, so templates that greet the passenger greet each
// one.
func AudienceRecipients(ps []TripPassenger) []Recipient {
	out := make([]Recipient, 0, len(ps))
	for _, p := range ps {
		rc := Recipient{Name: p.Name, Phone: deref(p.Phone), Email: deref(p.Email), Locale: deref(p.Locale),
			PassengerProfileID: deref(p.PassengerProfileID)}
		ctx := map[string]any{"booking_id": p.BookingID}
		if p.Name != "" {
			ctx["passenger_name"] = p.Name
		}
		rc.Context = ctx
		out = append(out, rc)
	}
	return out
}

// entityOf returns what the event is about, and the trip it names.
func entityOf(e *Event, req *NotificationRequest) (Entity, string, bool) {
	if e.EntityType == nil {
		return Entity{}, "", false
	}
	ref := Entity{Type: *e.EntityType, ID: *e.EntityID}
	trip := ""
	if ref.Type == EntityBooking {
		trip = ContextTripID(req.Context)
	}
	return ref, trip, true
}

// entityLocks returns the entities settleEntity locks for e, and whether
// exclusively: a superseding event its own entity, exclusively; an event
// that can be superseded, or a booking's that names its trip (learnt),
// the trip and the booking, shared; none for any other event.
func entityLocks(def *EventDef, e *Event, req *NotificationRequest) ([]Entity, bool) {
	ref, trip, ok := entityOf(e, req)
	switch {
	case !ok:
		return nil, false
	case len(def.Supersedes) > 0:
		return []Entity{ref}, true
	}
	learn := ref.Type == EntityBooking && trip != ""
	switch {
	case learn:
		return []Entity{{Type: EntityTrip, ID: trip}, ref}, false
	case def.Supersedable():
		return []Entity{ref}, false
	}
	return nil, false
}

// settleEntity runs, in the intake transaction and before the event is
// stored, what the event's entity requires: an audience must reach someone;
// an event that can be superseded is stored cancelled when it is; the
// booking's trip is learnt. Locks are taken first (see the package notes).
func (s *Intake) settleEntity(ctx context.Context, tx IntakeTx, def *EventDef, e *Event, req *NotificationRequest) error {
	if trip := e.TripAudience(); trip != "" {
		known, n, err := tx.TripAudienceSize(ctx, e.TenantID, trip)
		switch {
		case err != nil:
			return err
		case !known:
			return Invalid("unknown_trip", "audience.trip_id",
				"Herald knows no booking on trip %q: it learns a trip's passengers from events about its bookings that carry conversation_context {type: \"booking\"} and context.trip_id.", trip)
		case n == 0:
			return Invalid("empty_audience", "audience.trip_id",
				"Trip %q has no current passengers: every booking Herald knew on it was cancelled.", trip)
		}
	}
	refs, exclusive := entityLocks(def, e, req)
	if len(refs) == 0 {
		return nil
	}
	if err := tx.LockEntities(ctx, e.TenantID, exclusive, refs...); err != nil {
		return err
	}
	if exclusive {
		return nil
	}
	ref, trip, _ := entityOf(e, req)
	learn := ref.Type == EntityBooking && trip != ""
	q := SupersessionQuery{TriggerEvent: e.TriggerEvent, Entity: ref, TripID: trip, Check: def.Supersedable(), At: e.CreatedAt}
	if learn {
		q.LearnFrom = e.ID
	}
	by, err := tx.SupersedingEvent(ctx, e.TenantID, q)
	if err != nil || by == nil {
		return err
	}
	reason := SupersededReason(by.EventID)
	e.Status, e.StatusReason = EventCancelled, &reason
	return nil
}

// supersede cancels what an accepted superseding event makes pointless, in
// its intake transaction, and notes it in the audit log.
func (s *Intake) supersede(ctx context.Context, tx IntakeTx, key *APIKey, def *EventDef, e *Event, req *NotificationRequest) error {
	ref, trip, ok := entityOf(e, req)
	if !ok || len(def.Supersedes) == 0 {
		return nil
	}
	res, err := tx.Supersede(ctx, Supersession{TenantID: e.TenantID, Event: e, Entity: ref, Supersedes: def.Supersedes,
		LeavesTrip: def.LeavesTrip && ref.Type == EntityBooking, TripID: trip, At: e.CreatedAt})
	if err != nil {
		return fmt.Errorf("supersede for event %s: %w", e.ID, err)
	}
	actor := Actor{Type: ActorAPIKey, ID: &key.ID, Label: key.Name}
	return tx.InsertAudit(ctx, actor.Entry(&e.TenantID, "notification.supersede", "event", e.ID.String(), map[string]any{
		"entity": ref.Type + " " + ref.ID, "cancelled_events": res.Events, "cancelled_messages": res.Messages,
		"left_sending": res.Sending, "supersedes": def.Supersedes}))
}

// cancelSuperseded ends an event that a superseding event accepted since
// it was stored made pointless (its trip was learnt later, or it raced the
// superseding event's intake): it is cancelled instead of routed.
func (r *Router) cancelSuperseded(ctx context.Context, tx RouteTx, e *Event) error {
	reason := SupersededReason(e.Superseding.EventID)
	e.Status, e.StatusReason, e.UpdatedAt = EventCancelled, &reason, r.Now()
	r.Log.InfoContext(ctx, "event superseded; not routed", "event_id", e.ID, "superseded_by", e.Superseding.EventID,
		"superseding_event", e.Superseding.TriggerEvent)
	return tx.SetEventStatus(ctx, e)
}

// eventRecipients returns the recipients routing sends to: the event's
// own, or, for an audience, the trip's current passengers, which are
// stored on the event (retries and fallbacks read them there). ok is false
// when an audience has no passenger left: the event then fails with reason
// empty_audience.
func (r *Router) eventRecipients(ctx context.Context, tx RouteTx, e *Event) ([]Recipient, bool, error) {
	trip := e.TripAudience()
	if trip == "" {
		rs, err := e.DecodeRecipients()
		if err != nil {
			return nil, false, fmt.Errorf("event %s recipients: %w", e.ID, err)
		}
		return rs, true, nil
	}
	ps, err := tx.TripPassengers(ctx, e.TenantID, trip)
	if err != nil {
		return nil, false, err
	}
	if len(ps) == 0 {
		reason := "empty_audience"
		msg := fmt.Sprintf("Trip %s had no current passengers when the notification was routed.", trip)
		e.Status, e.StatusReason, e.Error, e.UpdatedAt = EventFailed, &reason, &msg, r.Now()
		return nil, false, tx.SetEventStatus(ctx, e)
	}
	rs := AudienceRecipients(ps)
	if e.Recipients, err = json.Marshal(rs); err != nil {
		return nil, false, err
	}
	return rs, true, tx.SetEventRecipients(ctx, e)
}

// TripBooking is a booking Herald learnt on a trip.
type TripBooking struct {
	BookingID  string     `db:"booking_id"`
	TripID     string     `db:"trip_id"`
	LearntFrom *uuid.UUID `db:"learnt_from"`
	LearntAt   time.Time  `db:"learnt_at"`
	// LeftAt is when the booking was cancelled (LeftBy the event).
	LeftAt *time.Time `db:"left_at"`
	LeftBy *uuid.UUID `db:"left_by"`
}
