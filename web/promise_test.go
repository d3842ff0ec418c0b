package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/db"
)

// promiseMsg is a message as the delivery promise counts it: its event
// accepted at accepted (send_at and quiet hours may make it due later),
// handed over handedOver after it was due (0: still queued), delivered and
// read that long after it was created.
type promiseMsg struct {
	accepted              time.Time
	sendAt, deferred      *time.Time
	channel               app.Channel
	handedOver            time.Duration
	delivered, read       time.Duration
	fallback, test, noEvt bool
}

// insertPromise stores the message and, unless noEvt, its event.
func (b *trendBundle) insertPromise(tenantID uuid.UUID, m promiseMsg) {
	b.T.Helper()
	due := m.accepted
	for _, t := range []*time.Time{m.sendAt, m.deferred} {
		if t != nil && t.After(due) {
			due = *t
		}
	}
	var eventID *uuid.UUID
	if !m.noEvt {
		id := uuid.New()
		eventID = &id
		b.Exec(`INSERT INTO events (id, tenant_id, source_event_id, trigger_event, recipients, context, status, payload_size, send_at, created_at, updated_at)
			VALUES ($1, $2, $3, 'BOOKING_CONFIRMED', '[]', '{}', 'ROUTED', 10, $4, $5, $5)`, id, tenantID, "promise-"+id.String(), m.sendAt, m.accepted)
	}
	// Routed, and so created, a moment after it was due.
	created := due.Add(100 * time.Millisecond)
	status, sent := app.MessageQueued, (*time.Time)(nil)
	var delivered, read *time.Time
	if m.handedOver > 0 {
		s := due.Add(m.handedOver)
		status, sent = app.MessageSent, &s
	}
	if m.delivered > 0 {
		d := created.Add(m.delivered)
		status, delivered = app.MessageDelivered, &d
	}
	if m.read > 0 {
		r := created.Add(m.read)
		status, read = app.MessageRead, &r
	}
	var fallbackOf *uuid.UUID
	if m.fallback {
		first := uuid.New()
		b.Exec(`INSERT INTO messages (id, tenant_id, correlation_id, idempotency_key, trigger_event, channel, status, created_at, updated_at, queued_at)
			VALUES ($1, $2, 'evt-promise', $3, 'BOOKING_CONFIRMED', 'WHATSAPP', 'FAILED', $4, $4, $4)`,
			first, tenantID, "promise:"+first.String(), m.accepted.Add(-time.Hour))
		fallbackOf = &first
	}
	id := uuid.New()
	b.Exec(`INSERT INTO messages (id, tenant_id, event_id, correlation_id, idempotency_key, trigger_event, channel, to_address, status,
			queued_at, sent_at, delivered_at, read_at, deferred_until, fallback_of, test, created_at, updated_at)
		VALUES ($1, $2, $3, 'evt-promise', $4, 'BOOKING_CONFIRMED', $5, 'anna@example.com', $6, $7, $8, $9, $10, $11, $12, $13, $7, $7)`,
		id, tenantID, eventID, "promise:"+id.String(), m.channel, status, created, sent, delivered, read, m.deferred, fallbackOf, m.test)
}

