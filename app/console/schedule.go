package console

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// ScheduledEvent is an event waiting for its send_at, with the number of
// people it goes to.
type ScheduledEvent struct {
	app.Event
	RecipientCount int `db:"recipient_count"`
	// Due is set by the scheduled list when send_at has passed but the
	// event was not routed yet (the scheduler is catching up, or it waits
	// for approval).
	Due bool `db:"due"`
}

// ScheduleFilter narrows the list of scheduled notifications.
type ScheduleFilter struct {
	// TriggerEvent, when set, keeps one registry event.
	TriggerEvent string
	// EntityID, when set, keeps the events about one booking, trip or invoice.
	EntityID string
}

// ScheduleTx reads what the scheduled-notifications and approvals pages
// show. Changes go through Intake, as they do for the API.
type ScheduleTx interface {
	app.EventReader
	app.PlanTx
	// The price table prices the estimate of an approval.
	app.PriceReader
	// TripPassengers expands a trip audience (app.AudienceTx).
	TripPassengers(ctx context.Context, tenantID uuid.UUID, tripID string) ([]app.TripPassenger, error)
	TenantByID(ctx context.Context, id uuid.UUID) (*app.Tenant, error)
	EventByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*app.Event, error)
	// UpcomingEvents returns the tenant's events that are not sent yet and
	// can still be cancelled (SCHEDULED, or AWAITING_APPROVAL with or
	// without a time), soonest first, those without a time last; Due marks
	// those whose send_at is not after now.
	UpcomingEvents(ctx context.Context, tenantID uuid.UUID, f ScheduleFilter, now time.Time, page PageRequest) ([]*ScheduledEvent, error)
	// EventsAwaitingApproval returns the tenant's events held for a
	// manager's decision, newest first.
	EventsAwaitingApproval(ctx context.Context, tenantID uuid.UUID, page PageRequest) ([]*ScheduledEvent, error)
	// ExistingMessageKeys returns those of the idempotency keys the tenant
	// has a message with (routing would not send them again).
	ExistingMessageKeys(ctx context.Context, tenantID uuid.UUID, keys []string) ([]string, error)
	// ContactCandidates returns the tenant's contacts with one of the
	// profile ids, phone numbers or e-mail addresses, oldest first: every
	// contact a recipient with those details could be (app.MatchContact).
	ContactCandidates(ctx context.Context, tenantID uuid.UUID, profileIDs, phones, emails []string) ([]*app.Contact, error)
	// ContactsByIDs returns the tenant's contacts with the ids (unknown ids
	// are left out).
	ContactsByIDs(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) ([]*app.Contact, error)
	// EventMessagesByContact returns the messages of an event's first
	// maxContacts recipients (by their first message; messages without a
	// contact are one recipient), oldest first and at most maxMessages,
	// and how many recipients the event's messages have in all.
	EventMessagesByContact(ctx context.Context, tenantID, eventID uuid.UUID, maxContacts, maxMessages int) ([]*app.Message, int, error)
}

// DateTimeLocalLayout is the value format of an HTML datetime-local input.
const DateTimeLocalLayout = "2006-01-02T15:04"

// Schedules serves the console's scheduled-notifications and approvals
// pages. Reschedule, cancel and decisions are Intake's own methods, so the
// console and the API change events in exactly the same way; Schedules adds
// the console's permission checks and readable input errors.
type Schedules struct {
	Store  app.Store[ScheduleTx]
	Intake *app.Intake
	// Router plans the messages an event awaiting approval would send,
	// with the same template lookup and channel rules as routing.
	Router *app.Router
	// Prices price what an event awaiting approval would send (nil: no
	// estimate).
	Prices *app.Prices
	Now    app.Clock
}

