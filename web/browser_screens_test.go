package web_test

// Every main console page at the two sizes people use: a laptop (1366x900)
// and a phone (390x844), as a manager, a support user and an operator. No
// page may be wider than the screen, no table may be cut off on the laptop,
// every navigation item must be reachable on the phone, and the messages
// list keeps its Status column in view. Screenshots of each page go to
// .test-output/screenshots/TestBrowser_Screens/<role>/.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// consolePage is one page the screen test visits. Path may hold {booking},
// {message}, {contact}, {template}, {channel}, {tenant} and {queue}, which
// the test fills with the ids of what it set up.
type consolePage struct {
	name string
	path string
	// perm is what opening the page takes; roles without it skip it.
	perm app.Permission
}

// consolePages are the console's main pages. A new page is one line here.
var consolePages = []consolePage{
	{"dashboard", "/t/acme/", app.PermDashboard},
	{"search", "/t/acme/search?q=Lena", app.PermMessages},
	{"bookings", "/t/acme/bookings", app.PermMessages},
	{"booking-panel", "/t/acme/bookings/booking/{booking}", app.PermMessages},
	{"messages", "/t/acme/messages", app.PermMessages},
	{"message", "/t/acme/messages/{message}", app.PermMessages},
	{"event", "/t/acme/events/{event}", app.PermMessages},
	{"requests", "/t/acme/requests", app.PermMessages},
	{"contact", "/t/acme/contacts/{contact}", app.PermMessages},
	{"scheduled", "/t/acme/scheduled", app.PermSchedules},
	{"approvals", "/t/acme/approvals", app.PermSchedules},
	{"templates", "/t/acme/templates", app.PermTemplates},
	{"template", "/t/acme/templates/{template}", app.PermTemplates},
	{"channels", "/t/acme/channels", app.PermChannels},
	{"channel", "/t/acme/channels/{channel}", app.PermChannels},
	{"api-keys", "/t/acme/api-keys", app.PermAPIKeys},
	{"users", "/t/acme/users", app.PermUsers},
	{"audit", "/t/acme/audit", app.PermAudit},
	{"settings", "/t/acme/settings", app.PermSettings},
	{"callbacks", "/t/acme/settings/callbacks", app.PermCallbacks},
	{"branding", "/t/acme/settings/branding", app.PermSettings},
	{"alerts", "/t/acme/settings/alerts", app.PermSettings},
	{"tenants", "/tenants", app.PermPlatform},
	{"tenant", "/tenants/{tenant}", app.PermPlatform},
	{"queues", "/queues", app.PermQueues},
	{"queue", "/queues/{queue}", app.PermQueues},
	{"platform-audit", "/audit", app.PermPlatform},
}

// screenPagesPerBrowser is how many pages one subtest visits in its tab, so
// that a failure names a short run of pages and each tab's work stays well
// inside tabTimeout.
const screenPagesPerBrowser = 6

func TestBrowser_Screens(t *testing.T) {
	t.Parallel()
	c := serveConsole(t)

	// A booking with a passenger whose messages were delivered, a second
	// passenger whose SMS failed, and a notification scheduled for later,
	// so that the tables have rows.
	booking := "BK-SCREENS-" + uuid.NewString()[:8]
	body := webtest.Notification(uuid.NewString(), booking)
	body["recipients"] = []map[string]any{
		{"name": "Lena Berg", "phone": "+49 170 5554567", "email": "lena.berg@example.org", "locale": "de-DE"},
		{"name": "Maximilian Hoffmann-Schwarzenberger", "phone": "+49 151 99988877", "email": "maximilian.hoffmann-schwarzenberger@reisebuero-beispiel.example", "locale": "en"},
	}
	event := c.Submit(body)
	msgs := c.WaitMessages(event, "the booking's messages delivered", func(ms []*app.Message) bool {
		return len(ms) > 0 && (webtest.AllStatus(app.MessageDelivered)(ms) || webtest.AllStatus(app.MessageRead)(ms))
	})
	later := webtest.Notification(uuid.NewString(), booking)
	later["send_at"] = "2099-01-01T10:00:00Z"
	c.Submit(later)
	// Confirmation windows of its own, so that the settings card shows
	// its table.
	require.NoError(t, c.Services.ConfirmWindows.Set(c.Ctx, app.CLIActor, c.Tenant.ID, app.AnyEvent, 90))
	require.NoError(t, c.Services.ConfirmWindows.Set(c.Ctx, app.CLIActor, c.Tenant.ID, "DEPARTURE_CHANGED", 0))
	require.NotNil(t, msgs[0].TemplateID)
	ids := strings.NewReplacer(
		"{booking}", booking,
		"{message}", msgs[0].ID.String(),
		"{event}", msgs[0].EventID.String(),
		"{contact}", msgs[0].ContactID.String(),
		"{template}", msgs[0].TemplateID.String(),
		"{channel}", c.ActiveAccount(app.Email).ID.String(),
		"{tenant}", c.Tenant.ID.String(),
		"{queue}", "route",
	)

	for _, role := range []string{asManager, asSupport, asOperator} {
		var pages []consolePage
		for _, pg := range consolePages {
			if app.Can(c.users[role].Role, pg.perm) {
				pg.path = ids.Replace(pg.path)
				pages = append(pages, pg)
			}
		}
		for start := 0; start < len(pages); start += screenPagesPerBrowser {
			chunk := pages[start:min(start+screenPagesPerBrowser, len(pages))]
			t.Run(fmt.Sprintf("%s/%s", role, chunk[0].name), func(t *testing.T) {
				ctx := newBrowser(t)
				login(t, ctx, c.base, c.users[role].Email, consolePassword)
				for _, pg := range chunk {
					visit(t, ctx, c.base+pg.path)
					requireFits(t, ctx, pg.name)
					if pg.name == "dashboard" || pg.name == "tenants" {
						requireNavOnPhone(t, ctx, c.base)
						visit(t, ctx, c.base+pg.path)
					}
					if pg.name == "messages" {
						requireStatusOnPhone(t, ctx)
					}
					screenshot(t, ctx, pg.name)
				}
			})
		}
	}
}

