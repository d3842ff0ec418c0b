package app

import "time"

// eventTimeRule is what the registry says about an event's time: whether
// it ignores quiet hours, when it expires by default, and which context
// times it changes for its entity.
type eventTimeRule struct {
	urgent bool
	expiry *ExpiryRule
	moves  []string
}

// atDeparture expires an event at the departure: context.departure_at,
// else once context.departure_date is over.
var atDeparture = &ExpiryRule{At: "departure_at", Date: "departure_date"}

// timeRules are the registry's time rules. Events not listed are not
// urgent and never expire by default: confirmations, cancellations,
// refunds and invoices are records the passenger keeps, whenever they
// arrive.
var timeRules = map[string]eventTimeRule{
	// A reminder after the bus has left is pointless.
	"PRE_TRIP_REMINDER": {expiry: atDeparture},
	// Payment after departure is settled another way.
	"FINAL_PAYMENT_DUE":     {expiry: atDeparture},
	"FINAL_PAYMENT_OVERDUE": {expiry: atDeparture},
	// A checkout link is stale after a week.
	"CHECKOUT_ABANDONED":          {expiry: &ExpiryRule{After: 7 * 24 * time.Hour}},
	"CHECKOUT_ABANDONED_WHATSAPP": {expiry: &ExpiryRule{After: 7 * 24 * time.Hour}},
	// Same-day operations: they cannot wait for the morning, and are stale
	// soon after.
	"SERVICE_LEG_STARTED":       {urgent: true, expiry: &ExpiryRule{After: 2 * time.Hour}},
	"SERVICE_LEG_CANCELLED":     {urgent: true, expiry: atDeparture},
	"VEHICLE_SWAP_NOTIFICATION": {urgent: true, expiry: atDeparture},
	"INCIDENT_BROADCAST":        {urgent: true, expiry: &ExpiryRule{After: 24 * time.Hour}},
	"INCIDENT_ALLCLEAR":         {urgent: true, expiry: &ExpiryRule{After: 24 * time.Hour}},
	// A cancelled trip: the passengers must know before they set off for
	// the bus, whatever the hour; pointless once it would have left.
	"TRIP_CANCELLED": {urgent: true, expiry: atDeparture},
	// The new departure time itself; it moves the reminders relative to it.
	"DEPARTURE_CHANGED": {urgent: true, expiry: &ExpiryRule{At: "departure_at"}, moves: []string{"departure_at"}},
}

// withTimeRules sets each event's time fields from timeRules.
func withTimeRules(events []EventDef) []EventDef {
	for i := range events {
		if r, ok := timeRules[events[i].Name]; ok {
			events[i].Urgent, events[i].Expiry, events[i].Moves = r.urgent, r.expiry, r.moves
		}
	}
	return events
}
