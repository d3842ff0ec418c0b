package web_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// pageMessage inserts one message of a tenant created at a given time, for
// booking entityID when set, and returns its id.
func (c *consoleBundle) pageMessage(tenantID uuid.UUID, at time.Time, status string, ch app.Channel, entityID string) uuid.UUID {
	c.T.Helper()
	id := uuid.New()
	var entityType *string
	var entity *string
	if entityID != "" {
		b := app.EntityBooking
		entityType, entity = &b, &entityID
	}
	c.Exec(`INSERT INTO messages (id, tenant_id, correlation_id, idempotency_key, trigger_event, channel, to_address, status,
			entity_type, entity_id, queued_at, created_at, updated_at)
		VALUES ($1, $2, 'evt-page', $3, 'BOOKING_CONFIRMED', $4, 'anna@example.com', $5, $6, $7, $8, $8, $8)`,
		id, tenantID, "page:"+id.String(), ch, status, entityType, entity, at)
	return id
}

// explorerIDs reads the message ids of an explorer page, in order.
func explorerIDs(doc *goquery.Document) []string {
	return doc.Find(`.msg-table tbody tr a[href*="/messages/"]`).Map(func(_ int, a *goquery.Selection) string {
		href, _ := a.Attr("href")
		return href[strings.LastIndexByte(href, '/')+1:]
	})
}