func TestPromise(t *testing.T) {
	t.Parallel()

	t.Run("PerChannelAndDayFromTheRollups", func(t *testing.T) {
		t.Parallel()
		// 15:00 in Berlin on 24 November; the week starts on the 18th.
		now := time.Date(2026, 11, 24, 14, 0, 0, 0, time.UTC)
		b := setupTrends(t, now)
		promise := &console.PromiseReader{Store: db.Scope[console.PromiseTx](b.Services.Store), Now: func() time.Time { return b.now }}
		today, yesterday := now.Add(-2*time.Hour), now.Add(-26*time.Hour)
		later := today.Add(-time.Hour) // the send_at of a scheduled event
		for _, m := range []promiseMsg{
			// Today's e-mail: 3 of 4 handed over within 10 s.
			{accepted: today, channel: app.Email, handedOver: time.Second, delivered: 3 * time.Second, read: 40 * time.Second},
			{accepted: today, channel: app.Email, handedOver: 9 * time.Second, delivered: 12 * time.Second},
			{accepted: today, channel: app.Email, handedOver: 45 * time.Second},
			// Scheduled a day ahead: due at its send_at, not when accepted.
			{accepted: today.Add(-24 * time.Hour), sendAt: &later, channel: app.Email, handedOver: 2 * time.Second},
			// Never handed over: its wait so far counts, so a stuck
			// backlog shows.
			{accepted: today, channel: app.Email},
			// Yesterday's WhatsApp: deferred by quiet hours, counted from
			// their end.
			{accepted: yesterday.Add(-8 * time.Hour), deferred: &yesterday, channel: app.WhatsApp, handedOver: 3 * time.Second, delivered: time.Second},
			// Neither a fallback nor a manager's test is a first handover.
			{accepted: today, channel: app.SMS, handedOver: time.Hour, fallback: true},
			{accepted: today, channel: app.SMS, handedOver: time.Hour, test: true},
			// A reply without an event is due when it was created.
			{accepted: today, channel: app.WhatsApp, handedOver: 500 * time.Millisecond, noEvt: true},
			// Before the week.
			{accepted: now.Add(-8 * 24 * time.Hour), channel: app.Email, handedOver: time.Hour},
		} {
			b.insertPromise(b.Tenant.ID, m)
		}
		// Globex's slow e-mail shows in the operator's table, never in acme's.
		b.insertPromise(b.other.ID, promiseMsg{accepted: today, channel: app.Email, handedOver: time.Minute, delivered: 2 * time.Minute})
		b.rollUp(t)

		tenant, err := b.Services.Tenants.ByID(b.Ctx, b.Tenant.ID)
		require.NoError(t, err)
		p, err := promise.Tenant(b.Ctx, b.users[asManager], tenant)
		require.NoError(t, err)
		require.Equal(t, time.Date(2026, 11, 18, 0, 0, 0, 0, p.Location), p.From.In(p.Location))
		rows := map[string]console.PromiseRow{}
		for _, r := range p.Rows {
			rows[r.Day.In(p.Location).Format("2006-01-02")+" "+string(r.Channel)] = r
		}
		require.Len(t, rows, 3, "%v", rows)
		email := rows["2026-11-24 EMAIL"]
		require.Equal(t, 5, email.Handover.Total, "four handed over and one still queued")
		kept, ok := email.Kept()
		require.True(t, ok)
		require.InDelta(t, 60.0, kept, 0.001, "1 s, 9 s and the scheduled one's 2 s of five")
		require.Equal(t, 2, email.Delivered.Total)
		require.Equal(t, 1, email.Read.Total)
		p50, low, high, ok := email.Delivered.Quantile(0.5)
		require.True(t, ok)
		require.Equal(t, []time.Duration{2 * time.Second, 5 * time.Second}, []time.Duration{low, high})
		require.Equal(t, 5*time.Second, p50, "the middle of two messages is the first one's bin's top")

		wa := rows["2026-11-23 WHATSAPP"]
		require.Equal(t, 1, wa.Handover.Total)
		kept, _ = wa.Kept()
		require.InDelta(t, 100.0, kept, 0.001, "3 s after the quiet hours ended")
		reply := rows["2026-11-24 WHATSAPP"]
		kept, _ = reply.Kept()
		require.InDelta(t, 100.0, kept, 0.001)
		require.Equal(t, "2026-11-24", p.Rows[0].Day.In(p.Location).Format("2006-01-02"), "newest day first")

		// The operator's table: acme and globex, the one that kept the
		// promise least first.
		_, err = promise.Platform(b.Ctx, b.users[asManager])
		require.Error(t, err, "a tenant's manager does not see every tenant")
		all, err := promise.Platform(b.Ctx, b.users[asOperator])
		require.NoError(t, err)
		require.Equal(t, b.other.ID, all.Rows[0].TenantID, "globex handed over nothing within 10 s")
		kept, _ = all.Rows[0].Kept()
		require.Zero(t, kept)
		var tenants []uuid.UUID
		for _, r := range all.Rows {
			tenants = append(tenants, r.TenantID)
		}
		require.Contains(t, tenants, b.Tenant.ID)

		// The tenant's table came from the days the roll-up summed from the quarters:
		// without the quarters the table is the same. Days summed in
		// another timezone (the tenant's changed since the last roll-up)
		// are not read; the quarters are, and here there are none.
		b.Exec(`DELETE FROM message_latency_counts WHERE tenant_id = $1`, b.Tenant.ID)
		fromDays, err := promise.Tenant(b.Ctx, b.users[asManager], tenant)
		require.NoError(t, err)
		require.Equal(t, p.Rows, fromDays.Rows)
		b.Exec(`UPDATE message_count_marks SET day_zone = 'Asia/Kolkata' WHERE tenant_id = $1`, b.Tenant.ID)
		fromQuarters, err := promise.Tenant(b.Ctx, b.users[asManager], tenant)
		require.NoError(t, err)
		require.Empty(t, fromQuarters.Rows)
	})

	t.Run("OnTheDashboardAndTheOperatorsTenants", func(t *testing.T) {
		t.Parallel()
		b := setupTrends(t, time.Now())
		b.insertPromise(b.Tenant.ID, promiseMsg{accepted: time.Now().Add(-time.Hour), channel: app.Email,
			handedOver: time.Second, delivered: 2 * time.Second, read: time.Minute})
		b.insertPromise(b.other.ID, promiseMsg{accepted: time.Now().Add(-time.Hour), channel: app.SMS, handedOver: time.Minute})
		b.rollUp(t)

		doc, resp := b.signIn(asManager).get("/t/acme/")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		table := doc.Find(`[data-promise=tenant] table.promise-table`)
		require.Equal(t, 1, table.Length(), "the dashboard shows the tenant's promise")
		row := table.Find(`tbody tr[data-channel=EMAIL]`)
		require.Equal(t, 1, row.Length())
		require.Equal(t, "100.0\u00a0%", strings.TrimSpace(row.Find(`[data-kept]`).Text()))
		require.Contains(t, row.Find(`[data-measure=delivered]`).Text(), "/")
		require.Zero(t, table.Find(`tbody tr[data-channel=SMS]`).Length(), "globex's messages are globex's")

		doc, resp = b.signIn(asOperator).get("/tenants")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		rows := doc.Find(`[data-promise=platform] tbody tr`)
		require.Equal(t, 2, rows.Length(), "one row per tenant and channel")
		require.Equal(t, b.other.ID.String(), rows.First().AttrOr("data-tenant", ""), "the tenant that kept it least first")
		require.Contains(t, rows.First().Find(`td`).Eq(2).AttrOr("class", ""), "promise-missed")
	})
}
