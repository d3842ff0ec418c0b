package console

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// Deadlines is the console's side of delivery deadlines: a tenant's managers
// list and change them on the settings page.
type Deadlines struct {
	*app.Deadlines
}

// DeadlineForm is one delivery deadline as typed: the trigger event (or
// app.AnyEvent), the channel, the stage the message must reach
// (app.StageDelivered when empty) and the minutes (empty or 0 removes it).
type DeadlineForm struct {
	TriggerEvent string
	Channel      string
	Stage        string
	Minutes      string
}

// Rules returns the tenant's delivery deadlines for a user who may change
// the tenant's settings.
func (s *Deadlines) Rules(ctx context.Context, u *app.User, tenantID uuid.UUID) ([]*app.DeliveryDeadline, error) {
	if err := requireTenantAccess(u, app.PermSettings, tenantID); err != nil {
		return nil, err
	}
	return s.List(ctx, tenantID)
}

// Change sets or removes one delivery deadline on behalf of a console user;
// bad input is a field error and changes nothing.
func (s *Deadlines) Change(ctx context.Context, u *app.User, tenantID uuid.UUID, f DeadlineForm) error {
	if err := requireTenantAccess(u, app.PermSettings, tenantID); err != nil {
		return err
	}
	event := strings.TrimSpace(f.TriggerEvent)
	if event == "" {
		return app.FieldErrorf("trigger_event", "Choose the event, or every event.")
	}
	ch, ok := app.ParseChannel(strings.TrimSpace(f.Channel))
	if !ok {
		return app.FieldErrorf("channel", "Choose the channel.")
	}
	stage := strings.TrimSpace(f.Stage)
	if stage != "" && !slices.Contains(app.DeadlineStages, stage) {
		return app.FieldErrorf("stage", "Choose the stage: delivered, read or acknowledged.")
	}
	minutes := 0
	if m := strings.TrimSpace(f.Minutes); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil {
			return app.FieldErrorf("minutes", "Enter whole minutes, from 1 to %d (0 or empty removes the deadline).", app.MaxDeadlineMinutes)
		}
		minutes = n
	}
	return s.SetStage(ctx, u.Actor(), tenantID, event, ch, stage, minutes)
}
