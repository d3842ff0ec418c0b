package console

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// DashboardRange is the period the dashboard's chart covers.
type DashboardRange string

// Dashboard ranges: the last 24 hours in hourly buckets, the last 7 days in
// daily buckets (days and hours of the tenant's timezone).
const (
	Range24h DashboardRange = "24h"
	Range7d  DashboardRange = "7d"
)

// DashboardRanges lists the ranges in the order the console offers them.
var DashboardRanges = []DashboardRange{Range24h, Range7d}

// Label names the range for people.
func (r DashboardRange) Label() string {
	if r == Range7d {
		return "last 7 days"
	}
	return "last 24 hours"
}

// ParseDashboardRange reads ?range=; empty means the last 24 hours.
func ParseDashboardRange(s string) (DashboardRange, error) {
	switch DashboardRange(s) {
	case "", Range24h:
		return Range24h, nil
	case Range7d:
		return Range7d, nil
	}
	return Range24h, app.FieldErrorf("range", "There is no range %q: choose 24h or 7d.", s)
}

// MessageStatuses lists the message statuses in lifecycle order, the order
// of the dashboard's chart and tables.
var MessageStatuses = []string{app.MessageQueued, app.MessageSent, app.MessageDelivered, app.MessageRead, app.MessageFailed, app.MessageCancelled}

// QuotaWarnPercent is the share of a monthly quota above which the
// dashboard warns.
const QuotaWarnPercent = 80

// MessageCount is how many of a tenant's messages on one channel were
// created in one bucket of a period and are now in one status. Bucket
// counts from 1 (the first bucket of the period).
type MessageCount struct {
	Bucket  int         `db:"bucket"`
	Channel app.Channel `db:"channel"`
	Status  string      `db:"status"`
	Count   int         `db:"count"`
}

// WaitingWork is the tenant's work that has not gone out yet.
type WaitingWork struct {
	// QueuedMessages wait for their dispatch job; OldestQueuedAt is when
	// the longest-waiting one was queued.
	QueuedMessages int        `db:"queued_messages"`
	OldestQueuedAt *time.Time `db:"oldest_queued_at"`
	// ScheduledEvents wait for their send time; OldestScheduledAt is when
	// the longest-waiting one was received, NextSendAt the earliest due.
	ScheduledEvents   int        `db:"scheduled_events"`
	OldestScheduledAt *time.Time `db:"oldest_scheduled_at"`
	NextSendAt        *time.Time `db:"next_send_at"`
	// AwaitingApproval events wait for a person's decision.
	AwaitingApproval int `db:"awaiting_approval"`
}

// DashboardTx reads the figures of a tenant's dashboard.
type DashboardTx interface {
	app.Tx
	// MessageCounts counts the tenant's messages created in [bounds[0],
	// to) by bucket (bounds are the buckets' starts, ascending), channel
	// and current status.
	MessageCounts(ctx context.Context, tenantID uuid.UUID, bounds []time.Time, to time.Time) ([]MessageCount, error)
	// StaleMessages counts the tenant's SENT messages marked stale (no
	// receipt from the provider within a day).
	StaleMessages(ctx context.Context, tenantID uuid.UUID) (int, error)
	// UsageByChannel returns the tenant's metered sends per channel in the
	// month that starts at month.
	UsageByChannel(ctx context.Context, tenantID uuid.UUID, month time.Time) (map[app.Channel]int, error)
	// WaitingWork returns the tenant's queued messages and pending events.
	WaitingWork(ctx context.Context, tenantID uuid.UUID) (*WaitingWork, error)
	// HasActivity reports whether the tenant ever had messages or events
	// (within retention).
	HasActivity(ctx context.Context, tenantID uuid.UUID) (messages, events bool, err error)
}

// DashboardQuery selects what the dashboard shows.
type DashboardQuery struct {
	Range DashboardRange
	// Channel limits the chart to one channel; empty shows all.
	Channel app.Channel
}

// DashboardBucket is one bar of the chart: the messages created from Start
// until End, by status.
type DashboardBucket struct {
	Start, End time.Time
	Counts     map[string]int
	Total      int
}

// QuotaUse is a tenant's use of one channel's monthly quota.
type QuotaUse struct {
	Channel app.Channel
	Used    int
	// Limit is Unlimited or the messages the plan allows this month.
	Limit int
}

// Unlimited reports whether the plan sets no limit for the channel.
func (q QuotaUse) Unlimited() bool { return q.Limit == app.Unlimited }

// Percent is the share of the quota used, rounded down; it may pass 100
// when sends raced the last free unit.
func (q QuotaUse) Percent() int {
	switch {
	case q.Unlimited():
		return 0
	case q.Limit == 0:
		if q.Used > 0 {
			return 100
		}
		return 0
	}
	return q.Used * 100 / q.Limit
}

// Warning reports whether more than QuotaWarnPercent of the quota is used.
func (q QuotaUse) Warning() bool {
	return !q.Unlimited() && (q.Used*100 > q.Limit*QuotaWarnPercent || q.Limit == 0)
}

// Exhausted reports whether further sends on the channel fail this month.
func (q QuotaUse) Exhausted() bool { return !q.Unlimited() && q.Used >= q.Limit }

