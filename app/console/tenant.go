package console

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// MaxSuspendReason is the longest suspension reason Herald stores.
const MaxSuspendReason = 500

// Tenants is the console's tenant administration: the operators' list,
// plans, suspension, and each tenant's own settings.
type Tenants struct {
	*app.Tenants
	Store app.Store[TenantTx]
	// APIKeys forgets a suspended tenant's keys at once in this process.
	APIKeys *app.APIKeys
}

// TenantSummary is one row of the operators' tenant list.
type TenantSummary struct {
	app.Tenant
	// Users counts the tenant's console users who are not disabled.
	Users int `db:"users"`
	// MessagesThisMonth counts the messages sent this calendar month (UTC),
	// as the plan quotas count them.
	MessagesThisMonth int `db:"messages_this_month"`
}

// TenantTx reads and changes tenants for the console.
type TenantTx interface {
	app.Tx
	InsertAudit(ctx context.Context, e *app.AuditEntry) error
	// ListTenantSummaries returns tenants whose name or slug contains
	// search, newest first, with their user and monthly message counts.
	ListTenantSummaries(ctx context.Context, search string, month time.Time, page PageRequest) ([]*TenantSummary, error)
	// LockTenant reads the tenant and locks its row until the transaction ends.
	LockTenant(ctx context.Context, id uuid.UUID) (*app.Tenant, error)
	// UpdateTenant stores plan, locale, timezone, retention, status and
	// suspension of t.
	UpdateTenant(ctx context.Context, t *app.Tenant) error
}

// ParseRetention reads a retention period typed into a form: empty means
// the default, anything else must be a whole number of days within bounds.
func ParseRetention(s string) (*int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, app.FieldErrorf("retention", "Retention must be a whole number of days, such as %d.", app.DefaultRetentionDays)
	}
	return &n, app.ValidateRetention(&n)
}

// requireTenantAccess checks that u holds perm and may act in the tenant:
// operators in any tenant, everyone else only in their own (another
// tenant answers ENOTFOUND, as if it did not exist).
func requireTenantAccess(u app.Principal, perm app.Permission, tenantID uuid.UUID) error {
	if err := app.RequirePermission(u, perm); err != nil {
		return err
	}
	if !u.CanOpenTenant(tenantID) {
		return app.Errorf(app.ENOTFOUND, "Tenant not found.")
	}
	return nil
}