// Upcoming returns one page of the tenant's scheduled notifications,
// soonest first, and whether more follow.
func (s *Schedules) Upcoming(ctx context.Context, u app.Principal, tenantID uuid.UUID, f ScheduleFilter, page PageRequest) ([]*ScheduledEvent, bool, error) {
	if err := app.RequirePermission(u, app.PermSchedules); err != nil {
		return nil, false, err
	}
	f.TriggerEvent = strings.TrimSpace(f.TriggerEvent)
	f.EntityID = strings.TrimSpace(f.EntityID)
	if f.TriggerEvent != "" {
		if _, ok := app.BuiltInEvent(f.TriggerEvent); !ok {
			return nil, false, app.FieldErrorf("event", "%q is not a known event; choose one from the list.", f.TriggerEvent)
		}
	}
	if len(f.EntityID) > 200 {
		return nil, false, app.FieldErrorf("entity", "A booking, trip or invoice id has at most 200 characters.")
	}
	var rows []*ScheduledEvent
	err := s.Store.InTenant(ctx, tenantID, func(tx ScheduleTx) (err error) {
		rows, err = tx.UpcomingEvents(ctx, tenantID, f, s.Now(), page)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	rows, more := Page(rows, page)
	return rows, more, nil
}

// Event returns one of the tenant's events; another tenant's id is not found.
func (s *Schedules) Event(ctx context.Context, u app.Principal, tenantID, eventID uuid.UUID) (*app.Event, error) {
	if err := app.RequirePermission(u, app.PermSchedules); err != nil {
		return nil, err
	}
	var e *app.Event
	err := s.Store.InTenant(ctx, tenantID, func(tx ScheduleTx) (err error) {
		e, err = tx.EventByID(ctx, tenantID, eventID, false)
		return err
	})
	return e, err
}

// ParseLocalTime reads a datetime-local value as a time in loc.
func ParseLocalTime(field, value string, loc *time.Location) (time.Time, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return time.Time{}, app.FieldErrorf(field, "Choose the new date and time.")
	}
	for _, layout := range []string{DateTimeLocalLayout, DateTimeLocalLayout + ":05", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, value, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, app.FieldErrorf(field, "%q is not a date and time such as 2027-04-12T07:15.", value)
}

// Reschedule moves an event to a new time given as a datetime-local value
// in the tenant's timezone. The version goes up and the audit log names
// the user.
func (s *Schedules) Reschedule(ctx context.Context, u app.Principal, tenantID, eventID uuid.UUID, value string, loc *time.Location) (*app.Event, error) {
	if err := app.RequirePermission(u, app.PermManageSchedules); err != nil {
		return nil, err
	}
	at, err := ParseLocalTime("send_at", value, loc)
	if err != nil {
		return nil, err
	}
	if !at.After(s.Now()) {
		return nil, app.FieldErrorf("send_at", "%s has passed; choose a time in the future.", at.Format("02 Jan 2006 15:04 MST"))
	}
	e, err := s.Intake.Reschedule(ctx, u.Actor(), tenantID, eventID, at)
	if app.ErrorCode(err) == app.ECONFLICT {
		return nil, app.Errorf(app.ECONFLICT, "This notification is no longer waiting to be sent, so it cannot be rescheduled.")
	}
	return e, err
}

// Cancel stops an event before it is sent.
func (s *Schedules) Cancel(ctx context.Context, u app.Principal, tenantID, eventID uuid.UUID) (*app.Event, error) {
	if err := app.RequirePermission(u, app.PermManageSchedules); err != nil {
		return nil, err
	}
	return s.Intake.Cancel(ctx, u.Actor(), tenantID, eventID)
}

// Decide approves an event awaiting approval, which routes it, or rejects
// it with a reason.
func (s *Schedules) Decide(ctx context.Context, u app.Principal, tenantID, eventID uuid.UUID, approve bool, reason string) (*app.Event, error) {
	if err := app.RequirePermission(u, app.PermApprove); err != nil {
		return nil, err
	}
	reason = strings.TrimSpace(reason)
	if !approve && reason == "" {
		return nil, app.FieldErrorf("reason", "Say why the notification is rejected; the reason is kept with it and in the audit log.")
	}
	if len(reason) > 1000 {
		return nil, app.FieldErrorf("reason", "The reason must be at most 1,000 characters.")
	}
	e, err := s.Intake.Decide(ctx, u.Actor(), tenantID, eventID, approve, reason)
	if app.ErrorCode(err) == app.ECONFLICT {
		return nil, app.Errorf(app.ECONFLICT, "This notification is no longer awaiting approval; someone may have decided it already.")
	}
	return e, err
}
