package web_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// trendBundle reads the dashboard's month through services whose clock the
// test moves.
type trendBundle struct {
	*consoleBundle
	now     time.Time
	rollups *app.Rollups
	trends  *console.TrendReader
}

func setupTrends(t *testing.T, now time.Time) *trendBundle {
	t.Helper()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	b := &trendBundle{consoleBundle: c, now: now}
	clock := func() time.Time { return b.now }
	b.rollups = &app.Rollups{Store: db.Scope[app.RollupTx](c.Services.Store), Now: clock}
	b.trends = &console.TrendReader{Store: db.Scope[console.TrendTx](c.Services.Store), Now: clock}
	return b
}

// trendMsg is a message as the month counts it.
type trendMsg struct {
	at       time.Time
	status   string
	channel  app.Channel
	took     time.Duration // created to delivered, for DELIVERED and READ
	reason   string
	template *uuid.UUID
}

func (b *trendBundle) insert(tenantID uuid.UUID, m trendMsg) uuid.UUID {
	b.T.Helper()
	id := uuid.New()
	var delivered *time.Time
	if m.status == app.MessageDelivered || m.status == app.MessageRead {
		d := m.at.Add(m.took)
		delivered = &d
	}
	var reason *string
	if m.reason != "" {
		reason = &m.reason
	}
	b.Exec(`INSERT INTO messages (id, tenant_id, correlation_id, idempotency_key, trigger_event, channel, to_address, status,
			failed_reason, template_id, queued_at, delivered_at, created_at, updated_at)
		VALUES ($1, $2, 'evt-trend', $3, 'BOOKING_CONFIRMED', $4, 'anna@example.com', $5, $6, $7, $8, $9, $8, $8)`,
		id, tenantID, "trend:"+id.String(), m.channel, m.status, reason, m.template, m.at, delivered)
	return id
}

func (b *trendBundle) load(t *testing.T) *console.Trends {
	t.Helper()
	tenant, err := b.Services.Tenants.ByID(b.Ctx, b.Tenant.ID)
	require.NoError(t, err)
	tr, err := b.trends.Load(b.Ctx, b.users[asManager], tenant)
	require.NoError(t, err)
	return tr
}

// live loads the month counted from the messages alone.
func (b *trendBundle) live(t *testing.T) *console.Trends {
	t.Helper()
	b.Exec(`UPDATE message_count_marks SET since = through WHERE tenant_id = $1`, b.Tenant.ID)
	tr := b.load(t)
	b.Exec(`UPDATE message_count_marks SET since = through - interval '31 days' WHERE tenant_id = $1`, b.Tenant.ID)
	return tr
}

func (b *trendBundle) rollUp(t *testing.T) {
	t.Helper()
	_, err := b.rollups.RollUp(b.Ctx)
	require.NoError(t, err)
}

// dayCounts returns a channel's days as day -> status -> count, days named
// by their local date.
func dayCounts(tr *console.Trends, ch app.Channel) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, ct := range tr.Channels {
		if ct.Channel != ch {
			continue
		}
		for _, d := range ct.Days {
			if d.Total > 0 {
				out[d.Start.In(tr.Location).Format("2006-01-02")] = d.Counts
			}
		}
	}
	return out
}

func channelOf(tr *console.Trends, ch app.Channel) console.ChannelTrend {
	for _, ct := range tr.Channels {
		if ct.Channel == ch {
			return ct
		}
	}
	return console.ChannelTrend{}
}

