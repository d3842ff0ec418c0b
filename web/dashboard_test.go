package web_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// dashMessage inserts one message of a tenant created at the given time, as
// the pipeline would have left it.
func (c *consoleBundle) dashMessage(tenantID uuid.UUID, ch app.Channel, status string, at time.Time, stale bool) {
	c.T.Helper()
	var staleAt *time.Time
	if stale {
		s := at.Add(24 * time.Hour)
		staleAt = &s
	}
	id := uuid.New()
	c.Exec(`INSERT INTO messages (id, tenant_id, correlation_id, idempotency_key, trigger_event, channel, to_address, status,
			queued_at, created_at, updated_at, stale_at)
		VALUES ($1, $2, 'evt-dash', $3, 'BOOKING_CONFIRMED', $4, 'anna@example.com', $5, $6, $6, $6, $7)`,
		id, tenantID, "dash:"+id.String(), ch, status, at, staleAt)
}

// hourStart and dayStart are the dashboard's buckets of t in loc.
func hourStart(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), 0, 0, 0, loc)
}

func dayStart(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, loc)
}

// barCounts reads the chart: bucket start (UTC, RFC 3339) -> status -> count.
func barCounts(doc *goquery.Document) map[string]map[string]int {
	out := map[string]map[string]int{}
	doc.Find("svg.chart g.bar").Each(func(_ int, g *goquery.Selection) {
		start, _ := g.Attr("data-start")
		out[start] = map[string]int{}
		g.Find("rect.seg").Each(func(_ int, r *goquery.Selection) {
			st, _ := r.Attr("data-status")
			n, _ := strconv.Atoi(r.AttrOr("data-count", ""))
			out[start][st] = n
		})
	})
	return out
}

func sumBars(bars map[string]map[string]int) int {
	n := 0
	for _, b := range bars {
		for _, v := range b {
			n += v
		}
	}
	return n
}

// totalsCell reads the totals table under the chart.
func totalsCell(doc *goquery.Document, channel, status string) string {
	return text(doc.Find(fmt.Sprintf(`table.totals tr[data-channel=%q] td[data-status=%q]`, channel, status)))
}

func TestConsoleDashboard_EmptyTenant(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})

	t.Run("SaysHowToStart", func(t *testing.T) {
		doc := c.signIn(asManager).page("/t/acme/")
		require.Equal(t, "No messages yet", text(doc.Find(".empty .empty-title")))
		curl := doc.Find("pre.curl").Text()
		require.Contains(t, curl, "curl -X POST "+strings.TrimSuffix(c.Config.BaseURL.String(), "/")+"/api/v1/notifications")
		require.Contains(t, curl, `Authorization: Bearer $HERALD_API_KEY`)
		require.Contains(t, curl, `"trigger_event": "BOOKING_CONFIRMED"`)
		require.NotContains(t, doc.Text(), c.Key, "no API key is ever shown")
		href, ok := doc.Find(`.empty a[href="/t/acme/api-keys"]`).Attr("href")
		require.True(t, ok, "managers are sent to create a key")
		require.Equal(t, "/t/acme/api-keys", href)
		require.Zero(t, doc.Find("svg.chart").Length(), "no chart of nothing")
	})

	t.Run("SupportIsToldWhoCanCreateKeys", func(t *testing.T) {
		doc := c.signIn(asSupport).page("/t/acme/")
		require.Equal(t, 1, doc.Find("pre.curl").Length())
		require.Zero(t, doc.Find(`a[href="/t/acme/api-keys"]`).Length())
		require.Contains(t, text(doc.Find(".empty")), "A manager of this tenant can create an API key")
	})

	t.Run("ScheduledEventsAloneShowTheDashboard", func(t *testing.T) {
		body := webtest.Notification("evt-later", "BK-LATER")
		sendAt := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
		body["send_at"] = sendAt.Format(time.RFC3339)
		c.Submit(body)
		doc := c.signIn(asManager).page("/t/acme/")
		require.Zero(t, doc.Find(".empty pre.curl").Length())
		require.Equal(t, 1, doc.Find("svg.chart").Length())
		require.Equal(t, "1", text(doc.Find(`dd[data-waiting=scheduled] a`)))
		require.Equal(t, sendAt.Format(time.RFC3339), doc.Find(`dd[data-waiting=scheduled] time`).Last().AttrOr("datetime", ""), "next due shown")
		require.Contains(t, text(doc.Find(".dash-chart")), "No messages in the last 24 hours")
	})
}

