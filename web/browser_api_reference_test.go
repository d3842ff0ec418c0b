package web_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestBrowser_APIReference opens the reference page as a manager would,
// from the navigation, and saves what a desktop (1366×900) and a phone
// (390×844) show at the top of the page and at the first operation.
func TestBrowser_APIReference(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	ctx := newBrowser(t)

	login(t, ctx, c.base, c.users[asManager].Email, consolePassword)
	clickNav(t, ctx, "API reference")
	requireAt(t, ctx, "/t/acme/api-reference")
	requireHeading(t, ctx, "API reference")
	ops := evalString(t, ctx, `String(document.querySelectorAll('article.api-op[data-operation]').length)`)
	require.NotEqual(t, "0", ops)

	// A request example opens in place, without script.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#op-createnotification .api-example summary`))))
	open := evalString(t, ctx, `String(document.querySelector('#op-createnotification .api-example').open)`)
	require.Equal(t, "true", open)

	dir := screenshotDir(t)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, size := range []struct {
		name string
		view chromedp.Action[chromedp.Void]
	}{
		{"desktop", chromedp.EmulateViewport(1366, 900)},
		{"phone", chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateScale(2), chromedp.EmulateMobile)},
	} {
		require.NoError(t, chromedp.Do(ctx, size.view))
		over := evalString(t, ctx, `String(document.documentElement.scrollWidth - document.documentElement.clientWidth)`)
		require.Equal(t, "0", over, "the page fits a %s screen", size.name)
		for _, at := range []struct{ name, js string }{
			{"top", `window.scrollTo(0, 0)`},
			{"operation", `document.querySelector('#op-createnotification').scrollIntoView()`},
		} {
			_, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](at.js))
			require.NoError(t, err)
			png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			require.NoError(t, err)
			path := filepath.Join(dir, "api-reference-"+at.name+"-"+size.name+".png")
			require.NoError(t, os.WriteFile(path, png, 0o644))
			t.Logf("screenshot: %s", path)
		}
	}
	requireNoPageErrors(t, ctx)
}
