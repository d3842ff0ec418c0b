package views

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// TrendsView is the dashboard's month: one chart of messages per day for
// each channel, delivery rates and times, and the top failure reasons.
type TrendsView struct {
	T *console.Trends
	// Charts holds the channels that had messages this month, in
	// app.Channels' order; Quiet names the others.
	Charts []DayChart
	Quiet  []app.Channel
	// MessagesHref is the messages explorer's path.
	MessagesHref string
}

// DayChart is one channel's messages per day.
type DayChart struct {
	Channel app.Channel
	// ID prefixes the ids of the chart's title and description.
	ID    string
	Chart Chart
	Total int
}

// The month charts' dimensions in viewBox units: narrow enough that their
// text stays readable on a phone, where a chart fills the screen's width.
const (
	dayChartWidth  = 360
	dayChartHeight = 190
	dayChartLeft   = 40
	dayChartRight  = 20
	dayChartTop    = 10
	dayChartBottom = 26
)

// NewTrendsView lays out the month's charts.
func NewTrendsView(t *console.Trends, messagesHref string) TrendsView {
	v := TrendsView{T: t, MessagesHref: messagesHref}
	for _, ct := range t.Channels {
		if ct.Outcome.Total == 0 {
			v.Quiet = append(v.Quiet, ct.Channel)
			continue
		}
		v.Charts = append(v.Charts, DayChart{
			Channel: ct.Channel, ID: "trend-" + strings.ToLower(string(ct.Channel)),
			Chart: newDayChart(ct, t.Location), Total: ct.Outcome.Total,
		})
	}
	return v
}

// newDayChart lays out one channel's days as stacked bars per status.
func newDayChart(ct console.ChannelTrend, loc *time.Location) Chart {
	c := Chart{
		Width: dayChartWidth, Height: dayChartHeight,
		Left: dayChartLeft, Right: dayChartWidth - dayChartRight, Top: dayChartTop, Bottom: dayChartHeight - dayChartBottom,
	}
	name := dashChannel(ct.Channel)
	c.Title = fmt.Sprintf("%s messages per day, last %d days", name, len(ct.Days))
	maxTotal := 0
	for _, d := range ct.Days {
		maxTotal = max(maxTotal, d.Total)
	}
	step := niceStep(maxTotal)
	top := step * 4
	plotH := c.Bottom - c.Top
	for i := 0; i <= 4; i++ {
		v := step * i
		c.YTicks = append(c.YTicks, ChartTick{Pos: c.Bottom - plotH*float64(v)/float64(top), Label: strconv.Itoa(v)})
	}
	n := len(ct.Days)
	if n == 0 {
		return c
	}
	slot := (c.Right - c.Left) / float64(n)
	barW := slot * 0.7
	busiest := ct.Days[0]
	for i, d := range ct.Days {
		x := c.Left + slot*float64(i) + (slot-barW)/2
		bar := ChartBar{Start: d.Start, X: x, Width: barW, Total: d.Total}
		y := c.Bottom
		var parts []string
		for _, st := range console.MessageStatuses {
			cnt := d.Counts[st]
			if cnt == 0 {
				continue
			}
			h := plotH * float64(cnt) / float64(top)
			y -= h
			bar.Segments = append(bar.Segments, ChartSegment{Status: st, Count: cnt, Y: y, H: h})
			parts = append(parts, fmt.Sprintf("%d %s", cnt, strings.ToLower(st)))
		}
		bar.Title = d.Start.In(loc).Format("Mon 2 Jan") + ": " + dashPlural(d.Total, "message", "messages")
		if len(parts) > 0 {
			bar.Title += " (" + strings.Join(parts, ", ") + ")"
		}
		c.Bars = append(c.Bars, bar)
		// A label a week, counted back from today, so the newest day is
		// always named.
		if (n-1-i)%7 == 0 {
			c.XLabels = append(c.XLabels, ChartTick{Pos: x + barW/2, Label: d.Start.In(loc).Format("2 Jan")})
		}
		if d.Total > busiest.Total {
			busiest = d
		}
	}
	o := ct.Outcome
	var parts []string
	for _, st := range console.MessageStatuses {
		if o.Counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", o.Counts[st], strings.ToLower(st)))
		}
	}
	c.Desc = fmt.Sprintf("Stacked bars of the %s messages created each day from %s to %s (%s), split by their current status. %s in total",
		name, ct.Days[0].Start.In(loc).Format("2 Jan"), ct.Days[n-1].Start.In(loc).Format("2 Jan"), loc.String(),
		dashPlural(o.Total, "message", "messages"))
	if len(parts) > 0 {
		c.Desc += ": " + strings.Join(parts, ", ")
	}
	c.Desc += fmt.Sprintf("; the busiest day was %s with %s.", busiest.Start.In(loc).Format("Mon 2 Jan"), dashPlural(busiest.Total, "message", "messages"))
	return c
}