func TestConsoleDashboard_Figures(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	// A zone half an hour off UTC: hours and days must be the tenant's.
	c.Exec(`UPDATE tenants SET timezone = 'Asia/Kolkata' WHERE id = $1`, c.Tenant.ID)
	loc, err := time.LoadLocation("Asia/Kolkata")
	require.NoError(t, err)

	now := time.Now()
	recent, earlier, days, old := now.Add(-10*time.Minute), now.Add(-3*time.Hour), now.Add(-3*24*time.Hour), now.Add(-10*24*time.Hour)
	type row struct {
		at     time.Time
		ch     app.Channel
		status string
		stale  bool
	}
	rows := []row{
		{recent, app.Email, app.MessageDelivered, false}, {recent, app.Email, app.MessageDelivered, false},
		{recent, app.WhatsApp, app.MessageRead, false}, {recent, app.SMS, app.MessageFailed, false},
		{earlier, app.Email, app.MessageFailed, false}, {earlier, app.Email, app.MessageQueued, false},
		{days, app.WhatsApp, app.MessageDelivered, false}, {days, app.WhatsApp, app.MessageDelivered, false},
		{days, app.WhatsApp, app.MessageDelivered, false}, {days, app.Email, app.MessageSent, true},
		{old, app.Email, app.MessageSent, true},
	}
	for range 5 {
		rows = append(rows, row{old, app.Email, app.MessageDelivered, false})
	}
	for _, r := range rows {
		c.dashMessage(c.Tenant.ID, r.ch, r.status, r.at, r.stale)
	}
	// expect is what the chart must show: bucket -> status -> count, for
	// the rows created since from.
	expect := func(bucket func(time.Time, *time.Location) time.Time, from time.Time) map[string]map[string]int {
		out := map[string]map[string]int{}
		for _, r := range rows {
			if r.at.Before(from) {
				continue
			}
			k := bucket(r.at, loc).UTC().Format(time.RFC3339)
			if out[k] == nil {
				out[k] = map[string]int{}
			}
			out[k][r.status]++
		}
		return out
	}
	nonEmpty := func(bars map[string]map[string]int) map[string]map[string]int {
		out := map[string]map[string]int{}
		for k, v := range bars {
			if len(v) > 0 {
				out[k] = v
			}
		}
		return out
	}
	// Another tenant's messages never count.
	for range 4 {
		c.dashMessage(c.other.ID, app.Email, app.MessageFailed, recent, true)
	}
	c.dashMessage(c.other.ID, app.Email, app.MessageQueued, recent, false)

	s := c.signIn(asSupport)

	t.Run("Last24Hours", func(t *testing.T) {
		doc := s.page("/t/acme/")
		require.Equal(t, "6", text(doc.Find(`[data-stat=total]`)))
		require.Equal(t, "2", text(doc.Find(`[data-stat=failed]`)))
		require.Equal(t, "2", text(doc.Find(`[data-stat=stale]`)), "stale counts every stale message, whenever it was sent")
		require.Equal(t, "1", text(doc.Find(`[data-stat=queued]`)))

		bars := barCounts(doc)
		require.Len(t, bars, 24, "one bar per hour")
		require.Equal(t, 6, sumBars(bars))
		require.Equal(t, expect(hourStart, hourStart(now, loc).Add(-23*time.Hour)), nonEmpty(bars))
		r := bars[hourStart(recent, loc).UTC().Format(time.RFC3339)]
		require.Equal(t, map[string]int{"DELIVERED": 2, "READ": 1, "FAILED": 1}, r)
		e := bars[hourStart(earlier, loc).UTC().Format(time.RFC3339)]
		require.Equal(t, map[string]int{"FAILED": 1, "QUEUED": 1}, e)
		first := doc.Find("svg.chart g.bar").First().AttrOr("data-start", "")
		require.Equal(t, hourStart(now, loc).Add(-23*time.Hour).UTC().Format(time.RFC3339), first, "the oldest bar starts 23 hours before the current hour")

		// Stacked: each bar's segments sit on top of each other.
		g := doc.Find(fmt.Sprintf(`svg.chart g.bar[data-start=%q]`, hourStart(recent, loc).UTC().Format(time.RFC3339)))
		require.Equal(t, 3, g.Find("rect").Length())
		require.Contains(t, text(g.Find("title")), "4 messages (2 delivered, 1 read, 1 failed)")

		require.Equal(t, "Messages per hour, last 24 hours, all channels", text(doc.Find("svg.chart > title")))
		require.Contains(t, text(doc.Find("svg.chart > desc")), "6 messages in total: 1 queued, 2 delivered, 1 read, 2 failed")
		require.Equal(t, "img", doc.Find("svg.chart").AttrOr("role", ""))
		require.Equal(t, 6, doc.Find("ul.legend li").Length())

		require.Equal(t, "2", totalsCell(doc, "EMAIL", "DELIVERED"))
		require.Equal(t, "1", totalsCell(doc, "EMAIL", "FAILED"))
		require.Equal(t, "1", totalsCell(doc, "EMAIL", "QUEUED"))
		require.Equal(t, "4", totalsCell(doc, "EMAIL", "TOTAL"))
		require.Equal(t, "1", totalsCell(doc, "WHATSAPP", "READ"))
		require.Equal(t, "1", totalsCell(doc, "SMS", "FAILED"))
		require.Equal(t, "0", totalsCell(doc, "WEBHOOK", "TOTAL"))
		require.Equal(t, "2", totalsCell(doc, "ALL", "FAILED"))
		require.Equal(t, "6", totalsCell(doc, "ALL", "TOTAL"))

		require.Equal(t, "/t/acme/messages?status=FAILED", doc.Find(`a[data-link=failed]`).AttrOr("href", ""))
		require.Equal(t, "/t/acme/messages?stale=1", doc.Find(`a[data-link=stale]`).AttrOr("href", ""))
		require.Equal(t, "/t/acme/?range=7d", doc.Find(`nav[aria-label=Period] a:not([aria-current])`).AttrOr("href", ""))
		require.Contains(t, text(doc.Find(".page-head p")), "Asia/Kolkata")
	})

	t.Run("Last7Days", func(t *testing.T) {
		doc := s.page("/t/acme/?range=7d")
		require.Equal(t, "10", text(doc.Find(`[data-stat=total]`)))
		require.Equal(t, "2", text(doc.Find(`[data-stat=failed]`)))
		bars := barCounts(doc)
		require.Len(t, bars, 7, "one bar per day")
		require.Equal(t, 10, sumBars(bars))
		d := bars[dayStart(days, loc).UTC().Format(time.RFC3339)]
		require.Equal(t, map[string]int{"DELIVERED": 3, "SENT": 1}, d)
		require.Equal(t, expect(dayStart, dayStart(now, loc).AddDate(0, 0, -6)), nonEmpty(bars))
		require.Equal(t, dayStart(now, loc).AddDate(0, 0, -6).UTC().Format(time.RFC3339), doc.Find("svg.chart g.bar").First().AttrOr("data-start", ""))
		require.Equal(t, "3", totalsCell(doc, "WHATSAPP", "DELIVERED"))
		require.Equal(t, "1", totalsCell(doc, "WHATSAPP", "READ"))
		require.Equal(t, "1", totalsCell(doc, "EMAIL", "SENT"))
		require.Equal(t, "10", totalsCell(doc, "ALL", "TOTAL"))
		require.Equal(t, "Messages per day, last 7 days, all channels", text(doc.Find("svg.chart > title")))
	})

	t.Run("OneChannel", func(t *testing.T) {
		doc := s.page("/t/acme/?channel=EMAIL")
		require.Equal(t, 4, sumBars(barCounts(doc)), "the chart shows e-mail only")
		require.Equal(t, "6", totalsCell(doc, "ALL", "TOTAL"), "the totals keep every channel")
		require.Contains(t, text(doc.Find("svg.chart > title")), "E-mail")
		require.Equal(t, "page", doc.Find(`nav[aria-label=Channel] a[href="/t/acme/?channel=EMAIL"]`).AttrOr("aria-current", ""))
		require.Equal(t, "/t/acme/?channel=EMAIL&range=7d", doc.Find(`nav[aria-label=Period] a:not([aria-current])`).AttrOr("href", ""), "the range switch keeps the channel")
	})

	t.Run("BadRangeOrChannel", func(t *testing.T) {
		doc := s.page("/t/acme/?range=1y")
		require.Contains(t, text(doc.Find(".flash-warning")), `There is no range "1y": choose 24h or 7d.`)
		require.Len(t, barCounts(doc), 24)
		doc = s.page("/t/acme/?channel=PIGEON")
		require.Contains(t, text(doc.Find(".flash-warning")), `There is no channel "PIGEON"`)
		require.Equal(t, 6, sumBars(barCounts(doc)))
	})

	t.Run("WaitingWork", func(t *testing.T) {
		doc := s.page("/t/acme/")
		dd := doc.Find(`dd[data-waiting=queued]`)
		require.Equal(t, "1", text(dd.Find("a")))
		require.Equal(t, "/t/acme/messages?status=QUEUED", dd.Find("a").AttrOr("href", ""))
		require.Equal(t, earlier.UTC().Format(time.RFC3339), dd.Find("time").AttrOr("datetime", ""))
		require.Contains(t, text(dd.Find("time")), "IST", "in the tenant's timezone")
		require.Contains(t, text(dd), "3 hours")
		require.Equal(t, "0", text(doc.Find(`dd[data-waiting=scheduled] a`)))
	})

	t.Run("OtherTenantSeesOnlyItsOwn", func(t *testing.T) {
		doc := c.signIn(asOtherManager).page("/t/globex/")
		require.Equal(t, "5", text(doc.Find(`[data-stat=total]`)))
		require.Equal(t, "4", text(doc.Find(`[data-stat=stale]`)))
		require.Equal(t, "1", text(doc.Find(`[data-stat=queued]`)))
	})
}

