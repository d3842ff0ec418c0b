package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Status callback event types: what a tenant's callback endpoint may
// subscribe to. Each is posted once per message and endpoint.
const (
	CallbackMessageSent      = "message.sent"
	CallbackMessageDelivered = "message.delivered"
	CallbackMessageRead      = "message.read"
	CallbackMessageFailed    = "message.failed"
	// CallbackMessageFallback: a failed (or overdue) message's fallback
	// message was queued on the next channel of its chain.
	CallbackMessageFallback = "message.fallback"
	// CallbackTest is the event "send test event" posts; no endpoint
	// subscribes to it, it goes to the one endpoint it was asked for.
	CallbackTest = "callback.test"
)

// CallbackEventTypes are the event types an endpoint may subscribe to, in
// the order forms show them.
var CallbackEventTypes = []string{
	CallbackMessageSent, CallbackMessageDelivered, CallbackMessageRead, CallbackMessageFailed, CallbackMessageFallback,
	CallbackMessageInbound,
	CallbackMessageAcknowledged,
}

// callbackStatusEvent is the event type of a message status, for receipts.
var callbackStatusEvent = map[string]string{
	MessageSent:      CallbackMessageSent,
	MessageDelivered: CallbackMessageDelivered,
	MessageRead:      CallbackMessageRead,
	MessageFailed:    CallbackMessageFailed,
}