// Dashboard is a tenant's overview: messages over time, totals, failures,
// quota and waiting work.
type Dashboard struct {
	Query DashboardQuery
	// Location is the tenant's timezone; buckets are its hours or days.
	Location *time.Location
	From, To time.Time
	// Buckets are the chart's bars, oldest first, for Query.Channel (or
	// every channel).
	Buckets []DashboardBucket
	// Totals counts the period's messages by channel and status (every
	// channel, whatever Query.Channel is); ChannelTotals and StatusTotals
	// sum its rows and columns.
	Totals        map[app.Channel]map[string]int
	ChannelTotals map[app.Channel]int
	StatusTotals  map[string]int
	Total         int
	// Failed counts the period's messages that failed; Stale the messages
	// that are stale now (whenever they were sent).
	Failed int
	Stale  int
	// Plan, Month and Quotas describe this calendar month's use (months
	// are UTC, as the dispatcher meters them).
	Plan    string
	Month   time.Time
	Quotas  []QuotaUse
	Waiting WaitingWork
	// HasMessages and HasEvents are false for a tenant that never sent
	// anything; the console then shows how to start.
	HasMessages bool
	HasEvents   bool
	// CredentialRefusals are the tenant's accounts whose sends AWS refuses
	// for the server's own credentials: their messages wait for the
	// operator.
	CredentialRefusals []*app.CredentialRefusal
}

// Dashboards builds tenant dashboards.
type Dashboards struct {
	Store app.Store[DashboardTx]
	// Quotas are the configured monthly quotas per plan and channel.
	Quotas map[string]map[app.Channel]int
	// Credentials, when set, reports the tenant's accounts refused for
	// the server's own credentials.
	Credentials *app.ServerCredentials
	Now         app.Clock
}

// Load returns the tenant's dashboard for the query.
func (d *Dashboards) Load(ctx context.Context, u *app.User, t *app.Tenant, q DashboardQuery) (*Dashboard, error) {
	if err := app.RequirePermission(u, app.PermDashboard); err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(t.Timezone)
	if err != nil {
		loc = time.UTC
	}
	now := d.Now()
	db := &Dashboard{
		Query: q, Location: loc, Plan: t.Plan, Month: app.MonthOf(now),
		Totals: map[app.Channel]map[string]int{}, ChannelTotals: map[app.Channel]int{}, StatusTotals: map[string]int{},
	}
	bounds := bucketStarts(q.Range, now, loc)
	db.From = bounds[0]
	db.To = now
	var counts []MessageCount
	var usage map[app.Channel]int
	var waiting *WaitingWork
	err = d.Store.InTenant(ctx, t.ID, func(tx DashboardTx) (err error) {
		if db.HasMessages, db.HasEvents, err = tx.HasActivity(ctx, t.ID); err != nil {
			return err
		}
		if counts, err = tx.MessageCounts(ctx, t.ID, bounds, now); err != nil {
			return err
		}
		if db.Stale, err = tx.StaleMessages(ctx, t.ID); err != nil {
			return err
		}
		if usage, err = tx.UsageByChannel(ctx, t.ID, db.Month); err != nil {
			return err
		}
		waiting, err = tx.WaitingWork(ctx, t.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	db.Waiting = *waiting
	if d.Credentials != nil {
		if db.CredentialRefusals, err = d.Credentials.TenantRefusals(ctx, t.ID); err != nil {
			return nil, err
		}
	}

	db.Buckets = make([]DashboardBucket, len(bounds))
	for i, start := range bounds {
		end := now
		if i+1 < len(bounds) {
			end = bounds[i+1]
		}
		db.Buckets[i] = DashboardBucket{Start: start, End: end, Counts: map[string]int{}}
	}
	for _, c := range counts {
		if c.Bucket < 1 || c.Bucket > len(bounds) {
			continue
		}
		if db.Totals[c.Channel] == nil {
			db.Totals[c.Channel] = map[string]int{}
		}
		db.Totals[c.Channel][c.Status] += c.Count
		db.ChannelTotals[c.Channel] += c.Count
		db.StatusTotals[c.Status] += c.Count
		db.Total += c.Count
		if q.Channel == "" || q.Channel == c.Channel {
			b := &db.Buckets[c.Bucket-1]
			b.Counts[c.Status] += c.Count
			b.Total += c.Count
		}
	}
	db.Failed = db.StatusTotals[app.MessageFailed]

	for _, ch := range app.Channels {
		db.Quotas = append(db.Quotas, QuotaUse{Channel: ch, Used: usage[ch], Limit: d.quota(t.Plan, ch)})
	}
	return db, nil
}

// quota is the dispatcher's own rule, so that the dashboard and the
// dispatcher never disagree about a limit.
func (d *Dashboards) quota(plan string, ch app.Channel) int { return app.Quota(d.Quotas, plan, ch) }

// bucketStarts returns the starts of the range's buckets in loc, oldest
// first: the 24 hours up to and including the current one, or the 7 days up
// to and including today. Days are calendar days of loc, so a day with a
// daylight-saving change is 23 or 25 hours long.
func bucketStarts(r DashboardRange, now time.Time, loc *time.Location) []time.Time {
	local := now.In(loc)
	if r == Range7d {
		today := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)
		out := make([]time.Time, 7)
		for i := range out {
			out[i] = today.AddDate(0, 0, i-6)
		}
		return out
	}
	// Hours are truncated on the absolute timeline, then adjusted for
	// zones whose offset is not a whole number of hours (India, Nepal).
	_, offset := local.Zone()
	hour := now.Add(time.Duration(offset) * time.Second).Truncate(time.Hour).Add(-time.Duration(offset) * time.Second)
	out := make([]time.Time, 24)
	for i := range out {
		out[i] = hour.Add(time.Duration(i-23) * time.Hour).In(loc)
	}
	return out
}
