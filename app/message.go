package app

import (
	"time"

	"github.com/google/uuid"
)

// Message statuses. A message moves forward only:
// QUEUED < SENT < DELIVERED < READ; FAILED from QUEUED, SENT or DELIVERED;
// CANCELLED from QUEUED.
const (
	MessageQueued    = "QUEUED"
	MessageSent      = "SENT"
	MessageDelivered = "DELIVERED"
	MessageRead      = "READ"
	MessageFailed    = "FAILED"
	MessageCancelled = "CANCELLED"
)

// Failure reasons recorded on messages.
const (
	ReasonNoTemplates       = "no_templates_found"
	ReasonNoActiveChannels  = "no_active_channels"
	ReasonNoAddress         = "no_recipient_address"
	ReasonChannelSuspended  = "channel_suspended"
	ReasonQuotaExceeded     = "quota_exceeded"
	ReasonProviderRejected  = "provider_rejected"
	ReasonRetriesExhausted  = "retries_exhausted"
	ReasonFallbackTriggered = "fallback_triggered:"
)

// Timeline sources.
const (
	SourceRouting  = "routing"
	SourceDispatch = "dispatch"
	SourceWebhook  = "webhook"
	SourceConsole  = "console"
	SourceAPI      = "api"
	SourceSystem   = "system"
)

var statusRank = map[string]int{MessageQueued: 0, MessageSent: 1, MessageDelivered: 2, MessageRead: 3}

// CanTransition reports whether a message may move from one status to
// another under the forward-only rules.
func CanTransition(from, to string) bool {
	switch to {
	case MessageFailed:
		return from == MessageQueued || from == MessageSent || from == MessageDelivered
	case MessageCancelled:
		return from == MessageQueued
	}
	f, okF := statusRank[from]
	t, okT := statusRank[to]
	return okF && okT && t > f
}

// Message is one message to one recipient on one channel.
type Message struct {
	ID                uuid.UUID  `db:"id" json:"id"`
	TenantID          uuid.UUID  `db:"tenant_id" json:"-"`
	EventID           *uuid.UUID `db:"event_id" json:"event_id,omitempty"`
	CorrelationID     string     `db:"correlation_id" json:"correlation_id"`
	IdempotencyKey    string     `db:"idempotency_key" json:"idempotency_key"`
	TriggerEvent      string     `db:"trigger_event" json:"trigger_event"`
	Channel           Channel    `db:"channel" json:"channel"`
	ChannelAccountID  *uuid.UUID `db:"channel_account_id" json:"channel_account_id,omitempty"`
	TemplateID        *uuid.UUID `db:"template_id" json:"template_id,omitempty"`
	TemplateVersion   *int       `db:"template_version" json:"template_version,omitempty"`
	Locale            *string    `db:"locale" json:"locale,omitempty"`
	ContactID         *uuid.UUID `db:"contact_id" json:"contact_id,omitempty"`
	ConversationID    *uuid.UUID `db:"conversation_id" json:"conversation_id,omitempty"`
	ToAddress         string     `db:"to_address" json:"to"`
	Subject           string     `db:"subject" json:"subject,omitempty"`
	Body              string     `db:"body" json:"body"`
	Status            string     `db:"status" json:"status"`
	FailedReason      *string    `db:"failed_reason" json:"failed_reason,omitempty"`
	ErrorCode         *string    `db:"error_code" json:"error_code,omitempty"`
	Attempts          int        `db:"attempts" json:"attempts"`
	Provider          *string    `db:"provider" json:"provider,omitempty"`
	ExternalMessageID *string    `db:"external_message_id" json:"external_message_id,omitempty"`
	FallbackOf        *uuid.UUID `db:"fallback_of" json:"fallback_of,omitempty"`
	FallbackChain     StringList `db:"fallback_chain" json:"fallback_chain,omitempty"`
	EntityType        *string    `db:"entity_type" json:"entity_type,omitempty"`
	EntityID          *string    `db:"entity_id" json:"entity_id,omitempty"`
	TriggeredBy       *uuid.UUID `db:"triggered_by" json:"triggered_by,omitempty"`
	QueuedAt          time.Time  `db:"queued_at" json:"queued_at"`
	SentAt            *time.Time `db:"sent_at" json:"sent_at,omitempty"`
	DeliveredAt       *time.Time `db:"delivered_at" json:"delivered_at,omitempty"`
	ReadAt            *time.Time `db:"read_at" json:"read_at,omitempty"`
	FailedAt          *time.Time `db:"failed_at" json:"failed_at,omitempty"`
	StaleAt           *time.Time `db:"stale_at" json:"stale_at,omitempty"`
	CreatedAt         time.Time  `db:"created_at" json:"created_at"`
	UpdatedAt         time.Time  `db:"updated_at" json:"updated_at"`
}

// MessageEvent is one entry of a message's timeline.
type MessageEvent struct {
	ID         int64          `db:"id" json:"id"`
	TenantID   uuid.UUID      `db:"tenant_id" json:"-"`
	MessageID  uuid.UUID      `db:"message_id" json:"message_id"`
	FromStatus *string        `db:"from_status" json:"from_status,omitempty"`
	ToStatus   *string        `db:"to_status" json:"to_status,omitempty"`
	Source     string         `db:"source" json:"source"`
	Detail     map[string]any `db:"-" json:"detail,omitempty"`
	At         time.Time      `db:"at" json:"at"`
}

// Contact is a person a tenant sends to.
type Contact struct {
	ID                 uuid.UUID  `db:"id"`
	TenantID           uuid.UUID  `db:"tenant_id"`
	PassengerProfileID *string    `db:"passenger_profile_id"`
	Name               string     `db:"name"`
	Phone              *string    `db:"phone"`
	Email              *string    `db:"email"`
	Locale             *string    `db:"locale"`
	EmailComplainedAt  *time.Time `db:"email_complained_at"`
	// WhatsAppWindowUntil is when the 24-hour window the contact's last
	// WhatsApp message opened closes.
	WhatsAppWindowUntil *time.Time `db:"whatsapp_window_until"`
	CreatedAt           time.Time  `db:"created_at"`
	UpdatedAt           time.Time  `db:"updated_at"`
}

// Recipient returns the contact as a template recipient.
func (c *Contact) Recipient() Recipient {
	r := Recipient{Name: c.Name}
	if c.Phone != nil {
		r.Phone = *c.Phone
	}
	if c.Email != nil {
		r.Email = *c.Email
	}
	if c.Locale != nil {
		r.Locale = *c.Locale
	}
	return r
}

// Address returns the contact's address on a channel, or "".
func (c *Contact) Address(ch Channel) string {
	switch {
	case ch.Phone() && c.Phone != nil:
		return *c.Phone
	case ch == Email && c.Email != nil && c.EmailComplainedAt == nil:
		return *c.Email
	}
	return ""
}

// Conversation links a contact's messages to a booking, trip or invoice.
type Conversation struct {
	ID        uuid.UUID `db:"id"`
	TenantID  uuid.UUID `db:"tenant_id"`
	ContactID uuid.UUID `db:"contact_id"`
	BookingID *string   `db:"booking_id"`
	TripID    *string   `db:"trip_id"`
	InvoiceID *string   `db:"invoice_id"`
	Status    string    `db:"status"`
	CreatedAt time.Time `db:"created_at"`
	UpdatedAt time.Time `db:"updated_at"`
}
