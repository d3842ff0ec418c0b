package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/db"
)

// The pages phase: one tenant with many messages (Config.Messages, ten
// million by default), and the console's and the API's reading pages timed
// over HTTP against it, as a person or a tenant's system would use them.

// pagesTenant is the tenant the phase fills: the first one prepare made.
const pagesTenant = "bench-1"

// pagesRequests is how often each page is asked for; the phase reports the
// median and the slowest.
const pagesRequests = 7

// pagesUser signs in to the console for the phase.
const (
	pagesEmail    = "pages@bench.example"
	pagesPassword = "bench-pages-password-1"
)

// seedChunk is how many messages one INSERT writes: large enough that
// statement overhead does not matter, small enough that one statement's
// WAL and locks stay modest on a shared server.
const seedChunk = 250000

// pages seeds the tenant, then times the pages.
func (b *bench) pages(ctx context.Context) error {
	if b.cfg.Messages > 0 {
		if err := b.openPool(ctx); err != nil {
			return err
		}
	}
	n := b.cfg.Messages
	if n <= 0 {
		b.logf("   skipped (--messages 0)")
		return nil
	}
	var tenantID string
	if err := b.pool.QueryRow(ctx, `SELECT id::text FROM tenants WHERE slug = $1`, pagesTenant).Scan(&tenantID); err != nil {
		return fmt.Errorf("find tenant %s: %w", pagesTenant, err)
	}
	b.logf("   seeding %d messages into %s (load average %s)", n, pagesTenant, loadAverage())
	start := time.Now()
	if err := seedMessages(ctx, b.pool, tenantID, n, func(done int) {
		b.logf("   %d messages seeded, %s (load average %s)", done, time.Since(start).Round(time.Second), loadAverage())
	}); err != nil {
		return err
	}
	b.logf("   seeded in %s; vacuum and analyze", time.Since(start).Round(time.Second))
	for _, table := range []string{"messages", "events", "message_events"} {
		if _, err := b.pool.Exec(ctx, `VACUUM (ANALYZE) `+table); err != nil {
			return fmt.Errorf("vacuum %s: %w", table, err)
		}
	}
	// The dashboard's counts as the periodic job keeps them: the first
	// full recount, timed, as a fresh deployment's first run would be
	// (app.Rollups.RollUpTenant's window and bounds, its statements in the
	// tenant's transaction).
	t := time.Now()
	from, through := app.RollupSpan(t, app.RollupFullWindow)
	tenant, err := uuid.Parse(tenantID)
	if err != nil {
		return err
	}
	var rows int
	err = db.New(b.pool).Store().InTenant(ctx, tenant, func(tx *db.Tx) (err error) {
		rows, err = tx.RollUpMessageCounts(ctx, tenant, from, through, true, t)
		return err
	})
	if err != nil {
		return fmt.Errorf("roll up message counts: %w", err)
	}
	b.logf("   dashboard counts recounted over %d days in %s (%d rows)", int(app.RollupFullWindow.Hours()/24),
		time.Since(t).Round(time.Millisecond), rows)
	// The seed's writes are checkpointed before anything is timed, as
	// they would long have been on a database that grew to this size: the
	// pages and the intake below then meet the checkpoints of their own
	// writes only.
	if _, err := b.pool.Exec(ctx, `CHECKPOINT`); err != nil {
		b.logf("   no checkpoint after the seed (%v): the pages and the intake below may meet its writes", err)
	}
	// The checkpoint leaves its writes in the operating system's cache,
	// gigabytes of them, which the system writes to disk over the next
	// minute while commits wait on the same disk. A local database's are
	// written out first.
	t = time.Now()
	dirty := dirtyMB()
	syscall.Sync()
	b.logf("   %d MB the seed left unwritten in the system's cache written to disk in %s", dirty,
		time.Since(t).Round(time.Millisecond))

	browser, err := b.signIn(ctx, tenantID)
	if err != nil {
		return err
	}
	base := "http://" + b.addr + "/t/" + pagesTenant
	api := "http://" + b.addr + "/api/v1"
	booking := pagesBooking(n)
	type page struct {
		name, url string
		apiKey    bool
	}
	list := []page{
		{"booking panel", base + "/bookings/booking/" + booking, false},
		{"explorer, no filter", base + "/messages", false},
		{"explorer, status FAILED", base + "/messages?status=FAILED", false},
		{"explorer, status DELIVERED", base + "/messages?status=DELIVERED", false},
		{"explorer, channel SMS", base + "/messages?channel=SMS", false},
		{"explorer, event SERVICE_LEG_CANCELLED", base + "/messages?event=SERVICE_LEG_CANCELLED", false},
		{"explorer, matching nothing (event)", base + "/messages?event=FINAL_PAYMENT_OVERDUE", false},
		{"explorer, matching nothing (status+channel)", base + "/messages?status=CANCELLED&channel=WEBHOOK", false},
		{"explorer, address", base + "/messages?address=p4242%40bench.example", false},
		{"explorer, stale", base + "/messages?stale=1", false},
		{"dashboard 24h", base + "/", false},
		{"dashboard 7d", base + "/?range=7d", false},
		{"API messages of a booking", api + "/messages?booking_id=" + booking, true},
	}
	// Deep pages: the cursor of a row far down the list, as following
	// "Older" that many times would reach it.
	for _, deep := range []struct {
		name, filter, where string
		row                 int
	}{
		{"explorer, deep page (the middle of the list)", "", "", n / 2},
		{"explorer, status DELIVERED, deep page", "status=DELIVERED&", "status = 'DELIVERED'", n / 5},
	} {
		cur, err := deepCursor(ctx, b.pool, tenantID, deep.where, deep.row)
		if err != nil {
			return err
		}
		list = append(list, page{deep.name, base + "/messages?" + deep.filter + "cursor=" + cur + "&page=2", false})
	}
	b.logf("   %-48s %10s %10s", "page", "p50", "max")
	var worst time.Duration
	for _, p := range list {
		var ds []time.Duration
		for range pagesRequests {
			client, key := browser, ""
			if p.apiKey {
				client, key = b.client, b.keys[0]
			}
			d, err := timedGet(ctx, client, p.url, key)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			ds = append(ds, d)
		}
		// The first request of each page warms the server's caches for it;
		// p50 and max are of the rest.
		ran := ds
		ds = slices.Sorted(slices.Values(ds[1:]))
		p50, mx := ds[len(ds)/2], ds[len(ds)-1]
		worst = max(worst, mx)
		ms := float64(mx.Microseconds()) / 1000
		switch {
		case p.name == "booking panel":
			b.res.BookingPanelMS = max(b.res.BookingPanelMS, ms)
		case strings.HasPrefix(p.name, "dashboard"):
			b.res.DashboardMS = max(b.res.DashboardMS, ms)
		case strings.HasPrefix(p.name, "explorer") && strings.Contains(p.name, "deep page"):
			b.res.ExplorerDeepMaxMS = max(b.res.ExplorerDeepMaxMS, ms)
		case strings.HasPrefix(p.name, "explorer"):
			b.res.ExplorerFilterMaxMS = max(b.res.ExplorerFilterMaxMS, ms)
		}
		b.logf("   %-48s %10s %10s", p.name, p50.Round(100*time.Microsecond), mx.Round(100*time.Microsecond))
		if mx > 3*p50 || ms > goalPageMS {
			// One request far slower than the others: the order says
			// whether it was one stall or the page warming up.
			b.logf("   %-48s each request in the order sent: %s", "", durations(ran))
		}
	}
	b.res.PagesMaxMS = float64(worst.Microseconds()) / 1000
	b.logf("   slowest page %.1f ms (target <= 50 ms; load average %s)", b.res.PagesMaxMS, loadAverage())
	return b.intakeAt(ctx, n)
}

