package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/web/webtest"
)

// TestBrowser_Upload takes a manager through the uploads page: a list
// with a bad phone number is refused with the problem named by row and
// column, the corrected list shows its first rows, and its start sends
// it; the page then shows the progress.
func TestBrowser_Upload(t *testing.T) {
	t.Parallel()
	c := serveConsoleWith(t, webtest.Options{})
	dir := t.TempDir()
	bad := filepath.Join(dir, "manifest-bad.csv")
	lines := strings.Split(confirmedRows(6), "\n")
	lines[4] = "Dora Klein;+49 15;dora@example.com;Gardasee;2027-04-12;B-4;150,00 €"
	require.NoError(t, os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644))
	good := filepath.Join(dir, "manifest.csv")
	require.NoError(t, os.WriteFile(good, []byte(strings.ReplaceAll(confirmedRows(6), "Passenger", "Gast")), 0o644))

	ctx := newBrowser(t)
	acceptDialogs(t, ctx)
	login(t, ctx, c.base, c.users[asManager].Email, consolePassword)

	upload := func(path string) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(c.base+"/t/acme/uploads"),
			chromedp.WaitVisible(chromedp.CSS(`form.upload-form`))))
		require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`select[name=trigger_event]`), "BOOKING_CONFIRMED"),
			chromedp.SetUploadFiles(chromedp.CSS(`input[name=file]`), []string{path})))
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`form.upload-form button[type=submit]`))))
	}

	upload(bad)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.upload-problems`))))
	problems := textsOf(t, ctx, `.upload-problems tbody tr`)
	require.Len(t, problems, 1)
	require.Contains(t, problems[0], "rows[4].phone")
	require.Contains(t, problems[0], "invalid_phone")
	// The refused file's page answers 422, which the browser reports.
	errs := takePageErrors(t, ctx)
	require.Len(t, errs, 1, "%q", errs)
	require.Contains(t, errs[0], "422")
	screenshot(t, ctx, "01-upload-problems")

	upload(good)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.upload-preview`))))
	require.Len(t, textsOf(t, ctx, `.upload-preview tbody tr`), 6)
	requireNoPageErrors(t, ctx)
	screenshot(t, ctx, "02-upload-preview")

	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`form[action$="/start"] button`))))
	c.WaitUntil("the upload's messages are sent", func() bool {
		return c.Count(`SELECT count(*) FROM messages m JOIN events e ON e.id = m.event_id
			WHERE e.source_event_id LIKE 'upload:%' AND m.status IN ('SENT', 'DELIVERED', 'READ')`) >= 6
	})
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`.upload-status`))))
	require.Equal(t, []string{"DONE"}, textsOf(t, ctx, `.upload-status`))
	requireNoPageErrors(t, ctx)
	screenshot(t, ctx, "03-upload-progress")
}
