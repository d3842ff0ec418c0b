package views

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// Chart is the geometry of the dashboard's stacked bar chart, computed here
// so that the template only places what it is given. Coordinates are in
// the SVG's viewBox units.
type Chart struct {
	Width, Height float64
	// The plot area: bars stand on Bottom and reach up to Top at most.
	Left, Right, Top, Bottom float64
	Bars                     []ChartBar
	YTicks                   []ChartTick
	XLabels                  []ChartTick
	Title, Desc              string
}

// ChartBar is one bucket: its stacked segments, bottom first.
type ChartBar struct {
	Start    time.Time
	X, Width float64
	Total    int
	Title    string
	Segments []ChartSegment
}

// ChartSegment is one status's share of a bar.
type ChartSegment struct {
	Status string
	Count  int
	Y, H   float64
}

// ChartTick is one axis label at a position (Y for the value axis, X for
// the time axis).
type ChartTick struct {
	Pos   float64
	Label string
}

// Chart dimensions in viewBox units; the SVG scales to its container.
const (
	chartWidth  = 760
	chartHeight = 280
	chartLeft   = 48
	chartRight  = 12
	chartTop    = 14
	chartBottom = 36
)

// NewChart lays out the dashboard's buckets as stacked bars per status.
func NewChart(d *console.Dashboard) Chart {
	c := Chart{
		Width: chartWidth, Height: chartHeight,
		Left: chartLeft, Right: chartWidth - chartRight, Top: chartTop, Bottom: chartHeight - chartBottom,
	}
	loc := d.Location
	if loc == nil {
		loc = time.UTC
	}
	unit := "hour"
	if d.Query.Range == console.Range7d {
		unit = "day"
	}
	scope := "all channels"
	if d.Query.Channel != "" {
		scope = dashChannel(d.Query.Channel)
	}
	c.Title = fmt.Sprintf("Messages per %s, %s, %s", unit, d.Query.Range.Label(), scope)

	maxTotal, sums := 0, map[string]int{}
	for _, b := range d.Buckets {
		maxTotal = max(maxTotal, b.Total)
		for st, n := range b.Counts {
			sums[st] += n
		}
	}
	step := niceStep(maxTotal)
	top := step * 4
	plotH := c.Bottom - c.Top
	for i := 0; i <= 4; i++ {
		v := step * i
		c.YTicks = append(c.YTicks, ChartTick{Pos: c.Bottom - plotH*float64(v)/float64(top), Label: strconv.Itoa(v)})
	}

	n := len(d.Buckets)
	if n == 0 {
		return c
	}
	slot := (c.Right - c.Left) / float64(n)
	barW := slot * 0.68
	total := 0
	for i, b := range d.Buckets {
		x := c.Left + slot*float64(i) + (slot-barW)/2
		bar := ChartBar{Start: b.Start, X: x, Width: barW, Total: b.Total}
		y := c.Bottom
		var parts []string
		for _, st := range console.MessageStatuses {
			cnt := b.Counts[st]
			if cnt == 0 {
				continue
			}
			h := plotH * float64(cnt) / float64(top)
			y -= h
			bar.Segments = append(bar.Segments, ChartSegment{Status: st, Count: cnt, Y: y, H: h})
			parts = append(parts, fmt.Sprintf("%d %s", cnt, strings.ToLower(st)))
		}
		total += b.Total
		bar.Title = bucketLabel(d.Query.Range, b, loc) + ": " + dashPlural(b.Total, "message", "messages")
		if len(parts) > 0 {
			bar.Title += " (" + strings.Join(parts, ", ") + ")"
		}
		c.Bars = append(c.Bars, bar)
		if label := axisLabel(d.Query.Range, b.Start.In(loc)); label != "" {
			c.XLabels = append(c.XLabels, ChartTick{Pos: x + barW/2, Label: label})
		}
	}

	var parts []string
	for _, st := range console.MessageStatuses {
		if sums[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", sums[st], strings.ToLower(st)))
		}
	}
	c.Desc = fmt.Sprintf("Stacked bars of the messages created per %s in the %s (%s), split by their current status. %s in total",
		unit, d.Query.Range.Label(), loc.String(), dashPlural(total, "message", "messages"))
	if len(parts) > 0 {
		c.Desc += ": " + strings.Join(parts, ", ")
	}
	c.Desc += "."
	return c
}

// niceStep returns a tick step of 1, 2 or 5 times a power of ten such that
// four steps reach at least maxValue.
func niceStep(maxValue int) int {
	if maxValue <= 4 {
		return 1
	}
	raw := float64(maxValue) / 4
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*pow >= raw {
			return int(m * pow)
		}
	}
	return int(10 * pow)
}

// axisLabel labels every day, and every third hour (the first bar that
// falls on one), so that labels never crowd.
func axisLabel(r console.DashboardRange, t time.Time) string {
	if r == console.Range7d {
		return t.Format("Mon 2")
	}
	if t.Hour()%3 == 0 {
		return t.Format("15:04")
	}
	return ""
}

func bucketLabel(r console.DashboardRange, b console.DashboardBucket, loc *time.Location) string {
	if r == console.Range7d {
		return b.Start.In(loc).Format("Mon 2 Jan")
	}
	return b.Start.In(loc).Format("Mon 15:04") + "–" + b.End.In(loc).Format("15:04")
}

func dashPlural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// fmtCoord formats an SVG coordinate.
func fmtCoord(v float64) string {
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// dashChannel names a channel for people.
func dashChannel(ch app.Channel) string {
	switch ch {
	case app.WhatsApp:
		return "WhatsApp"
	case app.Email:
		return "E-mail"
	case app.SMS:
		return "SMS"
	case app.Webhook:
		return "Webhook"
	}
	return string(ch)
}

// ageSince says how long ago t was, from now, in the largest two units.
func ageSince(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "less than a minute"
	case d < time.Hour:
		return dashPlural(int(d/time.Minute), "minute", "minutes")
	case d < 24*time.Hour:
		h := int(d / time.Hour)
		m := int((d % time.Hour) / time.Minute)
		if m == 0 {
			return dashPlural(h, "hour", "hours")
		}
		return dashPlural(h, "hour", "hours") + " " + dashPlural(m, "minute", "minutes")
	}
	days := int(d / (24 * time.Hour))
	h := int((d % (24 * time.Hour)) / time.Hour)
	if h == 0 {
		return dashPlural(days, "day", "days")
	}
	return dashPlural(days, "day", "days") + " " + dashPlural(h, "hour", "hours")
}
