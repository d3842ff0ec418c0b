package app

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
)

// AnyEvent stands for every trigger event in a delivery deadline or a
// confirmation window.
const AnyEvent = "*"

// MaxDeadlineMinutes bounds a delivery deadline: a day, after which a SENT
// message without a receipt is marked stale instead.
const MaxDeadlineMinutes = 24 * 60

// Deadline stages: what a message must reach within a deadline's minutes.
const (
	// StageDelivered: the provider reported it delivered (or read).
	StageDelivered = "DELIVERED"
	// StageRead: the provider reported it read.
	StageRead = "READ"
	// StageAcknowledged: the passenger acknowledged it (Acknowledgements).
	// A tenant's ACKNOWLEDGED deadline for an event also marks the event
	// as one whose messages ask for acknowledgement.
	StageAcknowledged = "ACKNOWLEDGED"
)

// MaxBeforeDepartureMinutes bounds an ACKNOWLEDGED deadline counted back
// from the departure: a week.
const MaxBeforeDepartureMinutes = 7 * 24 * 60

// DeadlineStages are the stages in order.
var DeadlineStages = []string{StageDelivered, StageRead, StageAcknowledged}

// DeliveryDeadline is a tenant's rule: a message of TriggerEvent (AnyEvent:
// every event) on Channel that has not reached Stage (DELIVERED, READ or
// ACKNOWLEDGED) Minutes after it was sent continues its fallback chain, as
// if it had failed; one with no channel left puts its passenger on the
// trip's call list. The original keeps its status (a late receipt or
// acknowledgement still applies to it). An ACKNOWLEDGED rule may instead
// give BeforeDepartureMinutes (Minutes 0): the message is overdue that long
// before the departure of its event's context (departure_at, or
// departure_date with departure_time or boarding_time in the tenant's time
// zone); a message whose event names no departure is held to the
// minutes-after-send rule of every event ("*") if one is set.
type DeliveryDeadline struct {
	TenantID               uuid.UUID `db:"tenant_id" json:"-"`
	TriggerEvent           string    `db:"trigger_event" json:"trigger_event"`
	Channel                Channel   `db:"channel" json:"channel"`
	Stage                  string    `db:"stage" json:"stage"`
	Minutes                int       `db:"minutes" json:"minutes"`
	BeforeDepartureMinutes int       `db:"before_departure_minutes" json:"before_departure_minutes,omitempty"`
	UpdatedAt              time.Time `db:"updated_at" json:"updated_at"`
}