func TestConsoleDashboard_Quota(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	month := time.Now().UTC()
	month = time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC)
	usage := func(tenantID uuid.UUID, ch app.Channel, m time.Time, shard, n int) {
		c.Exec(`INSERT INTO usage_counters (tenant_id, channel, month, shard, count) VALUES ($1, $2, $3, $4, $5)`, tenantID, ch, m, shard, n)
	}
	// acme is on PRO: 1000 e-mails, 500 WhatsApp, 500 SMS, webhooks unlimited.
	usage(c.Tenant.ID, app.Email, month, 0, 850)
	usage(c.Tenant.ID, app.Email, month, 7, 10)
	usage(c.Tenant.ID, app.WhatsApp, month, 2, 100)
	usage(c.Tenant.ID, app.Webhook, month, 0, 7)
	usage(c.Tenant.ID, app.SMS, month.AddDate(0, -1, 0), 0, 499)
	usage(c.other.ID, app.WhatsApp, month, 0, 40)
	c.dashMessage(c.Tenant.ID, app.Email, app.MessageDelivered, time.Now().Add(-time.Minute), false)

	doc := c.signIn(asManager).page("/t/acme/")
	row := func(ch app.Channel) *goquery.Selection {
		return doc.Find(fmt.Sprintf(`table.quota tr[data-channel=%q]`, ch))
	}
	require.Contains(t, text(doc.Find("#quota-heading")), month.Format("January 2006"))
	require.Contains(t, text(doc.Find("#quota-heading").Parent()), "Plan PRO")

	email := row(app.Email)
	require.Equal(t, "860 of 1000", text(email.Find(".quota-used")), "shards are summed")
	require.Equal(t, "86 %", text(email.Find(".quota-pct")))
	require.True(t, email.HasClass("quota-warn"), "above 80 % warns")
	require.Equal(t, "86", email.Find("rect.fill").AttrOr("width", ""))
	require.Equal(t, "86 % of the monthly quota used", email.Find("svg").AttrOr("aria-label", ""))

	wa := row(app.WhatsApp)
	require.Equal(t, "100 of 500", text(wa.Find(".quota-used")))
	require.Equal(t, "20 %", text(wa.Find(".quota-pct")))
	require.False(t, wa.HasClass("quota-warn"))

	sms := row(app.SMS)
	require.Equal(t, "0 of 500", text(sms.Find(".quota-used")), "last month's sends do not count")

	hook := row(app.Webhook)
	require.Equal(t, "unlimited", text(hook.Find(".quota-limit")))
	require.Equal(t, "7 sent", text(hook.Find(".quota-used")))
	require.Zero(t, hook.Find("svg").Length())

	t.Run("UsedUp", func(t *testing.T) {
		usage(c.Tenant.ID, app.WhatsApp, month, 3, 400)
		doc := c.signIn(asManager).page("/t/acme/")
		wa := doc.Find(`table.quota tr[data-channel="WHATSAPP"]`)
		require.Equal(t, "100 %", strings.TrimSuffix(text(wa.Find(".quota-pct")), " used up"))
		require.Equal(t, "used up", text(wa.Find(".badge")))
	})

	t.Run("ConfiguredQuotas", func(t *testing.T) {
		// The quotas come from the configuration, as the dispatcher's do.
		c2 := setupConsole(t, webtest.Options{NoWorkers: true, Config: func(cfg *app.Config) {
			cfg.Quotas[app.PlanPro][app.Email], cfg.Quotas[app.PlanPro][app.SMS] = app.Unlimited, 20
		}})
		c2.dashMessage(c2.Tenant.ID, app.Email, app.MessageDelivered, time.Now().Add(-time.Minute), false)
		c2.Exec(`INSERT INTO usage_counters (tenant_id, channel, month, shard, count) VALUES ($1, 'SMS', $2, 0, 17)`, c2.Tenant.ID, month)
		doc := c2.signIn(asManager).page("/t/acme/")
		require.Equal(t, "unlimited", text(doc.Find(`table.quota tr[data-channel="EMAIL"] .quota-limit`)))
		require.Equal(t, "17 of 20", text(doc.Find(`table.quota tr[data-channel="SMS"] .quota-used`)))
		require.Equal(t, "85 %", text(doc.Find(`table.quota tr[data-channel="SMS"] .quota-pct`)))
	})
}