// percent formats a share in percent: one decimal below 100, none at 100.
// The space before the sign does not break.
func percent(v float64) string {
	if v >= 99.95 {
		return "100\u00a0%"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "\u00a0%"
}

// rateDetail says what a channel's delivery rate is a share of, and how
// its median was estimated.
func rateDetail(ct console.ChannelTrend) string {
	o := ct.Outcome
	s := "of " + dashPlural(o.Attempted(), "message", "messages") + " sent or failed"
	if o.Failed() > 0 {
		s += ", " + shareText(o, o.Failed()) + " failed"
	}
	_, within := medianText(ct.Latency)
	return s + "; median " + within + "."
}

// shareText is n as a share of the outcome's attempted messages, or a dash.
func shareText(o console.Outcome, n int) string {
	r, ok := o.Rate(n)
	if !ok {
		return "–"
	}
	return percent(r)
}

// rateWidth is n's share of the outcome's attempted messages as a width
// out of 100.
func rateWidth(o console.Outcome, n int) float64 {
	r, _ := o.Rate(n)
	return r
}

// rateLabel describes a channel's delivery bar for screen readers.
func rateLabel(o console.Outcome) string {
	if o.Attempted() == 0 {
		return "Nothing sent yet"
	}
	pending := o.Sent() - o.Delivered()
	return fmt.Sprintf("%s delivered, %s sent without a delivery receipt, %s failed, of %s",
		shareText(o, o.Delivered()), shareText(o, pending), shareText(o, o.Failed()),
		dashPlural(o.Attempted(), "message sent or failed", "messages sent or failed"))
}

// durationText says a duration the way people read it: seconds below a
// minute, minutes below an hour, hours after.
func durationText(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "\u00a0s"
	case d < time.Minute:
		return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + "\u00a0s"
	case d < time.Hour:
		return strconv.FormatFloat(d.Minutes(), 'f', 1, 64) + "\u00a0min"
	}
	return strconv.FormatFloat(d.Hours(), 'f', 1, 64) + "\u00a0h"
}

// boundText names a histogram bound: 1 s, 2 min, 6 h.
func boundText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "\u00a0s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "\u00a0min"
	}
	return strconv.Itoa(int(d/time.Hour)) + "\u00a0h"
}

// medianText is a channel's median time to delivered, and the bin it was
// estimated in.
func medianText(l console.Latency) (median, within string) {
	m, low, high, ok := l.Median()
	switch {
	case !ok:
		return "–", "unknown, nothing delivered yet"
	case high == 0:
		return "over " + boundText(low), "more than " + boundText(low) + " for half of them"
	case low == 0:
		return "under " + boundText(high), "estimated within 0–" + boundText(high)
	}
	return "about " + durationText(m), "estimated within " + boundText(low) + "–" + boundText(high)
}

