package app

import "sort"

// Entity kinds an event can be about. They are also the conversation context
// types of a NotificationRequest.
const (
	EntityBooking = "booking"
	EntityTrip    = "trip"
	EntityInvoice = "invoice"
)

// EventDef describes one trigger event: which channels it goes out on, which
// context variables its templates use, and how it is deduplicated.
type EventDef struct {
	Name        string
	Description string
	// Channels are the channels used when a request names none.
	Channels []Channel
	// Fallback, when set, is the default fallback chain: only the first usable
	// channel is sent, the next one only if it fails permanently.
	Fallback []Channel
	// Variables are the names of the context variables a request must
	// carry, in Types' order.
	Variables []string
	// Types are the variables with their types: a request whose variable
	// is present but not of its type is refused.
	Types []Variable
	// RequiresApproval holds the event until a manager approves it.
	RequiresApproval bool
	// OncePerEntity events are sent once per entity (a booking is confirmed
	// once, however many event ids the caller sends); others send every time.
	OncePerEntity bool
	// Category says whether the event is transactional (always sent) or
	// optional (a contact's opt-out of a channel is honoured).
	Category EventCategory
	// Sample is a realistic context for template previews.
	Sample map[string]any
	// Supersedes lists the events this one makes pointless for the same
	// entity: once it is accepted, pending events and QUEUED messages of
	// these types about its booking or trip are cancelled with reason
	// superseded_by:<event id>, and later ones are stored cancelled. A
	// trip's supersession reaches the bookings Herald knows on the trip.
	Supersedes []string
	// LeavesTrip: the booking leaves its trip's audience (it was
	// cancelled); a later event about it does not bring it back.
	LeavesTrip bool
	// Urgent events ignore the tenant's quiet hours: incidents, departure
	// changes and other same-day changes.
	Urgent bool
	// Expiry is the default expiry of an event without expires_at; nil
	// means none.
	Expiry *ExpiryRule
	// Tenant: the event is a tenant's own (see Registry), at Version of
	// its definition; false for the built-in events.
	Tenant  bool
	Version int
	// Moves lists the context times (RFC 3339) this event changes for its
	// entity: accepting it moves every pending schedule of the entity that
	// is relative to one of them (see RelativeSchedules.Move).
	Moves []string
}

// EventCategory classifies an event for a contact's preferences.
type EventCategory string

// Event categories. A transactional message is one the passenger needs
// for the trip they bought (confirmations, changes, incidents, payments
// due): it is sent whatever the contact opted out of. An optional one
// (reminders that can be declined, abandoned checkouts, feedback requests
// and other marketing) skips the channels the contact opted out of.
const (
	CategoryTransactional EventCategory = "transactional"
	CategoryOptional      EventCategory = "optional"
)

func (e *EventDef) Optional() bool { return e != nil && e.Category == CategoryOptional }

// Optional reports whether messages of the event honour opt-outs. Events
// outside the registry (nil: a console test message, a preference
// confirmation) are transactional: the person asked for them.

