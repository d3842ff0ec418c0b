package console

import (
	"context"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// TrendDays is how many days the dashboard's month covers: today and the
// 29 days before it, in the tenant's timezone.
const TrendDays = 30

// TopFailures is how many failure reasons the dashboard lists.
const TopFailures = 8

// LatencyBounds are the bounds of the delivery-time histogram's bins, the
// same as the database's message_latency_bounds(): bin 0 holds the
// messages delivered within LatencyBounds[0], bin i those delivered within
// [LatencyBounds[i-1], LatencyBounds[i]), the last bin those that took
// longer than the last bound.
var LatencyBounds = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 6 * time.Hour, 24 * time.Hour,
}

// LatencyCount is how many of a channel's messages were delivered within
// one bin of the histogram.
type LatencyCount struct {
	Channel app.Channel `db:"channel"`
	Bin     int         `db:"bin"`
	Count   int         `db:"count"`
}

// FailureCount is how many of a channel's messages failed for one reason.
type FailureCount struct {
	Channel app.Channel `db:"channel"`
	// Reason is the message's failed_reason; empty when it has none.
	Reason string `db:"reason"`
	Count  int    `db:"count"`
}

// TemplateCount is how many messages of one template are in one status.
type TemplateCount struct {
	TemplateID uuid.UUID `db:"template_id"`
	Status     string    `db:"status"`
	Count      int       `db:"count"`
}

// TrendTx reads the counts behind the dashboard's month and the template
// figures. Each counts the messages created in [from, to).
type TrendTx interface {
	app.Tx
	// MessageCounts is DashboardTx's: counts by bucket, channel, status.
	MessageCounts(ctx context.Context, tenantID uuid.UUID, bounds []time.Time, to time.Time) ([]MessageCount, error)
	// LatencyCounts returns the delivery-time histogram per channel.
	LatencyCounts(ctx context.Context, tenantID uuid.UUID, from, to time.Time) ([]LatencyCount, error)
	// FailureCounts returns the failed messages per channel and reason.
	FailureCounts(ctx context.Context, tenantID uuid.UUID, from, to time.Time) ([]FailureCount, error)
	// TemplateCounts returns the messages per template and status, of the
	// templates in ids (every template when ids is nil). from must fall on
	// an hour.
	TemplateCounts(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, from, to time.Time) ([]TemplateCount, error)
}

// Outcome counts messages by what became of them, and gives the shares
// people ask about. Every message counts once, by its current status.
type Outcome struct {
	Counts map[string]int
	Total  int
}

// Add counts n messages in status st.
func (o *Outcome) Add(st string, n int) {
	if o.Counts == nil {
		o.Counts = map[string]int{}
	}
	o.Counts[st] += n
	o.Total += n
}

// Sent counts the messages handed to the provider: sent, delivered or
// read. Failed messages are not among them, even those a provider bounced.
func (o Outcome) Sent() int {
	return o.Counts[app.MessageSent] + o.Counts[app.MessageDelivered] + o.Counts[app.MessageRead]
}

// Delivered counts the messages delivered, read ones included.
func (o Outcome) Delivered() int {
	return o.Counts[app.MessageDelivered] + o.Counts[app.MessageRead]
}

// Read counts the messages read.
func (o Outcome) Read() int { return o.Counts[app.MessageRead] }

// Failed counts the messages that failed.
func (o Outcome) Failed() int { return o.Counts[app.MessageFailed] }

// Attempted counts the messages Herald finished with or handed on: sent
// and failed ones; queued and cancelled ones are not. It is the base of
// every rate.
func (o Outcome) Attempted() int { return o.Sent() + o.Failed() }

// Rate is n as a share of Attempted, in percent; false when nothing was
// attempted.
func (o Outcome) Rate(n int) (float64, bool) {
	if o.Attempted() == 0 {
		return 0, false
	}
	return float64(n) * 100 / float64(o.Attempted()), true
}

// Latency is a histogram of delivery times.
type Latency struct {
	// Bins counts the messages per bin of LatencyBounds.
	Bins  []int
	Total int
}

// Median estimates the median delivery time: the bin that holds the
// middle message, and a point within it as far along as the middle
// message is among the bin's. low and high are the bin's bounds; high is
// zero for the last, open bin, whose estimate is its lower bound. ok is
// false without delivered messages.
func (l Latency) Median() (median, low, high time.Duration, ok bool) { return l.Quantile(0.5) }

// Within is the share of the histogram's messages whose time was below d,
// in percent, counting whole bins only (d should be one of LatencyBounds);
// false when it counts none.
func (l Latency) Within(d time.Duration) (float64, bool) {
	if l.Total == 0 {
		return 0, false
	}
	n := 0
	for i, c := range l.Bins {
		if i < len(LatencyBounds) && LatencyBounds[i] <= d {
			n += c
		}
	}
	return float64(n) * 100 / float64(l.Total), true
}

// Quantile estimates the time below which a share q (0 < q < 1) of the
// messages fall, as Median does for a half.
func (l Latency) Quantile(q float64) (median, low, high time.Duration, ok bool) {
	if l.Total == 0 {
		return 0, 0, 0, false
	}
	middle := float64(l.Total) * q
	seen := 0
	for i, n := range l.Bins {
		if n == 0 || float64(seen+n) < middle {
			seen += n
			continue
		}
		if i > 0 {
			low = LatencyBounds[i-1]
		}
		if i >= len(LatencyBounds) {
			return low, low, 0, true
		}
		high = LatencyBounds[i]
		share := (middle - float64(seen)) / float64(n)
		return low + time.Duration(share*float64(high-low)), low, high, true
	}
	return 0, 0, 0, false
}