// StatusCallbackEvents returns the callback event types of message status
// changes.
func StatusCallbackEvents() []string {
	out := make([]string, 0, len(callbackStatusEvent))
	for _, e := range callbackStatusEvent {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// Callback delivery statuses.
const (
	CallbackPending   = "pending"
	CallbackSucceeded = "succeeded"
	CallbackFailed    = "failed"
)

// CallbackEndpoint is a URL of a tenant's that receives the status changes
// of its messages it subscribed to. Its signing secret is sealed at rest and
// shown once, when it is made.
type CallbackEndpoint struct {
	ID          uuid.UUID  `db:"id" json:"id"`
	TenantID    uuid.UUID  `db:"tenant_id" json:"-"`
	URL         string     `db:"url" json:"url"`
	Description string     `db:"description" json:"description"`
	EventTypes  StringList `db:"event_types" json:"event_types"`
	Enabled     bool       `db:"enabled" json:"enabled"`
	// DisabledReason says why Herald or a person disabled the endpoint.
	DisabledReason *string `db:"disabled_reason" json:"disabled_reason,omitempty"`
	// Secrets are the sealed {"current", "previous"} signing secrets.
	Secrets      []byte `db:"secrets" json:"-"`
	SecretsKeyID string `db:"secrets_key_id" json:"-"`
	// PreviousExpiresAt ends the rotation grace period: until then the
	// previous secret signs every post too.
	PreviousExpiresAt *time.Time `db:"previous_expires_at" json:"previous_secret_expires_at,omitempty"`
	// FailingSince starts the current run of failed attempts.
	FailingSince *time.Time `db:"failing_since" json:"failing_since,omitempty"`
	CreatedBy    string     `db:"created_by" json:"created_by"`
	CreatedAt    time.Time  `db:"created_at" json:"created_at"`
	UpdatedAt    time.Time  `db:"updated_at" json:"updated_at"`
}

// Subscribes reports whether the endpoint wants events of type t.
func (e *CallbackEndpoint) Subscribes(t string) bool { return slices.Contains(e.EventTypes, t) }

// CallbackDelivery is one event posted (or to be posted) to one endpoint:
// its payload is fixed when the delivery is made, and every retry and
// replay posts the same bytes under the same webhook-id (the delivery id).
type CallbackDelivery struct {
	ID         uuid.UUID       `db:"id" json:"id"`
	TenantID   uuid.UUID       `db:"tenant_id" json:"-"`
	EndpointID uuid.UUID       `db:"endpoint_id" json:"endpoint_id"`
	MessageID  *uuid.UUID      `db:"message_id" json:"message_id,omitempty"`
	EventType  string          `db:"event_type" json:"event_type"`
	Payload    json.RawMessage `db:"payload" json:"payload"`
	Status     string          `db:"status" json:"status"`
	// Attempts counts every POST; RoundAttempts those since the delivery
	// was made or last replayed, against the retry schedule.
	Attempts      int        `db:"attempts" json:"attempts"`
	RoundAttempts int        `db:"round_attempts" json:"-"`
	LastStatus    *int       `db:"last_status" json:"last_response_status,omitempty"`
	LastError     *string    `db:"last_error" json:"last_error,omitempty"`
	LastAttemptAt *time.Time `db:"last_attempt_at" json:"last_attempt_at,omitempty"`
	NextAttemptAt *time.Time `db:"next_attempt_at" json:"next_attempt_at,omitempty"`
	CreatedAt     time.Time  `db:"created_at" json:"created_at"`
	UpdatedAt     time.Time  `db:"updated_at" json:"updated_at"`
}

// WebhookID is the delivery's webhook-id header: the same on every retry
// and replay, so receivers can deduplicate on it.
func (d *CallbackDelivery) WebhookID() string {
	return "msg_" + strings.ReplaceAll(d.ID.String(), "-", "")
}

// CallbackMessageFacts is what a status callback says about its message.
type CallbackMessageFacts struct {
	MessageID         uuid.UUID  `db:"id"`
	EventID           *uuid.UUID `db:"event_id"`
	SourceEventID     *string    `db:"source_event_id"`
	CorrelationID     string     `db:"correlation_id"`
	TriggerEvent      string     `db:"trigger_event"`
	Channel           Channel    `db:"channel"`
	Status            string     `db:"status"`
	ToAddress         string     `db:"to_address"`
	FailedReason      *string    `db:"failed_reason"`
	ErrorCode         *string    `db:"error_code"`
	Provider          *string    `db:"provider"`
	ExternalMessageID *string    `db:"external_message_id"`
	EntityType        *string    `db:"entity_type"`
	EntityID          *string    `db:"entity_id"`
	FallbackOf        *uuid.UUID `db:"fallback_of"`
	Attempts          int        `db:"attempts"`
	// AcknowledgedAt and AckVia are the passenger's acknowledgement, if
	// any (Acknowledgements).
	AcknowledgedAt *time.Time `db:"acknowledged_at"`
	AckVia         *string    `db:"ack_via"`
	// Test marks a console test message, which makes no callback.
	Test bool `db:"test"`
}

// CallbackNote is what the status change knows that the message row does
// not: the provider's text of a failure, the fallback message queued.
type CallbackNote struct {
	ErrorMessage      string
	FallbackMessageID uuid.UUID
	FallbackChannel   string
}

// CallbackEnqueueTx lists the statements that make a status change's
// callbacks, in the transaction of the change.
type CallbackEnqueueTx interface {
	Tx
	// CallbackSubscribers are the tenant's enabled endpoints subscribed to
	// eventType.
	CallbackSubscribers(ctx context.Context, tenantID uuid.UUID, eventType string) ([]uuid.UUID, error)
	CallbackMessage(ctx context.Context, tenantID, messageID uuid.UUID) (*CallbackMessageFacts, error)
	// InsertCallbackDeliveries stores one delivery per endpoint and returns
	// the ids of those that did not exist yet (endpoint, message, type).
	InsertCallbackDeliveries(ctx context.Context, tenantID uuid.UUID, endpointIDs []uuid.UUID, messageID *uuid.UUID,
		eventType string, payload []byte, at time.Time) ([]uuid.UUID, error)
}

// CallbackTx lists the statements Callbacks runs.
type CallbackTx interface {
	CallbackEnqueueTx
	CallbackEndpoints(ctx context.Context, tenantID uuid.UUID) ([]*CallbackEndpoint, error)
	CallbackEndpointByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*CallbackEndpoint, error)
	InsertCallbackEndpoint(ctx context.Context, e *CallbackEndpoint) error
	// UpdateCallbackEndpoint writes every changeable column of e.
	UpdateCallbackEndpoint(ctx context.Context, e *CallbackEndpoint) error
	DeleteCallbackEndpoint(ctx context.Context, tenantID, id uuid.UUID) error
	CallbackDeliveries(ctx context.Context, tenantID, endpointID uuid.UUID, limit int) ([]*CallbackDelivery, error)
	CallbackDeliveryByID(ctx context.Context, tenantID, id uuid.UUID) (*CallbackDelivery, error)
	// RestartCallbackDelivery makes a finished delivery pending again with
	// a fresh round of attempts; false when it is still pending.
	RestartCallbackDelivery(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (bool, error)
	// RecordCallbackAttempt records one POST of a pending delivery; false
	// when the delivery is no longer pending.
	RecordCallbackAttempt(ctx context.Context, a CallbackAttempt) (bool, error)
	// MarkCallbackEndpointFailing starts the endpoint's run of failures
	// unless one runs, and returns its start.
	MarkCallbackEndpointFailing(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (time.Time, error)
	MarkCallbackEndpointHealthy(ctx context.Context, tenantID, id uuid.UUID) error
	// DisableCallbackEndpoint disables an enabled endpoint; false when it
	// was disabled already.
	DisableCallbackEndpoint(ctx context.Context, tenantID, id uuid.UUID, reason string, at time.Time) (bool, error)
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// CallbackAttempt is one POST's result as recorded on its delivery.
type CallbackAttempt struct {
	TenantID, DeliveryID uuid.UUID
	// Status is the delivery's status after the attempt.
	Status string
	// ResponseStatus is the receiver's HTTP status; 0 without an answer.
	ResponseStatus int
	Error          string
	At             time.Time
	// NextAt is when the next attempt is due, for a pending delivery.
	NextAt *time.Time
	// Posted: the attempt made a POST (it counts); false when the delivery
	// ended without one (its endpoint was disabled).
	Posted bool
}

// CallbackQueue enqueues the delivery jobs of callbacks in the caller's
// transaction.
type CallbackQueue interface {
	EnqueueCallbacks(ctx context.Context, tx Tx, tenantID uuid.UUID, deliveryIDs ...uuid.UUID) error
}

// DefaultCallbackBackoff is the wait before each retry of a failed delivery,
// after the immediate first attempt: Standard Webhooks' example schedule up
// to its 10 hours, so a delivery is given up about 17.5 hours after the
// event, each wait stretched by up to a tenth at random so that receivers
// coming back from an outage are not hit by every retry at once.
var DefaultCallbackBackoff = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour,
}

// DefaultCallbackGrace is how long a rotated-out secret keeps signing.
const DefaultCallbackGrace = 24 * time.Hour

// DefaultCallbackDisableAfter is how long an endpoint may fail every
// attempt (no 2xx answer at all) before Herald disables it: three days,
// longer than a delivery's whole retry schedule, so an endpoint is only
// disabled after several deliveries gave up on it.
const DefaultCallbackDisableAfter = 72 * time.Hour

// CallbackTimeout bounds one POST: Standard Webhooks recommends 15 to 30
// seconds for receivers to answer.
const CallbackTimeout = 15 * time.Second

// Callbacks manages a tenant's callback endpoints and posts their
// deliveries. Its Notify is the hook the pipeline calls in the transaction
// of every status change.
type Callbacks struct {
	Store  Store[CallbackTx]
	Queue  CallbackQueue
	Sealer *Sealer
	// Client posts the deliveries; it must come from webhook.NewClient,
	// whose dialer refuses private and internal destinations.
	Client *http.Client
	// CheckURLFunc refuses an endpoint URL Herald must not post to
	// (scheme, host, credentials), with a reason for the tenant.
	CheckURLFunc func(raw string) error
	// Backoff replaces DefaultCallbackBackoff (tests shorten it).
	Backoff []time.Duration
	// Grace replaces DefaultCallbackGrace; DisableAfter
	// DefaultCallbackDisableAfter.
	Grace        time.Duration
	DisableAfter time.Duration
	Now          Clock
	Log          *slog.Logger
}

// Notify makes the callbacks of a message's status change: one delivery per
// enabled endpoint of the tenant subscribed to eventType, with its job, in
// tx, the transaction of the change. It does nothing for a nil Callbacks,
// and one query when no endpoint subscribes.
func (c *Callbacks) Notify(ctx context.Context, tx CallbackEnqueueTx, tenantID, messageID uuid.UUID, eventType string, note CallbackNote) error {
	if c == nil {
		return nil
	}
	endpoints, err := tx.CallbackSubscribers(ctx, tenantID, eventType)
	if err != nil {
		return err
	}
	return c.NotifyEndpoints(ctx, tx, tenantID, messageID, eventType, note, endpoints)
}

// NotifyEndpoints is Notify for a caller that has read the subscribed
// endpoints already, in the statement that made the change.
func (c *Callbacks) NotifyEndpoints(ctx context.Context, tx CallbackEnqueueTx, tenantID, messageID uuid.UUID, eventType string, note CallbackNote, endpoints []uuid.UUID) error {
	if c == nil || len(endpoints) == 0 {
		return nil
	}
	facts, err := tx.CallbackMessage(ctx, tenantID, messageID)
	if err != nil || facts.Test {
		return err
	}
	now := c.Now()
	payload, err := json.Marshal(CallbackPayload{Type: eventType, Timestamp: now.UTC(), Data: callbackData(facts, note)})
	if err != nil {
		return err
	}
	ids, err := tx.InsertCallbackDeliveries(ctx, tenantID, endpoints, &messageID, eventType, payload, now)
	if err != nil || len(ids) == 0 {
		return err
	}
	return c.Queue.EnqueueCallbacks(ctx, tx, tenantID, ids...)
}

// NotifyStatus is Notify for a message that moved to status, when that
// status has a callback event.
func (c *Callbacks) NotifyStatus(ctx context.Context, tx CallbackEnqueueTx, tenantID, messageID uuid.UUID, status string, note CallbackNote) error {
	event, ok := callbackStatusEvent[status]
	if !ok {
		return nil
	}
	return c.Notify(ctx, tx, tenantID, messageID, event, note)
}

// CallbackPayload is the JSON body of a callback, in Standard Webhooks'
// shape: the event type, when it happened, and its data.
type CallbackPayload struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// CallbackData is the data of a message status callback. To is the full
// address: the tenant owns its recipients' data and needs it to match the
// message to a person without another call.
type CallbackData struct {
	MessageID uuid.UUID `json:"message_id"`
	// EventID is the tenant's own event_id of the request; HeraldEventID
	// the id Herald answered it with.
	EventID           *string         `json:"event_id"`
	HeraldEventID     *uuid.UUID      `json:"herald_event_id"`
	CorrelationID     string          `json:"correlation_id"`
	TriggerEvent      string          `json:"trigger_event"`
	Channel           Channel         `json:"channel"`
	Status            string          `json:"status"`
	To                string          `json:"to"`
	Entity            *CallbackEntity `json:"entity"`
	Provider          *string         `json:"provider"`
	ProviderMessageID *string         `json:"provider_message_id"`
	Attempts          int             `json:"attempts"`
	FallbackOf        *uuid.UUID      `json:"fallback_of"`
	Error             *CallbackError  `json:"error,omitempty"`
	Fallback          *CallbackLink   `json:"fallback,omitempty"`
	// AcknowledgedAt and AckVia are set once the passenger acknowledged
	// the message (every callback after, message.acknowledged first).
	AcknowledgedAt *time.Time `json:"acknowledged_at,omitempty"`
	AckVia         *string    `json:"ack_via,omitempty"`
}

// CallbackEntity is the booking, trip or invoice a message is about.
type CallbackEntity struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// CallbackError is why a message failed: failed_reason and error code as the
// API shows them, and the provider's text.
type CallbackError struct {
	Reason  *string `json:"reason"`
	Code    *string `json:"code"`
	Message string  `json:"message,omitempty"`
}

// CallbackLink names the fallback message queued for a failed one.
type CallbackLink struct {
	MessageID uuid.UUID `json:"message_id"`
	Channel   string    `json:"channel"`
}

func callbackData(f *CallbackMessageFacts, note CallbackNote) CallbackData {
	d := CallbackData{
		MessageID: f.MessageID, EventID: f.SourceEventID, HeraldEventID: f.EventID, CorrelationID: f.CorrelationID,
		TriggerEvent: f.TriggerEvent, Channel: f.Channel, Status: f.Status, To: f.ToAddress,
		Provider: f.Provider, ProviderMessageID: f.ExternalMessageID, Attempts: f.Attempts, FallbackOf: f.FallbackOf,
		AcknowledgedAt: f.AcknowledgedAt, AckVia: f.AckVia,
	}
	if f.EntityType != nil && f.EntityID != nil {
		d.Entity = &CallbackEntity{Type: *f.EntityType, ID: *f.EntityID}
	}
	if f.Status == MessageFailed {
		d.Error = &CallbackError{Reason: f.FailedReason, Code: f.ErrorCode, Message: note.ErrorMessage}
	}
	if note.FallbackMessageID != uuid.Nil {
		d.Fallback = &CallbackLink{MessageID: note.FallbackMessageID, Channel: note.FallbackChannel}
	}
	return d
}