// intakeAt measures intake on the filled database exactly as the open-loop
// phase did on the empty one: the same rate and length, latency from each
// request's scheduled time, and no job worked meanwhile (every queue is
// paused through River and resumed afterwards, as the empty database's
// phase ran before the worker started), so that the goal compares the
// database's size and nothing else.
func (b *bench) intakeAt(ctx context.Context, n int) error {
	if b.res.OpenRate <= 0 {
		b.logf("   intake at %d messages not measured: the open-loop phase did not run", n)
		return nil
	}
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{})
	if err != nil {
		return err
	}
	if err := client.QueuePause(ctx, "*", nil); err != nil {
		return fmt.Errorf("pause the queues: %w", err)
	}
	defer func() {
		if err := client.QueueResume(context.WithoutCancel(ctx), "*", nil); err != nil {
			b.logf("   resume the queues: %v", err)
		}
	}()
	if err := b.waitNoRunningJobs(ctx); err != nil {
		return err
	}
	b.logf("   intake at %d messages, queues paused: open loop at %.0f/s for %s, as on the empty database (load average %s)",
		n, b.res.OpenRate, b.cfg.OpenDuration, loadAverage())
	lat, errs, cost, err := b.countedOpenLoop(ctx, b.res.OpenRate, b.cfg.OpenDuration, false)
	if err != nil {
		return err
	}
	b.res.IntakeP99At10M, b.res.At10MCost = percentile(lat, 99), cost
	b.logf("   intake p99 %s (empty database: %s), errors %d", b.res.IntakeP99At10M.Round(10*time.Microsecond),
		b.res.OpenP99.Round(10*time.Microsecond), errs)
	if len(b.res.EmptyWindows.P99) == 0 {
		return nil
	}
	b.logf("   the 10M side of the comparison, as on the empty database (%s there):", b.res.EmptyWindows.spread())
	b.res.At10MWindows, err = b.windowSeries(ctx, b.res.EmptyWindows.Rate, b.res.EmptyWindows.Length)
	return err
}