func TestTrends_RollUp(t *testing.T) {
	t.Parallel()
	// 10:00 in New York (UTC-5 in November); the month starts at midnight
	// New York time on 26 October, still summer time (UTC-4).
	now := time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC)
	b := setupTrends(t, now)
	b.Exec(`UPDATE tenants SET timezone = 'America/New_York' WHERE id = $1`, b.Tenant.ID)
	var tpl []uuid.UUID
	require.NoError(t, b.Services.Store.InPlatform(b.Ctx, func(tx *db.Tx) error {
		rows, err := tx.SQL().QueryContext(b.Ctx, `SELECT id FROM templates WHERE tenant_id = $1 ORDER BY id LIMIT 2`, b.Tenant.ID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id uuid.UUID
			if err := rows.Scan(&id); err != nil {
				return err
			}
			tpl = append(tpl, id)
		}
		return rows.Err()
	}))
	require.Len(t, tpl, 2, "the tenant's provisioned templates")

	ids := map[string]uuid.UUID{}
	for name, m := range map[string]trendMsg{
		// Either side of midnight in New York.
		"late-23rd":  {at: time.Date(2026, 11, 24, 4, 59, 0, 0, time.UTC), status: app.MessageDelivered, channel: app.Email, took: 500 * time.Millisecond, template: &tpl[0]},
		"early-24th": {at: time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC), status: app.MessageDelivered, channel: app.Email, took: 3 * time.Second, template: &tpl[0]},
		"today":      {at: now.Add(-time.Hour), status: app.MessageRead, channel: app.Email, took: 40 * time.Second, template: &tpl[0]},
		// The last minutes are counted live.
		"just-now": {at: now.Add(-30 * time.Second), status: app.MessageFailed, channel: app.Email, reason: app.ReasonQuotaExceeded, template: &tpl[0]},
		// The month's first day starts at 04:00 UTC (summer time).
		"first-day":  {at: time.Date(2026, 10, 26, 4, 0, 0, 0, time.UTC), status: app.MessageSent, channel: app.SMS},
		"before":     {at: time.Date(2026, 10, 26, 3, 59, 0, 0, time.UTC), status: app.MessageSent, channel: app.SMS},
		"ten-days":   {at: now.Add(-10 * 24 * time.Hour), status: app.MessageSent, channel: app.WhatsApp, template: &tpl[1]},
		"three-days": {at: now.Add(-3 * 24 * time.Hour), status: app.MessageSent, channel: app.WhatsApp, template: &tpl[1]},
		"failed-1":   {at: now.Add(-5 * 24 * time.Hour), status: app.MessageFailed, channel: app.WhatsApp, reason: "meta_131026", template: &tpl[1]},
		"failed-2":   {at: now.Add(-6 * 24 * time.Hour), status: app.MessageFailed, channel: app.WhatsApp, reason: "meta_131026", template: &tpl[1]},
		"failed-3":   {at: now.Add(-7 * 24 * time.Hour), status: app.MessageFailed, channel: app.Email, reason: app.ReasonQuotaExceeded},
		"queued":     {at: now.Add(-3 * time.Hour), status: app.MessageQueued, channel: app.Webhook},
		// In the quarter that is not over yet (14:45-15:00), before the
		// minutes that are counted live.
		"this-quarter": {at: now.Add(-8 * time.Minute), status: app.MessageQueued, channel: app.Webhook},
	} {
		ids[name] = b.insert(b.Tenant.ID, m)
	}
	// Globex's messages at the same times never show in acme's month.
	b.insert(b.other.ID, trendMsg{at: now.Add(-time.Hour), status: app.MessageFailed, channel: app.Email, reason: "other_reason"})
	b.insert(b.other.ID, trendMsg{at: now.Add(-3 * 24 * time.Hour), status: app.MessageDelivered, channel: app.Email, took: time.Hour})

	check := func(t *testing.T, tr *console.Trends) {
		t.Helper()
		require.Equal(t, "America/New_York", tr.Location.String())
		require.Equal(t, time.Date(2026, 10, 26, 4, 0, 0, 0, time.UTC), tr.From.UTC())
		require.Equal(t, 12, tr.Total, "every acme message but the one before the month")
		email := dayCounts(tr, app.Email)
		require.Equal(t, map[string]int{app.MessageDelivered: 1}, email["2026-11-23"])
		require.Equal(t, map[string]int{app.MessageDelivered: 1, app.MessageRead: 1, app.MessageFailed: 1}, email["2026-11-24"])
		require.Equal(t, map[string]map[string]int{"2026-10-26": {app.MessageSent: 1}}, dayCounts(tr, app.SMS))

		e := channelOf(tr, app.Email)
		require.Equal(t, 5, e.Outcome.Total)
		require.Equal(t, 3, e.Outcome.Delivered())
		require.Equal(t, 2, e.Outcome.Failed())
		require.Equal(t, []int{1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, e.Latency.Bins, "0.5 s, 3 s and 40 s")
		median, low, high, ok := e.Latency.Median()
		require.True(t, ok)
		require.Equal(t, 2*time.Second, low)
		require.Equal(t, 5*time.Second, high)
		require.Equal(t, 3500*time.Millisecond, median, "halfway into the 2-5 s bin")
		_, _, _, ok = channelOf(tr, app.WhatsApp).Latency.Median()
		require.False(t, ok, "nothing delivered on WhatsApp")

		require.Equal(t, 4, tr.Failed)
		require.Equal(t, []console.Failure{
			{Channel: app.WhatsApp, Reason: "meta_131026", Count: 2},
			{Channel: app.Email, Reason: app.ReasonQuotaExceeded, Count: 2},
		}, tr.Failures, "commonest first, ties by reason")
	}

	t.Run("BeforeAnyRollUp", func(t *testing.T) {
		check(t, b.load(t))
	})

	b.rollUp(t)
	require.Positive(t, b.Count(`SELECT count(*) FROM message_latency_counts WHERE tenant_id = $1`, b.Tenant.ID))
	require.Positive(t, b.Count(`SELECT count(*) FROM message_failure_counts WHERE tenant_id = $1`, b.Tenant.ID))
	require.Positive(t, b.Count(`SELECT count(*) FROM message_template_counts WHERE tenant_id = $1`, b.Tenant.ID))
	// The counts reach RollupSettle before now, into the quarter not over
	// yet: only the last two minutes are counted live.
	var through time.Time
	require.NoError(t, b.Services.Store.InPlatform(b.Ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(b.Ctx, `SELECT through FROM message_count_marks WHERE tenant_id = $1`, b.Tenant.ID).Scan(&through)
	}))
	require.True(t, through.Equal(now.Add(-app.RollupSettle)), "counted through %s", through)
	require.Equal(t, 1, b.Count(`SELECT coalesce(sum(count), 0) FROM message_counts WHERE tenant_id = $1 AND bucket = $2 AND channel = 'WEBHOOK'`,
		b.Tenant.ID, now.Add(-app.RollupQuarter)), "the quarter from 14:45 holds the message of 14:52")

	t.Run("RolledUp", func(t *testing.T) {
		check(t, b.load(t))
		live := b.live(t)
		check(t, live)
	})

	t.Run("ReadsTheRollupsNotTheMessages", func(t *testing.T) {
		// A figure only the rollup holds shows: the rolled-up part is read
		// from the tables, not recounted.
		rows := b.Count(`SELECT count(*) FROM message_failure_counts WHERE tenant_id = $1 AND reason = 'meta_131026'`, b.Tenant.ID)
		b.Exec(`UPDATE message_failure_counts SET count = count + 100 WHERE tenant_id = $1 AND reason = 'meta_131026'`, b.Tenant.ID)
		require.Equal(t, 2+100*rows, b.load(t).Failures[0].Count)
		b.Exec(`UPDATE message_failure_counts SET count = count - 100 WHERE tenant_id = $1 AND reason = 'meta_131026'`, b.Tenant.ID)
	})

	t.Run("TemplateStats", func(t *testing.T) {
		tenant, err := b.Services.Tenants.ByID(b.Ctx, b.Tenant.ID)
		require.NoError(t, err)
		unused := uuid.New()
		stats, err := b.trends.TemplateStats(b.Ctx, b.users[asManager], tenant, []uuid.UUID{tpl[0], tpl[1], unused})
		require.NoError(t, err)
		first := stats[tpl[0]]
		require.Equal(t, 4, first.Total)
		require.Equal(t, 3, first.Sent())
		require.Equal(t, 3, first.Delivered())
		require.Equal(t, 1, first.Read())
		require.Equal(t, 1, first.Failed())
		rate, ok := first.Rate(first.Delivered())
		require.True(t, ok)
		require.InDelta(t, 75.0, rate, 0.001)
		second := stats[tpl[1]]
		require.Equal(t, map[string]int{app.MessageSent: 2, app.MessageFailed: 2}, second.Counts)
		require.Zero(t, stats[unused].Total)
		_, ok = stats[unused].Rate(0)
		require.False(t, ok, "no rate without messages")

		// The same from the messages alone.
		b.Exec(`UPDATE message_count_marks SET since = through WHERE tenant_id = $1`, b.Tenant.ID)
		live, err := b.trends.TemplateStats(b.Ctx, b.users[asManager], tenant, []uuid.UUID{tpl[0], tpl[1]})
		b.Exec(`UPDATE message_count_marks SET since = through - interval '31 days' WHERE tenant_id = $1`, b.Tenant.ID)
		require.NoError(t, err)
		require.Equal(t, first.Counts, live[tpl[0]].Counts)
		require.Equal(t, second.Counts, live[tpl[1]].Counts)
	})

	t.Run("OtherTenantUntouched", func(t *testing.T) {
		require.Zero(t, b.Count(`SELECT count(*) FROM message_failure_counts WHERE tenant_id = $1 AND reason = 'other_reason'`, b.Tenant.ID))
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM message_failure_counts WHERE tenant_id = $1 AND reason = 'other_reason'`, b.other.ID))
		require.Zero(t, b.Count(`SELECT count(*) FROM message_template_counts WHERE tenant_id = $1`, b.other.ID), "globex's messages use no template")
		tenant, err := b.Services.Tenants.ByID(b.Ctx, b.other.ID)
		require.NoError(t, err)
		tr, err := b.trends.Load(b.Ctx, b.users[asOtherManager], tenant)
		require.NoError(t, err)
		require.Equal(t, 2, tr.Total)
		require.Equal(t, []console.Failure{{Channel: app.Email, Reason: "other_reason", Count: 1}}, tr.Failures)
	})

	t.Run("StatusesMovingLater", func(t *testing.T) {
		// Two WhatsApp messages are delivered after their quarters were
		// counted: one 3 days old, one 10 days old.
		b.Exec(`UPDATE messages SET status = 'DELIVERED', delivered_at = created_at + interval '2 minutes' WHERE id = ANY($1::uuid[])`,
			app.StringList{ids["three-days"].String(), ids["ten-days"].String()})
		delivered := func() int { return channelOf(b.load(t), app.WhatsApp).Outcome.Delivered() }

		// Half an hour on, only the last two hours were recounted.
		b.now = now.Add(30 * time.Minute)
		b.rollUp(t)
		require.Zero(t, delivered())
		// An hour on, the last 8 days.
		b.now = now.Add(time.Hour)
		b.rollUp(t)
		require.Equal(t, 1, delivered())
		// Six hours on, the whole month.
		b.now = now.Add(6 * time.Hour)
		b.rollUp(t)
		require.Equal(t, 2, delivered())
		wa := channelOf(b.load(t), app.WhatsApp)
		require.Equal(t, 2, wa.Latency.Bins[7], "both took 2 minutes: the 2-5 min bin")
		require.Equal(t, wa.Outcome.Counts, channelOf(b.live(t), app.WhatsApp).Outcome.Counts)
	})
}

func TestTrends_Empty(t *testing.T) {
	t.Parallel()
	b := setupTrends(t, time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC))
	b.rollUp(t)
	tr := b.load(t)
	require.Zero(t, tr.Total)
	require.Zero(t, tr.Failed)
	require.Empty(t, tr.Failures)
	require.Len(t, tr.Channels, len(app.Channels))
	for _, ct := range tr.Channels {
		require.Len(t, ct.Days, console.TrendDays)
		_, ok := ct.Outcome.Rate(0)
		require.False(t, ok)
	}
}

func TestLatency_Median(t *testing.T) {
	t.Parallel()
	bins := func(counts map[int]int) console.Latency {
		l := console.Latency{Bins: make([]int, len(console.LatencyBounds)+1)}
		for i, n := range counts {
			l.Bins[i] = n
			l.Total += n
		}
		return l
	}
	t.Run("Empty", func(t *testing.T) {
		_, _, _, ok := bins(nil).Median()
		require.False(t, ok)
	})
	t.Run("FirstBin", func(t *testing.T) {
		m, low, high, ok := bins(map[int]int{0: 4}).Median()
		require.True(t, ok)
		require.Equal(t, time.Duration(0), low)
		require.Equal(t, time.Second, high)
		require.Equal(t, 500*time.Millisecond, m)
	})
	t.Run("OpenLastBin", func(t *testing.T) {
		m, low, high, ok := bins(map[int]int{0: 1, len(console.LatencyBounds): 5}).Median()
		require.True(t, ok)
		require.Equal(t, 24*time.Hour, low)
		require.Zero(t, high)
		require.Equal(t, 24*time.Hour, m)
	})
	t.Run("Interpolated", func(t *testing.T) {
		// 10 messages under a second and 10 within 1-2 s: the median sits
		// where the two meet.
		m, _, _, ok := bins(map[int]int{0: 10, 1: 10}).Median()
		require.True(t, ok)
		require.Equal(t, time.Second, m)
	})
}

func TestConsoleMessages_ReasonFilter(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	at := time.Now().Add(-time.Hour)
	quota := c.pageMessage(c.Tenant.ID, at, app.MessageFailed, app.Email, "")
	meta := c.pageMessage(c.Tenant.ID, at.Add(time.Minute), app.MessageFailed, app.WhatsApp, "")
	c.pageMessage(c.Tenant.ID, at.Add(2*time.Minute), app.MessageDelivered, app.Email, "")
	foreign := c.pageMessage(c.other.ID, at, app.MessageFailed, app.Email, "")
	c.Exec(`UPDATE messages SET failed_reason = 'quota_exceeded' WHERE id = ANY($1::uuid[])`, app.StringList{quota.String(), foreign.String()})
	c.Exec(`UPDATE messages SET failed_reason = 'meta_131026' WHERE id = $1`, meta)
	s := c.signIn(asManager)

	t.Run("MatchesOneReason", func(t *testing.T) {
		doc := s.page("/t/acme/messages" + "?" + url.Values{"reason": {"quota_exceeded"}, "status": {"FAILED"}}.Encode())
		require.Equal(t, []string{quota.String()}, explorerIDs(doc), "acme's own message with the reason")
		v, _ := doc.Find(`input[name=reason]`).Attr("value")
		require.Equal(t, "quota_exceeded", v, "the filter shows what it matched")
	})

	t.Run("BadReasonIgnoredWithAMessage", func(t *testing.T) {
		doc := s.page("/t/acme/messages" + "?reason=" + url.QueryEscape("x' OR 1=1"))
		require.Contains(t, text(doc.Find(".msg-filter-errors")), "is not a failure reason")
		require.Len(t, explorerIDs(doc), 3, "every acme message")
	})
}

func TestConsoleTrends_Pages(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	var tplID string
	require.NoError(t, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(c.Ctx, `SELECT id::text FROM templates WHERE tenant_id = $1 AND channel = 'EMAIL' AND trigger_event = 'BOOKING_CONFIRMED' ORDER BY id LIMIT 1`, c.Tenant.ID).Scan(&tplID)
	}))

	t.Run("NothingInTheMonth", func(t *testing.T) {
		// A message older than the month: the dashboard has activity, the
		// month is empty, and the template has no figures.
		c.pageMessage(c.Tenant.ID, time.Now().Add(-40*24*time.Hour), app.MessageDelivered, app.Email, "")
		doc := c.signIn(asManager).page("/t/acme/")
		require.Equal(t, 1, doc.Find(`[data-trends=empty]`).Length())
		require.Zero(t, doc.Find(`svg.day-chart`).Length())
		doc = c.signIn(asManager).page("/t/acme/templates/" + tplID)
		require.Equal(t, 1, doc.Find(`.tpl-stats-card [data-stats=none]`).Length())
	})

	t.Run("FiguresOnEveryPage", func(t *testing.T) {
		id := c.pageMessage(c.Tenant.ID, time.Now().Add(-2*time.Hour), app.MessageFailed, app.Email, "")
		c.Exec(`UPDATE messages SET template_id = $2, failed_reason = 'ses_bounce' WHERE id = $1`, id, tplID)
		read := c.pageMessage(c.Tenant.ID, time.Now().Add(-3*time.Hour), app.MessageRead, app.Email, "")
		c.Exec(`UPDATE messages SET template_id = $2, delivered_at = created_at + interval '3 seconds' WHERE id = $1`, read, tplID)

		for _, who := range []string{asManager, asSupport, asOperator} {
			doc := c.signIn(who).page("/t/acme/")
			require.Equal(t, 1, doc.Find(`svg.day-chart`).Length(), who)
			require.Equal(t, "img", doc.Find(`svg.day-chart`).AttrOr("role", ""))
			require.Equal(t, "E-mail messages per day, last 30 days", text(doc.Find(`svg.day-chart > title`)))
			require.Contains(t, text(doc.Find(`svg.day-chart > desc`)), "2 messages in total: 1 read, 1 failed")
			require.Equal(t, "50.0 % delivered", text(doc.Find(`.rate-list li[data-channel=EMAIL] [data-rate=delivered]`)), "1 of 2 delivered")
			require.Equal(t, "median about 3.5 s", text(doc.Find(`[data-median=EMAIL]`)))
			a := doc.Find(`.failure-list li[data-reason=ses_bounce] a`)
			require.Equal(t, "Amazon SES (e-mail) reported bounce", text(a))
			href, _ := a.Attr("href")
			u, err := url.Parse(href)
			require.NoError(t, err)
			require.Equal(t, "/t/acme/messages", u.Path)
			require.Equal(t, "ses_bounce", u.Query().Get("reason"))
			require.Equal(t, "EMAIL", u.Query().Get("channel"))
			require.Equal(t, []string{id.String()}, explorerIDs(c.signIn(who).page(href)), "the link lists the failed message")
		}

		doc := c.signIn(asManager).page("/t/acme/templates/" + tplID)
		require.Equal(t, "1", text(doc.Find(`[data-figure=sent] .stat-num`)), "the read message was sent")
		require.Equal(t, "1", text(doc.Find(`[data-figure=read] .stat-num`)))
		require.Equal(t, "1", text(doc.Find(`[data-figure=failed] .stat-num`)))
		doc = c.signIn(asManager).page("/t/acme/templates?event=BOOKING_CONFIRMED&channel=EMAIL")
		require.Equal(t, "2", doc.Find(`tr[data-id="`+tplID+`"] td.tpl-stats`).AttrOr("data-stats", ""))
		row := doc.Find(`tr[data-id="` + tplID + `"]`)
		require.Equal(t, "2 sent or failed", text(row.Find(`[data-stat=attempted]`)), "the base every figure counts from")
		require.Equal(t, "1 delivered (50.0 %)", text(row.Find(`[data-stat=delivered]`)), "the read message was delivered")
		require.Equal(t, "1 read (50.0 %)", text(row.Find(`[data-stat=read]`)))
		require.Equal(t, "1 failed (50.0 %)", text(row.Find(`[data-stat=failed]`)))
	})
}

// TestTrends_RollUpWindows: every run recounts the last quarter hour or
// so, the last 2 hours every RollupRecentEvery. A receipt for a message of
// an hour ago shows at the next 2-hour recount, one for a message of 5
// minutes ago at the next run.
func TestTrends_RollUpWindows(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC)
	b := setupTrends(t, now)
	hourAgo := b.insert(b.Tenant.ID, trendMsg{at: now.Add(-time.Hour), status: app.MessageSent, channel: app.Email})
	alsoHourAgo := b.insert(b.Tenant.ID, trendMsg{at: now.Add(-time.Hour), status: app.MessageSent, channel: app.WhatsApp})
	minutesAgo := b.insert(b.Tenant.ID, trendMsg{at: now.Add(-5 * time.Minute), status: app.MessageSent, channel: app.SMS})
	read := func(ch app.Channel, quarter time.Time) int {
		return b.Count(`SELECT coalesce(sum(count), 0) FROM message_counts
			WHERE tenant_id = $1 AND channel = $2 AND status = 'READ' AND bucket = $3`, b.Tenant.ID, ch, quarter)
	}
	b.rollUp(t) // the first run recounts everything
	b.Exec(`UPDATE messages SET status = 'READ' WHERE id = ANY($1::uuid[])`, app.StringList{hourAgo.String(), minutesAgo.String()})

	b.now = now.Add(time.Minute)
	b.rollUp(t)
	require.Equal(t, 1, read(app.SMS, now.Add(-app.RollupQuarter)), "the last quarter hour is recounted every run")
	require.Zero(t, read(app.Email, now.Add(-time.Hour)), "the last 2 hours wait for their own recount")

	b.now = now.Add(app.RollupRecentEvery - time.Second)
	b.rollUp(t)
	require.Zero(t, read(app.Email, now.Add(-time.Hour)))

	b.now = now.Add(app.RollupRecentEvery)
	b.rollUp(t)
	require.Equal(t, 1, read(app.Email, now.Add(-time.Hour)), "recounted %s after the last time", app.RollupRecentEvery)

	// A process that starts (new Rollups) recounts the 2 hours first.
	b.Exec(`UPDATE messages SET status = 'READ' WHERE id = $1`, alsoHourAgo)
	b.rollups = &app.Rollups{Store: b.rollups.Store, Now: b.rollups.Now}
	b.now = now.Add(app.RollupRecentEvery + time.Minute)
	b.rollUp(t)
	require.Equal(t, 1, read(app.WhatsApp, now.Add(-time.Hour)))
}

// TestTrends_DayCounts: the month is read from message_day_counts, summed
// in the tenant's timezone (New York, with the change from summer time in
// the month), and counts the same as the messages themselves. A tenant
// whose timezone changed reads quarters until the next roll-up sums its
// days in the new one.
func TestTrends_DayCounts(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC)
	b := setupTrends(t, now)
	b.Exec(`UPDATE tenants SET timezone = 'America/New_York' WHERE id = $1`, b.Tenant.ID)
	for i, at := range []time.Time{
		time.Date(2026, 11, 1, 3, 59, 0, 0, time.UTC), // 31 Oct, 23:59 summer time
		time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC),  // 1 Nov, midnight summer time
		time.Date(2026, 11, 2, 4, 59, 0, 0, time.UTC), // 1 Nov, 23:59 winter time
		time.Date(2026, 11, 2, 5, 0, 0, 0, time.UTC),  // 2 Nov, midnight
		time.Date(2026, 11, 20, 18, 30, 0, 0, time.UTC),
		time.Date(2026, 11, 24, 4, 59, 0, 0, time.UTC),
		time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC),
		now.Add(-20 * time.Minute),
		now.Add(-time.Minute), // counted live
	} {
		status := []string{app.MessageDelivered, app.MessageFailed, app.MessageSent}[i%3]
		b.insert(b.Tenant.ID, trendMsg{at: at, status: status, channel: app.Email, took: time.Second})
		b.insert(b.Tenant.ID, trendMsg{at: at.Add(time.Second), status: app.MessageRead, channel: app.SMS, took: time.Second})
	}
	b.insert(b.other.ID, trendMsg{at: now.Add(-time.Hour), status: app.MessageSent, channel: app.Email})

	same := func(t *testing.T) {
		t.Helper()
		got, live := b.load(t), b.live(t)
		require.Equal(t, 18, got.Total)
		require.Equal(t, live.Total, got.Total)
		for _, ch := range []app.Channel{app.Email, app.SMS} {
			require.Equal(t, dayCounts(live, ch), dayCounts(got, ch), "%s", ch)
		}
	}
	zone := func() string {
		var z *string
		require.NoError(t, b.Services.Store.InPlatform(b.Ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.Ctx, `SELECT day_zone FROM message_count_marks WHERE tenant_id = $1`, b.Tenant.ID).Scan(&z)
		}))
		require.NotNil(t, z)
		return *z
	}
	// bumped reads the month with 100 more e-mails on one day in
	// message_day_counts (a day that has one row of e-mails) and returns
	// how many more the month shows: 100 when it is read from the days.
	bumped := func(t *testing.T, day time.Time) int {
		t.Helper()
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM message_day_counts WHERE tenant_id = $1 AND day = $2 AND channel = 'EMAIL'`, b.Tenant.ID, day))
		b.Exec(`UPDATE message_day_counts SET count = count + 100 WHERE tenant_id = $1 AND day = $2 AND channel = 'EMAIL'`, b.Tenant.ID, day)
		defer b.Exec(`UPDATE message_day_counts SET count = count - 100 WHERE tenant_id = $1 AND day = $2 AND channel = 'EMAIL'`, b.Tenant.ID, day)
		return b.load(t).Total - 18
	}

	b.rollUp(t)
	require.Equal(t, "America/New_York", zone())
	newYork20th := time.Date(2026, 11, 20, 5, 0, 0, 0, time.UTC)
	require.Equal(t, 1, b.Count(`SELECT coalesce(sum(count), 0) FROM message_day_counts
		WHERE tenant_id = $1 AND day = $2 AND channel = 'EMAIL'`, b.Tenant.ID, newYork20th), "the 20th began at 05:00 UTC")
	require.Equal(t, 2, b.Count(`SELECT coalesce(sum(count), 0) FROM message_day_counts
		WHERE tenant_id = $1 AND day = $2 AND channel = 'EMAIL'`, b.Tenant.ID, time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC)),
		"1 November, 25 hours long, holds its first and last minute's e-mails")
	require.Zero(t, b.Count(`SELECT count(*) FROM message_day_counts WHERE tenant_id = $1 AND day >= $2`, b.Tenant.ID, now),
		"no day after the counts' end")
	same(t)
	require.Equal(t, 100, bumped(t, newYork20th), "the month is read from the days")

	// India is 5 h 30 min ahead: New York's days are not India's.
	b.Exec(`UPDATE tenants SET timezone = 'Asia/Kolkata' WHERE id = $1`, b.Tenant.ID)
	same(t)
	require.Zero(t, bumped(t, newYork20th), "days of another timezone are not read")

	b.now = now.Add(time.Minute)
	b.rollUp(t)
	require.Equal(t, "Asia/Kolkata", zone(), "the next roll-up sums the days in the new timezone")
	// 18:30 UTC on the 20th is midnight of the 21st in India.
	kolkata21st := time.Date(2026, 11, 20, 18, 30, 0, 0, time.UTC)
	require.Zero(t, b.Count(`SELECT count(*) FROM message_day_counts WHERE tenant_id = $1 AND day = $2`, b.Tenant.ID, newYork20th))
	require.Equal(t, 100, bumped(t, kolkata21st))
	same(t)

	require.Equal(t, 1, b.Count(`SELECT coalesce(sum(count), 0) FROM message_day_counts WHERE tenant_id = $1`, b.other.ID),
		"the other tenant's days are its own")
}