// The two sizes of the screen test.
var (
	laptopView = chromedp.EmulateViewport(desktopWidth, desktopHeight)
	phoneView  = chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateScale(2), chromedp.EmulateMobile)
)

// requireFits checks the page at both sizes: the document is no wider than
// the screen, and on the laptop no table is cut off inside a scrolling box.
func requireFits(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	for _, size := range []struct {
		name string
		view chromedp.Action[chromedp.Void]
	}{{"phone", phoneView}, {"laptop", laptopView}} {
		require.NoError(t, chromedp.Do(ctx, size.view))
		over := evalString(t, ctx, `(() => {
			const d = document.documentElement;
			return d.scrollWidth > d.clientWidth ? (d.scrollWidth - d.clientWidth) + 'px wider than the screen' : '';
		})()`)
		assert.Empty(t, over, "%s at %s size", name, size.name)
		if size.name != "laptop" {
			assert.Empty(t, evalString(t, ctx, phoneReadable), "%s's tables at phone size", name)
			continue
		}
		clipped := evalString(t, ctx, `[...document.querySelectorAll('table')].map(tbl => {
			for (let p = tbl.parentElement; p && p !== document.body; p = p.parentElement) {
				if (getComputedStyle(p).overflowX !== 'visible' && p.scrollWidth > p.clientWidth + 1)
					return 'table.' + (tbl.className || '(no class)') + ' cut off by ' + (p.scrollWidth - p.clientWidth) + 'px';
			}
			return '';
		}).filter(Boolean).join('; ')`)
		assert.Empty(t, clipped, "%s at laptop size", name)
		assert.Empty(t, evalString(t, ctx, headersAligned), "%s's table headers at laptop size", name)
	}
}

// headersAligned is the laptop check of requireFits: each table's header
// cells stand over their columns (the left edge of a header within 2 px of
// its column's first-row cell), which a table laid out as anything but a
// table (a flex box, a block) breaks while every cell still shows.
const headersAligned = `[...document.querySelectorAll('table')].map(tbl => {
	const head = tbl.tHead && tbl.tHead.rows[tbl.tHead.rows.length - 1];
	const row = tbl.tBodies.length && tbl.tBodies[0].rows[0];
	if (!head || !row || head.cells.length !== row.cells.length || !tbl.checkVisibility()) return '';
	for (let i = 0; i < head.cells.length; i++) {
		const h = head.cells[i].getBoundingClientRect(), c = row.cells[i].getBoundingClientRect();
		if (Math.abs(h.left - c.left) > 2)
			return 'table.' + (tbl.className || '(no class)') + ': header "' + head.cells[i].textContent.trim() + '" ' + Math.round(h.left - c.left) + 'px off its column';
	}
	return '';
}).filter(Boolean).join('; ')`

