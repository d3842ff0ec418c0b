package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/web/webtest"
)

func TestConsoleLimits(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true, DefaultLimits: true})
	ops := c.signIn(asOperator)
	path := "/tenants/" + c.Tenant.ID.String()

	t.Run("OperatorSetsThemAudited", func(t *testing.T) {
		doc := ops.page(path)
		require.Equal(t, "3000", text(doc.Find(`#limits [data-limit=intake_per_minute]`)))
		require.Equal(t, "", doc.Find(`input[name=daily_sms]`).AttrOr("value", "x"), "a default shows as an empty field")

		doc, resp := ops.postPage(path+"/limits", url.Values{"daily_sms": {"-1"}, "sms_countries": {"DE"}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, fieldError(doc, "input[name=daily_sms]"), "whole number")
		require.Equal(t, "-1", doc.Find(`input[name=daily_sms]`).AttrOr("value", ""), "the form keeps what was typed")
		require.Zero(t, c.Count(`SELECT count(*) FROM tenant_limits WHERE tenant_id = $1`, c.Tenant.ID), "nothing stored")

		resp = ops.post(path+"/limits", url.Values{"intake_per_minute": {"600"}, "daily_sms": {"50"}, "sms_countries": {"de, at ch"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc = ops.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "Limits")
		require.Equal(t, "600", text(doc.Find(`#limits [data-limit=intake_per_minute]`)))
		require.Equal(t, "0 of 50", text(doc.Find(`#limits [data-limit=daily_sms]`)))
		require.Equal(t, "AT, CH, DE", text(doc.Find(`#limits [data-limit=sms_countries]`)))
		require.Equal(t, "AT, CH, DE", doc.Find(`input[name=sms_countries]`).AttrOr("value", ""))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'tenant.limits'
			AND (metadata->>'daily_sms')::int = 50 AND metadata->>'daily_email' = 'default' AND actor_id = $2`, c.Tenant.ID, c.users[asOperator].ID))
	})

	t.Run("TenantSeesThem", func(t *testing.T) {
		manager := c.signIn(asManager)
		doc := manager.page("/t/acme/settings")
		require.Equal(t, 1, doc.Find(`#limits [data-limit=daily_email]`).Length())
		_, resp := manager.get(path)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "only operators set limits")
		require.Equal(t, http.StatusForbidden, manager.post(path+"/limits", url.Values{"daily_sms": {"100000"}}).StatusCode)
	})
}
