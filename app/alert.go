package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// Kinds of staff alert: what happened, which also names the subject an
// alert is deduplicated on.
const (
	AlertAccountSuspended = "account_suspended"
	AlertBreakerOpen      = "breaker_open"
	AlertTemplateHeld     = "template_held"
	AlertQuota            = "quota_90"
	AlertBudget           = "budget_90"
	AlertApprovalWaiting  = "approval_waiting"
	AlertUnanswered       = "unanswered_reply"
	AlertDigest           = "digest"
)

// AlertCooldown is how long an alert about a condition that persists (an
// account still suspended, a template still rejected) stays quiet before
// it is raised again. Alerts about one occurrence (a breaker's open
// spell, an approval, a reply, a month's quota, a day's digest) are raised
// once.
const AlertCooldown = 24 * time.Hour

// alertOnce is the kinds raised once per subject, whose subject names the
// occurrence.
var alertOnce = map[string]bool{
	AlertBreakerOpen: true, AlertQuota: true, AlertBudget: true, AlertApprovalWaiting: true,
	AlertUnanswered: true, AlertDigest: true,
}

// Default thresholds of a tenant that saved no alert settings.
const (
	DefaultAlertBreakerMinutes    = 10
	DefaultAlertApprovalMinutes   = 30
	DefaultAlertUnansweredMinutes = 60
)

// MaxStaffEmails bounds a tenant's staff list.
const MaxStaffEmails = 20

// AlertSettings are where a tenant's staff alerts go and when they are
// raised. The Slack and Teams URLs are secrets (anyone holding one posts
// into the channel): they are sealed in Webhooks and only their hosts are
// ever shown.
type AlertSettings struct {
	TenantID      uuid.UUID  `db:"tenant_id"`
	StaffEmails   StringList `db:"staff_emails"`
	Webhooks      []byte     `db:"webhooks"`
	WebhooksKeyID *string    `db:"webhooks_key_id"`
	SlackHost     string     `db:"slack_host"`
	TeamsHost     string     `db:"teams_host"`
	// The minutes after which an open breaker, a broadcast waiting for
	// approval and an unanswered passenger reply are reported.
	BreakerMinutes    int `db:"breaker_minutes"`
	ApprovalMinutes   int `db:"approval_minutes"`
	UnansweredMinutes int `db:"unanswered_minutes"`
	// DigestMinute is the daily digest's local time in minutes after
	// midnight, in the tenant's time zone; nil: no digest.
	DigestMinute *int       `db:"digest_minute"`
	UpdatedBy    *uuid.UUID `db:"updated_by"`
	UpdatedAt    time.Time  `db:"updated_at"`
}

// DefaultAlertSettings are the settings of a tenant that saved none.
func DefaultAlertSettings(tenantID uuid.UUID) *AlertSettings {
	return &AlertSettings{TenantID: tenantID, StaffEmails: StringList{}, BreakerMinutes: DefaultAlertBreakerMinutes,
		ApprovalMinutes: DefaultAlertApprovalMinutes, UnansweredMinutes: DefaultAlertUnansweredMinutes}
}

// DigestTime is the digest's local time as "15:04", empty without one.
func (s *AlertSettings) DigestTime() string {
	if s.DigestMinute == nil {
		return ""
	}
	return fmt.Sprintf("%02d:%02d", *s.DigestMinute/60, *s.DigestMinute%60)
}

// AlertSettingsInput is a change of a tenant's alert settings as the
// console and the API take it. A nil URL keeps the one set; an empty one
// removes it.
type AlertSettingsInput struct {
	StaffEmails       []string
	SlackURL          *string
	TeamsURL          *string
	BreakerMinutes    string
	ApprovalMinutes   string
	UnansweredMinutes string
	// DigestTime is "HH:MM" in the tenant's time zone, or empty for no
	// digest.
	DigestTime string
}

