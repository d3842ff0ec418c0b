package app

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// MaxConfirmWindowSeconds bounds a confirmation window: a day. A message
// waiting longer for a provider's confirmation would outlive what the
// passenger needed it for.
const MaxConfirmWindowSeconds = 24 * 60 * 60

// ConfirmationWindow is a tenant's own confirmation window for
// TriggerEvent (AnyEvent: every event without a window of its own): how
// long a message whose send got no answer waits for the provider's
// confirmation before the registry decides (urgent events are sent again,
// others fail with ReasonOutcomeUnknown). Zero decides at once. Without
// one the dispatcher waits DefaultConfirmWindow, DefaultUrgentConfirmWindow
// for urgent events; an AnyEvent window applies to urgent events too.
type ConfirmationWindow struct {
	TenantID     uuid.UUID `db:"tenant_id" json:"-"`
	TriggerEvent string    `db:"trigger_event" json:"trigger_event"`
	Seconds      int       `db:"seconds" json:"seconds"`
	UpdatedAt    time.Time `db:"updated_at" json:"updated_at"`
}

// ConfirmWindowTx lists the statements ConfirmWindows runs.
type ConfirmWindowTx interface {
	// EventReader resolves the tenant's events (LookupEvent).
	EventReader
	Tx
	ConfirmationWindows(ctx context.Context, tenantID uuid.UUID) ([]*ConfirmationWindow, error)
	SetConfirmationWindow(ctx context.Context, w *ConfirmationWindow) error
	// DeleteConfirmationWindow returns the seconds of the window it
	// deleted, and false when the tenant had none for the event.
	DeleteConfirmationWindow(ctx context.Context, tenantID uuid.UUID, triggerEvent string) (seconds int, removed bool, err error)
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// ConfirmWindows manages tenants' confirmation windows (default: none, so
// the dispatcher's defaults apply).
type ConfirmWindows struct {
	Store Store[ConfirmWindowTx]
	Now   Clock
}

// List returns the tenant's confirmation windows, by event ("*" first).
func (s *ConfirmWindows) List(ctx context.Context, tenantID uuid.UUID) ([]*ConfirmationWindow, error) {
	var ws []*ConfirmationWindow
	err := s.Store.InTenant(ctx, tenantID, func(tx ConfirmWindowTx) (err error) {
		ws, err = tx.ConfirmationWindows(ctx, tenantID)
		return err
	})
	return ws, err
}

// Set gives messages of the event (or AnyEvent) a confirmation window of
// seconds, 0 (decide at once) to MaxConfirmWindowSeconds. Unlike a
// delivery deadline, 0 is a window, not its removal: Remove removes. The
// change is audited.
func (s *ConfirmWindows) Set(ctx context.Context, actor Actor, tenantID uuid.UUID, triggerEvent string, seconds int) error {
	if seconds < 0 || seconds > MaxConfirmWindowSeconds {
		return FieldErrorf("seconds", "A confirmation window is 0 to %d seconds (24 hours); 0 decides at once.", MaxConfirmWindowSeconds)
	}
	return s.Store.InTenant(ctx, tenantID, func(tx ConfirmWindowTx) error {
		if err := checkWindowEvent(ctx, tx, tenantID, triggerEvent); err != nil {
			return err
		}
		err := tx.SetConfirmationWindow(ctx, &ConfirmationWindow{TenantID: tenantID, TriggerEvent: triggerEvent, Seconds: seconds, UpdatedAt: s.Now()})
		if err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "confirmation_window.set", "confirmation_window", triggerEvent,
			map[string]any{"seconds": seconds}))
	})
}

// Remove takes away the tenant's window for the event (or AnyEvent), so
// that the next one (the AnyEvent window, then the default) applies.
// Removing a window the tenant does not have changes nothing and is not
// audited: a repeated request is no new decision.
func (s *ConfirmWindows) Remove(ctx context.Context, actor Actor, tenantID uuid.UUID, triggerEvent string) error {
	return s.Store.InTenant(ctx, tenantID, func(tx ConfirmWindowTx) error {
		if err := checkWindowEvent(ctx, tx, tenantID, triggerEvent); err != nil {
			return err
		}
		seconds, removed, err := tx.DeleteConfirmationWindow(ctx, tenantID, triggerEvent)
		if err != nil || !removed {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "confirmation_window.remove", "confirmation_window", triggerEvent,
			map[string]any{"seconds": seconds}))
	})
}

// checkWindowEvent accepts an event of the registry or AnyEvent.
func checkWindowEvent(ctx context.Context, tx EventReader, tenantID uuid.UUID, triggerEvent string) error {
	switch triggerEvent {
	case AnyEvent:
		return nil
	case "":
		return FieldErrorf("trigger_event", "Name the trigger event, or * for every event.")
	}
	_, err := LookupEvent(ctx, tx, tenantID, triggerEvent)
	if ErrorCode(err) == ENOTFOUND {
		return FieldErrorf("trigger_event", "%q is not a trigger event (or * for every event).", triggerEvent)
	}
	return err
}
