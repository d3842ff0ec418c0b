package web_test

// The console's main flows as people use them, in a real browser: a manager
// sets up a channel account, edits a template and follows a booking's
// messages to DELIVERED and resends one; support sees the same booking with
// masked addresses; an operator looks over the platform. Each main page is
// saved as a screenshot (desktop and phone) for people to look at.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/web/webtest"
)

// stepTimeout bounds one navigation or wait in the flows, so that a page
// that never loads fails the step that waited for it, with its name. It is
// a hang guard: a busy machine takes seconds where an idle one takes
// milliseconds, and the test must pass on both.
const stepTimeout = 2 * time.Minute

// deliveryTimeout bounds the wait for the sandbox to deliver a message
// (20 ms in tests; the rest is River picking the jobs up, under load). It
// too is a hang guard, not a speed check.
const deliveryTimeout = 3 * time.Minute

func TestBrowser_ManagerFlow(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	ctx := newBrowser(t)
	dialogs := acceptDialogs(t, ctx)

	login(t, ctx, c.base, c.users[asManager].Email, consolePassword)
	requireAt(t, ctx, "/t/acme/")
	requireHeading(t, ctx, "Dashboard")
	capture(t, ctx, "01-dashboard")

	// Channels: a second sandbox account, added through the real form.
	clickNav(t, ctx, "Channels")
	requireHeading(t, ctx, "Channel accounts")
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.page-head a[href$="/channels/new"]`)))
	requireHeading(t, ctx, "Add a channel account")
	follow(t, ctx, chromedp.Click(chromedp.CSS(`a.provider-choice[href$="provider=sandbox"]`)))
	requireHeading(t, ctx, "Add Sandbox account")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`form input[name=name]`), "Sandbox SMS backup"),
		chromedp.SetValue(chromedp.CSS(`form select[name=channel]`), string(app.SMS)),
	))
	capture(t, ctx, "02-channel-new")
	follow(t, ctx, chromedp.Click(chromedp.CSS(`form button[type=submit].primary`)))
	requireAt(t, ctx, "/t/acme/channels/")
	requireHeading(t, ctx, "Sandbox SMS backup")
	requireText(t, ctx, "SMS")
	capture(t, ctx, "03-channel-detail")
	clickNav(t, ctx, "Channels")
	rows := textsOf(t, ctx, `table.channel-accounts tbody tr`)
	require.True(t, containsAll(rows, "Sandbox SMS backup", "SMS", "PENDING"), "the new account is listed: %q", rows)
	capture(t, ctx, "04-channels")

	// Templates: type into the body, the preview follows (htmx), saving
	// makes a new version.
	clickNav(t, ctx, "Templates")
	requireHeading(t, ctx, "Templates")
	capture(t, ctx, "05-templates")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`form.filters select[name=event]`), "BOOKING_CONFIRMED"),
		chromedp.SetValue(chromedp.CSS(`form.filters select[name=channel]`), string(app.Email)),
		chromedp.SetValue(chromedp.CSS(`form.filters select[name=locale]`), "en"),
	))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	rows = textsOf(t, ctx, `table.templates tbody tr`)
	require.Len(t, rows, 1, "one template is BOOKING_CONFIRMED, e-mail, en: %q", rows)
	follow(t, ctx, chromedp.Click(chromedp.CSS(`table.templates tbody tr a`)))
	requireHeading(t, ctx, "BOOKING_CONFIRMED · ")
	version := evalString(t, ctx, `document.querySelector('.page-head .badge').textContent.trim()`)
	require.Equal(t, "version 1", version)
	const added = "Browser check: see you on board, {{passenger_name}}!"
	require.NoError(t, chromedp.Do(ctx,
		chromedp.WaitReady(chromedp.CSS(`#template-preview pre.preview`)),
		chromedp.Focus(chromedp.CSS(`#template-form textarea[name=body]`)),
		// The caret to the end of the text, as a person clicking below it.
		chromedp.Evaluate[chromedp.Void](`(() => { const b = document.querySelector('#template-form textarea[name=body]'); b.setSelectionRange(b.value.length, b.value.length); })()`),
		chromedp.SendKeys(chromedp.CSS(`#template-form textarea[name=body]`), "\n<p>"+added+"</p>"),
	))
	// The preview renders the sample values: the event's sample passenger
	// stands where the placeholder is.
	previewed := waitFor[string](t, ctx, "the preview shows the typed text",
		`(() => { const p = document.querySelector('#template-preview pre.preview'); return p && p.textContent.includes('Browser check: see you on board, ') && !p.textContent.includes('{{passenger_name}}!') ? p.textContent : ''; })()`)
	require.Contains(t, previewed, "Browser check: see you on board, ")
	requireNoPageErrors(t, ctx)
	capture(t, ctx, "06-template-edit-preview")
	follow(t, ctx, chromedp.Click(chromedp.CSS(`#template-form button[type=submit].primary`)))
	requireText(t, ctx, "version 2")
	body := evalString(t, ctx, `document.querySelector('#template-form textarea[name=body]').value`)
	require.Contains(t, body, added, "the saved body is the edited one")
	capture(t, ctx, "07-template-saved")

	// An event through the JSON API, as the booking system sends it.
	booking := "BK-BROWSER-" + uuid.NewString()[:8]
	submitEvent(t, c.base, c.Key, webtest.Notification(uuid.NewString(), booking))

	// The booking panel, found through the search form.
	clickNav(t, ctx, "Bookings")
	requireHeading(t, ctx, "Bookings")
	capture(t, ctx, "08-bookings-search")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`form.filters select[name=type]`), "booking"),
		chromedp.SendKeys(chromedp.CSS(`form.filters input[name=id]`), booking),
	))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	requireAt(t, ctx, "/t/acme/bookings/booking/")
	panel := evalString(t, ctx, `location.href`)
	statuses := waitForStatuses(t, ctx, 1, "the automatic messages reached DELIVERED", func(ss []messageRow) bool {
		return len(ss) >= 1 && allDelivered(ss)
	})
	automatic := len(statuses)
	for _, s := range statuses {
		require.Equal(t, "automatic", s.By, "no one sent %v by hand", s)
	}
	capture(t, ctx, "09-booking-panel-delivered")

	// Resend by e-mail with the template just edited.
	option := evalString(t, ctx, `[...document.querySelectorAll('.msg-resend select[name=template_id] option')].find(o => o.closest('optgroup')?.label.toUpperCase() === 'EMAIL' && o.textContent.includes('· en ·'))?.value ?? ''`)
	require.NotEmpty(t, option, "the resend form offers the en e-mail template")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`.msg-resend select[name=channel]`), string(app.Email)),
		chromedp.SetValue(chromedp.CSS(`.msg-resend select[name=template_id]`), option),
	))
	asked := dialogs.count()
	follow(t, ctx, chromedp.Click(chromedp.CSS(`.msg-resend button[type=submit]`)))
	require.Equal(t, asked+1, dialogs.count(), "resending asks first")
	require.Contains(t, dialogs.last(), "again")
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.flash-success`))))
	statuses = waitForStatuses(t, ctx, automatic+1, "the resent message reached DELIVERED too", func(ss []messageRow) bool {
		return len(ss) == automatic+1 && allDelivered(ss)
	})
	var manual []messageRow
	for _, s := range statuses {
		if s.By != "automatic" {
			manual = append(manual, s)
		}
	}
	require.Len(t, manual, 1, "one message sent by hand: %v", statuses)
	require.Contains(t, manual[0].By, "manual")
	require.Equal(t, string(app.Email), manual[0].Channel)
	require.Contains(t, manual[0].Template, "version 2", "the resend used the saved version")
	capture(t, ctx, "10-booking-panel-resent")

	// The message's own page, from the panel.
	follow(t, ctx, chromedp.Click(chromedp.CSS(`table.msg-table tbody tr td:first-child a`)))
	requireAt(t, ctx, "/t/acme/messages/")
	requireText(t, ctx, "DELIVERED")
	capture(t, ctx, "11-message-detail")

	// The passenger's contact, from the message: the manager opts her out
	// of SMS there.
	follow(t, ctx, chromedp.Click(chromedp.CSS(`dl.facts a.contact-link`)))
	requireAt(t, ctx, "/t/acme/contacts/")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`form[action$="/opt-out"] input[value=SMS]`))))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`form[action$="/opt-out"] button[value=out]`)))
	requireText(t, ctx, "Opted out")
	require.Equal(t, []string{"SMS"}, textsOf(t, ctx, `.contact-opted-out`))
	capture(t, ctx, "11-contact")

	// The explorer lists both messages of the booking and more.
	clickNav(t, ctx, "Messages")
	requireHeading(t, ctx, "Messages")
	rows = textsOf(t, ctx, `table.msg-table tbody tr`)
	require.GreaterOrEqual(t, len(rows), automatic+1, "the explorer lists the booking's messages: %q", rows)
	capture(t, ctx, "12-messages")

	for i, pg := range []struct{ nav, heading string }{
		{"Scheduled", "Scheduled"},
		{"Approvals", "Approvals"},
		{"API keys", "API keys"},
		{"Users", "Users"},
		{"Audit", "Audit"},
		{"Settings", "Settings"},
	} {
		clickNav(t, ctx, pg.nav)
		requireHeading(t, ctx, pg.heading)
		capture(t, ctx, fmt.Sprintf("%02d-", 13+i)+strings.ToLower(strings.ReplaceAll(pg.nav, " ", "-")))
	}
	// The audit log holds what this manager did in the console.
	clickNav(t, ctx, "Audit")
	audit := evalString(t, ctx, `document.body.innerText`)
	for _, action := range []string{"channel", "template", "resend"} {
		require.Contains(t, strings.ToLower(audit), action, "the audit log shows the %s change", action)
	}

	// The panel is still where the resend left it.
	visit(t, ctx, panel)
}

func TestBrowser_SupportMasking(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	booking := "BK-MASK-" + uuid.NewString()[:8]
	// A passenger of its own: the default notification's number is also
	// the example the messages explorer's search field shows.
	body := webtest.Notification(uuid.NewString(), booking)
	body["recipients"] = []map[string]any{{
		"name": "Lena Berg", "phone": "+49 170 5554567", "email": "lena.berg@example.org", "locale": "de-DE",
	}}
	event := c.Submit(body)
	msgs := c.WaitMessages(event, "the booking's messages delivered", func(ms []*app.Message) bool {
		return len(ms) > 0 && (webtest.AllStatus(app.MessageDelivered)(ms) || webtest.AllStatus(app.MessageRead)(ms))
	})
	ctx := newBrowser(t)

	login(t, ctx, c.base, c.users[asSupport].Email, consolePassword)
	requireAt(t, ctx, "/t/acme/")
	nav := textsOf(t, ctx, `nav.mainnav a`)
	require.Contains(t, nav, "Bookings")
	require.Contains(t, nav, "Messages")
	for _, hidden := range []string{"Channels", "Templates", "API keys", "Users", "Settings"} {
		require.NotContains(t, nav, hidden, "support has no %s page", hidden)
	}
	capture(t, ctx, "01-dashboard")

	// The full addresses as the booking system sent them and as Herald
	// stores them (E.164), and their masked forms.
	full := []string{"+491705554567", "+49 170 5554567", "1705554567", "lena.berg@example.org", "lena.berg"}
	masked := []string{"+49 ••• ••• 4567", "l•••@example.org"}
	for _, m := range msgs {
		require.NotEmpty(t, m.ToAddress)
		require.Contains(t, masked, console.MaskAddress(m.ToAddress), "masked form of %s", m.ToAddress)
	}

	clickNav(t, ctx, "Bookings")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`form.filters input[name=id]`), booking)))
	follow(t, ctx, chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)))
	requireAt(t, ctx, "/t/acme/bookings/booking/")
	rows := waitForStatuses(t, ctx, len(msgs), "the panel lists the delivered messages", func(ss []messageRow) bool {
		return len(ss) == len(msgs) && allDelivered(ss)
	})
	// The screenshot first: the check opens every timeline.
	capture(t, ctx, "02-booking-panel")
	requireMasked(t, ctx, full, maskedOf(rows, masked))

	follow(t, ctx, chromedp.Click(chromedp.CSS(`table.msg-table tbody tr td:first-child a`)))
	requireAt(t, ctx, "/t/acme/messages/")
	requireText(t, ctx, "DELIVERED")
	requireMasked(t, ctx, full, maskedOf(rows[:1], masked))
	capture(t, ctx, "03-message-detail")

	// The message's contact: every address on it masked too.
	follow(t, ctx, chromedp.Click(chromedp.CSS(`dl.facts a.contact-link`)))
	requireAt(t, ctx, "/t/acme/contacts/")
	requireMasked(t, ctx, full, masked)
	capture(t, ctx, "03-contact")

	clickNav(t, ctx, "Messages")
	requireMasked(t, ctx, full, maskedOf(rows, masked))
	capture(t, ctx, "04-messages")

	// Support cannot open the manager's pages by URL either.
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(c.base+"/t/acme/channels"))
	require.NoError(t, err)
	require.EqualValues(t, http.StatusForbidden, resp.Status)
	_ = takePageErrors(t, ctx) // the browser logs the 403 as a failed load
}

func TestBrowser_OperatorPages(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)
	ctx := newBrowser(t)

	login(t, ctx, c.base, c.users[asOperator].Email, consolePassword)
	requireAt(t, ctx, "/tenants")
	requireHeading(t, ctx, "Tenants")
	rows := textsOf(t, ctx, `table tbody tr`)
	require.True(t, containsAll(rows, "Acme Tours"), "tenants: %q", rows)
	require.True(t, containsAll(rows, "Globex Travel"), "tenants: %q", rows)
	capture(t, ctx, "01-tenants")

	follow(t, ctx, chromedp.Click(chromedp.CSS(`table tbody tr a[href^="/tenants/"]`)))
	requireAt(t, ctx, "/tenants/")
	capture(t, ctx, "02-tenant")

	clickNav(t, ctx, "Queues")
	requireHeading(t, ctx, "Queues")
	capture(t, ctx, "03-queues")

	clickNav(t, ctx, "Audit")
	requireHeading(t, ctx, "Audit")
	capture(t, ctx, "04-platform-audit")
}

// capture saves the page's screenshots (see screenshot) and checks that
// the page fits the width of a phone and of the desktop window: content
// wider than the screen makes the whole page scroll sideways. (A wide table
// scrolls inside its own box, which is fine.)
func capture(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	screenshot(t, ctx, name)
	for _, size := range []struct {
		name string
		view chromedp.Action[chromedp.Void]
	}{
		{"phone", chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateScale(2), chromedp.EmulateMobile)},
		{"desktop", chromedp.EmulateViewport(desktopWidth, desktopHeight)},
	} {
		require.NoError(t, chromedp.Do(ctx, size.view))
		wide := evalString(t, ctx, `(() => {
			const over = document.documentElement.scrollWidth - document.documentElement.clientWidth;
			if (over <= 0) return '';
			// Likely culprits: elements past the edge that no scrolling box
			// clips, or that are positioned out of one.
			const clipped = e => {
				for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
					if (getComputedStyle(p).overflowX !== 'visible') return true;
				}
				return false;
			};
			const culprits = [...document.querySelectorAll('body *')]
				.filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
				.filter(e => getComputedStyle(e).position === 'absolute' || !clipped(e))
				.slice(0, 3).map(e => e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).replace(/ +/g, '.') : ''));
			return over + 'px, e.g. ' + culprits.join(', ');
		})()`)
		assert.Empty(t, wide, "%s: the page is wider than a %s screen", name, size.name)
	}
}

// submitEvent posts a notification to the JSON API as a booking system
// does, over the network.
func submitEvent(t *testing.T, base, key string, body map[string]any) {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/notifications", bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	client := webtest.Client(t)
	client.Timeout = stepTimeout
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
}

// dialogs accepts every JavaScript dialog the page opens (the console's
// data-confirm questions) and remembers what they asked.
type dialogs struct {
	mu        sync.Mutex
	questions []string
}

func (d *dialogs) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.questions)
}

func (d *dialogs) last() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.questions) == 0 {
		return ""
	}
	return d.questions[len(d.questions)-1]
}

// acceptDialogs answers every confirm() with OK until the browser closes. A
// dialog blocks the click that opened it, so another goroutine answers.
func acceptDialogs(t *testing.T, ctx context.Context) *dialogs {
	t.Helper()
	d := &dialogs{}
	opened := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range opened {
			if err != nil {
				return
			}
			d.mu.Lock()
			d.questions = append(d.questions, ev.Message)
			d.mu.Unlock()
			if _, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true}); err != nil {
				return
			}
		}
	}()
	return d
}

// follow runs an action that loads a page (a click on a link or a submit
// button) and waits for that page: it must answer below 400 and raise no
// error in the browser.
func follow(t *testing.T, ctx context.Context, action chromedp.Action[chromedp.Void]) {
	t.Helper()
	stepCtx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	resp, err := chromedp.RunResponse(stepCtx, action)
	require.NoError(t, err)
	require.Less(t, resp.Status, int64(400), "%s answered %d", resp.URL, resp.Status)
	requireNoPageErrors(t, ctx)
}

// visit loads a URL, which must answer 200.
func visit(t *testing.T, ctx context.Context, u string) {
	t.Helper()
	stepCtx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	resp, err := chromedp.Run(stepCtx, chromedp.NavigateResponse(u))
	require.NoError(t, err)
	require.EqualValues(t, http.StatusOK, resp.Status, u)
	requireNoPageErrors(t, ctx)
}

// clickNav follows the main navigation's link with this label.
func clickNav(t *testing.T, ctx context.Context, label string) {
	t.Helper()
	labels := textsOf(t, ctx, `nav.mainnav a`)
	i := -1
	for j, l := range labels {
		if l == label {
			i = j
		}
	}
	require.NotEqual(t, -1, i, "no %q in the navigation %q", label, labels)
	follow(t, ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`nav.mainnav a:nth-of-type(%d)`, i+1))))
	current := evalString(t, ctx, `document.querySelector('nav.mainnav a[aria-current=page]')?.textContent.trim() ?? ''`)
	require.Equal(t, label, current, "the navigation marks the page")
}

// requireAt checks the path of the page the tab shows starts with prefix.
func requireAt(t *testing.T, ctx context.Context, prefix string) {
	t.Helper()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	u, err := url.Parse(loc)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(u.Path, prefix), "at %s, want %s…", u.Path, prefix)
}

// requireHeading checks the page's h1 starts with want.
func requireHeading(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	h1 := evalString(t, ctx, `document.querySelector('h1')?.textContent.trim() ?? ''`)
	require.True(t, strings.HasPrefix(h1, want), "heading %q, want %q…", h1, want)
}

// requireText checks the page shows want (case-sensitive) and has raised
// no error.
func requireText(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	text := evalString(t, ctx, `document.body.innerText`)
	require.Contains(t, text, want)
	requireNoPageErrors(t, ctx)
}

// requireMasked checks that none of the full addresses is anywhere in the
// page, neither in what it shows nor in its markup (attributes, hidden
// elements, collapsed timelines), and that every masked form is shown.
func requireMasked(t *testing.T, ctx context.Context, full, masked []string) {
	t.Helper()
	text := evalString(t, ctx, `document.body.innerText`)
	html := evalString(t, ctx, `document.documentElement.outerHTML`)
	// The timelines are collapsed: innerText skips closed <details>.
	open := evalString(t, ctx, `(() => { document.querySelectorAll('details').forEach(d => d.open = true); return document.body.innerText; })()`)
	for _, f := range full {
		require.NotContains(t, text, f, "the page shows a full address")
		require.NotContains(t, open, f, "the page shows a full address in a timeline")
		require.NotContains(t, html, f, "the page's markup holds a full address")
		require.NotContains(t, html, strings.ReplaceAll(f, "+", "%2B"), "a link holds a full address")
	}
	for _, m := range masked {
		require.Contains(t, text, m, "the masked address is shown")
	}
	requireNoPageErrors(t, ctx)
}

// messageRow is one row of a message table as a person reads it.
type messageRow struct {
	Channel, Template, To, Status, By string
	// Timeline is the text of the row's delivery timeline, collapsed or not.
	Timeline string
}

// messageRows reads the booking panel's message table.
func messageRows(t *testing.T, ctx context.Context) []messageRow {
	t.Helper()
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]messageRow](`[...document.querySelectorAll('table.msg-table tbody tr')].map(tr => {
		const td = tr.querySelectorAll(':scope > td');
		const txt = i => (td[i]?.innerText ?? '').replace(/\s+/g, ' ').trim();
		return {Channel: txt(1), Template: txt(2), To: txt(3), Status: txt(4), By: txt(6),
			Timeline: (td[7]?.textContent ?? '').replace(/\s+/g, ' ').trim()};
	})`))
	require.NoError(t, err)
	return rows
}

// waitForStatuses reloads the booking panel until its messages satisfy ok,
// for at most deliveryTimeout, and returns them.
func waitForStatuses(t *testing.T, ctx context.Context, want int, what string, ok func([]messageRow) bool) []messageRow {
	t.Helper()
	start := time.Now()
	deadline := start.Add(deliveryTimeout)
	var rows []messageRow
	for reloads := 0; ; reloads++ {
		rows = messageRows(t, ctx)
		if ok(rows) {
			t.Logf("%s after %s (%d reloads)", what, time.Since(start).Round(time.Millisecond), reloads)
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s (%d messages); the panel shows %+v", deliveryTimeout, what, want, rows)
		}
		time.Sleep(250 * time.Millisecond)
		// A reload: the panel's URL ends in #messages after a resend, and
		// navigating to it again would only scroll.
		stepCtx, cancel := context.WithTimeout(ctx, stepTimeout)
		resp, err := chromedp.RunResponse(stepCtx, chromedp.Reload())
		cancel()
		require.NoError(t, err)
		require.EqualValues(t, http.StatusOK, resp.Status)
		requireNoPageErrors(t, ctx)
	}
}

// allDelivered says whether every message reached DELIVERED: the sandbox
// reports it read a moment later, so its status may already be READ, with
// DELIVERED in its timeline.
func allDelivered(rows []messageRow) bool {
	for _, r := range rows {
		delivered := r.Status == app.MessageDelivered ||
			r.Status == app.MessageRead && strings.Contains(r.Timeline, app.MessageDelivered)
		if !delivered {
			return false
		}
	}
	return true
}

// maskedOf returns the masked addresses the rows show, each checked to be
// one of the expected masked forms.
func maskedOf(rows []messageRow, masked []string) []string {
	var out []string
	for _, r := range rows {
		for _, m := range masked {
			if r.To == m {
				out = append(out, m)
			}
		}
	}
	return out
}

// waitFor polls a JavaScript expression until it is truthy, for at most
// stepTimeout, and returns its value.
func waitFor[T any](t *testing.T, ctx context.Context, what, expr string) T {
	t.Helper()
	stepCtx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(stepCtx, chromedp.Poll[T](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout)))
	require.NoError(t, err, "wait until %s", what)
	return v
}

// textsOf returns the trimmed text of every element that matches sel.
func textsOf(t *testing.T, ctx context.Context, sel string) []string {
	t.Helper()
	raw, err := json.Marshal(sel)
	require.NoError(t, err)
	texts, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(`+string(raw)+`)].map(e => e.innerText.replace(/\s+/g, ' ').trim())`))
	require.NoError(t, err)
	return texts
}

func evalString(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	require.NoError(t, err, expr)
	return s
}

// containsAll says whether one of the rows contains every part.
func containsAll(rows []string, parts ...string) bool {
	for _, r := range rows {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(r, p)
		}
		if all {
			return true
		}
	}
	return false
}