// StaffAlert is one alert raised for a tenant's staff and where it went.
type StaffAlert struct {
	ID         uuid.UUID `db:"id"`
	TenantID   uuid.UUID `db:"tenant_id"`
	Kind       string    `db:"kind"`
	SubjectKey string    `db:"subject_key"`
	Title      string    `db:"title"`
	Body       string    `db:"body"`
	RaisedAt   time.Time `db:"raised_at"`
	// Delivered lists the targets that took the alert: "email:<address>",
	// "slack", "teams".
	Delivered StringList `db:"delivered"`
	LastError string     `db:"last_error"`
}

// AlertTx lists the statements of reading and saving alert settings and
// of delivering alerts.
type AlertTx interface {
	Tx
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
	// AlertSettings returns the tenant's settings, DefaultAlertSettings
	// when it saved none.
	AlertSettings(ctx context.Context, tenantID uuid.UUID) (*AlertSettings, error)
	UpsertAlertSettings(ctx context.Context, s *AlertSettings) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
	// RecentAlerts returns the tenant's newest alerts, newest first.
	RecentAlerts(ctx context.Context, tenantID uuid.UUID, limit int) ([]*StaffAlert, error)
	AlertByID(ctx context.Context, tenantID, id uuid.UUID) (*StaffAlert, error)
	// MarkAlertDelivered adds target to the alert's delivered targets
	// (once) and, with lastError set, records a refusal.
	MarkAlertDelivered(ctx context.Context, tenantID, id uuid.UUID, target, lastError string) error
	ActiveAccount(ctx context.Context, tenantID uuid.UUID, ch Channel) (*ChannelAccount, error)
}

// AlertRaiseTx is what raising an alert needs of a transaction, whatever
// else the transaction does.
type AlertRaiseTx interface {
	Tx
	// RaiseAlert inserts a unless the tenant has an alert of a's kind and
	// subject raised after since (any, with the zero since); concurrent
	// raises of one subject run one after the other. It reports whether
	// a was inserted.
	RaiseAlert(ctx context.Context, a *StaffAlert, since time.Time) (bool, error)
}

// AlertQueue enqueues an alert's delivery in the transaction that raised
// it.
type AlertQueue interface {
	EnqueueAlert(ctx context.Context, tx Tx, tenantID, alertID uuid.UUID) error
}

// Alerts tells a tenant's staff what needs them before passengers notice:
// by e-mail to the staff list (through the tenant's own active e-mail
// account and its provider) and to Slack and Microsoft Teams incoming
// webhooks (through the SSRF-guarded webhook client). Raise is the one
// way an alert is written; Check finds the conditions that time reveals
// and sends the daily digest.
type Alerts struct {
	Store      Store[AlertTx]
	CheckStore Store[AlertCheckTx]
	Queue      AlertQueue
	Sealer     *Sealer
	Accounts   *Accounts
	Providers  provider.Set
	// Client posts to Slack and Teams; it must come from
	// webhook.NewClient, whose dials the SSRF guard checks.
	Client *http.Client
	// CheckURLFunc checks a webhook URL before it is stored (scheme,
	// host, port), as the callback endpoints' URLs are checked.
	CheckURLFunc func(raw string) error
	Quotas       map[string]map[Channel]int
	Now          Clock
	Log          *slog.Logger
}

// Settings returns the tenant's alert settings.
func (s *Alerts) Settings(ctx context.Context, tenantID uuid.UUID) (*AlertSettings, error) {
	var out *AlertSettings
	err := s.Store.InTenant(ctx, tenantID, func(tx AlertTx) (err error) {
		out, err = tx.AlertSettings(ctx, tenantID)
		return err
	})
	return out, err
}

// Recent returns the tenant's last n alerts, newest first.
func (s *Alerts) Recent(ctx context.Context, tenantID uuid.UUID, n int) ([]*StaffAlert, error) {
	var out []*StaffAlert
	err := s.Store.InTenant(ctx, tenantID, func(tx AlertTx) (err error) {
		out, err = tx.RecentAlerts(ctx, tenantID, n)
		return err
	})
	return out, err
}

