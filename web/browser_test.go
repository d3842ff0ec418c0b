package web_test

// The console's browser tests: headless Chromium (Debian's package, which
// `go tool task test` installs through web/browser.sh) driven with chromedp
// against Herald served for real on a loopback port, with real workers and
// its own database. Every test fails on a JavaScript exception or a console
// error in the pages it opens, and can save screenshots for people to look
// at under .test-output/screenshots/<TestName>/.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// The browser tests share one headless Chromium per package run: starting
// one takes seconds on an idle machine and close to a minute on a busy one,
// and that time is no test's work. Each test gets a tab of its own in a
// browser context of its own (its own cookies, storage and cache), so the
// tests stay as independent as with a browser each.
//
// tabTimeout bounds one test's own work in its tab, counted from the moment
// its tab opens. It is a hang guard, not a speed check: a test whose page
// never answers fails with a deadline error naming its step well before go
// test's own timeout, on however busy a machine.
const tabTimeout = 10 * time.Minute

// browserStartTimeout is the hang guard for starting the shared Chromium,
// which is no test's work, so no test's limit counts it: a browser that has
// not answered by then is stuck, not slow.
const browserStartTimeout = 5 * time.Minute

// closeTimeout is the hang guard for closing what a browser test opened (its
// tab, the console it browsed) and for shutting the shared Chromium down.
const closeTimeout = 2 * time.Minute

// The window the tests browse in, and the two sizes screenshots are taken at.
const (
	desktopWidth, desktopHeight = 1366, 900
	phoneWidth, phoneHeight     = 390, 844
)

// TestMain runs the package's tests, then shuts down the Chromium the
// browser tests shared, if one started.
func TestMain(m *testing.M) {
	code := m.Run()
	shared.close()
	os.Exit(code)
}

// chromiumPath returns the browser to drive: HERALD_CHROMIUM when set, else
// Debian's chromium (or Ubuntu's chromium-browser) from PATH, else "".
func chromiumPath(t *testing.T) string {
	t.Helper()
	if name := os.Getenv("HERALD_CHROMIUM"); name != "" {
		path, err := exec.LookPath(name)
		if err != nil {
			// A browser named on purpose that is not there is a mistake to
			// fix, not a reason to skip.
			t.Fatalf("HERALD_CHROMIUM=%s: %v", name, err)
		}
		return path
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	return ""
}

// shared is the package's one Chromium.
var shared sharedBrowser

// sharedBrowser is a headless Chromium started by the first browser test
// that needs it and closed by TestMain.
type sharedBrowser struct {
	once sync.Once
	// ctx is the browser's own chromedp context; tests open their tabs
	// from it. It has no deadline: the browser lives as long as the run.
	ctx context.Context
	// err is why the browser did not start; every browser test fails with
	// it.
	err error
	// took is how long the start took, for the log.
	took time.Duration
	// out is the browser's output, shown when a test fails.
	out *lockedBuffer
	// stop closes the browser, waits for it to exit and removes its
	// profile.
	stop func()
}

// get returns the shared browser's context, starting Chromium (exe) on the
// first call. It waits for the start however long it takes, up to
// browserStartTimeout; started says whether this call started it.
func (b *sharedBrowser) get(exe string) (ctx context.Context, started bool, err error) {
	b.once.Do(func() {
		started = true
		b.start(exe)
	})
	return b.ctx, started, b.err
}

// start launches Chromium with a profile of its own and waits until it
// answers.
func (b *sharedBrowser) start(exe string) {
	profile, err := os.MkdirTemp("", "herald-chromium-")
	if err != nil {
		b.err = err
		return
	}
	b.out = &lockedBuffer{}
	// chromedp's defaults already have --headless, --no-first-run,
	// --disable-background-networking and --disable-sync.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(profile),
		// Root in a container has no usable sandbox, and there is no GPU.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		// Nothing but the servers under test is reachable, so fetches of
		// Chromium's own only cost time and log errors.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(desktopWidth, desktopHeight),
		chromedp.CombinedOutput(b.out),
	)
	// The browser's life is bound to the context of its first run, so that
	// context must outlive every test: the hang guard cancels it only if
	// the start itself does not finish.
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	b.stop = func() {
		cancelBrowser()
		// Waits for the browser process to exit, so the profile can go.
		cancelAlloc()
		_ = os.RemoveAll(profile)
	}
	guard := time.AfterFunc(browserStartTimeout, cancelBrowser)
	began := time.Now()
	err = chromedp.Do(browserCtx)
	if !guard.Stop() {
		err = fmt.Errorf("chromium did not answer within %s: %w", browserStartTimeout, err)
	}
	b.took = time.Since(began)
	if err != nil {
		b.err = fmt.Errorf("start %s: %w", exe, err)
		return
	}
	b.ctx = browserCtx
}

