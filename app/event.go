package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Event statuses.
const (
	EventReceived         = "RECEIVED"
	EventScheduled        = "SCHEDULED"
	EventAwaitingApproval = "AWAITING_APPROVAL"
	EventRouted           = "ROUTED"
	EventCancelled        = "CANCELLED"
	EventRejected         = "REJECTED"
	EventFailed           = "FAILED"
	// EventExpired: the event's expiry passed before it was routed
	// (seed 003's TTL); it is never sent.
	EventExpired = "EXPIRED"
)

// Event is a stored notification request: Herald's outbox row. Its route
// job is inserted in the same transaction.
type Event struct {
	ID            uuid.UUID  `db:"id" json:"id"`
	TenantID      uuid.UUID  `db:"tenant_id" json:"-"`
	SourceEventID string     `db:"source_event_id" json:"event_id"`
	TriggerEvent  string     `db:"trigger_event" json:"trigger_event"`
	Recipients    JSON       `db:"recipients" json:"recipients"`
	Context       JSON       `db:"context" json:"context"`
	Channels      StringList `db:"channels" json:"channels,omitempty"`
	FallbackChain StringList `db:"fallback_chain" json:"fallback_chain,omitempty"`
	Locale        *string    `db:"locale" json:"locale,omitempty"`
	EntityType    *string    `db:"entity_type" json:"entity_type,omitempty"`
	EntityID      *string    `db:"entity_id" json:"entity_id,omitempty"`
	SendAt        *time.Time `db:"send_at" json:"send_at,omitempty"`
	// SendAtRule is the relative schedule send_at follows (a SendAtRule
	// as JSON), empty for an absolute one.
	SendAtRule JSON `db:"send_at_rule" json:"send_at_rule,omitempty"`
	// ExpiresAt is when the event stops being worth sending.
	ExpiresAt *time.Time `db:"expires_at" json:"expires_at,omitempty"`
	// ExpiresRule says where a default expiry came from: the context key
	// it is read from (it moves with that time), or "after:<duration>";
	// nil when the request set expires_at itself, or there is none.
	ExpiresRule    *string    `db:"expires_rule" json:"-"`
	Version        int        `db:"version" json:"version"`
	Status         string     `db:"status" json:"status"`
	Error          *string    `db:"error" json:"error,omitempty"`
	PayloadSize    int        `db:"payload_size" json:"-"`
	APIKeyID       *uuid.UUID `db:"api_key_id" json:"-"`
	DecidedBy      *uuid.UUID `db:"decided_by" json:"-"`
	DecidedAt      *time.Time `db:"decided_at" json:"decided_at,omitempty"`
	DecisionReason *string    `db:"decision_reason" json:"decision_reason,omitempty"`
	CreatedAt      time.Time  `db:"created_at" json:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at" json:"updated_at"`
	RoutedAt       *time.Time `db:"routed_at" json:"routed_at,omitempty"`
	// Routing holds the route decisions (RouteDecision) per recipient and
	// channel; read only where they are shown (EventPage), written by
	// SetEventStatus when set.
	Routing JSON `db:"routing" json:"-"`
	// Audience is {"trip_id"} when the event targets a trip's passengers
	// instead of listing recipients; routing stores the expanded
	// recipients.
	Audience JSON `db:"audience" json:"audience,omitempty"`
	// StatusReason says why the event ended as it did, such as
	// superseded_by:<event id>.
	StatusReason *string `db:"status_reason" json:"status_reason,omitempty"`
	// Superseding, read with the event for routing, is the accepted event
	// that makes it pointless, if any.
	Superseding *SupersedingRef `db:"-" json:"-"`
	// Files, read with the event for routing and for a fallback, are its
	// files without their bytes (EventFiles).
	Files EventFiles `db:"files" json:"-"`
}

// Def returns the event's registry entry for its tenant, read in tx.
func (e *Event) Def(ctx context.Context, tx EventReader) (*EventDef, error) {
	def, err := LookupEvent(ctx, tx, e.TenantID, e.TriggerEvent)
	if err != nil {
		return nil, fmt.Errorf("event %s: trigger event %s: %w", e.ID, e.TriggerEvent, err)
	}
	return def, nil
}

// DecodeRecipients returns the stored recipients.
func (e *Event) DecodeRecipients() ([]Recipient, error) {
	var rs []Recipient
	return rs, json.Unmarshal(e.Recipients, &rs)
}

// DecodeContext returns the stored (redacted) context.
func (e *Event) DecodeContext() (map[string]any, error) {
	m := map[string]any{}
	dec := json.NewDecoder(strings.NewReader(string(e.Context)))
	dec.UseNumber()
	return m, dec.Decode(&m)
}

// RouteJob asks for an event to be routed. Version lets a job that was
// scheduled before a reschedule recognise itself as stale.
type RouteJob struct {
	TenantID uuid.UUID
	EventID  uuid.UUID
	Version  int
	// At schedules the job; zero means now.
	At time.Time
	// Priority orders the job in its queue (priority.go); 0 is the
	// event's own.
	Priority int
}

