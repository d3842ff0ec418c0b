package app

import (
	"context"
	"fmt"
	"strings"
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
	// MessageExpired: the message's expiry passed before it was sent.
	MessageExpired = "EXPIRED"
)

// Failure reasons recorded on messages.
const (
	ReasonNoTemplates      = "no_templates_found"
	ReasonNoActiveChannels = "no_active_channels"
	ReasonNoAddress        = "no_recipient_address"
	ReasonOptedOut         = "opted_out"
	ReasonChannelSuspended = "channel_suspended"
	ReasonQuotaExceeded    = "quota_exceeded"
	// ReasonBudgetExceeded: the message's estimated cost would pass the
	// tenant's monthly budget of its channel.
	ReasonBudgetExceeded    = "budget_exceeded"
	ReasonProviderRejected  = "provider_rejected"
	ReasonRetriesExhausted  = "retries_exhausted"
	ReasonFallbackTriggered = "fallback_triggered:"
	// ReasonSMSTooLong: the SMS text is longer than the tenant's limit
	// of parts (Limits.MaxSMSParts).
	ReasonSMSTooLong = "sms_too_long"
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
	case MessageCancelled, MessageExpired:
		return from == MessageQueued
	}
	f, okF := statusRank[from]
	t, okT := statusRank[to]
	return okF && okT && t > f
}

// MaxRetries is how many times a failed message is retried by hand before
// a retry must be forced (seed 003: "Maximum 3 retry attempts", "force=true
// to override").
const MaxRetries = 3

// RetryOptions are a person's answers to a retry's warnings: Anyway sends
// to an address the provider refused; Force retries past MaxRetries.
type RetryOptions struct {
	Anyway bool `json:"anyway"`
	Force  bool `json:"force"`
}