var digestTimeRe = regexp.MustCompile(`^([01]?[0-9]|2[0-3]):([0-5][0-9])$`)

// validateAlertSettings checks in and applies it to cur (a copy), sealing
// new webhook URLs; every problem is reported at once.
func (s *Alerts) validateAlertSettings(cur *AlertSettings, in AlertSettingsInput) (*AlertSettings, error) {
	out := *cur
	var errs []*Error
	emails, err := parseStaffEmails(in.StaffEmails)
	if err != nil {
		errs = append(errs, err)
	}
	out.StaffEmails = emails
	for _, m := range []struct {
		field, raw string
		max        int
		into       *int
	}{
		{"breaker_minutes", in.BreakerMinutes, 1440, &out.BreakerMinutes},
		{"approval_minutes", in.ApprovalMinutes, 10080, &out.ApprovalMinutes},
		{"unanswered_minutes", in.UnansweredMinutes, 10080, &out.UnansweredMinutes},
	} {
		n, err := strconv.Atoi(strings.TrimSpace(m.raw))
		if err != nil || n < 1 || n > m.max {
			errs = append(errs, FieldErrorf(m.field, "Give a whole number of minutes from 1 to %d.", m.max))
			continue
		}
		*m.into = n
	}
	out.DigestMinute = nil
	if t := strings.TrimSpace(in.DigestTime); t != "" {
		p := digestTimeRe.FindStringSubmatch(t)
		if p == nil {
			errs = append(errs, FieldErrorf("digest_time", "Give the digest's time as HH:MM (24 hours), or leave it empty for no digest."))
		} else {
			h, _ := strconv.Atoi(p[1])
			m, _ := strconv.Atoi(p[2])
			minute := h*60 + m
			out.DigestMinute = &minute
		}
	}
	if err := s.applyWebhookURLs(&out, in); err != nil {
		errs = append(errs, err...)
	}
	if err := problems(errs).err(); err != nil {
		return nil, err
	}
	return &out, nil
}

// parseStaffEmails checks the staff list: addresses only, each once,
// lower-cased, at most MaxStaffEmails.
func parseStaffEmails(raw []string) (StringList, *Error) {
	out := StringList{}
	seen := map[string]bool{}
	for _, r := range raw {
		for _, part := range strings.FieldsFunc(r, func(c rune) bool { return c == ',' || c == ';' || c == '\n' || c == '\r' || c == ' ' }) {
			a, err := mail.ParseAddress(part)
			if err != nil || a.Name != "" || a.Address != part || len(part) > 254 {
				return out, FieldErrorf("staff_emails", "%q is not an e-mail address.", part)
			}
			addr := strings.ToLower(a.Address)
			if !seen[addr] {
				seen[addr] = true
				out = append(out, addr)
			}
		}
	}
	if len(out) > MaxStaffEmails {
		return out, FieldErrorf("staff_emails", "At most %d staff addresses, please.", MaxStaffEmails)
	}
	return out, nil
}

// webhookSecrets are the keys of the sealed webhook URLs.
const (
	alertSlackKey = "slack_url"
	alertTeamsKey = "teams_url"
)

