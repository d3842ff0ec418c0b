package console

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// TripTx lists the statements the trip page runs.
type TripTx interface {
	app.Tx
	// TripBookings returns the bookings Herald learnt on the trip, those
	// that left included.
	TripBookings(ctx context.Context, tenantID uuid.UUID, tripID string) ([]*app.TripBooking, error)
	TripPassengers(ctx context.Context, tenantID uuid.UUID, tripID string) ([]app.TripPassenger, error)
	PanelEvents(ctx context.Context, tenantID uuid.UUID, entityType, entityID string, limit int) ([]*app.Event, error)
	MessagesByEvent(ctx context.Context, tenantID, eventID uuid.UUID) ([]*app.Message, error)
}

// Reach states of one passenger for one notification.
const (
	// ReachRead: a message was read.
	ReachRead = "read"
	// ReachDelivered: a message was delivered.
	ReachDelivered = "delivered"
	// ReachWaiting: sent or queued, no delivery reported yet.
	ReachWaiting = "waiting"
	// ReachFailed: every message failed (or was cancelled).
	ReachFailed = "failed"
)

// PassengerReach is what one notification did for one passenger.
type PassengerReach struct {
	Name      string
	BookingID string
	// Phone and Email are the addresses the notification used, shown in
	// full so that staff can call the unreached (see Trips).
	Phone string
	Email string
	State string
	// Detail says why a failed passenger was not reached, or where a
	// waiting one stands.
	Detail string
	// AcknowledgedAt is when the passenger acknowledged one of the
	// notification's messages, and AckVia how; nil when not (yet).
	AcknowledgedAt *time.Time
	AckVia         string
	// CallListed: a message missed its deadline with no channel left.
	CallListed bool
}

// Acknowledged reports whether the passenger acknowledged the
// notification.
func (p PassengerReach) Acknowledged() bool { return p.AcknowledgedAt != nil }

// Reached reports whether a message reached the passenger.
func (p PassengerReach) Reached() bool { return p.State == ReachRead || p.State == ReachDelivered }

// TripReach is the reach of one notification to a trip's audience.
type TripReach struct {
	Event *app.Event
	// Passengers are everyone the notification went to, in the order of
	// its recipients.
	Passengers []PassengerReach
	// Notified counts the passengers a message was queued for;
	// Delivered those with a delivered or read one; Read those with a read
	// one; Failed those whose every message failed; Acknowledged those who
	// acknowledged one.
	Notified, Delivered, Read, Failed, Acknowledged int
	// AsksAck: the notification asks its passengers to acknowledge it.
	AsksAck bool
}

// ToCall returns the passengers staff should call: for a notification
// that asks for acknowledgement, those who did not acknowledge and are on
// the call list (every channel missed its deadline) or were not reached
// at all; otherwise the unreached.
func (r *TripReach) ToCall() []PassengerReach {
	if !r.AsksAck {
		return r.Unreached()
	}
	var out []PassengerReach
	for _, p := range r.Passengers {
		if !p.Acknowledged() && (p.CallListed || p.State == ReachFailed) {
			out = append(out, p)
		}
	}
	return out
}

// Unreached returns the passengers no message reached (yet): the ones to
// call.
func (r *TripReach) Unreached() []PassengerReach {
	var out []PassengerReach
	for _, p := range r.Passengers {
		if !p.Reached() {
			out = append(out, p)
		}
	}
	return out
}

// Summary says how many were reached (or, when the notification asks for
// it, acknowledged), and how many to call: "46 of 48 reached; call these
// 2", "46 of 48 acknowledged; call these 2".
func (r *TripReach) Summary() string {
	n := len(r.ToCall())
	s := fmt.Sprintf("%d of %d reached", len(r.Passengers)-len(r.Unreached()), len(r.Passengers))
	if r.AsksAck {
		s = fmt.Sprintf("%d of %d acknowledged", r.Acknowledged, len(r.Passengers))
	}
	switch {
	case n == 1:
		s += "; call this one"
	case n > 1:
		s += fmt.Sprintf("; call these %d", n)
	}
	return s
}

// TripPage is a trip as Herald knows it: its bookings, current passengers,
// the notifications about it and the reach of one of them.
type TripPage struct {
	TripID     string
	Bookings   []*app.TripBooking
	Passengers []app.TripPassenger
	// Events are the notifications about the trip itself (audiences,
	// TRIP_CANCELLED), newest first.
	Events []*app.Event
	// Reach is that of the chosen notification (the newest routed one by
	// default); nil when none was routed.
	Reach *TripReach
}

// Found reports whether Herald knows anything about the trip.
func (p *TripPage) Found() bool { return len(p.Bookings) > 0 || len(p.Events) > 0 }