// Message is one message to one recipient on one channel.
type Message struct {
	ID               uuid.UUID  `db:"id" json:"id"`
	TenantID         uuid.UUID  `db:"tenant_id" json:"-"`
	EventID          *uuid.UUID `db:"event_id" json:"event_id,omitempty"`
	CorrelationID    string     `db:"correlation_id" json:"correlation_id"`
	IdempotencyKey   string     `db:"idempotency_key" json:"idempotency_key"`
	TriggerEvent     string     `db:"trigger_event" json:"trigger_event"`
	Channel          Channel    `db:"channel" json:"channel"`
	ChannelAccountID *uuid.UUID `db:"channel_account_id" json:"channel_account_id,omitempty"`
	TemplateID       *uuid.UUID `db:"template_id" json:"template_id,omitempty"`
	TemplateVersion  *int       `db:"template_version" json:"template_version,omitempty"`
	Locale           *string    `db:"locale" json:"locale,omitempty"`
	ContactID        *uuid.UUID `db:"contact_id" json:"contact_id,omitempty"`
	ConversationID   *uuid.UUID `db:"conversation_id" json:"conversation_id,omitempty"`
	// RecipientIndex is the position of the message's recipient in its
	// event's recipients: a retry, resend or fallback reads that
	// recipient's addresses from the event.
	RecipientIndex *int   `db:"recipient_index" json:"recipient_index,omitempty"`
	ToAddress      string `db:"to_address" json:"to"`
	Subject        string `db:"subject" json:"subject,omitempty"`
	Body           string `db:"body" json:"body"`
	// SMSParts and SMSEncoding are what an SMS costs, counted from Body as
	// it is sent (PrepareSMS) when the message is stored; nil on other
	// channels.
	SMSParts    *int    `db:"sms_parts" json:"sms_parts,omitempty"`
	SMSEncoding *string `db:"sms_encoding" json:"sms_encoding,omitempty"`
	// EstimatedCost is what the message costs by the price table when it
	// was stored (EstimateCost); nil when no price row priced it.
	EstimatedCost *Money `db:"estimated_cost" json:"estimated_cost,omitempty"`
	// PriceCategory is the Meta pricing category of a WhatsApp message's
	// template, read when routing plans it ("" for free-form text); not
	// stored, EstimatedCost is.
	PriceCategory     string     `db:"-" json:"-"`
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
	// FileID limits the message to one of its event's files (support
	// re-sent that file alone); nil: every file.
	FileID *uuid.UUID `db:"file_id" json:"file_id,omitempty"`
	// RetryCount is how many retries came before this message: 0 for an
	// original, 1 for its retry, 2 for that one's retry (MaxRetries).
	RetryCount  int        `db:"retry_count" json:"retry_count"`
	QueuedAt    time.Time  `db:"queued_at" json:"queued_at"`
	SentAt      *time.Time `db:"sent_at" json:"sent_at,omitempty"`
	DeliveredAt *time.Time `db:"delivered_at" json:"delivered_at,omitempty"`
	ReadAt      *time.Time `db:"read_at" json:"read_at,omitempty"`
	FailedAt    *time.Time `db:"failed_at" json:"failed_at,omitempty"`
	StaleAt     *time.Time `db:"stale_at" json:"stale_at,omitempty"`
	// AcknowledgedAt is when the passenger acknowledged the message
	// (Acknowledgements), and AckVia how; not a status: the status order
	// stays QUEUED, SENT, DELIVERED, READ.
	AcknowledgedAt *time.Time `db:"acknowledged_at" json:"acknowledged_at,omitempty"`
	AckVia         *string    `db:"ack_via" json:"ack_via,omitempty"`
	// CallListedAt is when the message missed a deadline with no channel
	// left to try, which put its passenger on the trip's call list.
	CallListedAt *time.Time `db:"call_listed_at" json:"call_listed_at,omitempty"`
	// ExpiresAt is the event's expiry: a QUEUED message past it becomes
	// EXPIRED instead of being sent.
	ExpiresAt *time.Time `db:"expires_at" json:"expires_at,omitempty"`
	// DeferredUntil is when a message held by the tenant's quiet hours may
	// go, and DeferredZone the zone those hours were read in.
	DeferredUntil *time.Time `db:"deferred_until" json:"deferred_until,omitempty"`
	DeferredZone  *string    `db:"deferred_zone" json:"deferred_zone,omitempty"`
	CreatedAt     time.Time  `db:"created_at" json:"created_at"`
	UpdatedAt     time.Time  `db:"updated_at" json:"updated_at"`
	// Test marks a message a manager sent from the console to try an
	// account or a template: it may go through a PENDING account, and it
	// is never retried, never falls back and makes no status callback.
	Test bool `db:"test" json:"test,omitempty"`
	// WhatsAppTemplateOnly marks a WhatsApp message that Meta reported
	// outside the customer-service window (131047) after accepting its
	// text: it goes again as its approved Meta template, once.
	WhatsAppTemplateOnly bool `db:"whatsapp_template_only" json:"-"`
	// SendStartedAt is when a provider call of the message began whose
	// outcome is not recorded (see SendMarker); nil when there is none.
	SendStartedAt *time.Time `db:"send_started_at" json:"-"`
	// SendUnknownUntil: the outcome of the message's last provider call
	// is unknown (Herald never read the answer), and Herald waits until
	// then for the provider's confirmation before it decides (see
	// Dispatcher.reconcile).
	SendUnknownUntil *time.Time `db:"send_unknown_until" json:"awaiting_confirmation_until,omitempty"`
	// PreviousExternalIDs are the provider ids of earlier attempts the
	// provider refused after accepting them (the message was sent again):
	// a late receipt of one of them is about that attempt.
	PreviousExternalIDs StringList `db:"previous_external_ids" json:"-"`
	// OpenConversation, set on a message without ConversationID, has
	// InsertMessage find the contact's open conversation about this
	// entity, or open one, and set ConversationID: routing's find-or-open
	// rides on the message's own insert.
	OpenConversation *Entity `db:"-" json:"-"`
	// RedactedAt is when the message's personal data (address, subject,
	// body, timeline, receipts, callback payloads) was removed, by
	// retention or by an erasure of its contact (Redaction says which);
	// nil while it is kept. The message's facts stay.
	RedactedAt *time.Time `db:"redacted_at" json:"personal_data_removed_at,omitempty"`
	Redaction  *string    `db:"redaction" json:"personal_data_removed_by,omitempty"`
}