// applyWebhookURLs checks the URLs given and seals the set into out.
func (s *Alerts) applyWebhookURLs(out *AlertSettings, in AlertSettingsInput) []*Error {
	if in.SlackURL == nil && in.TeamsURL == nil {
		return nil
	}
	urls, err := s.webhookURLs(out)
	if err != nil {
		return []*Error{Errorf(EINTERNAL, "The stored webhook URLs do not open: %v", err)}
	}
	var errs []*Error
	for _, u := range []struct {
		field, key string
		in         *string
		host       *string
	}{
		{"slack_webhook_url", alertSlackKey, in.SlackURL, &out.SlackHost},
		{"teams_webhook_url", alertTeamsKey, in.TeamsURL, &out.TeamsHost},
	} {
		if u.in == nil {
			continue
		}
		raw := strings.TrimSpace(*u.in)
		if raw == "" {
			delete(urls, u.key)
			*u.host = ""
			continue
		}
		parsed, perr := url.Parse(raw)
		if perr != nil || len(raw) > 2000 {
			errs = append(errs, FieldErrorf(u.field, "This is not a webhook URL."))
			continue
		}
		if s.CheckURLFunc != nil {
			if cerr := s.CheckURLFunc(raw); cerr != nil {
				errs = append(errs, FieldErrorf(u.field, "This URL cannot take alerts: %v", cerr))
				continue
			}
		}
		urls[u.key] = raw
		*u.host = parsed.Hostname()
	}
	if len(errs) > 0 {
		return errs
	}
	sealed, keyID, serr := s.Sealer.Seal(out.TenantID, out.TenantID, urls)
	if serr != nil {
		return []*Error{Errorf(EINTERNAL, "seal webhook URLs: %v", serr)}
	}
	out.Webhooks, out.WebhooksKeyID = sealed, &keyID
	return nil
}

// webhookURLs opens the tenant's sealed webhook URLs.
func (s *Alerts) webhookURLs(set *AlertSettings) (map[string]string, error) {
	keyID := ""
	if set.WebhooksKeyID != nil {
		keyID = *set.WebhooksKeyID
	}
	return s.Sealer.Open(set.TenantID, set.TenantID, keyID, set.Webhooks)
}

// Save checks and stores the tenant's alert settings, with an audit entry
// that names what changed (never the URLs themselves).
func (s *Alerts) Save(ctx context.Context, actor Actor, tenantID uuid.UUID, in AlertSettingsInput) (*AlertSettings, error) {
	var out *AlertSettings
	err := s.Store.InTenant(ctx, tenantID, func(tx AlertTx) error {
		cur, err := tx.AlertSettings(ctx, tenantID)
		if err != nil {
			return err
		}
		next, err := s.validateAlertSettings(cur, in)
		if err != nil {
			return err
		}
		next.UpdatedBy, next.UpdatedAt = actor.ID, s.Now()
		if err := tx.UpsertAlertSettings(ctx, next); err != nil {
			return err
		}
		out = next
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "alert_settings.update", "tenant", tenantID.String(), map[string]any{
			"staff_emails": len(next.StaffEmails), "slack": next.SlackHost, "teams": next.TeamsHost,
			"slack_changed": in.SlackURL != nil, "teams_changed": in.TeamsURL != nil,
			"breaker_minutes": next.BreakerMinutes, "approval_minutes": next.ApprovalMinutes,
			"unanswered_minutes": next.UnansweredMinutes, "digest_time": next.DigestTime(),
		}))
	})
	return out, err
}

// Raise records an alert for the tenant's staff and enqueues its delivery,
// in tx, unless the same alert (kind and subject) was raised within its
// cool-down: ever, for the kinds raised once. It is the one way an alert
// is written, for the state changes that raise one and for Check alike.
func (s *Alerts) Raise(ctx context.Context, tx AlertRaiseTx, a *StaffAlert) (bool, error) {
	a.TenantID = tx.TenantID()
	a.ID = uuid.New()
	a.RaisedAt = s.Now()
	a.Delivered = StringList{}
	a.Title, a.Body = cutRunes(a.Title, 300), cutRunes(a.Body, 20000)
	var since time.Time
	if !alertOnce[a.Kind] {
		since = a.RaisedAt.Add(-AlertCooldown)
	}
	raised, err := tx.RaiseAlert(ctx, a, since)
	if err != nil || !raised {
		return false, err
	}
	if err := s.Queue.EnqueueAlert(ctx, tx, a.TenantID, a.ID); err != nil {
		return false, err
	}
	return true, nil
}