// Trips serves the console's trip page.
type Trips struct {
	Store app.Store[TripTx]
}

// tripEventLimit bounds the notifications a trip page lists.
const tripEventLimit = 50

// Page gathers the trip page; eventID, when not nil, chooses the
// notification whose reach is shown. Another tenant's trip is an empty
// page, like a trip Herald never heard of.
func (s *Trips) Page(ctx context.Context, tenantID uuid.UUID, tripID string, eventID *uuid.UUID) (*TripPage, error) {
	p := &TripPage{TripID: tripID}
	err := s.Store.InTenant(ctx, tenantID, func(tx TripTx) (err error) {
		if p.Bookings, err = tx.TripBookings(ctx, tenantID, tripID); err != nil {
			return err
		}
		if p.Passengers, err = tx.TripPassengers(ctx, tenantID, tripID); err != nil {
			return err
		}
		if p.Events, err = tx.PanelEvents(ctx, tenantID, app.EntityTrip, tripID, tripEventLimit); err != nil {
			return err
		}
		var chosen *app.Event
		for _, e := range p.Events {
			if (eventID != nil && e.ID == *eventID) || (eventID == nil && chosen == nil && e.Status == app.EventRouted) {
				chosen = e
			}
		}
		if chosen == nil {
			if eventID != nil {
				return app.Errorf(app.ENOTFOUND, "Notification %s is not about trip %s.", eventID, tripID)
			}
			return nil
		}
		ms, err := tx.MessagesByEvent(ctx, tenantID, chosen.ID)
		if err != nil {
			return err
		}
		p.Reach, err = reachOf(chosen, ms)
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// reachOf works out each recipient's state from the event's messages:
// a recipient is reached when any message (a fallback included) was
// delivered or read.
func reachOf(e *app.Event, ms []*app.Message) (*TripReach, error) {
	rs, err := e.DecodeRecipients()
	if err != nil {
		return nil, err
	}
	r := &TripReach{Event: e, Passengers: make([]PassengerReach, len(rs)), AsksAck: app.SafetyEvent(e.TriggerEvent)}
	for i, rc := range rs {
		booking, _ := rc.Context["booking_id"].(string)
		r.Passengers[i] = PassengerReach{Name: rc.Name, BookingID: booking, Phone: rc.Phone, Email: rc.Email, State: ReachFailed,
			Detail: "no message was created"}
	}
	rank := map[string]int{ReachFailed: 0, ReachWaiting: 1, ReachDelivered: 2, ReachRead: 3}
	sent := make([]bool, len(rs))
	for _, m := range ms {
		if m.RecipientIndex == nil || *m.RecipientIndex >= len(rs) {
			continue
		}
		i := *m.RecipientIndex
		p := &r.Passengers[i]
		state, detail := ReachFailed, string(m.Channel)+" "+m.Status
		switch m.Status {
		case app.MessageRead:
			state = ReachRead
		case app.MessageDelivered:
			state = ReachDelivered
		case app.MessageQueued, app.MessageSent:
			state = ReachWaiting
		}
		if m.FailedReason != nil {
			detail += ": " + *m.FailedReason
		}
		// A message routing could plan (it has an account) was an attempt
		// to notify; the stand-in of a recipient nothing could reach is not.
		sent[i] = sent[i] || m.ChannelAccountID != nil
		ackOf(r, p, m)
		// The best state wins; among equals the newest message (the end of
		// a fallback chain) says what happened.
		if rank[state] >= rank[p.State] || p.Detail == "no message was created" {
			p.State, p.Detail = state, detail
		}
	}
	for i, p := range r.Passengers {
		if sent[i] {
			r.Notified++
		}
		switch p.State {
		case ReachRead:
			r.Read++
			r.Delivered++
		case ReachDelivered:
			r.Delivered++
		case ReachFailed:
			r.Failed++
		}
		if p.Acknowledged() {
			r.Acknowledged++
		}
	}
	return r, nil
}

// ackOf adds what message m says about acknowledgement to passenger p: the
// first acknowledgement of any of their messages, and the call list. A
// message acknowledged shows the notification asks for acknowledgement
// even when its event is only the tenant's mark.
func ackOf(r *TripReach, p *PassengerReach, m *app.Message) {
	if m.AcknowledgedAt != nil && (p.AcknowledgedAt == nil || m.AcknowledgedAt.Before(*p.AcknowledgedAt)) {
		p.AcknowledgedAt, p.AckVia = m.AcknowledgedAt, deref(m.AckVia)
		r.AsksAck = true
	}
	if m.CallListedAt != nil {
		p.CallListed = true
	}
}
