package app

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

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
	// InsertEvent stores a new event, or nothing when its tenant used its
	// event id before (inserted false). recent is how many of the tenant's
	// BurstLookback latest events, accepted within BurstWindow before e's
	// time, are of the trigger events peers names (all when nil), up to
	// BurstShare: the tenant's share of the queues (priority.go).
	InsertEvent(ctx context.Context, e *Event, peers []string) (inserted bool, recent int, err error)
	EventBySourceID(ctx context.Context, tenantID uuid.UUID, sourceID string) (*Event, error)
	EventByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Event, error)
	// EventWithRouting is the event with its route decisions.
	EventWithRouting(ctx context.Context, tenantID, id uuid.UUID) (*Event, error)
	MessagesByEvent(ctx context.Context, tenantID, eventID uuid.UUID) ([]*Message, error)
	CancelQueuedMessages(ctx context.Context, tenantID, eventID uuid.UUID, at time.Time) (int, error)
	SetEventStatus(ctx context.Context, e *Event) error
	UpdateEventSchedule(ctx context.Context, e *Event) error
	// PendingRelativeEvents locks the entity's events that are not routed
	// yet and have a relative schedule, in id order.
	PendingRelativeEvents(ctx context.Context, tenantID uuid.UUID, entityType, entityID string) ([]*Event, error)
	InsertAudit(ctx context.Context, e *AuditEntry) error
	// InsertAttachments stores a new event's files.
	InsertAttachments(ctx context.Context, files []*Attachment) error
	EntityTx
	LimitTx
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
}

// Intake accepts notification requests and manages their events.
type Intake struct {
	Store    Store[IntakeTx]
	Registry *Registry
	Queue    Queue
	Now      Clock
}

