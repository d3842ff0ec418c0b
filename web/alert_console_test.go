package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

func TestConsoleAlertSettings(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true, Config: func(cfg *app.Config) { cfg.WebhookAllowPrivate = true }})
	manager := c.signIn(asManager)
	const path = "/t/acme/settings/alerts"
	const secret = "https://hooks.slack.com/services/T0001/B0001/console-secret"
	form := func(kv ...string) url.Values {
		v := url.Values{"staff_emails": {"ops@acme.example\nnight@acme.example"}, "breaker_minutes": {"10"},
			"approval_minutes": {"30"}, "unanswered_minutes": {"60"}, "digest_time": {"07:30"}}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}

	t.Run("SaveShowsHostNeverURL", func(t *testing.T) {
		doc := manager.page(path)
		require.Contains(t, text(doc.Find(".card")), "No alerts yet")
		resp := manager.post(path, form("slack_webhook_url", secret))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc = manager.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "Alert settings saved")
		page, err := doc.Html()
		require.NoError(t, err)
		require.NotContains(t, page, "console-secret", "the URL is never rendered back")
		require.Contains(t, text(doc.Find("label")), "posts go to hooks.slack.com")
		require.Equal(t, "", doc.Find(`input[name=slack_webhook_url]`).AttrOr("value", "x"))
		require.Equal(t, "07:30", doc.Find(`input[name=digest_time]`).AttrOr("value", ""))

		// Saving again with the URL field empty keeps the webhook.
		require.Equal(t, http.StatusSeeOther, manager.post(path, form("approval_minutes", "45")).StatusCode)
		set, err := c.Services.Alerts.Settings(c.Ctx, c.Tenant.ID)
		require.NoError(t, err)
		require.Equal(t, "hooks.slack.com", set.SlackHost)
		require.Equal(t, 45, set.ApprovalMinutes)

		require.Equal(t, http.StatusSeeOther, manager.post(path, form("slack_remove", "1")).StatusCode)
		set, err = c.Services.Alerts.Settings(c.Ctx, c.Tenant.ID)
		require.NoError(t, err)
		require.Empty(t, set.SlackHost, "the remove box removes it")
	})

	t.Run("BadInputStoresNothing", func(t *testing.T) {
		before := c.Count(`SELECT count(*) FROM audit_log WHERE action = 'alert_settings.update'`)
		manager.page(path)
		doc, resp := manager.postPage(path, form("staff_emails", "ops@acme.example\nnot an address", "digest_time", "7h",
			"teams_webhook_url", "http://169.254.169.254/hook-secret"))
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, text(doc.Find(`[name=staff_emails] ~ .field-error`)), "is not an e-mail address")
		require.Contains(t, text(doc.Find(`[name=digest_time] ~ .field-error`)), "HH:MM")
		require.NotEmpty(t, text(doc.Find(`[name=teams_webhook_url] ~ .field-error`)))
		page, _ := doc.Html()
		require.NotContains(t, page, "hook-secret", "a refused URL is not echoed either")
		require.Contains(t, doc.Find(`textarea[name=staff_emails]`).Text(), "not an address", "the form keeps what was typed")
		require.Equal(t, before, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'alert_settings.update'`))
	})

	t.Run("NoCSRF", func(t *testing.T) {
		manager.page(path)
		v := form("staff_emails", "forged@evil.example")
		v.Set("csrf", "forged")
		require.Equal(t, http.StatusForbidden, manager.post(path, v).StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM alert_settings WHERE 'forged@evil.example' = ANY (staff_emails)`))
	})

	t.Run("SupportMayNot", func(t *testing.T) {
		_, resp := c.signIn(asSupport).get(path)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
}

// TestBrowser_AlertSettings walks a manager through the staff-alert page
// in Chromium: set the staff list, a Slack webhook and the digest, and
// see the saved page with its last alerts.
func TestBrowser_AlertSettings(t *testing.T) {
	t.Parallel()
	c := serveConsoleWith(t, webtest.Options{Config: func(cfg *app.Config) { cfg.WebhookAllowPrivate = true }})
	ctx := newBrowser(t)

	login(t, ctx, c.base, c.users[asManager].Email, consolePassword)
	clickNav(t, ctx, "Settings")
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.page-head a[href$="/settings/alerts"]`)))
	requireHeading(t, ctx, "Staff alerts")
	capture(t, ctx, "01-alerts-empty")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`textarea[name=staff_emails]`), "ops@acme.example\nnight-desk@acme.example"),
		chromedp.SendKeys(chromedp.CSS(`input[name=slack_webhook_url]`), "https://hooks.slack.com/services/T1/B1/browser-secret"),
		chromedp.SetValue(chromedp.CSS(`input[name=digest_time]`), "07:30"),
	))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`button.primary`)))
	requireText(t, ctx, "Alert settings saved")
	requireText(t, ctx, "posts go to hooks.slack.com")
	require.NotContains(t, evalString(t, ctx, `document.documentElement.outerHTML`), "browser-secret")

	// An alert raised meanwhile shows in the list.
	sms := c.ActiveAccount(app.SMS)
	require.NoError(t, c.Services.Accounts.SetStatus(c.Ctx, app.CLIActor, c.Tenant.ID, sms.ID, app.AccountSuspended, "Carrier blocked the sender id"))
	_, err := c.Services.Alerts.CheckAll(c.Ctx)
	require.NoError(t, err)
	follow(t, ctx, chromedp.Navigate(c.base+"/t/acme/settings/alerts"))
	requireText(t, ctx, "Account suspended")
	capture(t, ctx, "02-alerts-saved")
}
