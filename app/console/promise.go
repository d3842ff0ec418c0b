package console

import (
	"context"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// The delivery promise: a message is handed to the provider within
// PromiseWithin of being due (its event accepted, its send_at reached, or
// the quiet hours it waited for over). GOV.UK Notify publishes the same
// figure for its services; Herald shows it per tenant, channel and day,
// beside the time to delivered and to read, from the dashboard's
// roll-ups (message_latency_counts), so the figures are at most a few
// minutes behind and cost no extra work on the send path.
const (
	PromiseWithin = 10 * time.Second
	// PromiseDays is how many days the tables cover: today and the six
	// days before it.
	PromiseDays = 7
)

// The histograms the roll-up keeps per quarter, channel and measure.
const (
	MeasureHandover  = "handover"
	MeasureDelivered = "delivered"
	MeasureRead      = "read"
)

// PromiseCount is one bin of one histogram: the messages of a tenant's
// channel on a day (or over the whole period, for the platform's reading)
// whose time fell in bin Bin of LatencyBounds.
type PromiseCount struct {
	TenantID   uuid.UUID   `db:"tenant_id"`
	TenantName string      `db:"tenant_name"`
	Day        time.Time   `db:"day"`
	Channel    app.Channel `db:"channel"`
	Measure    string      `db:"measure"`
	Bin        int         `db:"bin"`
	Count      int         `db:"count"`
}

// PromiseTx reads the delivery promise's histograms.
type PromiseTx interface {
	app.Tx
	// PromiseCounts returns the tenant's histograms per day of zone, for
	// messages created in [from, to), as rolled up.
	PromiseCounts(ctx context.Context, tenantID uuid.UUID, from, to time.Time, zone string) ([]PromiseCount, error)
	// PlatformPromiseCounts returns every tenant's histograms over [from,
	// to), per tenant and channel (Day is zero).
	PlatformPromiseCounts(ctx context.Context, from, to time.Time) ([]PromiseCount, error)
}

// PromiseRow is one line of a promise table: a tenant's channel on a day
// (or over the period).
type PromiseRow struct {
	TenantID   uuid.UUID
	TenantName string
	Day        time.Time
	Channel    app.Channel
	// Handover is the time from due to handed over; Delivered and Read
	// the time from creation to delivered and to read.
	Handover, Delivered, Read Latency
}

// Kept is the share of the row's messages handed over within
// PromiseWithin, in percent; false when none was due.
func (r PromiseRow) Kept() (float64, bool) { return r.Handover.Within(PromiseWithin) }

// Promise is a promise table.
type Promise struct {
	// From is the period's start (midnight in Location, PromiseDays-1
	// days ago); it ends now.
	From     time.Time
	Location *time.Location
	Rows     []PromiseRow
}

// PromiseReader reads the promise tables: a tenant's, and the operator's
// across tenants.
type PromiseReader struct {
	Store app.Store[PromiseTx]
	Now   app.Clock
}

// PromiseFrom is the start of the promise tables' period: midnight in
// loc, PromiseDays-1 days before now's day.
func PromiseFrom(now time.Time, loc *time.Location) time.Time {
	local := now.In(loc)
	return time.Date(local.Year(), local.Month(), local.Day()-(PromiseDays-1), 0, 0, 0, 0, loc)
}

// Tenant returns the tenant's table: per day (newest first) and channel.
func (r *PromiseReader) Tenant(ctx context.Context, u *app.User, t *app.Tenant) (*Promise, error) {
	if err := app.RequirePermission(u, app.PermDashboard); err != nil {
		return nil, err
	}
	loc := tenantLocation(t)
	now := r.Now()
	p := &Promise{From: PromiseFrom(now, loc), Location: loc}
	var counts []PromiseCount
	err := r.Store.InTenant(ctx, t.ID, func(tx PromiseTx) (err error) {
		counts, err = tx.PromiseCounts(ctx, t.ID, p.From, now, loc.String())
		return err
	})
	if err != nil {
		return nil, err
	}
	p.Rows = promiseRows(counts)
	sort.SliceStable(p.Rows, func(i, j int) bool {
		a, b := p.Rows[i], p.Rows[j]
		if !a.Day.Equal(b.Day) {
			return a.Day.After(b.Day)
		}
		return channelOrder(a.Channel) < channelOrder(b.Channel)
	})
	return p, nil
}

// Platform returns every tenant's table over the last PromiseDays days
// (UTC), per tenant and channel, the tenants that kept the promise least
// first: the operator's view.
func (r *PromiseReader) Platform(ctx context.Context, u *app.User) (*Promise, error) {
	if err := app.RequirePermission(u, app.PermPlatform); err != nil {
		return nil, err
	}
	now := r.Now()
	p := &Promise{From: PromiseFrom(now, time.UTC), Location: time.UTC}
	var counts []PromiseCount
	err := r.Store.InPlatform(ctx, func(tx PromiseTx) (err error) {
		counts, err = tx.PlatformPromiseCounts(ctx, p.From, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	p.Rows = promiseRows(counts)
	sort.SliceStable(p.Rows, func(i, j int) bool {
		a, b := p.Rows[i], p.Rows[j]
		ka, oka := a.Kept()
		kb, okb := b.Kept()
		switch {
		case oka != okb:
			return oka
		case ka != kb:
			return ka < kb
		case a.TenantName != b.TenantName:
			return a.TenantName < b.TenantName
		}
		return channelOrder(a.Channel) < channelOrder(b.Channel)
	})
	return p, nil
}

// promiseRows gathers the bins into one row per tenant, day and channel.
func promiseRows(counts []PromiseCount) []PromiseRow {
	type key struct {
		tenant  uuid.UUID
		day     int64
		channel app.Channel
	}
	index := map[key]int{}
	var rows []PromiseRow
	for _, c := range counts {
		if c.Bin < 0 || c.Bin > len(LatencyBounds) {
			continue
		}
		k := key{c.TenantID, c.Day.Unix(), c.Channel}
		i, ok := index[k]
		if !ok {
			i = len(rows)
			index[k] = i
			bins := func() Latency { return Latency{Bins: make([]int, len(LatencyBounds)+1)} }
			rows = append(rows, PromiseRow{TenantID: c.TenantID, TenantName: c.TenantName, Day: c.Day, Channel: c.Channel,
				Handover: bins(), Delivered: bins(), Read: bins()})
		}
		var l *Latency
		switch c.Measure {
		case MeasureHandover:
			l = &rows[i].Handover
		case MeasureDelivered:
			l = &rows[i].Delivered
		case MeasureRead:
			l = &rows[i].Read
		default:
			continue
		}
		l.Bins[c.Bin] += c.Count
		l.Total += c.Count
	}
	return rows
}

// channelOrder is a channel's place in app.Channels.
func channelOrder(ch app.Channel) int {
	for i, c := range app.Channels {
		if c == ch {
			return i
		}
	}
	return len(app.Channels)
}