// Why a message's or a contact's personal data was removed.
const (
	// RemovedByRetention: the tenant's retention passed.
	RemovedByRetention = "retention"
	// RemovedByErasure: someone asked for the contact to be erased.
	RemovedByErasure = "erasure"
)

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

// MessagesTx lists the statements Messages runs, resends included.
type MessagesTx interface {
	// EventReader resolves the tenant's events (LookupEvent).
	EventReader
	PlanTx
	InsertTx
	MessagesByEntity(ctx context.Context, tenantID uuid.UUID, entityType, entityID string) ([]*Message, error)
	MessageByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Message, error)
	Timeline(ctx context.Context, tenantID, messageID uuid.UUID) ([]*MessageEvent, error)
	ContactByID(ctx context.Context, tenantID, id uuid.UUID) (*Contact, error)
	ContactCandidates(ctx context.Context, tenantID uuid.UUID, profileIDs, phones, emails []string) ([]*Contact, error)
	// EventRecipientContacts returns the contact of each recipient (by
	// index) the event's messages were sent to.
	EventRecipientContacts(ctx context.Context, tenantID, eventID uuid.UUID) (map[int]uuid.UUID, error)
	LatestEventForEntity(ctx context.Context, tenantID uuid.UUID, entityType, entityID, trigger string) (*Event, error)
	TemplateByID(ctx context.Context, tenantID, id uuid.UUID) (*Template, error)
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// Messages answers questions about sent messages and resends them.
type Messages struct {
	Store  Store[MessagesTx]
	Queue  Queue
	Router *Router
	Now    Clock
}

// ByEntity returns the messages about a booking, trip or invoice, newest first.
func (s *Messages) ByEntity(ctx context.Context, tenantID uuid.UUID, entityType, entityID string) ([]*Message, error) {
	var ms []*Message
	err := s.Store.InTenant(ctx, tenantID, func(tx MessagesTx) (err error) {
		ms, err = tx.MessagesByEntity(ctx, tenantID, entityType, entityID)
		return err
	})
	return ms, err
}

// MessageDetail is a message with its timeline.
type MessageDetail struct {
	*Message
	Timeline []*MessageEvent `json:"timeline"`
}