// eventList is the trigger-event registry. Where the source registry named
// no channels, the choice is documented on the entry.
var eventList = withTypes(withTimeRules([]EventDef{
	{
		Name: "BOOKING_CONFIRMED", Description: "A booking was confirmed and the deposit received.",
		Category: CategoryTransactional,
		Channels: []Channel{Email, WhatsApp}, OncePerEntity: true,
		Variables: []string{"passenger_name", "tour_name", "departure_date", "booking_reference", "deposit_amount"},
		Sample: map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Lake Garda Spring Tour", "departure_date": "2027-04-12",
			"booking_reference": "BK-2027-0412", "deposit_amount": "150.00 EUR"},
	},
	{
		Name: "BOOKING_FULLY_PAID", Description: "The booking is paid in full.",
		Category: CategoryTransactional,
		Channels: []Channel{Email, WhatsApp}, OncePerEntity: true,
		Variables: []string{"passenger_name", "tour_name", "departure_date", "booking_reference", "total_amount", "invoice_url"},
		Sample: map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Lake Garda Spring Tour", "departure_date": "2027-04-12",
			"booking_reference": "BK-2027-0412", "total_amount": "890.00 EUR", "invoice_url": "https://example.com/invoices/INV-1042.pdf"},
	},
	{
		Name: "BOOKING_CANCELLED", Description: "The booking was cancelled.",
		Category: CategoryTransactional,
		Channels: []Channel{Email, WhatsApp}, OncePerEntity: true, LeavesTrip: true,
		// What a cancelled booking makes pointless: reminders to pay, the
		// pre-trip reminder and the boarding (check-in) messages, and
		// confirmations not sent yet.
		Supersedes: []string{"BOOKING_CONFIRMED", "FINAL_PAYMENT_DUE", "FINAL_PAYMENT_OVERDUE", "PRE_TRIP_REMINDER",
			"PASSENGER_ADDED", "SERVICE_LEG_STARTED", "VEHICLE_SWAP_NOTIFICATION"},
		Variables: []string{"passenger_name", "tour_name", "departure_date", "booking_reference", "cancellation_fee"},
		Sample: map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Lake Garda Spring Tour", "departure_date": "2027-04-12",
			"booking_reference": "BK-2027-0412", "cancellation_fee": "45.00 EUR"},
	},
	{
		// Channels blank in the source: a refund is a record the passenger keeps, so e-mail.
		Name: "BOOKING_REFUNDED", Description: "Money was refunded for a booking.",
		Category:  CategoryTransactional,
		Channels:  []Channel{Email},
		Variables: []string{"passenger_name", "booking_reference", "refund_amount"},
		Sample:    map[string]any{"passenger_name": "Anna Schmidt", "booking_reference": "BK-2027-0412", "refund_amount": "845.00 EUR"},
	},
	{
		Name: "BOOKING_COMPLETED", Description: "The trip is over; ask for feedback.",
		Category: CategoryOptional,
		Channels: []Channel{Email}, OncePerEntity: true,
		Variables: []string{"passenger_name", "tour_name", "operator_name", "feedback_url"},
		Sample: map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Lake Garda Spring Tour", "operator_name": "Alpenblick Reisen",
			"feedback_url": "https://example.com/feedback/BK-2027-0412"},
	},
	{
		Name: "BOOKING_NOSHOW", Description: "The passenger did not show up at boarding.",
		Category: CategoryTransactional,
		Channels: []Channel{Email}, OncePerEntity: true,
		Variables: []string{"passenger_name", "booking_reference", "tour_name"},
		Sample:    map[string]any{"passenger_name": "Anna Schmidt", "booking_reference": "BK-2027-0412", "tour_name": "Lake Garda Spring Tour"},
	},
	{
		Name: "CHECKOUT_ABANDONED", Description: "A checkout was left unfinished.",
		Category: CategoryOptional,
		Channels: []Channel{Email}, OncePerEntity: true,
		Variables: []string{"passenger_name", "tour_name", "checkout_url", "expiry_reason"},
		Sample: map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Lake Garda Spring Tour",
			"checkout_url": "https://example.com/checkout/c-88", "expiry_reason": "the payment was not completed"},
	},
	{
		Name: "CHECKOUT_ABANDONED_WHATSAPP", Description: "Reminder on WhatsApp a day after an abandoned checkout.",
		Category: CategoryOptional,
		Channels: []Channel{WhatsApp}, OncePerEntity: true,
		Variables: []string{"passenger_name", "tour_name", "checkout_url"},
		Sample:    map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Lake Garda Spring Tour", "checkout_url": "https://example.com/checkout/c-88"},
	},
	{
		Name: "FINAL_PAYMENT_DUE", Description: "Reminder that the final payment is due.",
		Category:  CategoryTransactional,
		Channels:  []Channel{WhatsApp, Email},
		Variables: []string{"passenger_name", "tour_name", "departure_date", "remaining_amount", "payment_link"},
		Sample: map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Lake Garda Spring Tour", "departure_date": "2027-04-12",
			"remaining_amount": "740.00 EUR", "payment_link": "https://example.com/pay/BK-2027-0412"},
	},
	{
		Name: "FINAL_PAYMENT_OVERDUE", Description: "The final payment is overdue.",
		Category:  CategoryTransactional,
		Channels:  []Channel{WhatsApp, Email},
		Variables: []string{"passenger_name", "tour_name", "departure_date", "remaining_amount", "payment_link", "days_overdue"},
		Sample: map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Lake Garda Spring Tour", "departure_date": "2027-04-12",
			"remaining_amount": "740.00 EUR", "payment_link": "https://example.com/pay/BK-2027-0412", "days_overdue": 3},
	},
	{
		Name: "PASSENGER_CANCELLED", Description: "One passenger was taken off a booking.",
		Category: CategoryTransactional,
		Channels: []Channel{Email}, OncePerEntity: true,
		Variables: []string{"passenger_name", "tour_name", "cancellation_fee", "refund_amount"},
		Sample: map[string]any{"passenger_name": "Jonas Weber", "tour_name": "Lake Garda Spring Tour",
			"cancellation_fee": "45.00 EUR", "refund_amount": "400.00 EUR"},
	},
	{
		// Repeating: a booking can lose several extras one after another.
		Name: "ANCILLARY_CANCELLED", Description: "An extra (insurance, excursion, seat) was cancelled.",
		Category:  CategoryTransactional,
		Channels:  []Channel{Email},
		Variables: []string{"passenger_name", "ancillary_label", "refund_amount"},
		Sample:    map[string]any{"passenger_name": "Anna Schmidt", "ancillary_label": "Boat trip to Sirmione", "refund_amount": "35.00 EUR"},
	},
	{
		Name: "PASSENGER_ADDED", Description: "A passenger was added to a booking.",
		Category: CategoryTransactional,
		Channels: []Channel{Email, WhatsApp}, OncePerEntity: true,
		Variables: []string{"passenger_name", "tour_name", "departure_date", "boarding_point_name"},
		Sample: map[string]any{"passenger_name": "Jonas Weber", "tour_name": "Lake Garda Spring Tour", "departure_date": "2027-04-12",
			"boarding_point_name": "Munich Central Bus Station"},
	},
	{
		Name: "INVOICE_ISSUED", Description: "An invoice was issued.",
		Category: CategoryTransactional,
		Channels: []Channel{Email}, OncePerEntity: true,
		Variables: []string{"passenger_name", "booking_reference", "invoice_number", "total_gross", "invoice_pdf_url"},
		Sample: map[string]any{"passenger_name": "Anna Schmidt", "booking_reference": "BK-2027-0412", "invoice_number": "INV-1042",
			"total_gross": "890.00 EUR", "invoice_pdf_url": "https://example.com/invoices/INV-1042.pdf"},
	},
	{
		// Channels blank in the source: the bus is on its way, so the channel
		// people read within minutes.
		// Repeating: a trip has several legs (outbound, return), each of which starts.
		Name: "SERVICE_LEG_STARTED", Description: "The vehicle set off towards the boarding point.",
		Category:  CategoryTransactional,
		Channels:  []Channel{WhatsApp},
		Variables: []string{"passenger_name", "boarding_point_name", "tracking_url"},
		Sample: map[string]any{"passenger_name": "Anna Schmidt", "boarding_point_name": "Munich Central Bus Station",
			"tracking_url": "https://example.com/track/T-3312"},
	},
	{
		// Repeating, like SERVICE_LEG_STARTED: legs of one trip are cancelled separately.
		Name: "SERVICE_LEG_CANCELLED", Description: "A leg of the trip was cancelled.",
		Category:  CategoryTransactional,
		Channels:  []Channel{WhatsApp, Email},
		Variables: []string{"passenger_name", "tour_name", "boarding_point_name", "operator_phone"},
		Sample: map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Lake Garda Spring Tour",
			"boarding_point_name": "Munich Central Bus Station", "operator_phone": "+49 89 1234567"},
	},
	{
		// Sent to everyone on the trip in one event: each recipient is greeted
		// by their own name (recipient_name), so no passenger_name is needed.
		Name: "INCIDENT_BROADCAST", Description: "A critical incident affects the trip; held for a manager's approval.",
		Category: CategoryTransactional,
		Channels: []Channel{WhatsApp, SMS, Email}, Fallback: []Channel{WhatsApp, SMS, Email}, RequiresApproval: true,
		Variables: []string{"tour_name", "incident_message", "operator_phone"},
		Sample: map[string]any{"tour_name": "Lake Garda Spring Tour",
			"incident_message": "Our coach is delayed by about 90 minutes because of a closure on the A13.", "operator_phone": "+49 89 1234567"},
	},
	{
		// Like INCIDENT_BROADCAST, one event for the whole trip.
		Name: "INCIDENT_ALLCLEAR", Description: "The incident is resolved.",
		Category: CategoryTransactional,
		Channels: []Channel{WhatsApp, SMS, Email}, Fallback: []Channel{WhatsApp, SMS, Email},
		Variables: []string{"tour_name", "update_message"},
		Sample: map[string]any{"tour_name": "Lake Garda Spring Tour",
			"update_message": "The road is open again; we expect to arrive at 18:30."},
	},
	{
		// Channels blank in the source: a changed seat matters at boarding, so WhatsApp, with e-mail as the record.
		Name: "VEHICLE_SWAP_NOTIFICATION", Description: "The trip runs with another vehicle.",
		Category:  CategoryTransactional,
		Channels:  []Channel{WhatsApp, Email},
		Variables: []string{"passenger_name", "old_vehicle", "new_vehicle", "seat_assignment"},
		Sample: map[string]any{"passenger_name": "Anna Schmidt", "old_vehicle": "Setra S 516 HD (M-AB 1234)",
			"new_vehicle": "Mercedes Tourismo (M-CD 5678)", "seat_assignment": "12A"},
	},
	{
		// Staff-facing reminder; e-mail.
		Name: "QUALIFICATION_EXPIRING", Description: "A crew member's qualification expires soon.",
		Category:  CategoryTransactional,
		Channels:  []Channel{Email},
		Variables: []string{"crew_member_name", "qualification_type", "expiry_date", "days_remaining"},
		Sample: map[string]any{"crew_member_name": "Markus Huber", "qualification_type": "Driver CPC (Code 95)",
			"expiry_date": "2027-05-31", "days_remaining": 30},
	},
	{
		// Staff-facing reminder; e-mail.
		Name: "VEHICLE_INSPECTION_OVERDUE", Description: "A vehicle's inspection is overdue.",
		Category:  CategoryTransactional,
		Channels:  []Channel{Email},
		Variables: []string{"vehicle_license_plate", "inspection_type", "due_date", "days_overdue"},
		Sample: map[string]any{"vehicle_license_plate": "M-AB 1234", "inspection_type": "Safety inspection (SP)",
			"due_date": "2027-03-01", "days_overdue": 5},
	},
	{
		// Not in the source registry: a trip cancelled by the operator
		// (weather, too few bookings). Sent to the trip's audience; each
		// passenger greeted by name. It supersedes every pending message
		// about the trip and its bookings, except the cancellation's own
		// consequences (cancellations, refunds, invoices), which must still
		// go out.
		Name: "TRIP_CANCELLED", Description: "The operator cancelled the whole trip.",
		Category: CategoryTransactional,
		Channels: []Channel{WhatsApp, Email}, OncePerEntity: true,
		Variables: []string{"tour_name", "departure_date", "cancellation_reason", "operator_phone"},
		Sample: map[string]any{"tour_name": "Lake Garda Spring Tour", "departure_date": "2027-04-12",
			"cancellation_reason": "too few bookings to run the coach", "operator_phone": "+49 89 1234567"},
		Supersedes: []string{"BOOKING_CONFIRMED", "BOOKING_FULLY_PAID", "BOOKING_COMPLETED", "BOOKING_NOSHOW",
			"FINAL_PAYMENT_DUE", "FINAL_PAYMENT_OVERDUE", "PASSENGER_ADDED", "SERVICE_LEG_STARTED", "SERVICE_LEG_CANCELLED",
			"INCIDENT_BROADCAST", "INCIDENT_ALLCLEAR", "VEHICLE_SWAP_NOTIFICATION", "PRE_TRIP_REMINDER"},
	},
	{
		Name: "PRE_TRIP_REMINDER", Description: "Reminder the day before departure.",
		Category:  CategoryOptional,
		Channels:  []Channel{WhatsApp, Email},
		Variables: []string{"passenger_name", "tour_name", "departure_date", "boarding_point_name", "boarding_time", "passenger_instructions"},
		Sample: map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Lake Garda Spring Tour", "departure_date": "2027-04-12",
			"boarding_point_name": "Munich Central Bus Station", "boarding_time": "07:15",
			"passenger_instructions": "Please bring your ID card and be at the bay 15 minutes early."},
	},
	{
		// Not in the source registry: the booking system reports a new
		// departure time, and Herald moves the reminders relative to it.
		// Repeating: a departure can move more than once.
		Name: "DEPARTURE_CHANGED", Description: "The departure time changed; pending reminders move with it.",
		Category:  CategoryTransactional,
		Channels:  []Channel{WhatsApp, Email},
		Variables: []string{"passenger_name", "tour_name", "departure_at", "boarding_point_name"},
		Sample: map[string]any{"passenger_name": "Anna Schmidt", "tour_name": "Lake Garda Spring Tour",
			"departure_at": "2027-04-12T09:30:00+02:00", "boarding_point_name": "Munich Central Bus Station"},
	},
}))

