package app

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/text/language"
)

// Plans a tenant can be on. Quotas per plan are in the pipeline's quota rules.
const (
	PlanFree       = "FREE"
	PlanPro        = "PRO"
	PlanEnterprise = "ENTERPRISE"
)

// Tenant statuses.
const (
	TenantActive    = "ACTIVE"
	TenantSuspended = "SUSPENDED"
)

// DefaultRetentionDays applies to tenants whose RetentionDays is unset.
const DefaultRetentionDays = 90

// Tenant is one customer of Herald: a booking business with its own users,
// API keys, channel accounts, templates and messages.
type Tenant struct {
	ID            uuid.UUID `db:"id"`
	Slug          string    `db:"slug"`
	Name          string    `db:"name"`
	Plan          string    `db:"plan"`
	DefaultLocale string    `db:"default_locale"`
	Timezone      string    `db:"timezone"`
	RetentionDays *int      `db:"retention_days"`
	// QuietStart and QuietEnd are the tenant's quiet hours (see
	// QuietHours), minutes after local midnight.
	QuietStart int    `db:"quiet_hours_start"`
	QuietEnd   int    `db:"quiet_hours_end"`
	Status     string `db:"status"`
	// SuspendedAt and SuspendedReason say when and why an operator
	// suspended the tenant; both are empty while it is active.
	SuspendedAt     *time.Time `db:"suspended_at"`
	SuspendedReason string     `db:"suspended_reason"`
	CreatedAt       time.Time  `db:"created_at"`
	UpdatedAt       time.Time  `db:"updated_at"`
}

// Retention returns the number of days the tenant's finished messages are kept.
func (t *Tenant) Retention() int {
	if t.RetentionDays == nil {
		return DefaultRetentionDays
	}
	return *t.RetentionDays
}

// TenantInput is what creating a tenant takes. Empty optional fields get
// defaults: plan FREE, locale de-DE, timezone Europe/Berlin, retention
// DefaultRetentionDays.
type TenantInput struct {
	Slug          string
	Name          string
	Plan          string
	DefaultLocale string
	Timezone      string
	// RetentionDays, when set, must lie within MinRetentionDays and
	// MaxRetentionDays.
	RetentionDays *int
}

var slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$`)

// reservedSlugs would collide with console paths or read as platform names.
var reservedSlugs = map[string]bool{"admin": true, "api": true, "platform": true, "static": true, "login": true, "logout": true, "webhooks": true}

// Normalize applies defaults and validates the input. The error names the
// first field at fault.
func (in *TenantInput) Normalize() error {
	in.Slug = strings.ToLower(strings.TrimSpace(in.Slug))
	in.Name = strings.TrimSpace(in.Name)
	in.Plan = strings.ToUpper(strings.TrimSpace(in.Plan))
	in.DefaultLocale = strings.TrimSpace(in.DefaultLocale)
	in.Timezone = strings.TrimSpace(in.Timezone)
	if in.Plan == "" {
		in.Plan = PlanFree
	}
	if in.DefaultLocale == "" {
		in.DefaultLocale = "de-DE"
	}
	if in.Timezone == "" {
		in.Timezone = "Europe/Berlin"
	}

	switch {
	case in.Slug == "":
		return FieldErrorf("slug", "Slug is required.")
	case !slugPattern.MatchString(in.Slug):
		return FieldErrorf("slug", "Slug %q must be 1 to 40 lowercase letters, digits or hyphens, starting and ending with a letter or digit.", in.Slug)
	case reservedSlugs[in.Slug]:
		return FieldErrorf("slug", "Slug %q is reserved.", in.Slug)
	case in.Name == "":
		return FieldErrorf("name", "Name is required.")
	case len(in.Name) > 200:
		return FieldErrorf("name", "Name must be at most 200 characters.")
	}
	if err := ValidatePlan(in.Plan); err != nil {
		return err
	}
	locale, err := NormalizeLocale(in.DefaultLocale)
	if err != nil {
		return FieldErrorf("locale", "%s", err.Error())
	}
	in.DefaultLocale = locale
	if err := ValidateTimezone(in.Timezone); err != nil {
		return err
	}
	return ValidateRetention(in.RetentionDays)
}

// ValidatePlan checks that plan is one of FREE, PRO, ENTERPRISE.
func ValidatePlan(plan string) error {
	switch plan {
	case PlanFree, PlanPro, PlanEnterprise:
		return nil
	}
	return FieldErrorf("plan", "Plan %q is not one of FREE, PRO, ENTERPRISE.", plan)
}

// ValidateTimezone checks that tz is an IANA time zone name.
func ValidateTimezone(tz string) error {
	if tz == "" || tz == "Local" {
		return FieldErrorf("timezone", "Time zone is required (an IANA name such as Europe/Berlin).")
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return FieldErrorf("timezone", "Time zone %q is not a known IANA name such as Europe/Berlin.", tz)
	}
	return nil
}

// NormalizeLocale parses a BCP 47 language tag and returns its canonical form
// (de-de becomes de-DE).
func NormalizeLocale(s string) (string, error) {
	tag, err := language.Parse(s)
	if err != nil || s == "" {
		return "", fmt.Errorf("Locale %q is not a valid language tag such as de-DE or en.", s)
	}
	return tag.String(), nil
}

// TenantTx lists the statements Tenants runs.
type TenantTx interface {
	ProvisionTx
	CreateTenant(ctx context.Context, t *Tenant) error
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
	TenantBySlug(ctx context.Context, slug string) (*Tenant, error)
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// Tenants creates and looks up tenants.
type Tenants struct {
	Store Store[TenantTx]
	Now   Clock
	// Provision, when set, runs inside the creating transaction so that a
	// tenant never exists without its defaults.
	Provision func(ctx context.Context, tx ProvisionTx, t *Tenant) error
	// QuietHours are the quiet hours a new tenant starts with
	// (Config.QuietHours); the zero value is none.
	QuietHours QuietHours
}

// Create validates in, stores the tenant and writes an audit entry, in one
// transaction. A taken slug is ECONFLICT.
func (s *Tenants) Create(ctx context.Context, actor Actor, in TenantInput) (*Tenant, error) {
	if err := in.Normalize(); err != nil {
		return nil, err
	}
	now := s.Now()
	t := &Tenant{
		ID:            uuid.New(),
		Slug:          in.Slug,
		Name:          in.Name,
		Plan:          in.Plan,
		DefaultLocale: in.DefaultLocale,
		Timezone:      in.Timezone,
		RetentionDays: in.RetentionDays,
		QuietStart:    s.QuietHours.Start,
		QuietEnd:      s.QuietHours.End,
		Status:        TenantActive,
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	err := s.Store.InPlatform(ctx, func(tx TenantTx) error {
		if err := tx.CreateTenant(ctx, t); err != nil {
			return err
		}
		if s.Provision != nil {
			if err := s.Provision(ctx, tx, t); err != nil {
				return fmt.Errorf("provision tenant %s: %w", t.Slug, err)
			}
		}
		return tx.InsertAudit(ctx, actor.Entry(&t.ID, "tenant.create", "tenant", t.ID.String(), map[string]any{
			"slug": t.Slug, "plan": t.Plan,
		}))
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// BySlug returns the tenant with the given slug, or ENOTFOUND.
func (s *Tenants) BySlug(ctx context.Context, slug string) (*Tenant, error) {
	var t *Tenant
	err := s.Store.InPlatform(ctx, func(tx TenantTx) (err error) {
		t, err = tx.TenantBySlug(ctx, strings.ToLower(strings.TrimSpace(slug)))
		return err
	})
	return t, err
}

// ByID returns the tenant, read in its own scope.
func (s *Tenants) ByID(ctx context.Context, id uuid.UUID) (*Tenant, error) {
	var t *Tenant
	err := s.Store.InTenant(ctx, id, func(tx TenantTx) (err error) {
		t, err = tx.TenantByID(ctx, id)
		return err
	})
	return t, err
}

// Retention bounds: a tenant keeps its finished messages at least a day and
// at most ten years. Unset means DefaultRetentionDays.
const (
	MinRetentionDays = 1
	MaxRetentionDays = 3650
)

// ValidateRetention checks a retention period; nil means the default.
func ValidateRetention(days *int) error {
	if days != nil && (*days < MinRetentionDays || *days > MaxRetentionDays) {
		return FieldErrorf("retention", "Retention must be from %d to %d days (leave it empty for the default of %d days).",
			MinRetentionDays, MaxRetentionDays, DefaultRetentionDays)
	}
	return nil
}