func TestConsoleMessages_Keyset(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})

	// 60 messages, a third of them sharing one created_at (ties broken by
	// id), the rest a second apart; and globex messages in between.
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var all []uuid.UUID
	for i := range 60 {
		at := base.Add(time.Duration(i) * time.Second)
		if i%3 == 0 {
			at = base.Add(30 * time.Second)
		}
		status := app.MessageDelivered
		if i%4 == 0 {
			status = app.MessageFailed
		}
		all = append(all, c.pageMessage(c.Tenant.ID, at, status, app.Email, ""))
		c.pageMessage(c.other.ID, at, status, app.Email, "")
	}
	s := c.signIn(asManager)

	// walk follows "Older" from the first page, inserting two messages
	// after each page: one newer than everything, one at the time of the
	// newest row already shown. Neither may appear, and every other row
	// must appear once.
	walk := func(t *testing.T, query string) (seen []string, pages int) {
		path := "/t/acme/messages" + query
		for path != "" {
			doc := s.page(path)
			pages++
			ids := explorerIDs(doc)
			seen = append(seen, ids...)
			c.pageMessage(c.Tenant.ID, time.Now(), app.MessageFailed, app.Email, "")
			c.pageMessage(c.Tenant.ID, base.Add(59*time.Second), app.MessageFailed, app.Email, "")
			path, _ = doc.Find(`.pager a[rel=next]`).Attr("href")
			require.Less(t, pages, 10, "the walk ends")
		}
		return seen, pages
	}
	strs := func(ids []uuid.UUID) []string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = id.String()
		}
		return out
	}

	t.Run("EveryRowOnceWhileRowsArrive", func(t *testing.T) {
		// Pin the walk to the seeded hour: rows added during it are newer
		// or fall among rows already passed.
		seen, pages := walk(t, "?from=2026-05-01&to=2026-05-01")
		require.Equal(t, 3, pages)
		require.Len(t, seen, 60)
		dedup := slices.Clone(seen)
		slices.Sort(dedup)
		require.Len(t, slices.Compact(dedup), len(seen), "no row twice")
		for _, id := range strs(all) {
			require.Contains(t, seen, id)
		}
	})

	t.Run("FilterAcrossPages", func(t *testing.T) {
		seen, _ := walk(t, "?status=FAILED&from=2026-05-01&to=2026-05-01")
		dedup := slices.Clone(seen)
		slices.Sort(dedup)
		require.Len(t, slices.Compact(dedup), len(seen))
		for i, id := range all {
			if i%4 == 0 {
				require.Contains(t, seen, id.String())
			} else {
				require.NotContains(t, seen, id.String())
			}
		}
	})

	t.Run("NewerLinkGoesBack", func(t *testing.T) {
		first := s.page("/t/acme/messages?from=2026-05-01&to=2026-05-01")
		require.Zero(t, first.Find(`.pager a[rel=prev]`).Length(), "the first page has no newer page")
		next, ok := first.Find(`.pager a[rel=next]`).Attr("href")
		require.True(t, ok)
		require.Contains(t, next, "from=2026-05-01", "the filters stay")
		require.Contains(t, next, "cursor=")
		second := s.page(next)
		require.Equal(t, "Page 2", text(second.Find(".pager .muted")))
		prev, ok := second.Find(`.pager a[rel=prev]`).Attr("href")
		require.True(t, ok)
		back := s.page(prev)
		require.Equal(t, explorerIDs(first), explorerIDs(back))
		require.Zero(t, back.Find(`.pager a[rel=prev]`).Length(), "back on the first page")
		require.Equal(t, "Page 1", text(back.Find(".pager .muted")))
		again, ok := back.Find(`.pager a[rel=next]`).Attr("href")
		require.True(t, ok)
		require.Equal(t, explorerIDs(second), explorerIDs(s.page(again)))
	})

	t.Run("BadCursor", func(t *testing.T) {
		doc := s.page("/t/acme/messages?cursor=garbage&page=4")
		require.Contains(t, text(doc.Find(".msg-filter-errors")), "not valid any more")
		require.Len(t, explorerIDs(doc), 25, "the newest messages instead")
	})

	t.Run("PastTheEnd", func(t *testing.T) {
		end := console.After(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), uuid.Nil).String()
		doc := s.page("/t/acme/messages?cursor=" + end + "&page=3")
		require.Contains(t, text(doc.Find(".empty")), "No more messages")
	})

	t.Run("OtherTenantsCursor", func(t *testing.T) {
		// globex's own walk hands out cursors of its rows; used in acme they
		// only position acme's list in time.
		g := c.signIn(asOtherManager)
		gdoc := g.page("/t/globex/messages?from=2026-05-01&to=2026-05-01")
		next, _ := gdoc.Find(`.pager a[rel=next]`).Attr("href")
		u, err := url.Parse(next)
		require.NoError(t, err)
		doc := s.page("/t/acme/messages?cursor=" + u.Query().Get("cursor"))
		for _, id := range explorerIDs(doc) {
			require.NotContains(t, explorerIDs(gdoc), id)
			require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND tenant_id = $2`, id, c.Tenant.ID))
		}
	})
}

func TestAPIMessages_Cursor(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	at := time.Date(2026, 5, 2, 8, 0, 0, 0, time.UTC)
	var want []string
	for i := range 7 {
		// Ties: pairs share a created_at.
		want = append(want, c.pageMessage(c.Tenant.ID, at.Add(time.Duration(i/2)*time.Minute), app.MessageDelivered, app.Email, "BK-CUR").String())
	}
	c.pageMessage(c.Tenant.ID, at, app.MessageDelivered, app.Email, "BK-OTHER")
	otherIDs := []string{c.pageMessage(c.other.ID, at.Add(time.Hour), app.MessageDelivered, app.Email, "BK-CUR").String()}
	_, otherKey, err := c.Services.APIKeys.Create(c.Ctx, app.CLIActor, c.other.ID, "globex reader")
	require.NoError(t, err)

	type pageJSON struct {
		Messages []struct {
			ID string `json:"id"`
		} `json:"messages"`
		Page struct {
			HasMore    bool    `json:"has_more"`
			NextCursor *string `json:"next_cursor"`
		} `json:"page"`
	}
	list := func(key, query string) (pageJSON, int) {
		var out pageJSON
		return out, c.RequestWithKey(key, http.MethodGet, "/api/v1/messages?"+query, nil, &out)
	}

	t.Run("WalksEveryMessageOnce", func(t *testing.T) {
		var seen []string
		query := "booking_id=BK-CUR&limit=3"
		for pages := 0; ; pages++ {
			require.Less(t, pages, 5)
			p, status := list(c.Key, query)
			require.Equal(t, http.StatusOK, status)
			for _, m := range p.Messages {
				seen = append(seen, m.ID)
			}
			// A message arriving between pages is newer than the cursor.
			c.pageMessage(c.Tenant.ID, time.Now(), app.MessageQueued, app.Email, "BK-CUR")
			if !p.Page.HasMore {
				require.Nil(t, p.Page.NextCursor)
				break
			}
			require.NotNil(t, p.Page.NextCursor)
			query = "booking_id=BK-CUR&limit=3&cursor=" + url.QueryEscape(*p.Page.NextCursor)
		}
		require.ElementsMatch(t, want, seen)
	})

	t.Run("InvalidCursor", func(t *testing.T) {
		for _, cur := range []string{"nonsense", "AQA", console.BeforeRow(at, uuid.New()).String()} {
			var e struct {
				Error struct {
					Code  string `json:"code"`
					Field string `json:"field"`
				} `json:"error"`
			}
			status := c.RequestWithKey(c.Key, http.MethodGet, "/api/v1/messages?booking_id=BK-CUR&cursor="+url.QueryEscape(cur), nil, &e)
			require.Equal(t, http.StatusUnprocessableEntity, status, cur)
			require.Equal(t, "invalid_cursor", e.Error.Code)
			require.Equal(t, "cursor", e.Error.Field)
		}
	})

	t.Run("NoOffset", func(t *testing.T) {
		_, status := list(c.Key, "booking_id=BK-CUR&offset=3")
		require.Equal(t, http.StatusUnprocessableEntity, status)
	})

	t.Run("OtherTenantsCursorShowsOwnRows", func(t *testing.T) {
		p, status := list(otherKey, "booking_id=BK-CUR&limit=1")
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, otherIDs[0], p.Messages[0].ID)
		// The other tenant's only message: no next page. A cursor made at
		// its row, used by acme, lists acme's own older rows only.
		cur := console.After(at.Add(time.Hour), uuid.MustParse(otherIDs[0])).String()
		p, status = list(c.Key, "booking_id=BK-CUR&limit=50&cursor="+url.QueryEscape(cur))
		require.Equal(t, http.StatusOK, status)
		require.Len(t, p.Messages, len(want))
		for _, m := range p.Messages {
			require.Contains(t, want, m.ID)
		}
		p, status = list(otherKey, "booking_id=BK-CUR&cursor="+url.QueryEscape(console.After(at.Add(time.Hour+time.Second), uuid.Nil).String()))
		require.Equal(t, http.StatusOK, status)
		require.Len(t, p.Messages, 1, "globex sees its own message only")
	})
}

func TestConsoleDashboard_RolledUpCounts(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	c.Exec(`UPDATE tenants SET timezone = 'Asia/Kolkata' WHERE id = $1`, c.Tenant.ID)
	now := time.Now()
	var ids []uuid.UUID
	for i, ago := range []time.Duration{time.Minute, 10 * time.Minute, 40 * time.Minute, 3 * time.Hour, 26 * time.Hour, 3 * 24 * time.Hour, 6*24*time.Hour + 20*time.Hour, 10 * 24 * time.Hour} {
		for j, st := range []string{app.MessageDelivered, app.MessageRead, app.MessageFailed, app.MessageSent} {
			ch := app.Channels[(i+j)%len(app.Channels)]
			ids = append(ids, c.pageMessage(c.Tenant.ID, now.Add(-ago), st, ch, ""))
		}
	}
	c.pageMessage(c.other.ID, now.Add(-3*time.Hour), app.MessageFailed, app.Email, "")
	tenant, err := c.Services.Tenants.ByID(c.Ctx, c.Tenant.ID)
	require.NoError(t, err)
	manager := c.users[asManager]

	load := func(r console.DashboardRange) *console.Dashboard {
		d, err := c.Services.Console.Dashboards.Load(c.Ctx, manager, tenant, console.DashboardQuery{Range: r})
		require.NoError(t, err)
		return d
	}
	// live loads the dashboard without the rolled-up counts: every message
	// counted where it is.
	live := func(r console.DashboardRange) *console.Dashboard {
		c.Exec(`UPDATE message_count_marks SET since = through WHERE tenant_id = $1`, c.Tenant.ID)
		d := load(r)
		// Every roll-up here was a full one: the span is 31 days long.
		c.Exec(`UPDATE message_count_marks SET since = through - interval '31 days' WHERE tenant_id = $1`, c.Tenant.ID)
		return d
	}
	same := func(t *testing.T) {
		for _, r := range console.DashboardRanges {
			got, want := load(r), live(r)
			require.Equal(t, want.Totals, got.Totals, r)
			require.Equal(t, want.Total, got.Total, r)
			for i := range want.Buckets {
				require.Equal(t, want.Buckets[i].Counts, got.Buckets[i].Counts, "%s bucket %d", r, i)
			}
		}
	}

	// Postgres keeps microseconds.
	before := time.Now().Truncate(time.Microsecond)
	n, err := c.Services.Rollups.RollUpTenant(c.Ctx, c.Tenant.ID)
	after := time.Now()
	require.NoError(t, err)
	require.Positive(t, n)
	// The counts reach RollupSettle before the roll-up, whatever the
	// quarter: the messages of 10 minutes ago are in them, those of a
	// minute ago are counted live.
	var through time.Time
	require.NoError(t, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(c.Ctx, `SELECT through FROM message_count_marks WHERE tenant_id = $1`, c.Tenant.ID).Scan(&through)
	}))
	require.False(t, through.Before(before.Add(-app.RollupSettle)) || through.After(after.Add(-app.RollupSettle)), "counted through %s", through)
	rolled := c.Count(`SELECT coalesce(sum(count), 0) FROM message_counts WHERE tenant_id = $1`, c.Tenant.ID)
	require.Equal(t, c.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND created_at < $2`, c.Tenant.ID, through), rolled)
	require.GreaterOrEqual(t, rolled, 7*4, "every message but the minute-old ones, those of 10 minutes ago included")
	require.Positive(t, c.Count(`SELECT count(*) FROM message_counts WHERE tenant_id = $1`, c.Tenant.ID))
	require.Zero(t, c.Count(`SELECT count(*) FROM message_counts WHERE tenant_id = $1 AND bucket < now() - interval '31 days 1 hour'`, c.Tenant.ID),
		"only the window the dashboard shows")
	t.Run("SameAsLive", same)

	t.Run("StatusChangesShowAfterTheNextRollUp", func(t *testing.T) {
		c.Exec(`UPDATE messages SET status = 'READ' WHERE id::text = ANY($1)`, app.StringList{ids[12].String(), ids[20].String()})
		_, err := c.Services.Rollups.RollUpTenant(c.Ctx, c.Tenant.ID)
		require.NoError(t, err)
		// The recent window was recounted; older quarters wait for the
		// full recount, which a cleared full_at brings forward.
		c.Exec(`UPDATE message_count_marks SET full_at = 'epoch' WHERE tenant_id = $1`, c.Tenant.ID)
		_, err = c.Services.Rollups.RollUp(c.Ctx)
		require.NoError(t, err)
		same(t)
	})

	t.Run("OtherTenantUntouched", func(t *testing.T) {
		require.Equal(t, 1, c.Count(`SELECT coalesce(sum(count), 0) FROM message_counts WHERE tenant_id = $1`, c.other.ID))
	})
}