// close shuts the browser down, if it started, within closeTimeout.
func (b *sharedBrowser) close() {
	if b.stop == nil {
		return
	}
	stopped := make(chan struct{})
	go func() {
		b.stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(closeTimeout):
		fmt.Fprintf(os.Stderr, "chromium did not exit within %s\n", closeTimeout)
	}
}

// newBrowser opens a tab for t in the package's shared headless Chromium,
// in a browser context of its own, and returns the tab's context, for
// chromedp.Run and chromedp.Do. The tab and its browser context are closed
// when t ends; page errors still unread then fail t (see
// requireNoPageErrors). The tab's context ends tabTimeout after it opened.
//
// Without Chromium the test is skipped with a loud message, or fails when
// HERALD_REQUIRE_BROWSER=1.
//
// Call it after serveConsole: at cleanup the tab is then gone before the
// server shuts down, so no keep-alive connection holds that up.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	exe := chromiumPath(t)
	if exe == "" {
		why := "neither chromium nor chromium-browser is on PATH. " +
			"`go tool task test` installs Debian's chromium package when it runs as root (web/browser.sh); " +
			"or install it yourself (apt-get install chromium), or set HERALD_CHROMIUM to a Chromium or Chrome binary."
		if os.Getenv("HERALD_REQUIRE_BROWSER") == "1" {
			t.Fatal("NO CHROMIUM, AND HERALD_REQUIRE_BROWSER=1 FORBIDS SKIPPING THIS BROWSER TEST: " + why)
		}
		t.Skip("NO CHROMIUM: SKIPPING THIS BROWSER TEST: " + why)
	}
	clearScreenshots(t)

	browserCtx, started, err := shared.get(exe)
	require.NoError(t, err)
	if started {
		t.Logf("chromium (%s) started in %s, shared by the package's browser tests", exe, shared.took.Round(time.Millisecond))
	}

	errs := &pageErrors{}
	tabCtx, cancelTab := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext(), chromedp.WithListener(errs.record))
	limitCtx, cancelLimit := context.WithTimeout(tabCtx, tabTimeout)
	ctx := context.WithValue(limitCtx, pageErrorsKey{}, errs)
	opened := false
	t.Cleanup(func() {
		defer func() {
			closeTab(t, ctx)
			cancelLimit()
			cancelTab()
			if t.Failed() {
				if tail := shared.out.tail(40); tail != "" {
					t.Logf("chromium's output, last lines:\n%s", tail)
				}
			}
		}()
		if !opened || ctx.Err() != nil {
			return
		}
		// Whatever the pages reported that the test did not check for fails
		// the test now, while the tab can still be asked. A page stuck in an
		// alert would not answer, hence the bound.
		checkCtx, cancel := context.WithTimeout(ctx, closeTimeout)
		defer cancel()
		left, err := errs.take(checkCtx)
		if err != nil {
			t.Errorf("ask the browser for its last errors: %v", err)
		}
		if len(left) > 0 {
			t.Errorf("the browser reported errors the test did not check:\n  %s", strings.Join(left, "\n  "))
		}
	})

	// The first action opens the tab (and its browser context).
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(desktopWidth, desktopHeight)), "open a tab in %s", exe)
	opened = true
	return ctx
}