// List returns one page of tenants for an operator, newest first, and
// whether more follow. search matches names and slugs.
func (s *Tenants) List(ctx context.Context, u *app.User, search string, page PageRequest) ([]*TenantSummary, bool, error) {
	if err := app.RequirePermission(u, app.PermPlatform); err != nil {
		return nil, false, err
	}
	var rows []*TenantSummary
	err := s.Store.InPlatform(ctx, func(tx TenantTx) (err error) {
		rows, err = tx.ListTenantSummaries(ctx, strings.TrimSpace(search), monthStart(s.Now()), page)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	rows, more := Page(rows, page)
	return rows, more, nil
}

// CreateAs creates and provisions a tenant on behalf of an operator, as
// `herald admin create-tenant` does.
func (s *Tenants) CreateAs(ctx context.Context, u *app.User, in app.TenantInput) (*app.Tenant, error) {
	if err := app.RequirePermission(u, app.PermPlatform); err != nil {
		return nil, err
	}
	return s.Create(ctx, u.Actor(), in)
}

// Get returns the tenant for an operator's tenant page.
func (s *Tenants) Get(ctx context.Context, u *app.User, id uuid.UUID) (*app.Tenant, error) {
	if err := app.RequirePermission(u, app.PermPlatform); err != nil {
		return nil, err
	}
	return s.ByID(ctx, id)
}

// TenantChanges lists what an update changed, field by field, as the audit
// log records it: {"plan": {"from": "FREE", "to": "PRO"}}.
type TenantChanges map[string]map[string]any

func (c TenantChanges) note(field string, from, to any) {
	c[field] = map[string]any{"from": from, "to": to}
}

// update locks the tenant, lets change edit it, and stores it with an audit
// entry of action when anything changed.
func (s *Tenants) update(ctx context.Context, actor app.Actor, id uuid.UUID, action string, change func(t *app.Tenant, c TenantChanges) error) (*app.Tenant, TenantChanges, error) {
	var t *app.Tenant
	changes := TenantChanges{}
	err := s.Store.InTenant(ctx, id, func(tx TenantTx) (err error) {
		if t, err = tx.LockTenant(ctx, id); err != nil {
			return err
		}
		if err := change(t, changes); err != nil {
			return err
		}
		if len(changes) == 0 {
			return nil
		}
		t.UpdatedAt = s.Now()
		if err := tx.UpdateTenant(ctx, t); err != nil {
			return err
		}
		meta := map[string]any{}
		for k, v := range changes {
			meta[k] = v
		}
		return tx.InsertAudit(ctx, actor.Entry(&t.ID, action, "tenant", t.ID.String(), meta))
	})
	if err != nil {
		return nil, nil, err
	}
	return t, changes, nil
}

func retentionValue(days *int) any {
	if days == nil {
		return nil
	}
	return *days
}

func sameRetention(a, b *int) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// ChangePlan sets the tenant's plan and retention (operators). An empty
// retention means the default.
func (s *Tenants) ChangePlan(ctx context.Context, u *app.User, id uuid.UUID, plan, retention string) (*app.Tenant, TenantChanges, error) {
	if err := app.RequirePermission(u, app.PermPlatform); err != nil {
		return nil, nil, err
	}
	plan = strings.ToUpper(strings.TrimSpace(plan))
	days, retErr := ParseRetention(retention)
	return s.update(ctx, u.Actor(), id, "tenant.update", func(t *app.Tenant, c TenantChanges) error {
		// Validated inside the transaction so that an unknown tenant is
		// ENOTFOUND whatever the form holds.
		if err := app.ValidatePlan(plan); err != nil {
			return err
		}
		if retErr != nil {
			return retErr
		}
		if plan != t.Plan {
			c.note("plan", t.Plan, plan)
			t.Plan = plan
		}
		if !sameRetention(days, t.RetentionDays) {
			c.note("retention_days", retentionValue(t.RetentionDays), retentionValue(days))
			t.RetentionDays = days
		}
		return nil
	})
}

// Suspend stops the tenant (operators): the API refuses its keys from now
// on and its console users see why. The reason is required.
func (s *Tenants) Suspend(ctx context.Context, u *app.User, id uuid.UUID, reason string) (*app.Tenant, error) {
	if err := app.RequirePermission(u, app.PermPlatform); err != nil {
		return nil, err
	}
	reason = strings.TrimSpace(reason)
	t, _, err := s.update(ctx, u.Actor(), id, "tenant.suspend", func(t *app.Tenant, c TenantChanges) error {
		switch {
		case t.Status == app.TenantSuspended:
			return app.Errorf(app.ECONFLICT, "%s is suspended already.", t.Name)
		case reason == "":
			return app.FieldErrorf("reason", "Say why the tenant is suspended; its users see the reason.")
		case len(reason) > MaxSuspendReason:
			return app.FieldErrorf("reason", "The reason must be at most %d characters.", MaxSuspendReason)
		}
		now := s.Now()
		c.note("status", t.Status, app.TenantSuspended)
		c["reason"] = map[string]any{"to": reason}
		t.Status, t.SuspendedAt, t.SuspendedReason = app.TenantSuspended, &now, reason
		return nil
	})
	if err == nil && s.APIKeys != nil {
		// This process refuses the keys at once; others within the key
		// cache's few seconds.
		s.APIKeys.ForgetTenant(t.ID)
	}
	return t, err
}

// Reactivate lifts a suspension (operators).
func (s *Tenants) Reactivate(ctx context.Context, u *app.User, id uuid.UUID) (*app.Tenant, error) {
	if err := app.RequirePermission(u, app.PermPlatform); err != nil {
		return nil, err
	}
	t, _, err := s.update(ctx, u.Actor(), id, "tenant.reactivate", func(t *app.Tenant, c TenantChanges) error {
		if t.Status != app.TenantSuspended {
			return app.Errorf(app.ECONFLICT, "%s is not suspended.", t.Name)
		}
		c.note("status", t.Status, app.TenantActive)
		c["reason"] = map[string]any{"from": t.SuspendedReason}
		t.Status, t.SuspendedAt, t.SuspendedReason = app.TenantActive, nil, ""
		return nil
	})
	return t, err
}

// TenantSettings is what a tenant's managers may change about it.
type TenantSettings struct {
	DefaultLocale string
	Timezone      string
	// Retention is the number of days as typed; empty means the default.
	Retention string
	// QuietStart and QuietEnd are the quiet hours as typed ("21:00");
	// both empty keep the tenant's.
	QuietStart, QuietEnd string
}

// UpdateSettings changes the tenant's default locale, timezone and
// retention (managers of the tenant, operators).
func (s *Tenants) UpdateSettings(ctx context.Context, u *app.User, id uuid.UUID, in TenantSettings) (*app.Tenant, TenantChanges, error) {
	if err := requireTenantAccess(u, app.PermSettings, id); err != nil {
		return nil, nil, err
	}
	locale, err := app.NormalizeLocale(strings.TrimSpace(in.DefaultLocale))
	if err != nil {
		return nil, nil, app.FieldErrorf("locale", "%s", err.Error())
	}
	tz := strings.TrimSpace(in.Timezone)
	if err := app.ValidateTimezone(tz); err != nil {
		return nil, nil, err
	}
	days, err := ParseRetention(in.Retention)
	if err != nil {
		return nil, nil, err
	}
	var quiet *app.QuietHours
	if in.QuietStart != "" || in.QuietEnd != "" {
		q, err := app.ParseQuietHours(in.QuietStart, in.QuietEnd)
		if err != nil {
			return nil, nil, err
		}
		quiet = &q
	}
	return s.update(ctx, u.Actor(), id, "tenant.settings", func(t *app.Tenant, c TenantChanges) error {
		if quiet != nil {
			noteQuietHours(t, c, *quiet)
		}
		if locale != t.DefaultLocale {
			c.note("default_locale", t.DefaultLocale, locale)
			t.DefaultLocale = locale
		}
		if tz != t.Timezone {
			c.note("timezone", t.Timezone, tz)
			t.Timezone = tz
		}
		if !sameRetention(days, t.RetentionDays) {
			c.note("retention_days", retentionValue(t.RetentionDays), retentionValue(days))
			t.RetentionDays = days
		}
		return nil
	})
}

// monthStart is the first instant of t's month in UTC, the month usage is
// counted in.
func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// SetQuietHours changes the tenant's quiet hours alone: the API's tenant
// settings, for a key with the manage scope (actor).
func (s *Tenants) SetQuietHours(ctx context.Context, actor app.Actor, id uuid.UUID, q app.QuietHours) (*app.Tenant, TenantChanges, error) {
	return s.update(ctx, actor, id, "tenant.settings", func(t *app.Tenant, c TenantChanges) error {
		noteQuietHours(t, c, q)
		return nil
	})
}

// noteQuietHours sets the tenant's quiet hours to q, noting a change.
func noteQuietHours(t *app.Tenant, c TenantChanges, q app.QuietHours) {
	if q != t.QuietHours() {
		c.note("quiet_hours", t.QuietHours().String(), q.String())
		t.QuietStart, t.QuietEnd = q.Start, q.End
	}
}
