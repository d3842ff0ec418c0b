package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/web/webtest"
)

// auditAt appends an audit entry written at a given time, as the chain
// trigger would chain any entry. tenantID nil is a platform entry.
func (c *consoleBundle) auditAt(tenantID *uuid.UUID, actorType, label, action, targetType, targetID string, meta map[string]any, at time.Time) int64 {
	c.T.Helper()
	b, err := json.Marshal(meta)
	require.NoError(c.T, err)
	c.Exec(`INSERT INTO audit_log (tenant_id, actor_type, actor_label, action, target_type, target_id, metadata, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, tenantID, actorType, label, action, targetType, targetID, b, at)
	return int64(c.Count(`SELECT max(id)::int FROM audit_log`))
}

// auditIDs returns the entry ids of an audit page's rows, in order.
func auditIDs(doc *goquery.Document) []int64 {
	var out []int64
	doc.Find("tr[data-audit-id]").Each(func(_ int, s *goquery.Selection) {
		v, _ := s.Attr("data-audit-id")
		n, _ := strconv.ParseInt(v, 10, 64)
		out = append(out, n)
	})
	return out
}

func TestConsoleAudit(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	acme, globex := c.Tenant.ID, c.other.ID
	day := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return tm
	}

	// 23:30 UTC on 10 January is already 11 January in Berlin (acme's zone).
	lateJan10 := c.auditAt(&acme, "user", "alice@acme.test", "template.update", "template", uuid.NewString(),
		map[string]any{"version": 3, "locale": "en", "note": `<script>alert("x")</script>`}, day("2024-01-10T23:30:00Z"))
	jan5 := c.auditAt(&acme, "api_key", "booking system", "notification.cancel", "event", "evt-7",
		map[string]any{"cancelled_messages": 0}, day("2024-01-05T09:00:00Z"))
	feb2 := c.auditAt(&acme, "user", "bob@acme.test", "notification.reschedule", "event", "evt-8",
		map[string]any{"version": 2}, day("2024-02-02T12:00:00Z"))
	globexEntry := c.auditAt(&globex, "user", "gina@globex.test", "api_key.create", "api_key", "k-1",
		map[string]any{"name": "globex-only"}, day("2024-01-10T12:00:00Z"))
	platformEntry := c.auditAt(nil, "system", "192.0.2.99", "session.login_failed", "user", "nobody@example.com",
		map[string]any{"ip": "192.0.2.99"}, day("2024-01-10T13:00:00Z"))

	manager, operator := c.signIn(asManager), c.signIn(asOperator)

	t.Run("TenantPageShowsOnlyItsOwnEntries", func(t *testing.T) {
		doc := manager.page("/t/acme/audit")
		ids := auditIDs(doc)
		require.Contains(t, ids, lateJan10)
		require.Contains(t, ids, jan5)
		require.Contains(t, ids, feb2)
		require.NotContains(t, ids, globexEntry, "another tenant's entries never show")
		require.NotContains(t, ids, platformEntry)
		require.NotContains(t, doc.Text(), "gina@globex.test")
		for i := 1; i < len(ids); i++ {
			require.Greater(t, ids[i-1], ids[i], "newest first")
		}
		require.Zero(t, doc.Find("th").FilterFunction(func(_ int, s *goquery.Selection) bool { return text(s) == "Tenant" }).Length())

		row := doc.Find(`tr[data-audit-id="` + strconv.FormatInt(lateJan10, 10) + `"]`)
		require.Equal(t, "11 Jan 2024 00:30 CET", text(row.Find("td.at")), "the tenant's timezone")
		require.Equal(t, "user alice@acme.test", text(row.Find("td.actor")))
		require.Equal(t, "template.update", text(row.Find("td.action")))
		require.Contains(t, text(row.Find("td.target")), "template")
		require.Equal(t, `locale=en note=<script>alert("x")</script> version=3`, text(row.Find("td.meta")), "compact key=value, sorted")
		html, _ := doc.Html()
		require.NotContains(t, html, `<script>alert(`, "metadata is escaped")
		require.Equal(t, "API key booking system", text(doc.Find(`tr[data-audit-id="`+strconv.FormatInt(jan5, 10)+`"] td.actor`)))
	})

	t.Run("ConsoleChangesAreListed", func(t *testing.T) {
		id := c.Submit(scheduled("audited", "BK-A", time.Now().Add(time.Hour)))
		manager.page("/t/acme/scheduled")
		require.Equal(t, http.StatusSeeOther, manager.post("/t/acme/scheduled/"+id.String()+"/cancel", nil).StatusCode)
		doc := manager.page("/t/acme/audit?action=notification.cancel&actor=manager@acme")
		require.Len(t, auditIDs(doc), 1)
		row := doc.Find("tr[data-audit-id]")
		require.Equal(t, "user manager@acme.test", text(row.Find("td.actor")))
		require.Contains(t, text(row.Find("td.target")), id.String())
		require.Equal(t, "cancelled_messages=0", text(row.Find("td.meta")))
	})

	t.Run("FiltersNarrow", func(t *testing.T) {
		for _, tc := range []struct {
			query string
			want  []int64
		}{
			{"actor=ALICE", []int64{lateJan10}},
			{"actor=booking+sys", []int64{jan5}},
			{"action=notification.reschedule", []int64{feb2}},
			{"action=notification.*&to=2024-12-31", []int64{feb2, jan5}},
			// Berlin days: the 23:30 UTC entry belongs to 11 January.
			{"from=2024-01-11&to=2024-01-31", []int64{lateJan10}},
			{"from=2024-01-01&to=2024-01-10", []int64{jan5}},
			{"from=2024-02-01&to=2024-02-02", []int64{feb2}},
			{"actor=alice&action=notification.*", nil},
			{"actor=100%25", nil},
		} {
			doc := manager.page("/t/acme/audit?" + tc.query)
			require.Equal(t, tc.want, auditIDs(doc), tc.query)
			if tc.want == nil {
				require.Contains(t, text(doc.Find(".empty")), "No entry matches these filters", tc.query)
			}
		}
		doc := manager.page("/t/acme/audit?action=notification.*")
		selected, _ := doc.Find(`select[name=action] option[selected]`).Attr("value")
		require.Equal(t, "notification.*", selected, "the filter keeps its choice")
		require.Positive(t, doc.Find(`select[name=action] option[value="template.update"]`).Length(), "known actions are offered")
	})

	t.Run("BadFilters", func(t *testing.T) {
		for _, tc := range []struct{ query, field, want string }{
			{"action=" + url.QueryEscape("DROP TABLE x"), "action", `"DROP TABLE x" is not an action`},
			{"from=yesterday", "from", `From "yesterday" is not a date such as 2027-04-12.`},
			{"to=2024-02-30", "to", `To "2024-02-30" is not a date`},
			{"from=2024-03-01&to=2024-02-01", "to", "The end date 2024-02-01 is before the start date 2024-03-01."},
			{"actor=" + strings.Repeat("a", 201), "actor", "at most 200 characters"},
		} {
			doc, resp := manager.get("/t/acme/audit?" + tc.query)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, tc.query)
			require.Contains(t, text(doc.Find(`[name=`+tc.field+`] ~ .field-error`)), tc.want, tc.query)
			require.Empty(t, auditIDs(doc), "no rows under a filter that was refused")
		}
		doc, resp := operator.get("/audit?tenant=no-such-tenant")
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, text(doc.Find(`select[name=tenant] ~ .field-error`)), `There is no tenant "no-such-tenant".`)
	})

	t.Run("PlatformListsEveryTenant", func(t *testing.T) {
		doc := operator.page("/audit?to=2024-12-31")
		ids := auditIDs(doc)
		require.Equal(t, []int64{platformEntry, globexEntry, feb2, jan5, lateJan10}, ids, "every chain, newest first")
		require.Equal(t, "globex", text(doc.Find(`tr[data-audit-id="`+strconv.FormatInt(globexEntry, 10)+`"] td.tenant`)))
		require.Equal(t, "acme", text(doc.Find(`tr[data-audit-id="`+strconv.FormatInt(feb2, 10)+`"] td.tenant`)))
		require.Equal(t, "platform", text(doc.Find(`tr[data-audit-id="`+strconv.FormatInt(platformEntry, 10)+`"] td.tenant`)))
		require.Equal(t, "10 Jan 2024 23:30 UTC", text(doc.Find(`tr[data-audit-id="`+strconv.FormatInt(lateJan10, 10)+`"] td.at`)), "UTC on the platform page")

		require.Equal(t, []int64{globexEntry}, auditIDs(operator.page("/audit?tenant=globex&to=2024-12-31")))
		require.Equal(t, []int64{platformEntry}, auditIDs(operator.page("/audit?tenant=platform&to=2024-12-31")))
		// UTC days: the 23:30 UTC entry belongs to 10 January here.
		require.Equal(t, []int64{platformEntry, globexEntry, lateJan10}, auditIDs(operator.page("/audit?from=2024-01-10&to=2024-01-10")))
		require.Equal(t, []int64{globexEntry}, auditIDs(operator.page("/audit?actor=gina&action=api_key.*")))
		require.Zero(t, doc.Find(".chain-result").Length(), "the chain is verified only when asked")
	})

	t.Run("Access", func(t *testing.T) {
		_, resp := c.signIn(asSupport).get("/t/acme/audit")
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		_, resp = manager.get("/audit")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "the platform log is for operators")
		_, resp = c.signIn(asOtherManager).get("/t/acme/audit")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		doc := c.signIn(asOtherManager).page("/t/globex/audit?to=2024-12-31")
		require.Equal(t, []int64{globexEntry}, auditIDs(doc))
	})

	t.Run("Pagination", func(t *testing.T) {
		var ids []int64
		for i := range 27 {
			ids = append(ids, c.auditAt(&globex, "user", "pager@globex.test", "template.update", "template", strconv.Itoa(i), nil, day("2024-03-01T10:00:00Z")))
		}
		other := c.signIn(asOtherManager)
		doc := other.page("/t/globex/audit?actor=pager")
		require.Len(t, auditIDs(doc), 25)
		require.Equal(t, ids[26], auditIDs(doc)[0])
		next, ok := doc.Find(`.pager a[rel=next]`).Attr("href")
		require.True(t, ok)
		require.Contains(t, next, "actor=pager", "pages keep the filters")
		require.Equal(t, []int64{ids[1], ids[0]}, auditIDs(other.page(next)))
	})

	t.Run("VerifyChain", func(t *testing.T) {
		doc := operator.page("/audit?verify=1")
		require.Equal(t, "chain intact", text(doc.Find(".chain-result .badge")))

		// Removing an entry from the middle of globex's chain (which takes
		// the owner's access) breaks the link of the one after it.
		c.OwnerExec(`DELETE FROM audit_log WHERE id = (SELECT id FROM audit_log WHERE tenant_id = $1 AND actor_label = 'pager@globex.test' ORDER BY id LIMIT 1 OFFSET 5)`, globex)
		doc = operator.page("/audit?verify=1&tenant=globex")
		require.Equal(t, "1 break(s) found", text(doc.Find(".chain-result .badge")))
		require.Contains(t, text(doc.Find(".chain-breaks")), "in tenant globex: link to the previous entry is broken.")
		require.Equal(t, "globex", doc.Find(`select[name=tenant] option[selected]`).AttrOr("value", ""), "verifying keeps the filters")
	})
}
