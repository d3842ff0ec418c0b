package console

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// AuditRecord is one audit log entry as the console lists it, with the
// tenant it belongs to (none for platform entries).
type AuditRecord struct {
	ID         int64      `db:"id"`
	TenantID   *uuid.UUID `db:"tenant_id"`
	TenantSlug *string    `db:"tenant_slug"`
	TenantName *string    `db:"tenant_name"`
	ActorType  string     `db:"actor_type"`
	ActorID    *uuid.UUID `db:"actor_id"`
	ActorLabel string     `db:"actor_label"`
	Action     string     `db:"action"`
	TargetType string     `db:"target_type"`
	TargetID   string     `db:"target_id"`
	Metadata   app.JSON   `db:"metadata"`
	At         time.Time  `db:"at"`
}

// MetadataPair is one key=value of an entry's metadata.
type MetadataPair struct {
	Key   string
	Value string
}

// maxMetadataValue caps a metadata value in the list; the log keeps it whole.
const maxMetadataValue = 160

// MetadataPairs returns the entry's metadata as key=value pairs sorted by
// key: strings as they are, anything else as compact JSON. Audit metadata
// never holds secrets (services record ids, names and counts only).
func (r *AuditRecord) MetadataPairs() []MetadataPair {
	if len(r.Metadata) == 0 {
		return nil
	}
	m := map[string]any{}
	if err := json.Unmarshal(r.Metadata, &m); err != nil {
		return []MetadataPair{{Key: "metadata", Value: clipMetadata(string(r.Metadata))}}
	}
	return DescribeMetadata(m)
}

func clipMetadata(s string) string {
	if r := []rune(s); len(r) > maxMetadataValue {
		return string(r[:maxMetadataValue-1]) + "…"
	}
	return s
}

// AuditQuery selects audit entries. Exactly one scope applies: a tenant's
// own chain (Tenant set), the platform's own entries (PlatformOnly), or
// every entry (AllTenants, operators only).
type AuditQuery struct {
	TenantID     *uuid.UUID
	PlatformOnly bool
	AllTenants   bool
	// ActorContains matches the actor's label (a user's e-mail address, an
	// API key's name, an address for failed sign-ins), case-insensitively.
	ActorContains string
	// Action is an exact action, or a prefix when ActionPrefix is set.
	Action       string
	ActionPrefix bool
	// From and Until bound the time (Until exclusive); zero is open.
	From, Until time.Time
}

// AuditFilter is the audit page's filter form as typed.
type AuditFilter struct {
	Actor  string
	Action string
	From   string
	To     string
	// Tenant is a tenant's slug, "platform" for the platform's own entries,
	// or empty for all (platform page only).
	Tenant string
}

// AuditTenantPlatform is the tenant filter value for entries of no tenant.
const AuditTenantPlatform = "platform"

// AuditLogTx reads the audit log for the console.
type AuditLogTx interface {
	app.Tx
	TenantBySlug(ctx context.Context, slug string) (*app.Tenant, error)
	ListTenants(ctx context.Context) ([]*app.Tenant, error)
	// AuditRecords returns one page of entries, newest first.
	AuditRecords(ctx context.Context, q AuditQuery, page PageRequest) ([]*AuditRecord, error)
	// RecentAuditActions returns the distinct actions among the newest
	// entries of a tenant (nil: of every chain), for the filter's choices.
	RecentAuditActions(ctx context.Context, tenantID *uuid.UUID) ([]string, error)
}

// AuditActions lists the actions Herald records, for the audit filter;
// actions seen in the log are added to it, so a new action is never missing.
var AuditActions = []string{
	"api_key.create", "api_key.revoke",
	"channel_account.breaker", "channel_account.create", "channel_account.status",
	"message.resend",
	"notification.approve", "notification.cancel", "notification.redacted", "notification.reject", "notification.reschedule",
	"platform.two_factor_requirement",
	"session.login", "session.login_failed", "session.login_throttled", "session.logout",
	"template.update",
	"tenant.create", "tenant.two_factor_requirement",
	"user.create", "user.password_change",
	"user.two_factor_disable", "user.two_factor_enrol", "user.two_factor_recovery_used", "user.two_factor_reset",
}

var actionPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*(\.\*)?$`)

// ChainReport is the result of verifying the audit log's hash chains.
type ChainReport struct {
	Breaks     []app.AuditBreak
	VerifiedAt time.Time
}

// Intact reports whether every chain verified.
func (r *ChainReport) Intact() bool { return len(r.Breaks) == 0 }

// AuditLog serves the console's audit pages: a tenant's own log, and the
// platform's view of every chain with its verification.
type AuditLog struct {
	Store app.Store[AuditLogTx]
	Audit *app.Audit
	Now   app.Clock
}

// parse turns the typed filter into a query. Dates are whole days in loc;
// the end date is included.
func (f AuditFilter) parse(loc *time.Location) (AuditQuery, error) {
	var q AuditQuery
	q.ActorContains = strings.TrimSpace(f.Actor)
	if len([]rune(q.ActorContains)) > 200 {
		return q, app.FieldErrorf("actor", "The actor filter can be at most 200 characters.")
	}
	action := strings.ToLower(strings.TrimSpace(f.Action))
	if action != "" {
		if !actionPattern.MatchString(action) || len(action) > 100 {
			return q, app.FieldErrorf("action", "%q is not an action; choose one from the list (names such as notification.cancel, or notification.* for all of a kind).", f.Action)
		}
		if p, ok := strings.CutSuffix(action, ".*"); ok {
			q.Action, q.ActionPrefix = p+".", true
		} else {
			q.Action = action
		}
	}
	day := func(field, label, v string) (time.Time, error) {
		v = strings.TrimSpace(v)
		if v == "" {
			return time.Time{}, nil
		}
		t, err := time.ParseInLocation("2006-01-02", v, loc)
		if err != nil {
			return time.Time{}, app.FieldErrorf(field, "%s %q is not a date such as 2027-04-12.", label, v)
		}
		return t, nil
	}
	var err error
	if q.From, err = day("from", "From", f.From); err != nil {
		return q, err
	}
	var to time.Time
	if to, err = day("to", "To", f.To); err != nil {
		return q, err
	}
	if !to.IsZero() {
		// The whole end day counts: entries before the next midnight.
		q.Until = time.Date(to.Year(), to.Month(), to.Day()+1, 0, 0, 0, 0, loc)
	}
	if !q.From.IsZero() && !to.IsZero() && to.Before(q.From) {
		return q, app.FieldErrorf("to", "The end date %s is before the start date %s.", f.To, f.From)
	}
	return q, nil
}

// TenantEntries returns one page of a tenant's own audit log, newest first,
// with dates read in the tenant's timezone.
func (a *AuditLog) TenantEntries(ctx context.Context, u *app.User, tenantID uuid.UUID, f AuditFilter, loc *time.Location, page PageRequest) ([]*AuditRecord, bool, error) {
	if err := app.RequirePermission(u, app.PermAudit); err != nil {
		return nil, false, err
	}
	q, err := f.parse(loc)
	if err != nil {
		return nil, false, err
	}
	q.TenantID = &tenantID
	var rows []*AuditRecord
	err = a.Store.InTenant(ctx, tenantID, func(tx AuditLogTx) (err error) {
		rows, err = tx.AuditRecords(ctx, q, page)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	rows, more := Page(rows, page)
	return rows, more, nil
}

// PlatformEntries returns one page of every chain (or one tenant's, or the
// platform's own), newest first, with dates read in UTC.
func (a *AuditLog) PlatformEntries(ctx context.Context, u *app.User, f AuditFilter, page PageRequest) ([]*AuditRecord, bool, error) {
	if err := app.RequirePermission(u, app.PermPlatform); err != nil {
		return nil, false, err
	}
	q, err := f.parse(time.UTC)
	if err != nil {
		return nil, false, err
	}
	var rows []*AuditRecord
	err = a.Store.InPlatform(ctx, func(tx AuditLogTx) error {
		switch slug := strings.ToLower(strings.TrimSpace(f.Tenant)); slug {
		case "":
			q.AllTenants = true
		case AuditTenantPlatform:
			q.PlatformOnly = true
		default:
			t, err := tx.TenantBySlug(ctx, slug)
			if app.ErrorCode(err) == app.ENOTFOUND || app.ErrorCode(err) == app.EINVALID {
				return app.FieldErrorf("tenant", "There is no tenant %q.", f.Tenant)
			} else if err != nil {
				return err
			}
			q.TenantID = &t.ID
		}
		rows, err = tx.AuditRecords(ctx, q, page)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	rows, more := Page(rows, page)
	return rows, more, nil
}

// Actions returns the actions to offer in a tenant's filter (nil tenant:
// the platform's), sorted.
func (a *AuditLog) Actions(ctx context.Context, tenantID *uuid.UUID) ([]string, error) {
	var seen []string
	run := func(tx AuditLogTx) (err error) {
		seen, err = tx.RecentAuditActions(ctx, tenantID)
		return err
	}
	var err error
	if tenantID != nil {
		err = a.Store.InTenant(ctx, *tenantID, run)
	} else {
		err = a.Store.InPlatform(ctx, run)
	}
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, s := range append(append([]string{}, AuditActions...), seen...) {
		set[s] = true
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out, nil
}

// Tenants returns every tenant, for the platform page's tenant filter.
func (a *AuditLog) Tenants(ctx context.Context, u *app.User) ([]*app.Tenant, error) {
	if err := app.RequirePermission(u, app.PermPlatform); err != nil {
		return nil, err
	}
	var ts []*app.Tenant
	err := a.Store.InPlatform(ctx, func(tx AuditLogTx) (err error) {
		ts, err = tx.ListTenants(ctx)
		return err
	})
	return ts, err
}

// Verify checks every hash chain of the audit log (operators only).
func (a *AuditLog) Verify(ctx context.Context, u *app.User) (*ChainReport, error) {
	if err := app.RequirePermission(u, app.PermPlatform); err != nil {
		return nil, err
	}
	breaks, err := a.Audit.Verify(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify audit log: %w", err)
	}
	return &ChainReport{Breaks: breaks, VerifiedAt: a.Now()}, nil
}