// DispatchJob asks for a message to be sent.
type DispatchJob struct {
	TenantID  uuid.UUID
	MessageID uuid.UUID
	Channel   Channel
	// NotBefore, when set, schedules the job (a send again after a
	// provider's rate limit).
	NotBefore time.Time
	// Priority orders the job in its queue (priority.go); 0 is
	// PriorityTransactional.
	Priority int
	// JobID is the job's id once EnqueueDispatch inserted it (set in the
	// slice the caller passed).
	JobID int64
}

// Queue enqueues background work inside the caller's transaction, so the
// work exists if and only if the transaction commits.
type Queue interface {
	EnqueueRoute(ctx context.Context, tx Tx, job RouteJob) error
	EnqueueDispatch(ctx context.Context, tx Tx, jobs ...DispatchJob) error
}

// EventDetail is an event with the messages it produced.
type EventDetail struct {
	*Event
	Messages []*Message `json:"messages"`
	// Skipped are the channels routing passed over, per recipient, with
	// why: an opted-out channel, a missing template or address.
	Skipped []EventSkip `json:"skipped"`
}

// EventSkip is a channel routing passed over for one of an event's
// recipients, and why.
type EventSkip struct {
	Recipient int     `json:"recipient"`
	Channel   Channel `json:"channel"`
	Reason    string  `json:"reason"`
	// Text says the reason in words.
	Text string `json:"text"`
	// FallbackOf is the failed message whose fallback chain passed the
	// channel over; nil for the event's first routing.
	FallbackOf *uuid.UUID `json:"fallback_of,omitempty"`
	At         time.Time  `json:"at"`
}

// Skips are the channels the event's routing passed over (its Routing
// must be loaded), in the order routing decided them.
func (e *Event) Skips() []EventSkip {
	out := []EventSkip{}
	for _, d := range e.RouteDecisions() {
		if d.Outcome != DecisionSkipped {
			continue
		}
		out = append(out, EventSkip{Recipient: d.Recipient, Channel: d.Channel, Reason: d.Reason, Text: ReasonText(d.Reason),
			FallbackOf: d.FallbackOf, At: d.At})
	}
	return out
}

// Get returns the event with its messages.
func (s *Intake) Get(ctx context.Context, tenantID, eventID uuid.UUID) (*EventDetail, error) {
	var d EventDetail
	err := s.Store.InTenant(ctx, tenantID, func(tx IntakeTx) (err error) {
		if d.Event, err = tx.EventWithRouting(ctx, tenantID, eventID); err != nil {
			return err
		}
		d.Messages, err = tx.MessagesByEvent(ctx, tenantID, eventID)
		return err
	})
	if err != nil {
		return nil, err
	}
	d.Skipped = d.Event.Skips()
	return &d, nil
}

