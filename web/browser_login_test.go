package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

func TestBrowser_LoginPage(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	ctx := newBrowser(t)

	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(c.base+"/login"))
	require.NoError(t, err)
	require.EqualValues(t, 200, resp.Status)
	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	require.Equal(t, "Sign in · Herald", title)

	// The form a person fills in, as the browser sees it: visible, the
	// e-mail field focused, both fields required.
	for _, sel := range []string{`input[name=email][type=email]`, `input[name=password][type=password]`, `button[type=submit]`} {
		require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))), sel)
	}
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement?.name ?? ''`))
	require.NoError(t, err)
	require.Equal(t, "email", focused, "the e-mail field has the focus")
	required, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('form[action="/login"] [required]')].map(e => e.name)`))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"email", "password"}, required)
	button, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`button[type=submit]`)))
	require.NoError(t, err)
	require.Equal(t, "Sign in", button)

	// The stylesheet loaded and applies (a blocked or missing one would
	// also show as a page error).
	sheets, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.styleSheets.length`))
	require.NoError(t, err)
	require.Positive(t, sheets)

	requireNoPageErrors(t, ctx)
	screenshot(t, ctx, "login")
}