// closeTab disposes of the tab's browser context, which closes the tab and
// its connections to the server under test. chromedp would do it when the
// tab's context is cancelled, but within a few seconds only, which a busy
// machine can exceed; a browser context left behind would keep its page
// running in the shared browser.
func closeTab(t *testing.T, ctx context.Context) {
	t.Helper()
	c := chromedp.FromContext(ctx)
	if c == nil || c.Browser == nil || c.BrowserContextID == "" {
		return
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if _, err := cdp.Call(closeCtx, c.Browser, target.DisposeBrowserContext,
		target.DisposeBrowserContextParams{BrowserContextID: c.BrowserContextID}); err != nil {
		t.Errorf("close the test's browser context: %v", err)
	}
}

// pageErrorsKey keys the test's pageErrors in the browser context.
type pageErrorsKey struct{}

// pageErrors collects what the browser reports as an error: uncaught
// exceptions and rejections, console.error and console.assert calls, and
// error entries of the browser log (failed loads, content security policy
// violations).
type pageErrors struct {
	mu   sync.Mutex
	errs []string
}

// record is a chromedp listener. It runs in the loop that reads the tab's
// messages, so it only appends; that loop also makes every event the browser
// sent before a command's reply arrive here before the command returns.
func (p *pageErrors) record(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg = "exception: " + d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg = "exception: " + d.Exception.Description
		}
		if d.URL != "" {
			msg += fmt.Sprintf(" (%s:%d)", d.URL, d.LineNumber+1)
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		args := make([]string, 0, len(ev.Args))
		for _, a := range ev.Args {
			args = append(args, remoteText(a))
		}
		msg = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " "))
	case *log.EventEntryAdded:
		e := ev.Entry
		if e == nil || e.Level != log.EntryLevelError {
			return
		}
		msg = fmt.Sprintf("%s error: %s", e.Source, e.Text)
		if e.URL != "" {
			msg += " (" + e.URL + ")"
		}
	default:
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs = append(p.errs, msg)
}

// remoteText is how DevTools would print a console argument.
func remoteText(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	var s string
	if len(o.Value) > 0 && json.Unmarshal(o.Value, &s) == nil {
		return s
	}
	if o.Description != "" {
		return o.Description
	}
	if len(o.Value) > 0 {
		return string(o.Value)
	}
	return string(o.UnserializableValue)
}

// take returns the errors recorded since the last call, and forgets them.
func (p *pageErrors) take(ctx context.Context) ([]string, error) {
	// A round trip to the page: events are handled in order, so every error
	// the browser sent before the reply is recorded when it returns.
	err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`0`))
	p.mu.Lock()
	defer p.mu.Unlock()
	taken := p.errs
	p.errs = nil
	return taken, err
}

// takePageErrors returns the errors the browser has reported since the last
// call, and forgets them: a test that expects one (an error page) takes and
// checks it, so that it does not fail the test at cleanup.
func takePageErrors(t *testing.T, ctx context.Context) []string {
	t.Helper()
	errs, ok := ctx.Value(pageErrorsKey{}).(*pageErrors)
	require.True(t, ok, "not a context from newBrowser")
	taken, err := errs.take(ctx)
	require.NoError(t, err)
	return taken
}

// requireNoPageErrors fails t at once if the browser has reported any error
// since the last check.
func requireNoPageErrors(t *testing.T, ctx context.Context) {
	t.Helper()
	if errs := takePageErrors(t, ctx); len(errs) > 0 {
		t.Fatalf("the browser reported errors:\n  %s", strings.Join(errs, "\n  "))
	}
}

// liveConsole is Herald served over a real TCP listener, for the browser:
// the console's cast (setupConsole: tenants, users, workers) with the HTTP app
// on 127.0.0.1.
type liveConsole struct {
	*consoleBundle
	// base is the console's URL, e.g. http://127.0.0.1:41234, without a
	// trailing slash.
	base string
}

// serveConsole starts Herald for t on a free loopback port and stops it when
// t ends.
func serveConsole(t *testing.T) *liveConsole {
	t.Helper()
	return serveConsoleWith(t, webtest.Options{})
}