// waitNoRunningJobs waits, up to a minute, until the jobs running when the
// queues were paused have finished.
func (b *bench) waitNoRunningJobs(ctx context.Context) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for {
		var running int
		if err := b.pool.QueryRow(ctx, `/* herald-bench */ SELECT count(*) FROM river_job WHERE state = 'running'`).Scan(&running); err != nil {
			return err
		}
		if running == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("%d jobs still running a minute after the queues were paused", running)
		case <-tick.C:
		}
	}
}

// durations lists ds in milliseconds with one decimal.
func durations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%.1f", ms(d))
	}
	return strings.Join(parts, ", ") + " ms"
}

// dirtyMB is how much written data the operating system still holds in
// its cache (Dirty and Writeback of /proc/meminfo), in MB; 0 where that
// is not known.
func dirtyMB() int {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	kb := 0
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "Dirty:" || f[0] == "Writeback:") {
			n, _ := strconv.Atoi(f[1])
			kb += n
		}
	}
	return kb / 1024
}

// signIn makes a manager of the tenant and signs in as the browser does:
// the sign-in form's CSRF token, then the form posted with it.
func (b *bench) signIn(ctx context.Context, tenantID string) (*http.Client, error) {
	if _, err := b.herald(ctx, "admin", "create-user", "--email", pagesEmail, "--password", pagesPassword,
		"--role", "manager", "--tenant", pagesTenant, "--name", "Bench Manager"); err != nil {
		return nil, err
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: b.client.Transport, Timeout: 60 * time.Second}
	resp, err := c.Get("http://" + b.addr + "/login")
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(body)
	if m == nil {
		return nil, errors.New("the sign-in page has no CSRF token")
	}
	form := url.Values{"csrf": {string(m[1])}, "email": {pagesEmail}, "password": {pagesPassword}}
	resp, err = c.PostForm("http://"+b.addr+"/login", form)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sign in: status %d", resp.StatusCode)
	}
	return c, nil
}

// timedGet asks for one page and checks it answered 200.
func timedGet(ctx context.Context, c *http.Client, u, apiKey string) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: status %d: %.300s", u, resp.StatusCode, body)
	}
	if apiKey != "" && !json.Valid(body) {
		return 0, fmt.Errorf("GET %s: not JSON", u)
	}
	return d, nil
}

// pagesBooking is a booking the seed gave events, messages and timelines.
func pagesBooking(n int) string {
	return fmt.Sprintf("BK-%d", (max(n/4-1, 0)/25)*25)
}

// deepCursor is the explorer's cursor after the row-th newest message
// matching where, encoded as the console encodes it.
func deepCursor(ctx context.Context, pool *pgxpool.Pool, tenantID, where string, row int) (string, error) {
	if where == "" {
		where = "true"
	}
	var at time.Time
	var id uuid.UUID
	err := pool.QueryRow(ctx, `SELECT created_at, id FROM messages WHERE tenant_id = $1 AND `+where+`
		ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1`, tenantID, row).Scan(&at, &id)
	if err != nil {
		return "", fmt.Errorf("deep cursor: %w", err)
	}
	return console.After(at, id).String(), nil
}