// phoneReadable is the script requireFits runs at phone size: what it
// finds wrong with the page's tables, one line each. A row taller than
// maxRowLines lines, a word of wordMax characters or fewer broken across
// lines (a long address or id may break where it must, and any line after
// a hyphen or a slash; a channel name or a status must not), and a cell past the screen's right edge.
const phoneReadable = `(() => {
	const maxRowLines = 20, wordMax = 24;
	const w = document.documentElement.clientWidth;
	// What a person sees: not in a closed <details>, not in a hidden header.
	const seen = (el) => { const r = el.getBoundingClientRect(); return r.width > 1 && r.height > 1 && el.checkVisibility(); };
	const what = (el) => (el.innerText || el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 40);
	const out = [];
	for (const tr of document.querySelectorAll('table tr')) {
		if (!seen(tr)) continue;
		const lh = parseFloat(getComputedStyle(tr).lineHeight) || 1.5 * parseFloat(getComputedStyle(tr).fontSize);
		const h = tr.getBoundingClientRect().height;
		if (h > maxRowLines * lh) out.push('row "' + what(tr) + '" is ' + Math.round(h / lh) + ' lines tall');
	}
	for (const cell of document.querySelectorAll('table td, table th')) {
		if (!seen(cell)) continue;
		const r = cell.getBoundingClientRect();
		if (r.right > w + 1) out.push('cell "' + what(cell) + '" ends ' + Math.round(r.right - w) + 'px past the right edge');
		// The cell's words, across inline elements: text nodes in boxes of
		// their own (blocks, inline-blocks) are apart as if by a space. A
		// line may break after a hyphen or a slash, as in a name or a zone.
		const nodes = [];
		let text = '', lastBox = null;
		const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			if (!n.parentElement.checkVisibility()) continue;
			let box = n.parentElement;
			while (box !== cell && getComputedStyle(box).display === 'inline') box = box.parentElement;
			if (lastBox && box !== lastBox) text += ' ';
			lastBox = box;
			nodes.push({n, at: text.length});
			text += n.textContent;
		}
		const place = (i) => { let k = nodes.length - 1; while (k > 0 && nodes[k].at > i) k--; return [nodes[k].n, Math.min(i - nodes[k].at, nodes[k].n.length)]; };
		for (const m of text.matchAll(/[^\s\/-]+/g)) {
			if (m[0].length < 2 || m[0].length > wordMax) continue;
			const range = document.createRange();
			range.setStart(...place(m.index));
			range.setEnd(...place(m.index + m[0].length - 1));
			range.setEnd(range.endContainer, range.endOffset + 1);
			const lines = new Set([...range.getClientRects()].filter(q => q.width > 0).map(q => Math.round(q.top)));
			if (lines.size > 1) out.push('"' + m[0] + '" is broken over ' + lines.size + ' lines');
		}
	}
	return [...new Set(out)].slice(0, 12).join('; ');
})()`

// requireNavOnPhone checks, at phone size, that every item of the page's
// navigation can be reached: hidden behind the Menu button at first, each
// one on screen and not covered once the menu is open; following one of
// them at phone size leads to its page.
func requireNavOnPhone(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, laptopView))
	hrefs := attrsOf(t, ctx, `nav.mainnav a`, "href")
	require.NotEmpty(t, hrefs)
	require.False(t, evalBool(t, ctx, `getComputedStyle(document.querySelector('summary.navmenu-toggle')).display !== 'none'`), "no Menu button on a laptop")

	require.NoError(t, chromedp.Do(ctx, phoneView))
	require.True(t, evalBool(t, ctx, `!document.querySelector('details.navmenu').open`), "the menu starts closed on a phone")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`summary.navmenu-toggle`))))
	unreachable := evalString(t, ctx, `[...document.querySelectorAll('nav.mainnav a')].map(a => {
		a.scrollIntoView({block: 'center'});
		const r = a.getBoundingClientRect();
		const w = document.documentElement.clientWidth;
		if (r.width === 0 || r.height === 0) return a.textContent + ' is hidden';
		if (r.left < 0 || r.right > w) return a.textContent + ' is off the screen';
		const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
		if (!a.contains(hit)) return a.textContent + ' is covered';
		return '';
	}).filter(Boolean).join('; ')`)
	require.Empty(t, unreachable)
	screenshot(t, ctx, "menu-open")

	// screenshot leaves the tab at laptop size: open the menu on the phone
	// again and follow its last item.
	require.NoError(t, chromedp.Do(ctx, phoneView))
	if !evalBool(t, ctx, `document.querySelector('details.navmenu').open`) {
		require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`summary.navmenu-toggle`))))
	}
	last := hrefs[len(hrefs)-1]
	stepCtx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	resp, err := chromedp.RunResponse(stepCtx, chromedp.Click(chromedp.CSS(`nav.mainnav a:last-of-type`)))
	require.NoError(t, err)
	require.EqualValues(t, http.StatusOK, resp.Status)
	require.Equal(t, base+last, resp.URL)
	require.NoError(t, chromedp.Do(ctx, laptopView))
}

// requireStatusOnPhone checks that every row of the messages list shows
// its status on a phone without scrolling sideways.
func requireStatusOnPhone(t *testing.T, ctx context.Context) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, phoneView))
	defer func() { require.NoError(t, chromedp.Do(ctx, laptopView)) }()
	rows := evalInt(t, ctx, `document.querySelectorAll('table.msg-list tbody tr').length`)
	require.Positive(t, rows, "the list has messages")
	hidden := evalString(t, ctx, `[...document.querySelectorAll('table.msg-list tbody td.msg-status')].map((td, i) => {
		const r = td.getBoundingClientRect();
		const w = document.documentElement.clientWidth;
		return r.width === 0 || r.left < 0 || r.right > w ? 'row ' + (i + 1) + ': status at ' + Math.round(r.left) + '..' + Math.round(r.right) : '';
	}).filter(Boolean).join('; ')`)
	require.Empty(t, hidden, "the status of every message is on screen")
}

// attrsOf returns the attribute of every element that matches sel.
func attrsOf(t *testing.T, ctx context.Context, sel, attr string) []string {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.getAttribute(%q))`, sel, attr)))
	require.NoError(t, err)
	return out
}

func evalBool(t *testing.T, ctx context.Context, expr string) bool {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	require.NoError(t, err, expr)
	return v
}

func evalInt(t *testing.T, ctx context.Context, expr string) int {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[int](expr))
	require.NoError(t, err, expr)
	return v
}
