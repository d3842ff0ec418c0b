package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/web/webtest"
)

// TestBrowser_TwoFactor enrols a manager's authenticator app in the
// browser, signs out, signs in with a code, then requires two-factor for
// the tenant and sees support held on the enrolment page. Codes come from
// the page's key on the test's clock.
func TestBrowser_TwoFactor(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	c := serveConsoleWith(t, webtest.Options{Now: clock.Now})
	b := &twoFactorBundle{consoleBundle: c.consoleBundle, clock: clock}
	ctx := newBrowser(t)
	// Support's and an operator's browsers open now: opening a tab clears
	// the test's screenshots.
	support, operator := newBrowser(t), newBrowser(t)

	// Enrol.
	login(t, ctx, c.base, c.users[asManager].Email, consolePassword)
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.userbox a[href="/account/two-factor"]`)))
	requireHeading(t, ctx, "Two-factor sign-in")
	loaded := evalString(t, ctx, `(() => { const i = document.querySelector('img.qr'); return i && i.complete && i.naturalWidth > 0 ? 'yes' : 'no' })()`)
	require.Equal(t, "yes", loaded, "the QR code shows")
	secret := evalString(t, ctx, `document.querySelector('.totp-secret').textContent.trim()`)
	capture(t, ctx, "01-enrol")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`input[name=code]`), b.code(t, secret, 0))))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.two-factor-enrol button[type=submit]`)))
	requireText(t, ctx, "They are shown only now.")
	codes := textsOf(t, ctx, `.recovery-codes code`)
	require.Len(t, codes, 10)
	capture(t, ctx, "02-recovery-codes")

	// Sign out, and in again with a code of the next time step.
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.userbox button[type=submit]`)))
	requireAt(t, ctx, "/login")
	clock.Advance(30 * time.Second)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), c.users[asManager].Email),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), consolePassword),
	))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`button[type=submit]`)))
	requireHeading(t, ctx, "Two-factor sign-in")
	capture(t, ctx, "03-second-step")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`input[name=code]`), "000000")))
	_, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`button[type=submit]`)))
	require.NoError(t, err)
	takePageErrors(t, ctx) // the 401 of the wrong code
	requireText(t, ctx, "That code is wrong")
	capture(t, ctx, "04-wrong-code")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`input[name=code]`), b.code(t, secret, 0))))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`button[type=submit]`)))
	requireAt(t, ctx, "/t/acme/")
	requireHeading(t, ctx, "Dashboard")

	// Require it for the tenant's users.
	visit(t, ctx, c.base+"/t/acme/users")
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.two-factor-requirement button[type=submit]`)))
	requireText(t, ctx, "Two-factor sign-in is now required")
	capture(t, ctx, "05-required")

	// Support, in a browser of their own, is held on the enrolment page.
	login(t, support, c.base, c.users[asSupport].Email, consolePassword)
	requireAt(t, support, "/account/two-factor")
	requireText(t, support, "Your organisation requires two-factor sign-in")
	visit(t, support, c.base+"/t/acme/messages")
	requireAt(t, support, "/account/two-factor")
	capture(t, support, "06-support-held")

	// The operators' page: their second factors and the rule for them.
	login(t, operator, c.base, c.users[asOperator].Email, consolePassword)
	follow(t, operator, chromedp.Click(chromedp.CSS(`.userbox a[href="/operators"]`)))
	requireHeading(t, operator, "Operators")
	require.Equal(t, []string{"none"}, textsOf(t, operator, `.operator-list .two-factor`))
	capture(t, operator, "07-operators")
}
