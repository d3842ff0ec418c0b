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
}

// Def returns the event's registry entry.
func (e *Event) Def() (*EventDef, error) {
	def, ok := LookupEvent(e.TriggerEvent)
	if !ok {
		return nil, fmt.Errorf("event %s: unknown trigger event %s", e.ID, e.TriggerEvent)
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
}

// DispatchJob asks for a message to be sent.
type DispatchJob struct {
	TenantID  uuid.UUID
	MessageID uuid.UUID
	Channel   Channel
	// NotBefore, when set, schedules the job (a send again after a
	// provider's rate limit).
	NotBefore time.Time
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

// SubmitResult is the answer to a submitted request.
type SubmitResult struct {
	ID        uuid.UUID `json:"id"`
	Status    string    `json:"status"`
	Duplicate bool      `json:"duplicate,omitempty"`
	// StatusReason says why the event is stored as it is (a superseded
	// event: superseded_by:<event id>).
	StatusReason string `json:"status_reason,omitempty"`
}

// IntakeTx lists the statements Intake runs.
type IntakeTx interface {
	Tx
	InsertEvent(ctx context.Context, e *Event) (bool, error)
	// InsertEvents stores several events of the transaction's tenant with
	// one statement, each unless the tenant used its source event id
	// before (also earlier in es), and returns the ids of those it stored.
	InsertEvents(ctx context.Context, es []*Event) (map[uuid.UUID]bool, error)
	// SetLockTimeout makes a lock wait longer than d fail, for the rest of
	// the transaction.
	SetLockTimeout(ctx context.Context, d time.Duration) error
	// ScopeTenant moves the transaction to another tenant's scope for the
	// statements after it (IntakeBatcher stores several tenants' events in
	// one commit).
	ScopeTenant(ctx context.Context, tenantID uuid.UUID) error
	// InsertTenantsEvents stores several tenants' events, each part one
	// tenant's, as InsertEvents does, each part in its tenant's scope, in
	// one round trip; the transaction is left in the last part's scope.
	InsertTenantsEvents(ctx context.Context, parts [][]*Event) (map[uuid.UUID]bool, error)
	EventBySourceID(ctx context.Context, tenantID uuid.UUID, sourceID string) (*Event, error)
	EventByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Event, error)
	MessagesByEvent(ctx context.Context, tenantID, eventID uuid.UUID) ([]*Message, error)
	CancelQueuedMessages(ctx context.Context, tenantID, eventID uuid.UUID, at time.Time) (int, error)
	SetEventStatus(ctx context.Context, e *Event) error
	UpdateEventSchedule(ctx context.Context, e *Event) error
	// PendingRelativeEvents locks the entity's events that are not routed
	// yet and have a relative schedule, in id order.
	PendingRelativeEvents(ctx context.Context, tenantID uuid.UUID, entityType, entityID string) ([]*Event, error)
	InsertAudit(ctx context.Context, e *AuditEntry) error
	EntityTx
}

// Intake accepts notification requests and manages their events.
type Intake struct {
	Store Store[IntakeTx]
	Queue Queue
	Now   Clock
	// Batch, when set, stores plain submissions with the others of the
	// moment in one transaction (intake_batch.go).
	Batch *IntakeBatcher
}

// Submit validates, redacts and stores a request with its route job, in one
// transaction. A request whose event id the tenant used before returns the
// original event with Duplicate set, even when both arrive at once, if it is
// the same request; a different request under that id is an ECONFLICT
// (reason idempotency_conflict) naming the first field that differs.
func (s *Intake) Submit(ctx context.Context, key *APIKey, body []byte) (*SubmitResult, error) {
	now := s.Now()
	req, err := ParseNotificationRequest(body, now)
	if err != nil {
		return nil, err
	}
	redacted := Redact(req.Context)
	for i, rc := range req.Recipients {
		for _, path := range Redact(rc.Context) {
			redacted = append(redacted, fmt.Sprintf("recipients[%d].context.%s", i, path))
		}
	}
	def, _ := LookupEvent(req.TriggerEvent)

	if req.Recipients == nil {
		// An audience: routing stores the passengers it expands to.
		req.Recipients = []Recipient{}
	}
	recipients, _ := json.Marshal(req.Recipients)
	contextJSON, _ := json.Marshal(req.Context)
	e := &Event{
		ID: NewID(), TenantID: key.TenantID, SourceEventID: req.EventID, TriggerEvent: req.TriggerEvent,
		Recipients: recipients, Context: contextJSON, Channels: req.Channels, FallbackChain: req.FallbackChain,
		SendAt: req.SendAt, ExpiresAt: req.ExpiresAt, Version: 1, Status: EventReceived, PayloadSize: len(body), APIKeyID: &key.ID,
		CreatedAt: now, UpdatedAt: now,
	}
	if req.SendAtRule != nil {
		e.SendAtRule, _ = json.Marshal(req.SendAtRule)
	}
	if req.ExpiresRule != "" {
		e.ExpiresRule = &req.ExpiresRule
	}
	if req.Locale != "" {
		e.Locale = &req.Locale
	}
	if c := req.ConversationContext; c != nil {
		e.EntityType, e.EntityID = &c.Type, &c.ID
	}
	if a := req.Audience; a != nil {
		// An audience event is about its trip: it shows on the trip's
		// panel, and a cancelled trip supersedes it.
		e.Audience, _ = json.Marshal(a)
		trip := EntityTrip
		e.EntityType, e.EntityID = &trip, &a.TripID
	}
	switch {
	case def.RequiresApproval:
		e.Status = EventAwaitingApproval
	case req.SendAt != nil:
		e.Status = EventScheduled
	}

	res := &SubmitResult{ID: e.ID, Status: e.Status}
	initial := e.Status
	if s.Batch != nil && batchable(def, e, redacted) {
		settle := func(ctx context.Context, tx IntakeTx) error {
			e.Status, e.StatusReason = initial, nil
			return s.settleEntity(ctx, tx, def, e, req)
		}
		refs, _ := entityLocks(def, e, req)
		stored, err := s.Batch.Add(ctx, e, len(refs) > 0, settle)
		switch {
		case stored:
			res.Status, res.StatusReason = e.Status, deref(e.StatusReason)
			return res, nil
		case ctx.Err() != nil:
			return nil, err
		}
		// Not stored: a duplicate or a conflict, which the transaction
		// below answers, or a failed batch, which it tries again alone.
	}
	err = s.Store.InTenant(ctx, key.TenantID, func(tx IntakeTx) error {
		// Bookings and trips (entity.go): locks, supersession, audience.
		e.Status, e.StatusReason = initial, nil
		if err := s.settleEntity(ctx, tx, def, e, req); err != nil {
			return err
		}
		res.Status, res.StatusReason = e.Status, deref(e.StatusReason)
		inserted, err := tx.InsertEvent(ctx, e)
		if err != nil {
			return err
		}
		if inserted && len(def.Moves) > 0 {
			if err := moveRelativeSchedules(ctx, tx, s.Queue, key, e, def, now); err != nil {
				return err
			}
		}
		if !inserted {
			orig, err := tx.EventBySourceID(ctx, key.TenantID, req.EventID)
			if err != nil {
				return err
			}
			// Stripe's rule: an event id names one request. The same
			// request again is a duplicate; another one under the same id
			// is refused, and the transaction (which inserted nothing) rolls
			// back. The insert above waited for a concurrent submission of
			// the id to commit, so orig is the request that won.
			field, err := firstRequestDifference(orig, e)
			if err != nil {
				return err
			}
			if field != "" {
				return &Error{Code: ECONFLICT, Reason: "idempotency_conflict", Field: field,
					Message: fmt.Sprintf("event_id %q was used for a different request (%s differs); use a new event_id for a new request.", req.EventID, field)}
			}
			res.ID, res.Status, res.StatusReason, res.Duplicate = orig.ID, orig.Status, deref(orig.StatusReason), true
			return nil
		}
		if len(redacted) > 0 {
			actor := Actor{Type: ActorAPIKey, ID: &key.ID, Label: key.Name}
			if err := tx.InsertAudit(ctx, actor.Entry(&key.TenantID, "notification.redacted", "event", e.ID.String(),
				map[string]any{"paths": redacted})); err != nil {
				return err
			}
		}
		if err := s.supersede(ctx, tx, key, def, e, req); err != nil {
			return err
		}
		job, ok := routeJobOf(e)
		if !ok {
			return nil
		}
		return s.Queue.EnqueueRoute(ctx, tx, job)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// routeJobOf returns the route job of a newly stored event; ok is false
// for an event that is not routed now (awaiting approval, or stored
// cancelled).
func routeJobOf(e *Event) (job RouteJob, ok bool) {
	if e.Status == EventAwaitingApproval || e.Status == EventCancelled {
		return job, false
	}
	job = RouteJob{TenantID: e.TenantID, EventID: e.ID, Version: e.Version}
	if e.SendAt != nil {
		job.At = *e.SendAt
	}
	return job, true
}

// EventDetail is an event with the messages it produced.
type EventDetail struct {
	*Event
	Messages []*Message `json:"messages"`
}

// Get returns the event with its messages.
func (s *Intake) Get(ctx context.Context, tenantID, eventID uuid.UUID) (*EventDetail, error) {
	var d EventDetail
	err := s.Store.InTenant(ctx, tenantID, func(tx IntakeTx) (err error) {
		if d.Event, err = tx.EventByID(ctx, tenantID, eventID, false); err != nil {
			return err
		}
		d.Messages, err = tx.MessagesByEvent(ctx, tenantID, eventID)
		return err
	})
	if err != nil {
		return nil, err
	}
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
		d.Messages, err = tx.MessagesByEvent(ctx, tenantID, d.Event.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
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
		return s.Queue.EnqueueRoute(ctx, tx, RouteJob{TenantID: tenantID, EventID: e.ID, Version: e.Version, At: sendAt})
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
		job := RouteJob{TenantID: tenantID, EventID: e.ID, Version: e.Version}
		if e.Status == EventScheduled {
			job.At = *e.SendAt
		}
		return s.Queue.EnqueueRoute(ctx, tx, job)
	})
	return e, err
}