// serveConsoleWith is serveConsole with Herald built with opts (its base
// URL set).
func serveConsoleWith(t *testing.T, opts webtest.Options) *liveConsole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	baseURL := &url.URL{Scheme: "http", Host: ln.Addr().String()}
	base := baseURL.String()
	// The base URL must be known before Herald is built: it is the origin
	// of the links and redirects Herald builds.
	adjust := opts.Config
	opts.Config = func(cfg *app.Config) {
		cfg.BaseURL = baseURL
		if adjust != nil {
			adjust(cfg)
		}
	}
	c := setupConsole(t, opts)
	served := make(chan error, 1)
	go func() { served <- c.App.Listener(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := c.App.ShutdownWithContext(ctx); err != nil {
			t.Logf("console shutdown: %v", err)
		}
		// A test that ends at once (a skip) can shut down before the
		// goroutine above has handed ln to the server, which would then
		// serve it for ever; closing ln ends that server too.
		_ = ln.Close()
		select {
		case err := <-served:
			if err != nil && !errors.Is(err, net.ErrClosed) {
				t.Errorf("console server: %v", err)
			}
		case <-ctx.Done():
			t.Errorf("console server did not stop: %v", ctx.Err())
		}
	})
	return &liveConsole{consoleBundle: c, base: base}
}

// login signs in through the console's form and waits for the page that
// follows it, failing t when sign-in does not get past the form.
func login(t *testing.T, ctx context.Context, base, email, password string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), email),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), password),
	))
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`button[type=submit]`)))
	require.NoError(t, err, "sign in as %s", email)
	require.Less(t, resp.Status, int64(400), "sign in as %s: %s answered %d", email, resp.URL, resp.Status)
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	if u, err := url.Parse(loc); err == nil && u.Path == "/login" {
		alert, _ := chromedp.Run(ctx, chromedp.Evaluate[string](
			`document.querySelector('[role=alert]')?.textContent?.trim() ?? ''`))
		t.Fatalf("sign in as %s: still on the sign-in page (%q)", email, alert)
	}
}

// screenshot saves full-page PNGs of the current page at desktop and phone
// width, as <name>-desktop.png and <name>-phone.png in the test's screenshot
// directory, and leaves the tab at desktop size.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := screenshotDir(t)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	sizes := []struct {
		suffix string
		view   chromedp.Action[chromedp.Void]
	}{
		{"desktop", chromedp.EmulateViewport(desktopWidth, desktopHeight)},
		// A phone at twice the pixels, as a person sees it.
		{"phone", chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateScale(2), chromedp.EmulateMobile)},
	}
	for _, s := range sizes {
		require.NoError(t, chromedp.Do(ctx, s.view))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
		require.NoError(t, err, "screenshot %s at %s size", name, s.suffix)
		path := filepath.Join(dir, fileName(name)+"-"+s.suffix+".png")
		require.NoError(t, os.WriteFile(path, png, 0o644))
		t.Logf("screenshot: %s", path)
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(desktopWidth, desktopHeight)))
}

// screenshotDir is where t's screenshots go: HERALD_TEST_OUTPUT (default
// .test-output; a relative path is taken from the repository root, as when
// the browser tests ran there) /screenshots/<TestName>, as an absolute path
// so the log can be followed.
func screenshotDir(t *testing.T) string {
	t.Helper()
	root := os.Getenv("HERALD_TEST_OUTPUT")
	if root == "" {
		root = ".test-output"
	}
	if !filepath.IsAbs(root) {
		root = filepath.Join(repoRoot(t), root)
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = fileName(p)
	}
	return filepath.Join(append([]string{root, "screenshots"}, parts...)...)
}

// repoRoot returns the repository's root: the nearest directory holding
// go.mod above the package directory, where go test runs the tests.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above %s", dir)
		dir = parent
	}
}

// clearScreenshots removes t's screenshots of an earlier run, so that the
// directory shows this run only.
func clearScreenshots(t *testing.T) {
	t.Helper()
	require.NoError(t, os.RemoveAll(screenshotDir(t)))
}

// fileName keeps letters, digits, '-', '_' and '.', and turns anything else
// (a subtest's spaces, slashes, quotes) into '_'.
func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}

// lockedBuffer collects the browser's output, which chromedp writes from
// another goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// tail returns the last n lines of the output, less the complaints about
// D-Bus that Chromium makes on every machine without a session bus.
func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []string
	for line := range strings.Lines(l.b.String()) {
		if !strings.Contains(line, ":ERROR:dbus/") {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], "")
}
