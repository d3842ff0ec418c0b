package app

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
)

// BreakerSpell is a channel account whose breaker has not closed since
// Since.
type BreakerSpell struct {
	AccountID uuid.UUID `db:"account_id"`
	Name      string    `db:"name"`
	Channel   Channel   `db:"channel"`
	Since     time.Time `db:"since"`
}

// ChannelMonthUse is what a tenant's sends of one channel used of the
// month's quota and cost so far.
type ChannelMonthUse struct {
	Channel Channel `db:"channel"`
	Used    int     `db:"used"`
	Spent   Money   `db:"spent"`
}

// WaitingApproval is an event waiting for a person to approve it.
type WaitingApproval struct {
	EventID       uuid.UUID `db:"id"`
	SourceEventID string    `db:"source_event_id"`
	TriggerEvent  string    `db:"trigger_event"`
	Since         time.Time `db:"created_at"`
}

// UnansweredReply is a passenger's newest reply that no message to them
// followed.
type UnansweredReply struct {
	ContactID  uuid.UUID `db:"contact_id"`
	Name       string    `db:"name"`
	InboundID  uuid.UUID `db:"inbound_id"`
	Channel    Channel   `db:"channel"`
	ReceivedAt time.Time `db:"received_at"`
}

// DigestDeparture is one departure of the digest's day and how its
// messages fare: Trip is the trip id (or the tour's name when the events
// carry no trip), Messages every message of its events, Reached those
// delivered or read, Failed those that failed.
type DigestDeparture struct {
	Trip     string `db:"trip"`
	Tour     string `db:"tour"`
	Events   int    `db:"events"`
	Messages int    `db:"messages"`
	Reached  int    `db:"reached"`
	Failed   int    `db:"failed"`
	// NotAcknowledged counts the recipients of its notifications that ask
	// for acknowledgement (SafetyEvent, or an event the tenant marked with
	// an ACKNOWLEDGED deadline) none of whose messages was acknowledged.
	NotAcknowledged int `db:"not_acknowledged"`
}

// NotReached is how many of the departure's messages reached nobody yet.
func (d DigestDeparture) NotReached() int { return d.Messages - d.Reached }

// AlertCheckTx lists the statements of the time-based checks and the
// digest.
type AlertCheckTx interface {
	AlertRaiseTx
	// AlertTenants returns the tenants that saved alert settings
	// (platform scope).
	AlertTenants(ctx context.Context) ([]uuid.UUID, error)
	TenantByID(ctx context.Context, id uuid.UUID) (*Tenant, error)
	AlertSettings(ctx context.Context, tenantID uuid.UUID) (*AlertSettings, error)
	LimitSettings(ctx context.Context, tenantID uuid.UUID) (*LimitSettings, error)
	// SuspendedAccounts returns the tenant's SUSPENDED channel accounts.
	SuspendedAccounts(ctx context.Context, tenantID uuid.UUID) ([]*ChannelAccount, error)
	// OpenBreakers returns the accounts whose breaker opened at or before
	// openedBy and has not closed since, from the breakers' audit entries.
	OpenBreakers(ctx context.Context, tenantID uuid.UUID, openedBy time.Time) ([]BreakerSpell, error)
	// HeldMetaTemplates returns the tenant's Meta templates Meta rejected
	// or paused.
	HeldMetaTemplates(ctx context.Context, tenantID uuid.UUID) ([]*MetaTemplate, error)
	MonthUse(ctx context.Context, tenantID uuid.UUID, month time.Time) ([]ChannelMonthUse, error)
	// WaitingApprovals returns the events waiting for approval since
	// before the given time, oldest first.
	WaitingApprovals(ctx context.Context, tenantID uuid.UUID, before time.Time) ([]WaitingApproval, error)
	// UnansweredReplies returns, per contact, the newest reply received
	// between after and before that no message to the contact followed.
	UnansweredReplies(ctx context.Context, tenantID uuid.UUID, after, before time.Time) ([]UnansweredReply, error)
	// DigestDepartures returns the departures on day (YYYY-MM-DD): the
	// events whose context's departure_date or departure_at falls on it.
	DigestDepartures(ctx context.Context, tenantID uuid.UUID, day string) ([]DigestDeparture, error)
	// FailuresByReason counts the tenant's messages that failed since the
	// given time, per failed_reason.
	FailuresByReason(ctx context.Context, tenantID uuid.UUID, since time.Time) (map[string]int, error)
}