// DeadlineTx lists the statements Deadlines runs.
type DeadlineTx interface {
	// EventReader resolves the tenant's events (LookupEvent).
	EventReader
	Tx
	DeliveryDeadlines(ctx context.Context, tenantID uuid.UUID) ([]*DeliveryDeadline, error)
	SetDeliveryDeadline(ctx context.Context, d *DeliveryDeadline) error
	DeleteDeliveryDeadline(ctx context.Context, tenantID uuid.UUID, triggerEvent string, ch Channel, stage string) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// Deadlines manages tenants' delivery deadlines (default: none).
type Deadlines struct {
	Store Store[DeadlineTx]
	Now   Clock
}

// List returns the tenant's delivery deadlines.
func (s *Deadlines) List(ctx context.Context, tenantID uuid.UUID) ([]*DeliveryDeadline, error) {
	var ds []*DeliveryDeadline
	err := s.Store.InTenant(ctx, tenantID, func(tx DeadlineTx) (err error) {
		ds, err = tx.DeliveryDeadlines(ctx, tenantID)
		return err
	})
	return ds, err
}

// Set gives messages of the event (or AnyEvent) on the channel a deadline
// of minutes (1 to MaxDeadlineMinutes) to be delivered; 0 removes it. The
// change is audited.
func (s *Deadlines) Set(ctx context.Context, actor Actor, tenantID uuid.UUID, triggerEvent string, ch Channel, minutes int) error {
	return s.SetStage(ctx, actor, tenantID, triggerEvent, ch, StageDelivered, minutes)
}

// SetStage gives messages of the event (or AnyEvent) on the channel a
// deadline of minutes (1 to MaxDeadlineMinutes) to reach the stage
// (DELIVERED, READ or ACKNOWLEDGED; "" is DELIVERED); 0 removes it. The
// change is audited.
func (s *Deadlines) SetStage(ctx context.Context, actor Actor, tenantID uuid.UUID, triggerEvent string, ch Channel, stage string, minutes int) error {
	return s.SetRule(ctx, actor, &DeliveryDeadline{TenantID: tenantID, TriggerEvent: triggerEvent, Channel: ch, Stage: stage, Minutes: minutes})
}

// SetRule sets one deadline: its Minutes after the send (1 to
// MaxDeadlineMinutes) or, for an ACKNOWLEDGED one, its
// BeforeDepartureMinutes (1 to MaxBeforeDepartureMinutes), never both;
// neither (both 0) removes the stage's rule. The change is audited.
func (s *Deadlines) SetRule(ctx context.Context, actor Actor, d *DeliveryDeadline) error {
	if d.Stage == "" {
		d.Stage = StageDelivered
	}
	if err := validDeadline(d); err != nil {
		return err
	}
	return s.Store.InTenant(ctx, d.TenantID, func(tx DeadlineTx) error {
		if d.TriggerEvent != AnyEvent {
			_, err := LookupEvent(ctx, tx, d.TenantID, d.TriggerEvent)
			if ErrorCode(err) == ENOTFOUND {
				return FieldErrorf("trigger_event", "%q is not a trigger event (or * for all).", d.TriggerEvent)
			} else if err != nil {
				return err
			}
		}
		var err error
		if d.Minutes == 0 && d.BeforeDepartureMinutes == 0 {
			err = tx.DeleteDeliveryDeadline(ctx, d.TenantID, d.TriggerEvent, d.Channel, d.Stage)
		} else {
			d.UpdatedAt = s.Now()
			err = tx.SetDeliveryDeadline(ctx, d)
		}
		if err != nil {
			return err
		}
		detail := map[string]any{"minutes": d.Minutes, "stage": d.Stage}
		if d.BeforeDepartureMinutes > 0 {
			detail["before_departure_minutes"] = d.BeforeDepartureMinutes
		}
		return tx.InsertAudit(ctx, actor.Entry(&d.TenantID, "delivery_deadline.set", "delivery_deadline",
			d.TriggerEvent+"/"+string(d.Channel)+"/"+d.Stage, detail))
	})
}

// validDeadline checks a deadline as given, naming the field at fault.
func validDeadline(d *DeliveryDeadline) error {
	if !slices.Contains(DeadlineStages, d.Stage) {
		return FieldErrorf("stage", "%q is not a stage: DELIVERED, READ or ACKNOWLEDGED.", d.Stage)
	}
	if d.TriggerEvent == "" {
		return FieldErrorf("trigger_event", "Name the trigger event, or * for all.")
	}
	if _, ok := ParseChannel(string(d.Channel)); !ok {
		return FieldErrorf("channel", "%q is not a channel.", d.Channel)
	}
	if d.Minutes < 0 || d.Minutes > MaxDeadlineMinutes {
		return FieldErrorf("minutes", "A delivery deadline is 1 to %d minutes, or 0 for none.", MaxDeadlineMinutes)
	}
	switch b := d.BeforeDepartureMinutes; {
	case b == 0:
	case d.Minutes != 0:
		return FieldErrorf("before_departure_minutes", "Give minutes after the send or before_departure_minutes, not both.")
	case d.Stage != StageAcknowledged:
		return FieldErrorf("before_departure_minutes", "Only an ACKNOWLEDGED deadline can be counted back from the departure.")
	case b < 0 || b > MaxBeforeDepartureMinutes:
		return FieldErrorf("before_departure_minutes", "A deadline before the departure is 1 to %d minutes.", MaxBeforeDepartureMinutes)
	}
	return nil
}

// OverdueTx lists the statements FallBackOverdue runs: finding the
// messages past a deadline, continuing their chains, and putting those
// with no channel left on the call list.
type OverdueTx interface {
	FallbackTx
	MessageByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Message, error)
	InsertMessageEvent(ctx context.Context, e *MessageEvent) error
	OverdueMessages(ctx context.Context, now time.Time, safety []string, limit int) ([]OverdueMessage, error)
	// CallListMessage sets the message's call_listed_at once and reports
	// whether it did.
	CallListMessage(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (bool, error)
}

// SafetyEvents are the events whose messages always ask for
// acknowledgement, sorted.
func SafetyEvents() []string {
	out := make([]string, 0, len(safetyEvents))
	for e := range safetyEvents {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// FallBackOverdue moves every message that missed a deadline of its
// tenant (not DELIVERED, not READ or not acknowledged in time) to the next
// channel of its fallback chain, each in a transaction of its tenant that
// holds the message, and returns how many fell back; a message with no
// channel left puts its passenger on the trip's call list instead. A
// message falls back once: its fallback message's idempotency key is
// unique, and the scan skips messages a fallback names or the call list
// holds.
func (m *Maintenance) FallBackOverdue(ctx context.Context) (int, error) {
	if m.Router == nil {
		return 0, nil
	}
	var overdue []OverdueMessage
	err := m.Overdue.InPlatform(ctx, func(tx OverdueTx) (err error) {
		overdue, err = tx.OverdueMessages(ctx, m.Now(), SafetyEvents(), 500)
		return err
	})
	if err != nil {
		return 0, err
	}
	n, listed := 0, 0
	for _, o := range overdue {
		err := m.Overdue.InTenant(ctx, o.TenantID, func(tx OverdueTx) error {
			moved, called, err := m.escalate(ctx, tx, o)
			if moved {
				n++
			}
			if called {
				listed++
			}
			return err
		})
		if err != nil {
			return n, err
		}
	}
	if n > 0 || listed > 0 {
		m.Log.InfoContext(ctx, "messages that missed their deadline fell back or were put on the call list", "fell_back", n, "call_listed", listed)
	}
	return n, nil
}

// missed reports whether msg has still not reached the stage.
func missed(msg *Message, stage string) bool {
	switch stage {
	case StageDelivered:
		return msg.Status == MessageSent
	case StageRead:
		return msg.Status == MessageSent || msg.Status == MessageDelivered
	}
	return msg.AcknowledgedAt == nil && (msg.Status == MessageSent || msg.Status == MessageDelivered || msg.Status == MessageRead)
}

// escalate moves one overdue message on: its fallback queued (moved), or,
// with no channel left, its passenger on the call list (called).
func (m *Maintenance) escalate(ctx context.Context, tx OverdueTx, o OverdueMessage) (moved, called bool, err error) {
	msg, err := tx.MessageByID(ctx, o.TenantID, o.MessageID, true)
	if err != nil || !missed(msg, o.Stage) {
		return false, false, err
	}
	reason := map[string]string{StageDelivered: "not_delivered_within", StageRead: "not_read_within", StageAcknowledged: "not_acknowledged_within"}[o.Stage]
	if o.BeforeDepartureMinutes > 0 {
		reason = "not_acknowledged_before_departure"
	}
	var chain nextInChain
	if len(msg.FallbackChain) > 0 {
		if chain, err = m.Router.fallback(ctx, tx, msg); err != nil {
			return false, false, err
		}
	}
	if chain.Job == nil {
		return false, true, m.callList(ctx, tx, msg, chain, reason, o.Minutes+o.BeforeDepartureMinutes)
	}
	if err := tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: msg.TenantID, MessageID: msg.ID, Source: SourceSystem, At: m.Now(),
		Detail: chain.detail(map[string]any{"reason": reason, "minutes": o.Minutes + o.BeforeDepartureMinutes}),
	}); err != nil {
		return false, false, err
	}
	next, channel := chain.Job, chain.Channel
	if err := m.Callbacks.Notify(ctx, tx, msg.TenantID, msg.ID, CallbackMessageFallback,
		CallbackNote{FallbackMessageID: next.MessageID, FallbackChannel: channel}); err != nil {
		return false, false, err
	}
	return true, false, m.Queue.EnqueueDispatch(ctx, tx, *next)
}

// callList puts a message that missed its deadline with no channel left
// on its trip's call list, once, noting it (and any channel the chain
// skipped) on its timeline.
func (m *Maintenance) callList(ctx context.Context, tx OverdueTx, msg *Message, chain nextInChain, reason string, minutes int) error {
	ok, err := tx.CallListMessage(ctx, msg.TenantID, msg.ID, m.Now())
	if err != nil || !ok {
		return err
	}
	detail := map[string]any{"reason": reason, "minutes": minutes, "call_list": true}
	if len(chain.Skipped) > 0 {
		detail = chain.detail(detail)
	}
	return tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: msg.TenantID, MessageID: msg.ID, Source: SourceSystem, At: m.Now(), Detail: detail})
}

// OverdueMessage is a message past a deadline of its tenant.
type OverdueMessage struct {
	TenantID  uuid.UUID `db:"tenant_id"`
	MessageID uuid.UUID `db:"id"`
	Minutes   int       `db:"minutes"`
	// BeforeDepartureMinutes is the rule's, when it counts back from the
	// departure (Minutes is then 0).
	BeforeDepartureMinutes int `db:"before_departure_minutes"`
	// Stage is the deadline's: what the message did not reach in time.
	Stage string `db:"stage"`
}
