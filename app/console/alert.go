package console

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// RecentAlertCount is how many of its last alerts the settings page shows.
const RecentAlertCount = 20

// Alerts serves the tenant's staff-alert settings on the console.
type Alerts struct {
	*app.Alerts
}

// AlertPage is the alert settings page: the settings (the webhook URLs
// only as hosts) and the last alerts raised.
type AlertPage struct {
	Settings *app.AlertSettings
	Recent   []*app.StaffAlert
	Timezone string
}

// Page returns the tenant's alert settings and last alerts for a user who
// may change its settings.
func (s *Alerts) Page(ctx context.Context, u *app.User, t *app.Tenant) (*AlertPage, error) {
	if err := requireTenantAccess(u, app.PermSettings, t.ID); err != nil {
		return nil, err
	}
	set, err := s.Settings(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	recent, err := s.Recent(ctx, t.ID, RecentAlertCount)
	if err != nil {
		return nil, err
	}
	return &AlertPage{Settings: set, Recent: recent, Timezone: t.Timezone}, nil
}

// Change saves the tenant's alert settings on behalf of a console user;
// bad input is a field error and changes nothing.
func (s *Alerts) Change(ctx context.Context, u *app.User, tenantID uuid.UUID, in app.AlertSettingsInput) (*app.AlertSettings, error) {
	if err := requireTenantAccess(u, app.PermSettings, tenantID); err != nil {
		return nil, err
	}
	return s.Save(ctx, u.Actor(), tenantID, in)
}
