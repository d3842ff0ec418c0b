package console

import (
	"context"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// ConfirmWindows is the console's side of confirmation windows: a tenant's
// managers list and change them on the settings page.
type ConfirmWindows struct {
	*app.ConfirmWindows
}

// ConfirmWindowForm is one confirmation window as typed: the trigger event
// (or app.AnyEvent) and the seconds, or Remove for a row's remove button.
// Empty seconds are an error, not a removal: 0 is a window (decide at
// once).
type ConfirmWindowForm struct {
	TriggerEvent string
	Seconds      string
	Remove       bool
}

// Windows returns the tenant's confirmation windows for a user who may
// change the tenant's settings.
func (s *ConfirmWindows) Windows(ctx context.Context, u *app.User, tenantID uuid.UUID) ([]*app.ConfirmationWindow, error) {
	if err := requireTenantAccess(u, app.PermSettings, tenantID); err != nil {
		return nil, err
	}
	return s.List(ctx, tenantID)
}

// Change sets or removes one confirmation window on behalf of a console
// user; bad input is a field error and changes nothing.
func (s *ConfirmWindows) Change(ctx context.Context, u *app.User, tenantID uuid.UUID, f ConfirmWindowForm) error {
	if err := requireTenantAccess(u, app.PermSettings, tenantID); err != nil {
		return err
	}
	event := strings.TrimSpace(f.TriggerEvent)
	if event == "" {
		return app.FieldErrorf("trigger_event", "Choose the event, or every event.")
	}
	if f.Remove {
		return s.Remove(ctx, u.Actor(), tenantID, event)
	}
	seconds, err := strconv.Atoi(strings.TrimSpace(f.Seconds))
	if err != nil {
		return app.FieldErrorf("seconds", "Enter whole seconds, from 0 (decide at once) to %d (24 hours).", app.MaxConfirmWindowSeconds)
	}
	return s.Set(ctx, u.Actor(), tenantID, event, seconds)
}