// TestConsoleDashboard_Pipeline checks the dashboard against messages the
// real pipeline made: events through the API, River workers, the sandbox.
func TestConsoleDashboard_Pipeline(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})
	ids := []uuid.UUID{c.Submit(webtest.Notification("evt-d1", "BK-D1")), c.Submit(webtest.Notification("evt-d2", "BK-D2"))}
	for _, id := range ids {
		c.WaitMessages(id, "READ", webtest.AllStatus(app.MessageRead))
	}
	for _, path := range []string{"/t/acme/", "/t/acme/?range=7d"} {
		doc := c.signIn(asManager).page(path)
		require.Equal(t, "4", text(doc.Find(`[data-stat=total]`)), path)
		read := 0
		for _, b := range barCounts(doc) {
			read += b["READ"]
		}
		require.Equal(t, 4, read, path)
		require.Equal(t, "2", totalsCell(doc, "EMAIL", "READ"))
		require.Equal(t, "2", totalsCell(doc, "WHATSAPP", "READ"))
		require.Equal(t, "2 of 1000", text(doc.Find(`table.quota tr[data-channel="EMAIL"] .quota-used`)))
		require.Equal(t, "0", text(doc.Find(`[data-stat=queued]`)))
	}
	_, resp := c.signIn(asSupport).get("/t/acme/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