// seedMessages writes n messages of the tenant spread over the last 90
// days, newest last: mostly delivered or read, some failed, sent, stale,
// cancelled, a few still queued at the very end; four channels and eight
// events; four messages per booking; and for one booking in 25 its event
// and a two-entry timeline per message.
func seedMessages(ctx context.Context, pool *pgxpool.Pool, tenantID string, n int, progress func(int)) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	// The seed is not what is measured: it may lose its last commits in a
	// crash, which the benchmark would just run again.
	if _, err := conn.Exec(ctx, `SET synchronous_commit = off`); err != nil {
		return err
	}
	span := 90 * 24 * time.Hour
	end := time.Now().Add(-time.Minute)
	startAt := end.Add(-span)
	step := float64(span.Microseconds()) / float64(n)
	for lo := 0; lo < n; lo += seedChunk {
		hi := min(lo+seedChunk, n)
		_, err := conn.Exec(ctx, `
			INSERT INTO messages (id, tenant_id, correlation_id, idempotency_key, trigger_event, channel, to_address, subject, body,
				status, failed_reason, error_code, attempts, provider, entity_type, entity_id, queued_at, sent_at, delivered_at, read_at,
				failed_at, stale_at, created_at, updated_at)
			SELECT md5('m' || i)::uuid, $1, 'seed-' || (i / 4), 'seed:' || i,
				(ARRAY['BOOKING_CONFIRMED', 'BOOKING_FULLY_PAID', 'BOOKING_CANCELLED', 'FINAL_PAYMENT_DUE', 'PRE_TRIP_REMINDER',
					'SERVICE_LEG_CANCELLED', 'BOOKING_COMPLETED', 'INVOICE_ISSUED'])[1 + (i * 7) % 8],
				ch, CASE WHEN ch = 'EMAIL' THEN 'p' || (i % 200000) || '@bench.example' ELSE '+4915' || lpad((i % 200000)::text, 8, '0') END,
				'Your booking', 'Hello, this is about booking BK-' || (i / 4) || '.',
				st, CASE WHEN st = 'FAILED' THEN 'provider_failed' END, CASE WHEN st = 'FAILED' THEN '131026' END,
				CASE WHEN st = 'QUEUED' THEN 0 ELSE 1 END, CASE WHEN st <> 'QUEUED' THEN 'sandbox' END,
				'booking', 'BK-' || (i / 4), at, CASE WHEN st IN ('SENT', 'DELIVERED', 'READ', 'FAILED') THEN at END,
				CASE WHEN st IN ('DELIVERED', 'READ') THEN at + interval '2 seconds' END,
				CASE WHEN st = 'READ' THEN at + interval '5 minutes' END, CASE WHEN st = 'FAILED' THEN at END,
				CASE WHEN st = 'SENT' AND h % 50 = 0 THEN at + interval '1 day' END, at, at
			FROM (
				SELECT i, h, at,
					(ARRAY['EMAIL', 'EMAIL', 'EMAIL', 'EMAIL', 'EMAIL', 'WHATSAPP', 'WHATSAPP', 'WHATSAPP', 'SMS', 'WEBHOOK'])[1 + (i * 7919) % 10] AS ch,
					CASE WHEN i >= $5 - 200 THEN 'QUEUED'
						WHEN h < 20 THEN 'FAILED' WHEN h < 25 THEN 'CANCELLED' WHEN h < 75 THEN 'SENT'
						WHEN h < 550 THEN 'DELIVERED' ELSE 'READ' END AS st
				FROM (
					SELECT i, (i * 104729) % 1000 AS h, $2::timestamptz + make_interval(secs => i * $3 / 1e6) AS at
					FROM generate_series($4::bigint, $6::bigint - 1) AS i
				) x
			) y`, tenantID, startAt, step, lo, n, hi)
		if err != nil {
			return fmt.Errorf("seed messages %d-%d: %w", lo, hi, err)
		}
		// Events and timelines of one booking in 25 (four messages each),
		// their times computed as the messages' were: no join, which the
		// planner would misjudge on a table still growing.
		_, err = conn.Exec(ctx, `
			INSERT INTO events (id, tenant_id, source_event_id, trigger_event, recipients, context, entity_type, entity_id, status,
				payload_size, created_at, updated_at, routed_at)
			SELECT md5('e' || b)::uuid, $1, 'seed-' || b, 'BOOKING_CONFIRMED', '[{"email": "p@bench.example"}]', '{}', 'booking', 'BK-' || b,
				'ROUTED', 100, at, at, at
			FROM (
				SELECT b, $4::timestamptz + make_interval(secs => b * 4 * $5 / 1e6) AS at
				FROM generate_series(($2::bigint + 99) / 100 * 25, ($3::bigint - 1) / 4, 25) AS b
			) x`, tenantID, lo, hi, startAt, step)
		if err != nil {
			return fmt.Errorf("seed events: %w", err)
		}
		_, err = conn.Exec(ctx, `
			INSERT INTO message_events (tenant_id, message_id, from_status, to_status, source, detail, at)
			SELECT $1, md5('m' || i)::uuid, s.from_status, s.to_status, s.source, '{}',
				$4::timestamptz + make_interval(secs => i * $5 / 1e6) + s.after
			FROM generate_series($2::bigint, $3::bigint - 1) AS i
			CROSS JOIN (VALUES (NULL, 'QUEUED', 'routing', interval '0'), ('QUEUED', 'SENT', 'dispatch', interval '1 second')) AS s(from_status, to_status, source, after)
			WHERE (i / 4) % 25 = 0`, tenantID, lo, hi, startAt, step)
		if err != nil {
			return fmt.Errorf("seed timelines: %w", err)
		}
		progress(hi)
	}
	return nil
}
