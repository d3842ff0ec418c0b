package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// fieldError returns the error shown under the form control sel.
func fieldError(doc *goquery.Document, sel string) string {
	return text(doc.Find(sel + " ~ .field-error"))
}

// tenantIDBySlug reads a tenant's id from the database.
func (c *consoleBundle) tenantIDBySlug(slug string) uuid.UUID {
	c.T.Helper()
	var id uuid.UUID
	require.NoError(c.T, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
		t, err := tx.TenantBySlug(c.Ctx, slug)
		if err == nil {
			id = t.ID
		}
		return err
	}))
	return id
}

func TestConsoleTenants_List(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	ops := c.signIn(asOperator)
	c.Exec(`INSERT INTO usage_counters (tenant_id, channel, month, shard, count)
		VALUES ($1, 'EMAIL', date_trunc('month', now() AT TIME ZONE 'UTC')::date, 0, 7),
		       ($1, 'SMS', date_trunc('month', now() AT TIME ZONE 'UTC')::date, 3, 5),
		       ($1, 'SMS', (date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month')::date, 0, 100)`, c.Tenant.ID)

	t.Run("EveryTenantNewestFirst", func(t *testing.T) {
		doc := ops.page("/tenants")
		rows := doc.Find("table.tenant-list tbody tr")
		require.Equal(t, []string{"globex", "acme"}, rows.Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-tenant", "") }))
		acme := doc.Find(`tr[data-tenant=acme] td`)
		require.Equal(t, "Acme Tours", text(acme.Eq(0)))
		require.Equal(t, "PRO", text(acme.Eq(2)))
		require.Equal(t, "ACTIVE", text(acme.Eq(3)))
		require.Equal(t, "2", text(acme.Eq(4)), "manager and support")
		require.Equal(t, "12", text(acme.Eq(5)), "this month's sends only")
		require.Equal(t, "/t/acme/", doc.Find(`tr[data-tenant=acme] a.button`).AttrOr("href", ""), "operators open any tenant")
		require.Equal(t, "1", text(doc.Find(`tr[data-tenant=globex] td`).Eq(4)))

		ops.page("/t/globex/")
	})

	t.Run("Search", func(t *testing.T) {
		doc := ops.page("/tenants?q=GLOB")
		require.Equal(t, 1, doc.Find("table.tenant-list tbody tr").Length())
		require.Equal(t, "globex", doc.Find("tbody tr").AttrOr("data-tenant", ""))
		doc = ops.page("/tenants?q=Acme+T")
		require.Equal(t, "acme", doc.Find("tbody tr").AttrOr("data-tenant", ""))

		doc = ops.page("/tenants?q=" + url.QueryEscape("%"))
		require.Equal(t, 0, doc.Find("table.tenant-list").Length(), "wildcards are taken literally")
		require.Contains(t, text(doc.Find(".empty")), "No tenant matches")
	})

	t.Run("Paginated", func(t *testing.T) {
		for i := range 25 {
			c.Exec(`INSERT INTO tenants (id, slug, name, created_at) VALUES ($1, $2, $3, now() + $4 * interval '1 second')`,
				uuid.New(), fmt.Sprintf("bulk-%02d", i), fmt.Sprintf("Bulk %02d", i), i+1)
		}
		doc := ops.page("/tenants")
		rows := doc.Find("table.tenant-list tbody tr")
		require.Equal(t, 25, rows.Length())
		require.Equal(t, "bulk-24", rows.First().AttrOr("data-tenant", ""))
		next, ok := doc.Find(`.pager a[rel=next]`).Attr("href")
		require.True(t, ok)
		require.Equal(t, "/tenants?page=2", next)
		doc = ops.page(next)
		require.Equal(t, []string{"globex", "acme"}, doc.Find("tbody tr").Map(func(_ int, s *goquery.Selection) string { return s.AttrOr("data-tenant", "") }))
		require.Equal(t, 0, doc.Find(`.pager a[rel=next]`).Length())
	})

	t.Run("OperatorsOnly", func(t *testing.T) {
		for _, who := range []string{asManager, asSupport, asOtherManager} {
			s := c.signIn(who)
			for _, path := range []string{"/tenants", "/tenants/new", "/tenants/" + c.Tenant.ID.String()} {
				_, resp := s.get(path)
				require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s GET %s", who, path)
			}
			_, resp := s.get("/")
			s.follow(resp) // for a CSRF token
			resp = s.post("/tenants/"+c.Tenant.ID.String()+"/suspend", url.Values{"reason": {"mine now"}})
			require.Equal(t, http.StatusForbidden, resp.StatusCode)
		}
		require.Equal(t, 0, c.Count(`SELECT count(*) FROM tenants WHERE status = 'SUSPENDED'`))
	})
}

func TestConsoleTenants_Create(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	ops := c.signIn(asOperator)
	good := func() url.Values {
		return url.Values{"slug": {"initech"}, "name": {"Initech Reisen"}, "plan": {"ENTERPRISE"}, "locale": {"en-gb"},
			"timezone": {"Europe/London"}, "retention": {"30"}}
	}

	t.Run("Form", func(t *testing.T) {
		doc := ops.page("/tenants/new")
		require.Equal(t, "de-DE", doc.Find(`input[name=locale]`).AttrOr("value", ""))
		require.Equal(t, "Europe/Berlin", doc.Find(`input[name=timezone]`).AttrOr("value", ""))
		require.Equal(t, "FREE", doc.Find(`select[name=plan] option[selected]`).AttrOr("value", ""))
		require.Positive(t, doc.Find(`datalist#tenant-timezones option[value="Europe/Vienna"]`).Length())
		require.Contains(t, text(doc.Find(`input[name=retention] ~ .hint`)), "default of 90 days")
	})

	t.Run("BadInputStoresNothing", func(t *testing.T) {
		tenants, templates, accounts := c.Count(`SELECT count(*) FROM tenants`), c.Count(`SELECT count(*) FROM templates`), c.Count(`SELECT count(*) FROM channel_accounts`)
		for _, tc := range []struct {
			field, value, control, want string
			status                      int
		}{
			{"slug", "", "input[name=slug]", "Slug is required.", 422},
			{"slug", "Bad Slug!", "input[name=slug]", "must be 1 to 40 lowercase letters", 422},
			{"slug", "-initech", "input[name=slug]", "must be 1 to 40 lowercase letters", 422},
			{"slug", "admin", "input[name=slug]", "is reserved", 422},
			{"slug", "acme", "input[name=slug]", "A tenant with this slug already exists.", 409},
			{"name", "  ", "input[name=name]", "Name is required.", 422},
			{"name", strings.Repeat("n", 201), "input[name=name]", "at most 200 characters", 422},
			{"plan", "GOLD", "select[name=plan]", `Plan "GOLD" is not one of FREE, PRO, ENTERPRISE.`, 422},
			{"locale", "not a locale!", "input[name=locale]", "is not a valid language tag", 422},
			{"locale", "", "input[name=locale]", "Default locale is required", 422},
			{"timezone", "Mars/Olympus_Mons", "input[name=timezone]", "is not a known IANA name", 422},
			{"timezone", "", "input[name=timezone]", "Time zone is required", 422},
			{"retention", "0", "input[name=retention]", "from 1 to 3650 days", 422},
			{"retention", "3651", "input[name=retention]", "from 1 to 3650 days", 422},
			{"retention", "ninety", "input[name=retention]", "whole number of days", 422},
		} {
			form := good()
			form.Set(tc.field, tc.value)
			ops.page("/tenants/new")
			doc, resp := ops.postPage("/tenants", form)
			require.Equal(t, tc.status, resp.StatusCode, "%s=%q", tc.field, tc.value)
			require.Contains(t, fieldError(doc, tc.control), tc.want, "%s=%q", tc.field, tc.value)
			require.Equal(t, 1, doc.Find(".field-error").Length(), "one message, under its field")
			if tc.field != "plan" {
				require.Equal(t, tc.value, doc.Find(`input[name=`+tc.field+`]`).AttrOr("value", "x"), "the form keeps what was typed")
			}
			if tc.field != "name" {
				require.Equal(t, "Initech Reisen", doc.Find(`input[name=name]`).AttrOr("value", ""))
			}
		}
		require.Equal(t, tenants, c.Count(`SELECT count(*) FROM tenants`))
		require.Equal(t, templates, c.Count(`SELECT count(*) FROM templates`))
		require.Equal(t, accounts, c.Count(`SELECT count(*) FROM channel_accounts`))
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'tenant.create' AND actor_type = 'user'`))
	})

	t.Run("WithoutCSRFRefused", func(t *testing.T) {
		form := good()
		form.Set("csrf", "forged")
		resp := ops.post("/tenants", form)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM tenants WHERE slug = 'initech'`))
	})

	t.Run("CreatesAndProvisions", func(t *testing.T) {
		ops.page("/tenants/new")
		resp := ops.post("/tenants", good())
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		id := c.tenantIDBySlug("initech")
		require.Equal(t, "/tenants/"+id.String(), resp.Header.Get("Location"))
		doc := ops.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "created with default templates and sandbox accounts")
		require.Equal(t, "Initech Reisen", text(doc.Find("h1")))

		var tn app.Tenant
		require.NoError(t, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
			got, err := tx.TenantByID(c.Ctx, id)
			if err == nil {
				tn = *got
			}
			return err
		}))
		require.Equal(t, app.PlanEnterprise, tn.Plan)
		require.Equal(t, "en-GB", tn.DefaultLocale, "the locale is normalised as the CLI does")
		require.Equal(t, "Europe/London", tn.Timezone)
		require.Equal(t, 30, tn.Retention())
		require.Equal(t, app.TenantActive, tn.Status)

		// Provisioned exactly like `herald admin create-tenant`: as many
		// default templates as the fixture tenant, and an active sandbox
		// account per channel.
		require.Positive(t, c.Count(`SELECT count(*) FROM templates WHERE tenant_id = $1`, id))
		require.Equal(t, c.Count(`SELECT count(*) FROM templates WHERE tenant_id = $1`, c.other.ID), c.Count(`SELECT count(*) FROM templates WHERE tenant_id = $1`, id))
		require.Equal(t, 3, c.Count(`SELECT count(*) FROM channel_accounts WHERE tenant_id = $1 AND provider = 'sandbox' AND status = 'ACTIVE'`, id))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.create' AND actor_id = $2`, id, c.users[asOperator].ID))

		// It shows in the list and can be opened.
		require.Equal(t, 1, ops.page("/tenants").Find(`tr[data-tenant=initech]`).Length())
		ops.page("/t/initech/")
	})

	t.Run("DefaultRetention", func(t *testing.T) {
		form := good()
		form.Set("slug", "hooli")
		form.Set("retention", "")
		ops.page("/tenants/new")
		require.Equal(t, http.StatusSeeOther, ops.post("/tenants", form).StatusCode)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM tenants WHERE slug = 'hooli' AND retention_days IS NULL`))
	})
}

func TestConsoleTenants_PlanAndSuspension(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	ops := c.signIn(asOperator)
	path := "/tenants/" + c.Tenant.ID.String()

	t.Run("Page", func(t *testing.T) {
		doc := ops.page(path)
		require.Equal(t, "Acme Tours", text(doc.Find("h1")))
		require.Equal(t, "PRO", doc.Find(`select[name=plan] option[selected]`).AttrOr("value", ""))
		require.Equal(t, "", doc.Find(`input[name=retention]`).AttrOr("value", "x"))
		require.Contains(t, text(doc.Find("dl.facts")), "90 days (default)")
		require.Equal(t, 1, doc.Find(`form[action="`+path+`/suspend"] textarea[name=reason]`).Length())

		_, resp := ops.get("/tenants/" + uuid.NewString())
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		_, resp = ops.get("/tenants/not-a-uuid")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	t.Run("PlanAndRetention", func(t *testing.T) {
		ops.page(path)
		doc, resp := ops.postPage(path, url.Values{"plan": {"GOLD"}, "retention": {"30"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, fieldError(doc, "select[name=plan]"), "not one of FREE, PRO, ENTERPRISE")
		doc, resp = ops.postPage(path, url.Values{"plan": {"FREE"}, "retention": {"99999"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, fieldError(doc, "input[name=retention]"), "from 1 to 3650 days")
		require.Equal(t, "99999", doc.Find(`input[name=retention]`).AttrOr("value", ""), "the form keeps what was typed")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM tenants WHERE id = $1 AND plan = 'PRO' AND retention_days IS NULL`, c.Tenant.ID), "nothing stored")

		resp = ops.post(path, url.Values{"plan": {"ENTERPRISE"}, "retention": {"365"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc = ops.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "saved")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM tenants WHERE id = $1 AND plan = 'ENTERPRISE' AND retention_days = 365`, c.Tenant.ID))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.update'
			AND metadata->'plan'->>'from' = 'PRO' AND metadata->'plan'->>'to' = 'ENTERPRISE'
			AND (metadata->'retention_days'->>'to')::int = 365 AND actor_id = $2`, c.Tenant.ID, c.users[asOperator].ID))

		// Saving again changes nothing and writes no audit entry.
		require.Equal(t, http.StatusSeeOther, ops.post(path, url.Values{"plan": {"ENTERPRISE"}, "retention": {"365"}}).StatusCode)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.update'`, c.Tenant.ID))

		// Empty retention goes back to the default.
		require.Equal(t, http.StatusSeeOther, ops.post(path, url.Values{"plan": {"PRO"}, "retention": {""}}).StatusCode)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM tenants WHERE id = $1 AND plan = 'PRO' AND retention_days IS NULL`, c.Tenant.ID))
	})

	t.Run("SuspendAndReactivate", func(t *testing.T) {
		var tenant struct{ Status string }
		require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/tenant", nil, &tenant))

		// A reason is required.
		ops.page(path)
		doc, resp := ops.postPage(path+"/suspend", url.Values{"reason": {"   "}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, fieldError(doc, "textarea[name=reason]"), "Say why")
		doc, _ = ops.postPage(path+"/suspend", url.Values{"reason": {strings.Repeat("r", 501)}})
		require.Contains(t, fieldError(doc, "textarea[name=reason]"), "at most 500 characters")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM tenants WHERE id = $1 AND status = 'ACTIVE'`, c.Tenant.ID))
		require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/tenant", nil, nil))

		// A manager signed in before the suspension.
		manager := c.signIn(asManager)
		require.Equal(t, 0, manager.page("/t/acme/").Find(".flash-warning").Length())

		resp = ops.post(path+"/suspend", url.Values{"reason": {"Invoice 2026-104 unpaid"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc = ops.follow(resp)
		require.Contains(t, text(doc.Find(".suspension")), "Invoice 2026-104 unpaid")
		require.Equal(t, "SUSPENDED", text(doc.Find("dl.facts .badge")))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.suspend' AND metadata->'reason'->>'to' = 'Invoice 2026-104 unpaid'`, c.Tenant.ID))
		require.Equal(t, "SUSPENDED", text(ops.page("/tenants").Find(`tr[data-tenant=acme] .badge`)))

		// The API refuses the tenant's keys at once, and stores nothing.
		var apiErr webtest.APIError
		require.Equal(t, http.StatusForbidden, c.Request(http.MethodGet, "/api/v1/tenant", nil, &apiErr))
		require.Equal(t, "tenant_suspended", apiErr.Error.Code)
		require.Contains(t, apiErr.Error.Message, "suspended")
		events := c.Count(`SELECT count(*) FROM events WHERE tenant_id = $1`, c.Tenant.ID)
		require.Equal(t, http.StatusForbidden, c.Request(http.MethodPost, "/api/v1/notifications", webtest.Notification("evt-suspended", "B-1"), &apiErr))
		require.Equal(t, "tenant_suspended", apiErr.Error.Code)
		require.Equal(t, events, c.Count(`SELECT count(*) FROM events WHERE tenant_id = $1`, c.Tenant.ID))
		// Other tenants are not affected.
		_, globexKey, err := c.Services.APIKeys.Create(c.Ctx, app.CLIActor, c.other.ID, "globex system")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, c.RequestWithKey(globexKey, http.MethodGet, "/api/v1/tenant", nil, nil))

		// The tenant's users see why on every page.
		for _, p := range []string{"/t/acme/", "/t/acme/settings", "/t/acme/api-keys"} {
			banner := text(manager.page(p).Find(".flash-warning"))
			require.Contains(t, banner, "This tenant is suspended", p)
			require.Contains(t, banner, "Invoice 2026-104 unpaid", p)
		}

		// ... and cannot change anything while it lasts: no settings, no
		// keys. Previews still render; operators still act for the tenant.
		keys := c.Count(`SELECT count(*) FROM api_keys WHERE tenant_id = $1`, c.Tenant.ID)
		manager.page("/t/acme/api-keys")
		doc, resp = manager.postPage("/t/acme/api-keys", url.Values{"name": {"while suspended"}, "scopes": {"send", "read"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Contains(t, text(doc.Selection), "read-only")
		manager.page("/t/acme/settings")
		_, resp = manager.postPage("/t/acme/settings", url.Values{"timezone": {"Europe/Vienna"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Equal(t, keys, c.Count(`SELECT count(*) FROM api_keys WHERE tenant_id = $1`, c.Tenant.ID), "no key created")
		require.Zero(t, c.Count(`SELECT count(*) FROM tenants WHERE id = $1 AND timezone = 'Europe/Vienna'`, c.Tenant.ID))
		manager.page("/t/acme/templates")
		resp = manager.post("/t/acme/templates/preview", url.Values{"event": {"BOOKING_CONFIRMED"}, "channel": {"SMS"}, "body": {"Hi {{passenger_name}}"}})
		require.Equal(t, http.StatusOK, resp.StatusCode, "a preview changes nothing")
		ops.page("/t/acme/api-keys")
		resp = ops.post("/t/acme/api-keys", url.Values{"name": {"operator key"}, "scopes": {"send", "read"}})
		require.Less(t, resp.StatusCode, 400, "operators act for a suspended tenant")

		// Suspending twice says so.
		doc, resp = ops.postPage(path+"/suspend", url.Values{"reason": {"again"}})
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, text(doc.Find(".flash-error")), "suspended already")

		ops.page(path)
		resp = ops.post(path+"/reactivate", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(ops.follow(resp).Find(".flash-success")), "active again")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM tenants WHERE id = $1 AND status = 'ACTIVE' AND suspended_at IS NULL AND suspended_reason = ''`, c.Tenant.ID))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.reactivate'`, c.Tenant.ID))
		require.Equal(t, http.StatusOK, c.Request(http.MethodGet, "/api/v1/tenant", nil, &tenant))
		require.Equal(t, "ACTIVE", tenant.Status)
		c.Submit(webtest.Notification("evt-after-reactivation", "B-2"))
		require.Equal(t, 0, manager.page("/t/acme/").Find(".flash-warning").Length())

		// Reactivating an active tenant says so.
		doc, resp = ops.postPage(path+"/reactivate", nil)
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, text(doc.Find(".flash-error")), "not suspended")
	})

	t.Run("UnknownTenant", func(t *testing.T) {
		ops.page("/tenants")
		for _, action := range []string{"", "/suspend", "/reactivate"} {
			resp := ops.post("/tenants/"+uuid.NewString()+action, url.Values{"plan": {"PRO"}, "reason": {"x"}})
			require.Equal(t, http.StatusNotFound, resp.StatusCode, action)
		}
	})
}