// failureLabel says in words why messages failed; the reason's code is
// shown beside it.
func failureLabel(reason string) string {
	if ch, ok := strings.CutPrefix(reason, app.ReasonFallbackTriggered); ok {
		return "Failed, then sent by " + dashChannel(app.Channel(ch)) + " instead"
	}
	switch reason {
	case "":
		return "No reason recorded"
	case app.ReasonNoTemplates:
		return "No template for the event, channel and language"
	case app.ReasonNoActiveChannels:
		return "No active account on the channel"
	case app.ReasonNoAddress:
		return "The recipient has no address on the channel"
	case app.ReasonOptedOut:
		return "The recipient opted out"
	case app.ReasonChannelSuspended:
		return "The channel account is suspended"
	case app.ReasonQuotaExceeded:
		return "The monthly quota was used up"
	case app.ReasonBudgetExceeded:
		return "The monthly budget was used up"
	case app.ReasonSMSCountry:
		return "The tenant does not send SMS to the number's country"
	case app.ReasonSMSInternational:
		return "The tenant's daily cap of SMS abroad was used up"
	case app.ReasonSMSRecipient:
		return "The number had its daily cap of SMS"
	case app.ReasonProviderRejected:
		return "The provider refused the message"
	case app.ReasonRetriesExhausted:
		return "The provider kept failing; every retry was used"
	case app.ReasonOutcomeUnknown:
		return "No answer from the provider and no confirmation since: it may have arrived; check with the passenger before resending"
	case app.ReasonWhatsAppTemplateRequired:
		return "WhatsApp needs an approved Meta template here"
	case app.ReasonExpired:
		return "It expired before it could be sent"
	}
	// Receipts give provider_code (see app.ReceiptFailedReason).
	provider, code, _ := strings.Cut(reason, "_")
	name := map[string]string{"meta": "Meta (WhatsApp)", "ses": "Amazon SES (e-mail)", "sns": "Amazon SNS (SMS)", "sandbox": "The sandbox"}[provider]
	if name == "" || code == "" {
		return "The provider reported a failure"
	}
	return name + " reported " + strings.ReplaceAll(code, "_", " ")
}

// failureHref links a failure reason to its messages in the explorer:
// failed, on the channel, with the reason, created in the month shown.
func (v TrendsView) failureHref(f console.Failure) string {
	q := url.Values{}
	q.Set("status", app.MessageFailed)
	q.Set("channel", string(f.Channel))
	if f.Reason != "" {
		q.Set("reason", f.Reason)
	}
	q.Set("from", v.T.From.In(v.T.Location).Format("2006-01-02"))
	q.Set("to", v.T.To.In(v.T.Location).Format("2006-01-02"))
	return v.MessagesHref + "?" + q.Encode()
}

// failureShare is a reason's share of the month's failures, as a width
// out of 100.
func (v TrendsView) failureShare(f console.Failure) float64 {
	if v.T.Failed == 0 {
		return 0
	}
	return float64(f.Count) * 100 / float64(v.T.Failed)
}

// otherFailures counts the month's failures beyond the top reasons.
func (v TrendsView) otherFailures() int {
	n := v.T.Failed
	for _, f := range v.T.Failures {
		n -= f.Count
	}
	return n
}

// quietText names the channels without messages this month.
func (v TrendsView) quietText() string {
	names := make([]string, len(v.Quiet))
	for i, ch := range v.Quiet {
		names[i] = dashChannel(ch)
	}
	return strings.Join(names, ", ")
}

// promiseKind names a promise table for tests and styles.
func promiseKind(platform bool) string {
	if platform {
		return "platform"
	}
	return "tenant"
}

// promiseDay is a tenant's row's day (YYYY-MM-DD), "" for the operator's.
func promiseDay(p *console.Promise, r console.PromiseRow, platform bool) string {
	if platform {
		return ""
	}
	return r.Day.In(p.Location).Format("2006-01-02")
}

// promiseTenant is an operator's row's tenant id, "" for a tenant's.
func promiseTenant(r console.PromiseRow, platform bool) string {
	if !platform {
		return ""
	}
	return r.TenantID.String()
}

// promiseKept is the share handed over within the promise, "–" when
// nothing was due.
func promiseKept(r console.PromiseRow) string {
	k, ok := r.Kept()
	if !ok {
		return "–"
	}
	return strconv.FormatFloat(k, 'f', 1, 64) + "\u00a0%"
}

// promiseClass marks a row that missed the promise's 95% (GOV.UK
// Notify's published target).
func promiseClass(r console.PromiseRow) string {
	if k, ok := r.Kept(); ok && k < 95 {
		return "promise-missed"
	}
	return ""
}

// quantilesText is a histogram's p50 / p95, "–" when it is empty.
func quantilesText(l console.Latency) string {
	if l.Total == 0 {
		return "–"
	}
	return quantileText(l, 0.5) + " / " + quantileText(l, 0.95)
}

// quantileText is one estimated quantile: within its bin, "over" the last
// bound for the open bin.
func quantileText(l console.Latency, q float64) string {
	v, low, high, ok := l.Quantile(q)
	switch {
	case !ok:
		return "–"
	case high == 0:
		return "over " + boundText(low)
	}
	return durationText(v)
}
