package web_test

// The dashboard's month and the template figures in a real browser, as a
// manager and as an operator, on a tenant with a month of messages.

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// seedMonth gives acme a month of messages on three channels: most
// delivered within seconds, some read, some failed for a few reasons, a
// few still sent or queued; each uses one of acme's booking confirmation
// templates of its channel. The month is then rolled up, as the periodic
// job does.
func seedMonth(t *testing.T, c *liveConsole) {
	t.Helper()
	c.Exec(`
		INSERT INTO messages (id, tenant_id, correlation_id, idempotency_key, trigger_event, channel, to_address, status,
			failed_reason, template_id, queued_at, sent_at, delivered_at, read_at, created_at, updated_at)
		SELECT gen_random_uuid(), $1, 'evt-month', 'month:' || n, 'BOOKING_CONFIRMED', ch, 'anna@example.com', st,
			CASE WHEN st <> 'FAILED' THEN NULL
				WHEN ch = 'EMAIL' THEN (ARRAY['ses_bounce', 'quota_exceeded', 'ses_bounce', 'no_recipient_address'])[1 + n % 4]
				WHEN ch = 'WHATSAPP' THEN (ARRAY['meta_131026', 'opted_out', 'meta_131047'])[1 + n % 3]
				ELSE 'sns_sms_failure' END,
			(SELECT id FROM templates WHERE tenant_id = $1 AND channel = ch AND trigger_event = 'BOOKING_CONFIRMED' ORDER BY locale LIMIT 1),
			at, CASE WHEN st IN ('SENT', 'DELIVERED', 'READ') THEN at + interval '1 second' END,
			CASE WHEN st IN ('DELIVERED', 'READ') THEN at + (CASE ch WHEN 'SMS' THEN 8 WHEN 'EMAIL' THEN 2 ELSE 20 END + n % 40) * interval '1 second' END,
			CASE WHEN st = 'READ' THEN at + interval '10 minutes' END,
			at, at
		FROM (
			SELECT n, now() - (n / 6 % 30) * interval '1 day' - (n % 17) * interval '37 minutes' - interval '5 minutes' AS at,
				(ARRAY['EMAIL', 'EMAIL', 'WHATSAPP', 'SMS', 'EMAIL', 'WHATSAPP'])[1 + n % 6] AS ch,
				CASE WHEN n % 23 = 0 THEN 'FAILED' WHEN n % 11 = 0 THEN 'SENT' WHEN n % 7 = 0 THEN 'READ'
					WHEN n % 97 = 0 THEN 'QUEUED' ELSE 'DELIVERED' END AS st
			FROM generate_series(1, 900) n
		) m`, c.Tenant.ID)
	_, err := c.Services.Rollups.RollUpTenant(c.Ctx, c.Tenant.ID)
	require.NoError(t, err)
}

func TestBrowser_Trends(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	seedMonth(t, c)

	for _, who := range []string{asManager, asOperator} {
		t.Run(who, func(t *testing.T) {
			ctx := newBrowser(t)
			login(t, ctx, c.base, c.users[who].Email, consolePassword)
			visit(t, ctx, c.base+"/t/acme/")
			requireHeading(t, ctx, "Dashboard")
			requireText(t, ctx, "Last 30 days")
			charts := textsOf(t, ctx, `.trend-charts figure figcaption strong`)
			require.Equal(t, []string{"WhatsApp", "E-mail", "SMS"}, charts, "one chart per channel with messages")
			require.Equal(t, "30", evalString(t, ctx, `String(document.querySelectorAll('figure[data-channel=EMAIL] svg g.day-bar').length)`), "a bar a day")
			title := evalString(t, ctx, `document.querySelector('figure[data-channel=EMAIL] svg > title').textContent`)
			require.Equal(t, "E-mail messages per day, last 30 days", title)
			requireText(t, ctx, "No messages on Webhook.")
			rates := textsOf(t, ctx, `.rate-list li`)
			require.Len(t, rates, 3)
			for _, r := range rates {
				require.Contains(t, r, "% delivered")
				require.Contains(t, r, "median about ", "a median for each channel: %q", r)
			}
			reasons := textsOf(t, ctx, `.failure-list li`)
			require.NotEmpty(t, reasons)
			capture(t, ctx, "01-dashboard")

			// The delivery promise, per day and channel: the month's
			// messages were handed over a second after they were created,
			// but those still queued count with their wait so far.
			promise := textsOf(t, ctx, `[data-promise=tenant] tbody tr`)
			require.NotEmpty(t, promise)
			kept, missed := 0, 0
			for _, r := range promise {
				require.Regexp(t, `\d+\.\d %`, r, "a share handed over within 10 s: %q", r)
				if strings.Contains(r, "100.0 %") {
					kept++
				} else {
					missed++
				}
			}
			require.Positive(t, kept, "days without a queued message kept the promise: %q", promise)
			require.Positive(t, missed, "a day with a queued message did not: %q", promise)
			require.Positive(t, evalInt(t, ctx, `document.querySelectorAll('[data-promise=tenant] td.promise-missed').length`),
				"a day under 95%% is marked")
			evalString(t, ctx, `(document.querySelector('[data-promise=tenant]').scrollIntoView(), '')`)
			capture(t, ctx, "01-dashboard-promise")
			if who == asOperator {
				visit(t, ctx, c.base+"/tenants")
				rows := textsOf(t, ctx, `[data-promise=platform] tbody tr`)
				require.Len(t, rows, 3, "acme's three channels: %q", rows)
				require.Contains(t, rows[0], "Acme")
				evalString(t, ctx, `(document.querySelector('[data-promise=platform]').scrollIntoView(), '')`)
				capture(t, ctx, "01-operator-promise")
				visit(t, ctx, c.base+"/t/acme/")
			}

			// The commonest failure reason leads to its messages.
			href := evalString(t, ctx, `document.querySelector('.failure-list li a').getAttribute('href')`)
			u, err := url.Parse(href)
			require.NoError(t, err)
			require.Equal(t, "FAILED", u.Query().Get("status"))
			reason := u.Query().Get("reason")
			require.NotEmpty(t, reason)
			follow(t, ctx, chromedp.Click(chromedp.CSS(`.failure-list li a`)))
			requireHeading(t, ctx, "Messages")
			rows := textsOf(t, ctx, `.msg-table tbody tr`)
			require.NotEmpty(t, rows)
			for _, r := range rows {
				require.Contains(t, r, "FAILED")
			}
			require.Equal(t, reason, evalString(t, ctx, `document.querySelector('input[name=reason]').value`))
			capture(t, ctx, "02-failed-by-reason")

			// The templates list and a template page show what became of
			// the template's messages.
			visit(t, ctx, c.base+"/t/acme/templates?event=BOOKING_CONFIRMED&channel=EMAIL")
			cells := textsOf(t, ctx, `table.templates td.tpl-stats`)
			require.NotEmpty(t, cells)
			used := false
			for _, cell := range cells {
				used = used || strings.Contains(cell, "delivered")
			}
			require.True(t, used, "a used template's figures: %q", cells)
			capture(t, ctx, "03-templates")

			follow(t, ctx, chromedp.Click(chromedp.CSS(`table.templates tr:has(td.tpl-stats:not([data-stats=none])) a`)))
			requireText(t, ctx, "Messages, last 30 days")
			figures := textsOf(t, ctx, `dl.tpl-figures .tpl-figure`)
			require.Len(t, figures, 4)
			require.True(t, strings.HasPrefix(figures[0], "Sent"), "%q", figures)
			capture(t, ctx, "04-template")
		})
	}
}