// Submit validates, redacts and stores a request with its route job, in one
// transaction of the key's tenant and of no other: a request waits for no
// other tenant's locks and fails with no other tenant's. A request whose
// event id the tenant used before returns the original event with
// Duplicate set, even when both arrive at once, if it is the same request;
// a different request under that id is an ECONFLICT (reason
// idempotency_conflict) naming the first field that differs.
func (s *Intake) Submit(ctx context.Context, key *APIKey, body []byte) (*SubmitResult, error) {
	now := s.Now()
	req, err := ParseNotificationRequest(body, now, s.Registry.For(ctx, key.TenantID))
	if err != nil {
		return nil, err
	}
	in := newIntakeRequest(key, req, len(body), now)
	var res *SubmitResult
	err = s.Store.InTenant(ctx, key.TenantID, func(tx IntakeTx) (err error) {
		res, err = s.store(ctx, tx, in)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// submitIn validates and stores a request of key's tenant in tx, an open
// transaction of that tenant: Submit's path for callers that batch
// requests of one tenant (an upload's rows), so that every event is
// stored one way.
func (s *Intake) submitIn(ctx context.Context, tx IntakeTx, key *APIKey, body []byte, events EventLookup) (*SubmitResult, error) {
	now := s.Now()
	req, err := ParseNotificationRequest(body, now, events)
	if err != nil {
		return nil, err
	}
	return s.store(ctx, tx, newIntakeRequest(key, req, len(body), now))
}

// intakeRequest is a valid request on its way into its tenant's transaction.
type intakeRequest struct {
	key *APIKey
	req *NotificationRequest
	def *EventDef
	// event is what the request stores; settling its entity may change
	// its status before it is stored.
	event *Event
	// redacted lists the paths of the context values Redact replaced.
	redacted []string
	now      time.Time
	// recent is the tenant's events within BurstWindow before this one.
	recent int
}

// newIntakeRequest redacts a valid request of key's tenant, size bytes long,
// and builds the event it stores.
func newIntakeRequest(key *APIKey, req *NotificationRequest, size int, now time.Time) *intakeRequest {
	// The event keeps the request without its inline files' bytes.
	size -= inlineBytes(req)
	redacted := redactRequest(req)
	// ParseNotificationRequest refused unknown events.
	def := req.def
	return &intakeRequest{key: key, req: req, def: def, event: eventOf(key, req, def, size, now), redacted: redacted, now: now}
}

// redactRequest redacts the request's context and each recipient's, and
// returns the paths it redacted.
func redactRequest(req *NotificationRequest) []string {
	redacted := Redact(req.Context)
	for i, rc := range req.Recipients {
		for _, path := range Redact(rc.Context) {
			redacted = append(redacted, fmt.Sprintf("recipients[%d].context.%s", i, path))
		}
	}
	return redacted
}

// PreviewEvent is the event a valid request would store for the tenant,
// not stored: previews of requests not sent yet (an upload's first rows)
// plan their messages from it as routing would.
func PreviewEvent(tenantID uuid.UUID, req *NotificationRequest, now time.Time) (*Event, error) {
	def := req.def
	if def == nil {
		// A request read back from storage (an upload's row) was not
		// parsed here: its event is resolved among the built-in ones.
		var ok bool
		if def, ok = BuiltInEvent(req.TriggerEvent); !ok {
			return nil, FieldErrorf("trigger_event", "%q is not an event Herald knows.", req.TriggerEvent)
		}
	}
	return eventOf(&APIKey{TenantID: tenantID}, req, def, 0, now), nil
}

// eventOf returns the event a valid request stores, before its entity is
// settled: awaiting approval when its registry entry says so, else
// scheduled when it has a send_at, else received.
func eventOf(key *APIKey, req *NotificationRequest, def *EventDef, size int, now time.Time) *Event {
	if req.Recipients == nil {
		// An audience: routing stores the passengers it expands to.
		req.Recipients = []Recipient{}
	}
	stored := make([]Recipient, len(req.Recipients))
	for i, rc := range req.Recipients {
		rc.Attachments = withoutContent(rc.Attachments)
		stored[i] = rc
	}
	recipients, _ := json.Marshal(stored)
	contextJSON, _ := json.Marshal(req.Context)
	e := &Event{
		ID: NewID(), TenantID: key.TenantID, SourceEventID: req.EventID, TriggerEvent: req.TriggerEvent,
		Recipients: recipients, Context: contextJSON, Channels: req.Channels, FallbackChain: req.FallbackChain,
		SendAt: req.SendAt, ExpiresAt: req.ExpiresAt, Version: 1, Status: EventReceived, PayloadSize: size,
		CreatedAt: now, UpdatedAt: now,
	}
	if key.ID != uuid.Nil {
		// A console upload's rows come with no API key.
		e.APIKeyID = &key.ID
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
	return e
}

// store runs a request's statements in its tenant's transaction: the
// entity settled (entity.go: locks, supersession, audience), the event
// inserted, and what a new event brings with it; a request whose event id
// was used before is answered from the event stored then.
func (s *Intake) store(ctx context.Context, tx IntakeTx, in *intakeRequest) (*SubmitResult, error) {
	e := in.event
	if err := s.settleEntity(ctx, tx, in.def, e, in.req); err != nil {
		return nil, err
	}
	inserted, recent, err := tx.InsertEvent(ctx, e, in.def.SharePeers())
	in.recent = recent
	if err != nil {
		return nil, err
	}
	if !inserted {
		return repeated(ctx, tx, in)
	}
	if err := checkLimits(ctx, tx, in); err != nil {
		return nil, err
	}
	if files := attachmentsOf(in.req, e); len(files) > 0 {
		if err := tx.InsertAttachments(ctx, files); err != nil {
			return nil, err
		}
	}
	if err := s.accept(ctx, tx, in); err != nil {
		return nil, err
	}
	return &SubmitResult{ID: e.ID, Status: e.Status, StatusReason: deref(e.StatusReason)}, nil
}

// accept runs, after a new event is inserted, what it brings with it: the
// relative schedules it moves, the audit of its redacted values, the
// events and messages it supersedes, and its route job.
func (s *Intake) accept(ctx context.Context, tx IntakeTx, in *intakeRequest) error {
	e, key := in.event, in.key
	if len(in.def.Moves) > 0 {
		if err := moveRelativeSchedules(ctx, tx, s.Queue, key, e, in.def, in.now); err != nil {
			return err
		}
	}
	if len(in.redacted) > 0 {
		actor := Actor{Type: ActorAPIKey, ID: &key.ID, Label: key.Name}
		if err := tx.InsertAudit(ctx, actor.Entry(&key.TenantID, "notification.redacted", "event", e.ID.String(),
			map[string]any{"paths": in.redacted})); err != nil {
			return err
		}
	}
	if err := s.supersede(ctx, tx, key, in.def, e, in.req); err != nil {
		return err
	}
	job, ok := routeJobOf(e, in.def, in.recent)
	if !ok {
		return nil
	}
	return s.Queue.EnqueueRoute(ctx, tx, job)
}

// repeated answers a request whose event id its tenant used before.
// Stripe's rule: an event id names one request. The same request again is
// a duplicate; another one under the same id is refused, and the
// transaction (which inserted nothing) rolls back. The insert waited for a
// concurrent submission of the id to commit, so the stored event is the
// request that won.
func repeated(ctx context.Context, tx IntakeTx, in *intakeRequest) (*SubmitResult, error) {
	orig, err := tx.EventBySourceID(ctx, in.key.TenantID, in.req.EventID)
	if err != nil {
		return nil, err
	}
	field, err := firstRequestDifference(orig, in.event)
	if err != nil {
		return nil, err
	}
	if field != "" {
		return nil, &Error{Code: ECONFLICT, Reason: "idempotency_conflict", Field: field,
			Message: fmt.Sprintf("event_id %q was used for a different request (%s differs); use a new event_id for a new request.", in.req.EventID, field)}
	}
	return &SubmitResult{ID: orig.ID, Status: orig.Status, StatusReason: deref(orig.StatusReason), Duplicate: true}, nil
}

// routeJobOf returns the route job of a newly stored event; ok is false
// for an event that is not routed now (awaiting approval, or stored
// cancelled). recent is how many events the tenant had accepted within
// BurstWindow before it: past its fair share, the event's messages yield
// to other tenants' (priority.go).
func routeJobOf(e *Event, def *EventDef, recent int) (job RouteJob, ok bool) {
	if e.Status == EventAwaitingApproval || e.Status == EventCancelled {
		return job, false
	}
	job = RouteJob{TenantID: e.TenantID, EventID: e.ID, Version: e.Version, Priority: RoutePriority(def, recent)}
	if e.SendAt != nil {
		job.At = *e.SendAt
	}
	return job, true
}