// ChannelTrend is one channel's month.
type ChannelTrend struct {
	Channel app.Channel
	// Days are the month's days, oldest first, by status.
	Days    []DashboardBucket
	Outcome Outcome
	Latency Latency
}

// Failure is one reason messages of a channel failed for.
type Failure struct {
	Channel app.Channel
	Reason  string
	Count   int
}

// Trends is a tenant's last TrendDays days: messages per day by channel
// and status, delivery rates and times, and why messages failed.
type Trends struct {
	Location *time.Location
	// From is the first day's start; To is now.
	From, To time.Time
	// Channels holds every channel, in app.Channels' order.
	Channels []ChannelTrend
	// Failures are the TopFailures commonest reasons, commonest first;
	// Failed counts every failure of the month, so the rest are
	// Failed minus their sum.
	Failures []Failure
	Failed   int
	Total    int
}

// TemplateStats is what became of one template's messages.
type TemplateStats struct {
	Outcome
	// From is the start of the period counted; it ends now.
	From time.Time
}

// TrendReader builds the dashboard's month and the template figures.
type TrendReader struct {
	Store app.Store[TrendTx]
	Now   app.Clock
}

// TrendFrom is the start of the month the dashboard shows: midnight in
// loc, TrendDays-1 days before now's day.
func TrendFrom(now time.Time, loc *time.Location) time.Time {
	local := now.In(loc)
	return time.Date(local.Year(), local.Month(), local.Day()-(TrendDays-1), 0, 0, 0, 0, loc)
}

// Load returns the tenant's month.
func (r *TrendReader) Load(ctx context.Context, u *app.User, t *app.Tenant) (*Trends, error) {
	if err := app.RequirePermission(u, app.PermDashboard); err != nil {
		return nil, err
	}
	loc := tenantLocation(t)
	now := r.Now()
	from := TrendFrom(now, loc)
	bounds := make([]time.Time, TrendDays)
	for i := range bounds {
		bounds[i] = time.Date(from.Year(), from.Month(), from.Day()+i, 0, 0, 0, 0, loc)
	}
	var counts []MessageCount
	var latency []LatencyCount
	var failures []FailureCount
	err := r.Store.InTenant(ctx, t.ID, func(tx TrendTx) (err error) {
		if counts, err = tx.MessageCounts(ctx, t.ID, bounds, now); err != nil {
			return err
		}
		if latency, err = tx.LatencyCounts(ctx, t.ID, from, now); err != nil {
			return err
		}
		failures, err = tx.FailureCounts(ctx, t.ID, from, now)
		return err
	})
	if err != nil {
		return nil, err
	}

	tr := &Trends{Location: loc, From: from, To: now}
	index := map[app.Channel]int{}
	for i, ch := range app.Channels {
		index[ch] = i
		days := make([]DashboardBucket, len(bounds))
		for d, start := range bounds {
			end := now
			if d+1 < len(bounds) {
				end = bounds[d+1]
			}
			days[d] = DashboardBucket{Start: start, End: end, Counts: map[string]int{}}
		}
		tr.Channels = append(tr.Channels, ChannelTrend{
			Channel: ch, Days: days, Latency: Latency{Bins: make([]int, len(LatencyBounds)+1)},
		})
	}
	for _, c := range counts {
		i, ok := index[c.Channel]
		if !ok || c.Bucket < 1 || c.Bucket > len(bounds) {
			continue
		}
		ct := &tr.Channels[i]
		day := &ct.Days[c.Bucket-1]
		day.Counts[c.Status] += c.Count
		day.Total += c.Count
		ct.Outcome.Add(c.Status, c.Count)
		tr.Total += c.Count
	}
	for _, l := range latency {
		i, ok := index[l.Channel]
		if !ok || l.Bin < 0 || l.Bin > len(LatencyBounds) {
			continue
		}
		tr.Channels[i].Latency.Bins[l.Bin] += l.Count
		tr.Channels[i].Latency.Total += l.Count
	}
	for _, f := range failures {
		tr.Failures = append(tr.Failures, Failure(f))
		tr.Failed += f.Count
	}
	sort.SliceStable(tr.Failures, func(i, j int) bool {
		a, b := tr.Failures[i], tr.Failures[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Reason != b.Reason {
			return a.Reason < b.Reason
		}
		return index[a.Channel] < index[b.Channel]
	})
	if len(tr.Failures) > TopFailures {
		tr.Failures = tr.Failures[:TopFailures]
	}
	return tr, nil
}

// TemplateStats returns what became of the messages of the templates in
// ids over the last TrendDays days, by template; templates without
// messages have empty stats. Counts are per hour, so the period starts at
// the hour the tenant's day starts in.
func (r *TrendReader) TemplateStats(ctx context.Context, u app.Principal, t *app.Tenant, ids []uuid.UUID) (map[uuid.UUID]*TemplateStats, error) {
	if err := app.RequirePermission(u, app.PermViewTemplates); err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]*TemplateStats, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	now := r.Now()
	from := TrendFrom(now, tenantLocation(t)).UTC().Truncate(time.Hour)
	for _, id := range ids {
		out[id] = &TemplateStats{From: from}
	}
	var counts []TemplateCount
	err := r.Store.InTenant(ctx, t.ID, func(tx TrendTx) (err error) {
		counts, err = tx.TemplateCounts(ctx, t.ID, ids, from, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, c := range counts {
		if s := out[c.TemplateID]; s != nil {
			s.Add(c.Status, c.Count)
		}
	}
	return out, nil
}

// tenantLocation is the tenant's timezone, UTC when it names none Go
// knows.
func tenantLocation(t *app.Tenant) *time.Location {
	loc, err := time.LoadLocation(t.Timezone)
	if err != nil {
		return time.UTC
	}
	return loc
}
