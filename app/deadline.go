package app

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// AnyEvent stands for every trigger event in a delivery deadline or a
// confirmation window.
const AnyEvent = "*"

// MaxDeadlineMinutes bounds a delivery deadline: a day, after which a SENT
// message without a receipt is marked stale instead.
const MaxDeadlineMinutes = 24 * 60

// DeliveryDeadline is a tenant's rule: a message of TriggerEvent (AnyEvent:
// every event) on Channel that is not DELIVERED Minutes after it was sent
// continues its fallback chain, as if it had failed. The original stays SENT
// (a late receipt still applies to it).
type DeliveryDeadline struct {
	TenantID     uuid.UUID `db:"tenant_id" json:"-"`
	TriggerEvent string    `db:"trigger_event" json:"trigger_event"`
	Channel      Channel   `db:"channel" json:"channel"`
	Minutes      int       `db:"minutes" json:"minutes"`
	UpdatedAt    time.Time `db:"updated_at" json:"updated_at"`
}

// DeadlineTx lists the statements Deadlines runs.
type DeadlineTx interface {
	Tx
	DeliveryDeadlines(ctx context.Context, tenantID uuid.UUID) ([]*DeliveryDeadline, error)
	SetDeliveryDeadline(ctx context.Context, d *DeliveryDeadline) error
	DeleteDeliveryDeadline(ctx context.Context, tenantID uuid.UUID, triggerEvent string, ch Channel) error
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
	if triggerEvent != AnyEvent {
		if _, ok := LookupEvent(triggerEvent); !ok {
			return FieldErrorf("trigger_event", "%q is not a trigger event (or * for all).", triggerEvent)
		}
	}
	if _, ok := ParseChannel(string(ch)); !ok {
		return FieldErrorf("channel", "%q is not a channel.", ch)
	}
	if minutes < 0 || minutes > MaxDeadlineMinutes {
		return FieldErrorf("minutes", "A delivery deadline is 1 to %d minutes, or 0 for none.", MaxDeadlineMinutes)
	}
	return s.Store.InTenant(ctx, tenantID, func(tx DeadlineTx) error {
		var err error
		if minutes == 0 {
			err = tx.DeleteDeliveryDeadline(ctx, tenantID, triggerEvent, ch)
		} else {
			err = tx.SetDeliveryDeadline(ctx, &DeliveryDeadline{TenantID: tenantID, TriggerEvent: triggerEvent, Channel: ch, Minutes: minutes, UpdatedAt: s.Now()})
		}
		if err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "delivery_deadline.set", "delivery_deadline", triggerEvent+"/"+string(ch),
			map[string]any{"minutes": minutes}))
	})
}

// OverdueTx lists the statements FallBackOverdue runs: finding the SENT
// messages past their delivery deadline and continuing their chains.
type OverdueTx interface {
	FallbackTx
	MessageByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*Message, error)
	InsertMessageEvent(ctx context.Context, e *MessageEvent) error
	OverdueMessages(ctx context.Context, now time.Time, limit int) ([]OverdueMessage, error)
}

// FallBackOverdue continues the fallback chain of every SENT message that
// missed its tenant's delivery deadline and has not fallen back yet, each in
// a transaction of its tenant that holds the message, and returns how many
// fell back. A message falls back once: its fallback message's idempotency
// key is unique, and the scan skips messages a fallback names.
func (m *Maintenance) FallBackOverdue(ctx context.Context) (int, error) {
	if m.Router == nil {
		return 0, nil
	}
	var overdue []OverdueMessage
	err := m.Overdue.InPlatform(ctx, func(tx OverdueTx) (err error) {
		overdue, err = tx.OverdueMessages(ctx, m.Now(), 500)
		return err
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range overdue {
		err := m.Overdue.InTenant(ctx, o.TenantID, func(tx OverdueTx) error {
			msg, err := tx.MessageByID(ctx, o.TenantID, o.MessageID, true)
			if err != nil || msg.Status != MessageSent {
				return err
			}
			chain, err := m.Router.fallback(ctx, tx, msg)
			if err != nil || (chain.Job == nil && len(chain.Skipped) == 0) {
				return err
			}
			if err := tx.InsertMessageEvent(ctx, &MessageEvent{TenantID: msg.TenantID, MessageID: msg.ID, Source: SourceSystem, At: m.Now(),
				Detail: chain.detail(map[string]any{"reason": "not_delivered_within", "minutes": o.Minutes}),
			}); err != nil || chain.Job == nil {
				return err
			}
			next, channel := chain.Job, chain.Channel
			if err := m.Callbacks.Notify(ctx, tx, msg.TenantID, msg.ID, CallbackMessageFallback,
				CallbackNote{FallbackMessageID: next.MessageID, FallbackChannel: channel}); err != nil {
				return err
			}
			n++
			return m.Queue.EnqueueDispatch(ctx, tx, *next)
		})
		if err != nil {
			return n, err
		}
	}
	if n > 0 {
		m.Log.InfoContext(ctx, "messages not delivered by their deadline fell back", "count", n)
	}
	return n, nil
}

// OverdueMessage is a SENT message past its delivery deadline.
type OverdueMessage struct {
	TenantID  uuid.UUID `db:"tenant_id"`
	MessageID uuid.UUID `db:"id"`
	Minutes   int       `db:"minutes"`
}
