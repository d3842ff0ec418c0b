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
	// BeforeDeparture is an ACKNOWLEDGED deadline's minutes before the
	// departure, typed instead of Minutes.
	BeforeDeparture string
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
	minutes, err := formMinutes("minutes", f.Minutes, "Enter whole minutes, from 1 to %d (0 or empty removes the deadline).", app.MaxDeadlineMinutes)
	if err != nil {
		return err
	}
	before, err := formMinutes("before_departure", f.BeforeDeparture, "Enter whole minutes before the departure, from 1 to %d.", app.MaxBeforeDepartureMinutes)
	if err != nil {
		return err
	}
	if minutes != 0 && before != 0 {
		return app.FieldErrorf("before_departure", "Fill in minutes after the send or minutes before the departure, not both.")
	}
	err = s.SetRule(ctx, u.Actor(), &app.DeliveryDeadline{TenantID: tenantID, TriggerEvent: event, Channel: ch, Stage: stage,
		Minutes: minutes, BeforeDepartureMinutes: before})
	if app.ErrorField(err) == "before_departure_minutes" {
		return app.FieldErrorf("before_departure", "%s", app.ErrorMessage(err))
	}
	return err
}

// formMinutes reads a form's whole minutes; empty is 0.
func formMinutes(field, typed, message string, most int) (int, error) {
	m := strings.TrimSpace(typed)
	if m == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(m)
	if err != nil {
		return 0, app.FieldErrorf(field, message, most)
	}
	return n, nil
}