// unansweredHorizon is how far back a reply still counts as waiting: an
// older one is the inbox's business, not an alert's.
const unansweredHorizon = 7 * 24 * time.Hour

// CheckAll runs Check for every tenant that saved alert settings, each in
// its own transactions; one tenant's failure does not stop the others.
func (s *Alerts) CheckAll(ctx context.Context) (raised int, err error) {
	var tenants []uuid.UUID
	if err := s.CheckStore.InPlatform(ctx, func(tx AlertCheckTx) (err error) {
		tenants, err = tx.AlertTenants(ctx)
		return err
	}); err != nil {
		return 0, err
	}
	var firstErr error
	for _, id := range tenants {
		n, err := s.Check(ctx, id)
		raised += n
		if err != nil {
			s.Log.ErrorContext(ctx, "staff alert check failed", "tenant_id", id, "err", err)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	return raised, firstErr
}

// Check raises the tenant's alerts that state and time reveal: suspended
// accounts, breakers open past the threshold, rejected or paused
// WhatsApp templates, a month's quota or budget at 90 %, broadcasts
// waiting for approval and passengers' replies unanswered past their
// thresholds; and the daily digest once its local time has come. Each
// alert is raised through Raise, so a condition already reported stays
// quiet.
func (s *Alerts) Check(ctx context.Context, tenantID uuid.UUID) (int, error) {
	var candidates []*StaffAlert
	err := s.CheckStore.InTenant(ctx, tenantID, func(tx AlertCheckTx) error {
		t, err := tx.TenantByID(ctx, tenantID)
		if err != nil {
			return err
		}
		set, err := tx.AlertSettings(ctx, tenantID)
		if err != nil {
			return err
		}
		for _, find := range []func(context.Context, AlertCheckTx, *Tenant, *AlertSettings) ([]*StaffAlert, error){
			s.accountAlerts, s.limitAlerts, s.waitingAlerts, s.digestAlert,
		} {
			found, err := find(ctx, tx, t, set)
			if err != nil {
				return err
			}
			candidates = append(candidates, found...)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("check alerts of tenant %s: %w", tenantID, err)
	}
	raised := 0
	for _, a := range candidates {
		// Each alert in a transaction of its own: a long list never holds
		// the advisory locks of the others.
		err := s.CheckStore.InTenant(ctx, tenantID, func(tx AlertCheckTx) error {
			ok, err := s.Raise(ctx, tx, a)
			if ok {
				raised++
			}
			return err
		})
		if err != nil {
			return raised, fmt.Errorf("raise %s alert: %w", a.Kind, err)
		}
	}
	return raised, nil
}

// accountAlerts finds suspended accounts, long-open breakers and held
// WhatsApp templates.
func (s *Alerts) accountAlerts(ctx context.Context, tx AlertCheckTx, t *Tenant, set *AlertSettings) ([]*StaffAlert, error) {
	var out []*StaffAlert
	accounts, err := tx.SuspendedAccounts(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	for _, a := range accounts {
		reason := ""
		if a.SuspendedReason != nil {
			reason = *a.SuspendedReason
		}
		out = append(out, &StaffAlert{Kind: AlertAccountSuspended, SubjectKey: "account:" + a.ID.String(),
			Title: fmt.Sprintf("Channel account %q (%s) is suspended", a.Name, a.Channel),
			Body:  fmt.Sprintf("Its %s messages are not sent until the account is active again. Reason: %s", a.Channel, orNone(reason))})
	}
	spells, err := tx.OpenBreakers(ctx, t.ID, s.Now().Add(-time.Duration(set.BreakerMinutes)*time.Minute))
	if err != nil {
		return nil, err
	}
	for _, b := range spells {
		out = append(out, &StaffAlert{Kind: AlertBreakerOpen,
			SubjectKey: fmt.Sprintf("account:%s:%d", b.AccountID, b.Since.Unix()),
			Title:      fmt.Sprintf("%s provider of %q failing since %s", b.Channel, b.Name, localTime(b.Since, t.Timezone)),
			Body: fmt.Sprintf("The circuit breaker of channel account %q has been open for more than %d minutes: its messages wait and are retried when the provider answers again.",
				b.Name, set.BreakerMinutes)})
	}
	held, err := tx.HeldMetaTemplates(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	for _, m := range held {
		out = append(out, &StaffAlert{Kind: AlertTemplateHeld,
			SubjectKey: fmt.Sprintf("%s:%s:%s:%s", m.ChannelAccountID, m.Name, m.Language, m.Status),
			Title:      fmt.Sprintf("WhatsApp template %s (%s) is %s", m.Name, m.Language, strings.ToLower(m.Status)),
			Body:       fmt.Sprintf("Meta does not let it be sent. Reason: %s", orNone(m.RejectedReason))})
	}
	return out, nil
}

// limitAlerts finds channels whose month's quota or budget is 90 % used.
func (s *Alerts) limitAlerts(ctx context.Context, tx AlertCheckTx, t *Tenant, _ *AlertSettings) ([]*StaffAlert, error) {
	now := s.Now().UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	uses, err := tx.MonthUse(ctx, t.ID, month)
	if err != nil {
		return nil, err
	}
	limits, err := tx.LimitSettings(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	var out []*StaffAlert
	key := month.Format("2006-01")
	for _, u := range uses {
		if q := Quota(s.Quotas, t.Plan, u.Channel); q != Unlimited && q > 0 && u.Used*10 >= q*9 {
			out = append(out, &StaffAlert{Kind: AlertQuota, SubjectKey: string(u.Channel) + ":" + key,
				Title: fmt.Sprintf("%s quota %d%% used", u.Channel, u.Used*100/q),
				Body:  fmt.Sprintf("%d of this month's %d %s messages are used; at the limit, further messages fail with quota_exceeded.", u.Used, q, u.Channel)})
		}
		if b := limits.Budget(u.Channel); b != nil && *b > 0 && u.Spent*10 >= *b*9 {
			out = append(out, &StaffAlert{Kind: AlertBudget, SubjectKey: string(u.Channel) + ":" + key,
				Title: fmt.Sprintf("%s budget %d%% spent", u.Channel, int64(u.Spent)*100/int64(*b)),
				Body:  fmt.Sprintf("%s of this month's %s budget of %s is spent.", u.Spent, u.Channel, *b)})
		}
	}
	return out, nil
}

// waitingAlerts finds broadcasts waiting for approval and replies waiting
// for an answer past their thresholds.
func (s *Alerts) waitingAlerts(ctx context.Context, tx AlertCheckTx, t *Tenant, set *AlertSettings) ([]*StaffAlert, error) {
	now := s.Now()
	waiting, err := tx.WaitingApprovals(ctx, t.ID, now.Add(-time.Duration(set.ApprovalMinutes)*time.Minute))
	if err != nil {
		return nil, err
	}
	var out []*StaffAlert
	for _, w := range waiting {
		out = append(out, &StaffAlert{Kind: AlertApprovalWaiting, SubjectKey: "event:" + w.EventID.String(),
			Title: fmt.Sprintf("%s %s waits for approval", w.TriggerEvent, w.SourceEventID),
			Body: fmt.Sprintf("It has waited since %s, more than %d minutes; nothing is sent until someone approves or rejects it.",
				localTime(w.Since, t.Timezone), set.ApprovalMinutes)})
	}
	replies, err := s.UnansweredReplies(ctx, tx, t.ID, now.Add(-time.Duration(set.UnansweredMinutes)*time.Minute))
	if err != nil {
		return nil, err
	}
	for _, r := range replies {
		out = append(out, &StaffAlert{Kind: AlertUnanswered, SubjectKey: "reply:" + r.InboundID.String(),
			Title: fmt.Sprintf("%s's %s reply is unanswered", orNone(r.Name), r.Channel),
			Body:  fmt.Sprintf("Received %s, more than %d minutes ago, and no one has answered it in the inbox since.", localTime(r.ReceivedAt, t.Timezone), set.UnansweredMinutes)})
	}
	return out, nil
}

// UnansweredReplies returns the tenant's conversations the inbox shows as
// unanswered (OPEN, the passenger's last message after staff's last
// answer) whose passenger last wrote before olderThan (and within a week),
// each with that message: the alert and the inbox count the same ones.
func (s *Alerts) UnansweredReplies(ctx context.Context, tx AlertCheckTx, tenantID uuid.UUID, olderThan time.Time) ([]UnansweredReply, error) {
	return tx.UnansweredReplies(ctx, tenantID, olderThan.Add(-unansweredHorizon), olderThan)
}

// localTime shows at in the tenant's time zone.
func localTime(at time.Time, tz string) string {
	return at.In(zoneOf(tz)).Format("2006-01-02 15:04 MST")
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "none given"
	}
	return s
}

// digestAlert is the tenant's daily digest when its local time has come
// today and the day has none yet (Raise keeps it to one per local day).
func (s *Alerts) digestAlert(ctx context.Context, tx AlertCheckTx, t *Tenant, set *AlertSettings) ([]*StaffAlert, error) {
	if set.DigestMinute == nil {
		return nil, nil
	}
	local := s.Now().In(zoneOf(t.Timezone))
	if local.Hour()*60+local.Minute() < *set.DigestMinute {
		return nil, nil
	}
	today := local.Format(time.DateOnly)
	tomorrow := local.AddDate(0, 0, 1).Format(time.DateOnly)
	deps, err := tx.DigestDepartures(ctx, t.ID, tomorrow)
	if err != nil {
		return nil, err
	}
	waiting, err := tx.WaitingApprovals(ctx, t.ID, s.Now())
	if err != nil {
		return nil, err
	}
	failures, err := tx.FailuresByReason(ctx, t.ID, s.Now().Add(-24*time.Hour))
	if err != nil {
		return nil, err
	}
	return []*StaffAlert{{Kind: AlertDigest, SubjectKey: today,
		Title: fmt.Sprintf("Operations digest for %s, %s", t.Name, today),
		Body:  DigestText(tomorrow, deps, len(waiting), failures)}}, nil
}

// DigestText writes the digest's body: tomorrow's departures with their
// messages, the passengers not reached, pending approvals and the last
// day's failures by reason.
func DigestText(tomorrow string, deps []DigestDeparture, approvals int, failures map[string]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Departures on %s: %d\n", tomorrow, len(deps))
	for _, d := range deps {
		fmt.Fprintf(&b, "- %s: %d messages, %d reached, %d not reached, %d failed", d.label(), d.Messages, d.Reached, d.NotReached(), d.Failed)
		if d.NotAcknowledged > 0 {
			fmt.Fprintf(&b, ", %d not acknowledged", d.NotAcknowledged)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Broadcasts waiting for approval: %d\n", approvals)
	reasons := make([]string, 0, len(failures))
	total := 0
	for r, n := range failures {
		reasons = append(reasons, r)
		total += n
	}
	sort.Slice(reasons, func(i, j int) bool {
		if failures[reasons[i]] != failures[reasons[j]] {
			return failures[reasons[i]] > failures[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	fmt.Fprintf(&b, "Failures in the last 24 hours: %d\n", total)
	for _, r := range reasons {
		fmt.Fprintf(&b, "- %s: %d\n", orNone(r), failures[r])
	}
	return strings.TrimRight(b.String(), "\n")
}

func (d DigestDeparture) label() string {
	switch {
	case d.Tour != "" && d.Trip != "" && d.Tour != d.Trip:
		return d.Tour + " (" + d.Trip + ")"
	case d.Tour != "":
		return d.Tour
	}
	return orNone(d.Trip)
}