// Get returns a message with its timeline.
func (s *Messages) Get(ctx context.Context, tenantID, id uuid.UUID) (*MessageDetail, error) {
	var d MessageDetail
	err := s.Store.InTenant(ctx, tenantID, func(tx MessagesTx) (err error) {
		if d.Message, err = tx.MessageByID(ctx, tenantID, id, false); err != nil {
			return err
		}
		d.Timeline, err = tx.Timeline(ctx, tenantID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// ResendInput is a manual resend: the booking, the channel, and optionally
// the template to use instead of the one routing would pick.
type ResendInput struct {
	EntityType string
	EntityID   string
	Channel    string
	TemplateID *uuid.UUID
}

// Resend sends the booking's latest notification (of the template's event,
// when a template is named) again on the channel, as new messages: one per
// recipient, with the idempotency key manual:{entity}:{channel}:{template}:{request},
// triggered by the actor and audited. The original messages stay as they are.
func (s *Messages) Resend(ctx context.Context, actor Actor, tenantID uuid.UUID, in ResendInput) ([]*Message, error) {
	ch, ok := ParseChannel(in.Channel)
	if !ok {
		return nil, Invalid("unknown_channel", "channel", "%q is not a channel (WHATSAPP, EMAIL, SMS, WEBHOOK).", in.Channel)
	}
	if strings.TrimSpace(in.EntityID) == "" {
		return nil, Invalid("missing_entity", "id", "Name the booking to resend for.")
	}
	requestID := uuid.New()
	var out []*Message
	err := s.Store.InTenant(ctx, tenantID, func(tx MessagesTx) error {
		tmpl, trigger, err := resendTemplate(ctx, tx, tenantID, in.TemplateID, ch)
		if err != nil {
			return err
		}
		e, err := tx.LatestEventForEntity(ctx, tenantID, in.EntityType, in.EntityID, trigger)
		if err != nil {
			return err
		}
		if out, err = s.resendEvent(ctx, tx, actor, e, in.EntityID, ch, tmpl, requestID); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "message.resend", in.EntityType, in.EntityID,
			map[string]any{"channel": ch, "event_id": e.ID.String(), "request_id": requestID.String(), "messages": len(out)}))
	})
	return out, err
}

// resendTemplate is the template a resend names, with its event; none when
// it names none (routing picks it then).
func resendTemplate(ctx context.Context, tx MessagesTx, tenantID uuid.UUID, id *uuid.UUID, ch Channel) (*Template, string, error) {
	if id == nil {
		return nil, "", nil
	}
	t, err := tx.TemplateByID(ctx, tenantID, *id)
	if err != nil {
		return nil, "", err
	}
	if t.Channel != ch {
		return nil, "", Invalid("template_channel_mismatch", "template_id", "Template %s is for %s, not %s.", t.ID, t.Channel, ch)
	}
	return t, t.TriggerEvent, nil
}

// resendEvent stores the resend's messages, one per recipient of the event
// about the entity, with their dispatch jobs.
func (s *Messages) resendEvent(ctx context.Context, tx MessagesTx, actor Actor, e *Event, entityID string, ch Channel, tmpl *Template,
	requestID uuid.UUID) ([]*Message, error) {
	def, err := e.Def(ctx, tx)
	if err != nil {
		return nil, err
	}
	tenant, err := tx.TenantByID(ctx, e.TenantID)
	if err != nil {
		return nil, err
	}
	recipients, err := e.DecodeRecipients()
	if err != nil {
		return nil, err
	}
	known, err := tx.EventRecipientContacts(ctx, e.TenantID, e.ID)
	if err != nil {
		return nil, err
	}
	source := SourceAPI
	if actor.Type == ActorUser {
		source = SourceConsole
	}
	var out []*Message
	var jobs []DispatchJob
	for i, rc := range recipients {
		// The resend goes to the addresses the event gave this recipient,
		// and belongs to the contact its messages went to.
		contact, err := s.resendContact(ctx, tx, e.TenantID, known, i, rc)
		if err != nil {
			return nil, err
		}
		m, skip, err := s.Router.Plan(ctx, tx, tenant, e, def, Addressee{Contact: contact, Recipient: rc, Index: i}, nil, ch, tmpl)
		if err != nil {
			return nil, err
		}
		if skip != "" {
			return nil, Errorf(ECONFLICT, "Cannot resend on %s: %s.", ch, strings.ReplaceAll(skip, "_", " "))
		}
		m.IdempotencyKey = fmt.Sprintf("manual:%s:%s:%s:%s", entityID, ch, *m.TemplateID, requestID)
		m.TriggeredBy = actor.ID
		// A person decided to send it: the event's expiry does not hold it
		// back, quiet hours do.
		m.ExpiresAt = nil
		if _, err := s.Router.Insert(ctx, tx, m, source, map[string]any{"manual_resend": true, "by": actor.Label, "request_id": requestID.String()}); err != nil {
			return nil, err
		}
		jobs = append(jobs, m.DispatchJob())
		out = append(out, m)
	}
	return out, s.Queue.EnqueueDispatch(ctx, tx, jobs...)
}

// resendContact is the contact of the event's recipient i: the one its
// messages went to, else (messages stored before they recorded their
// recipient) the contact MatchContact picks. A recipient no contact matches
// was never routed, so there is nothing to resend to it.
func (s *Messages) resendContact(ctx context.Context, tx MessagesTx, tenantID uuid.UUID, known map[int]uuid.UUID, i int, rc Recipient) (*Contact, error) {
	if id, ok := known[i]; ok {
		return tx.ContactByID(ctx, tenantID, id)
	}
	cs, err := tx.ContactCandidates(ctx, tenantID, nonEmpty(rc.PassengerProfileID), nonEmpty(rc.Phone), nonEmpty(rc.Email))
	if err != nil {
		return nil, err
	}
	if c := MatchContact(cs, rc); c != nil {
		return c, nil
	}
	return nil, Errorf(ENOTFOUND, "Recipient %d of the notification was never sent to; there is nothing to resend.", i)
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