// GetBySourceID returns the tenant's event with the caller's own id (the
// event_id it submitted) with its messages; another tenant's id is not found.
func (s *Intake) GetBySourceID(ctx context.Context, tenantID uuid.UUID, sourceID string) (*EventDetail, error) {
	var d EventDetail
	err := s.Store.InTenant(ctx, tenantID, func(tx IntakeTx) (err error) {
		if d.Event, err = tx.EventBySourceID(ctx, tenantID, sourceID); err != nil {
			return err
		}
		if d.Event, err = tx.EventWithRouting(ctx, tenantID, d.Event.ID); err != nil {
			return err
		}
		d.Messages, err = tx.MessagesByEvent(ctx, tenantID, d.Event.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	d.Skipped = d.Event.Skips()
	return &d, nil
}

// Reschedule moves a scheduled event to a new time. The version goes up, a
// new route job is scheduled, and the old job finds a stale version and
// does nothing.
func (s *Intake) Reschedule(ctx context.Context, actor Actor, tenantID, eventID uuid.UUID, sendAt time.Time) (*Event, error) {
	if !sendAt.After(s.Now()) {
		return nil, Invalid("send_at_in_past", "send_at", "send_at must be in the future.")
	}
	var e *Event
	err := s.Store.InTenant(ctx, tenantID, func(tx IntakeTx) (err error) {
		if e, err = tx.EventByID(ctx, tenantID, eventID, true); err != nil {
			return err
		}
		switch e.Status {
		case EventScheduled, EventReceived, EventAwaitingApproval:
		default:
			return Errorf(ECONFLICT, "Event %s is %s; only events not yet routed can be rescheduled.", e.ID, e.Status)
		}
		if e.ExpiresAt != nil && !sendAt.Before(*e.ExpiresAt) {
			return Invalid("expires_before_send_at", "send_at", "The notification expires at %s; send_at must be before that.", e.ExpiresAt.UTC().Format(time.RFC3339))
		}
		e.Version++
		e.SendAt = &sendAt
		// A time given outright replaces a relative schedule: it no
		// longer moves with the context time.
		e.SendAtRule = nil
		if e.Status == EventReceived {
			e.Status = EventScheduled
		}
		e.UpdatedAt = s.Now()
		if err := tx.UpdateEventSchedule(ctx, e); err != nil {
			return err
		}
		if err := tx.InsertAudit(ctx, actor.Entry(&tenantID, "notification.reschedule", "event", e.ID.String(),
			map[string]any{"send_at": sendAt, "version": e.Version})); err != nil {
			return err
		}
		if e.Status == EventAwaitingApproval {
			return nil
		}
		return s.Queue.EnqueueRoute(ctx, tx, RouteJob{TenantID: tenantID, EventID: e.ID, Version: e.Version, At: sendAt, Priority: e.priority()})
	})
	return e, err
}

// Cancel stops an event that has not been routed yet. Messages of a routed
// event that are still QUEUED are cancelled too, so that nothing further goes
// out for it.
func (s *Intake) Cancel(ctx context.Context, actor Actor, tenantID, eventID uuid.UUID) (*Event, error) {
	var e *Event
	err := s.Store.InTenant(ctx, tenantID, func(tx IntakeTx) (err error) {
		if e, err = tx.EventByID(ctx, tenantID, eventID, true); err != nil {
			return err
		}
		switch e.Status {
		case EventCancelled:
			return nil
		case EventRejected, EventFailed:
			return Errorf(ECONFLICT, "Event %s is %s and cannot be cancelled.", e.ID, e.Status)
		}
		n, err := tx.CancelQueuedMessages(ctx, tenantID, eventID, s.Now())
		if err != nil {
			return err
		}
		if e.Status == EventRouted && n == 0 {
			return Errorf(ECONFLICT, "Event %s was routed and its messages have gone out; nothing is left to cancel.", e.ID)
		}
		e.Status, e.UpdatedAt = EventCancelled, s.Now()
		if err := tx.SetEventStatus(ctx, e); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "notification.cancel", "event", e.ID.String(),
			map[string]any{"cancelled_messages": n}))
	})
	return e, err
}

// ErrSeparationOfDuties refuses a decision on an event by whoever submitted
// it: an event that needs approval needs a second party.
var ErrSeparationOfDuties = &Error{
	Code: EFORBIDDEN, Reason: "separation_of_duties",
	Message: "This notification was submitted with the same API key that is deciding it; another key with the approve scope, or a manager in the console, must approve or reject it.",
}

// SubmittedBy reports whether actor submitted the event. Events come in
// through API keys only (the console submits none), so a key is the only
// actor that can be the submitter.
func SubmittedBy(e *Event, actor Actor) bool {
	return actor.Type == ActorAPIKey && actor.ID != nil && e.APIKeyID != nil && *e.APIKeyID == *actor.ID
}

// Decide approves or rejects an event awaiting approval. Approval routes it
// (at its send_at, if it has one); rejection needs a reason. The key that
// submitted the event cannot decide it (ErrSeparationOfDuties). The event's
// row is locked before its status is checked, so of two decisions at once
// exactly one finds it awaiting approval; the other is ECONFLICT.
func (s *Intake) Decide(ctx context.Context, actor Actor, tenantID, eventID uuid.UUID, approve bool, reason string) (*Event, error) {
	reason = strings.TrimSpace(reason)
	if !approve && reason == "" {
		return nil, Invalid("missing_reason", "reason", "Say why the notification is rejected.")
	}
	var e *Event
	err := s.Store.InTenant(ctx, tenantID, func(tx IntakeTx) (err error) {
		if e, err = tx.EventByID(ctx, tenantID, eventID, true); err != nil {
			return err
		}
		if SubmittedBy(e, actor) {
			return ErrSeparationOfDuties
		}
		if e.Status != EventAwaitingApproval {
			return Errorf(ECONFLICT, "Event %s is %s, not awaiting approval.", e.ID, e.Status)
		}
		now := s.Now()
		e.DecidedBy, e.DecidedAt, e.UpdatedAt = actor.ID, &now, now
		if reason != "" {
			e.DecisionReason = &reason
		}
		action := "notification.reject"
		e.Status = EventRejected
		if approve {
			action = "notification.approve"
			e.Status = EventReceived
			if e.SendAt != nil && e.SendAt.After(now) {
				e.Status = EventScheduled
			}
		}
		if err := tx.SetEventStatus(ctx, e); err != nil {
			return err
		}
		if err := tx.InsertAudit(ctx, actor.Entry(&tenantID, action, "event", e.ID.String(), map[string]any{"reason": reason})); err != nil {
			return err
		}
		if !approve {
			return nil
		}
		job := RouteJob{TenantID: tenantID, EventID: e.ID, Version: e.Version, Priority: e.priority()}
		if e.Status == EventScheduled {
			job.At = *e.SendAt
		}
		return s.Queue.EnqueueRoute(ctx, tx, job)
	})
	return e, err
}
