package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// TestBrowser_TemplateTestSend walks the template list, the e-mail preview
// (the rendered e-mail in its sandboxed frame, then the plain-text tab)
// and "Send a test" through a pending account, as a manager and as an
// operator.
func TestBrowser_TemplateTestSend(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	_, _, err := c.Server.Accounts.Create(c.Ctx, c.users[asManager], c.Tenant.ID,
		console.AccountForm{Provider: "sandbox", Name: "New e-mail (trying)", Channel: string(app.Email)})
	require.NoError(t, err)

	for _, who := range []string{asManager, asOperator} {
		t.Run(who, func(t *testing.T) {
			ctx := newBrowser(t)
			login(t, ctx, c.base, c.users[who].Email, consolePassword)
			follow(t, ctx, chromedp.Navigate(c.base+"/t/acme/templates"))
			requireHeading(t, ctx, "Templates")
			rows := textsOf(t, ctx, `table.templates tbody tr td:first-child code`)
			require.NotEmpty(t, rows)
			require.True(t, sortedStrings(rows), "the list is sorted by event: %q", rows)
			capture(t, ctx, who+"-01-templates")

			require.NoError(t, chromedp.Do(ctx,
				chromedp.SetValue(chromedp.CSS(`form.filters select[name=event]`), "BOOKING_CONFIRMED"),
				chromedp.SetValue(chromedp.CSS(`form.filters select[name=channel]`), string(app.Email)),
				chromedp.SetValue(chromedp.CSS(`form.filters select[name=locale]`), "de-DE"),
			))
			follow(t, ctx, chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
			follow(t, ctx, chromedp.Click(chromedp.CSS(`table.templates tbody tr a`)))
			requireHeading(t, ctx, "BOOKING_CONFIRMED · E-mail · de-DE")

			// The e-mail renders in a sandboxed frame: the frame's document
			// holds the sample passenger's name as text, not HTML source.
			sandbox := evalString(t, ctx, `document.querySelector('#template-preview iframe.email-frame').getAttribute('sandbox')`)
			require.Equal(t, "allow-same-origin", sandbox, "no allow-scripts: nothing in a template runs; the console only reads the frame's height")
			srcdoc := evalString(t, ctx, `document.querySelector('#template-preview iframe.email-frame').getAttribute('srcdoc')`)
			require.Contains(t, srcdoc, "<p>")
			visible := evalString(t, ctx, `getComputedStyle(document.querySelector('.email-pane-html')).display`)
			require.Equal(t, "block", visible)
			capture(t, ctx, who+"-02-email-preview")

			_, err := chromedp.Run(ctx, chromedp.Click(chromedp.CSS(`label[for=email-view-text]`)))
			require.NoError(t, err)
			textShown := waitFor[string](t, ctx, "the plain-text tab shows the text part",
				`(() => { const p = document.querySelector('.email-pane-text'); return getComputedStyle(p).display === 'block' ? p.innerText : ''; })()`)
			require.NotContains(t, textShown, "<p>", "the text part, not the HTML")
			require.Contains(t, textShown, "Anna")
			capture(t, ctx, who+"-03-email-text")

			// Send a test through the pending account.
			require.NoError(t, chromedp.Do(ctx,
				chromedp.SendKeys(chromedp.CSS(`#template-test input[name=test_to]`), "anna.test@example.com"),
				chromedp.SetValue(chromedp.CSS(`#template-test select[name=test_account]`), c.accountsNamed(c.Tenant.ID, "New e-mail (trying)")[0].ID.String()),
			))
			follow(t, ctx, chromedp.Click(chromedp.CSS(`#template-test-send`)))
			outcome := waitFor[string](t, ctx, "the test's result",
				`(() => { const r = document.querySelector('#template-test-result .test-outcome'); return r && r.textContent.includes('Sent') ? r.textContent : ''; })()`)
			require.Contains(t, outcome, "Sent")
			requireNoPageErrors(t, ctx)
			capture(t, ctx, who+"-04-test-sent")
		})
	}
}

func sortedStrings(s []string) bool {
	for i := 1; i < len(s); i++ {
		if strings.Compare(s[i-1], s[i]) > 0 {
			return false
		}
	}
	return true
}