var registry = func() map[string]*EventDef {
	m := make(map[string]*EventDef, len(eventList))
	for i := range eventList {
		m[eventList[i].Name] = &eventList[i]
	}
	return m
}()

// supersedable is every event some other event supersedes.
var supersedable = func() map[string]bool {
	m := map[string]bool{}
	for _, e := range eventList {
		for _, s := range e.Supersedes {
			m[s] = true
		}
	}
	return m
}()

// Supersedable reports whether another event can make this one pointless
// (see EventDef.Supersedes).
func (e *EventDef) Supersedable() bool { return supersedable[e.Name] }

// BuiltInEvent returns the entry of a built-in trigger event.
func BuiltInEvent(name string) (*EventDef, bool) {
	e, ok := registry[name]
	return e, ok
}

// Events returns the registry sorted by name.
func Events() []EventDef {
	out := make([]EventDef, len(eventList))
	copy(out, eventList)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RecipientVariables are placeholders every template may use besides its
// event's variables; they come from the recipient.
var RecipientVariables = []string{"recipient_name", "recipient_phone", "recipient_email"}

// TemplateChannels returns the channels a new tenant gets default templates
// for: the event's own channels, plus SMS wherever WhatsApp is one, because
// SMS is the fallback for a phone number that is not on WhatsApp.
func (e *EventDef) TemplateChannels() []Channel {
	out := append([]Channel(nil), e.Channels...)
	hasWhatsApp, hasSMS := false, false
	for _, c := range out {
		hasWhatsApp = hasWhatsApp || c == WhatsApp
		hasSMS = hasSMS || c == SMS
	}
	if hasWhatsApp && !hasSMS {
		out = append(out, SMS)
	}
	return out
}
