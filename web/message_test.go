package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/web/webtest"
)

// Anna's addresses as webtest.Notification() sends them, and as messages store them.
const (
	annaPhone = "+4915123456789"
	annaEmail = "anna@example.com"
)

// delivered reports whether every message reached the passenger (the sandbox
// reports delivered, then read).
func delivered(ms []*app.Message) bool {
	if len(ms) == 0 {
		return false
	}
	for _, m := range ms {
		if m.Status != app.MessageDelivered && m.Status != app.MessageRead {
			return false
		}
	}
	return true
}

// routeNow routes an event as the route job would, for tests without
// workers: its messages are then QUEUED with their dispatch jobs waiting.
func (c *consoleBundle) routeNow(tenantID, eventID uuid.UUID) []*app.Message {
	c.T.Helper()
	require.NoError(c.T, c.Services.Router.Route(c.Ctx, app.RouteJob{TenantID: tenantID, EventID: eventID, Version: 1}))
	var ms []*app.Message
	require.NoError(c.T, c.Services.Store.InTenant(c.Ctx, tenantID, func(tx *db.Tx) (err error) {
		ms, err = tx.MessagesByEvent(c.Ctx, tenantID, eventID)
		return err
	}))
	require.NotEmpty(c.T, ms)
	return ms
}

// submitOther submits a notification for the other tenant, globex.
func (c *consoleBundle) submitOther(body map[string]any) uuid.UUID {
	c.T.Helper()
	_, key, err := c.Services.APIKeys.Create(c.Ctx, app.CLIActor, c.other.ID, "globex system "+uuid.NewString()[:6])
	require.NoError(c.T, err)
	var res struct{ ID uuid.UUID }
	require.Equal(c.T, http.StatusAccepted, c.RequestWithKey(key, http.MethodPost, "/api/v1/notifications", body, &res))
	return res.ID
}

func byChannel(ms []*app.Message, ch app.Channel) *app.Message {
	for _, m := range ms {
		if m.Channel == ch {
			return m
		}
	}
	return nil
}

// rowTexts returns the whitespace-collapsed text of each row of a table body.
func rowTexts(sel *goquery.Selection) []string {
	return sel.Map(func(_ int, s *goquery.Selection) string { return text(s) })
}

func TestConsoleMessages_BookingPanel(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})

	bk1 := c.Submit(webtest.Notification("evt-panel-1", "BK-1"))
	bk2 := c.Submit(webtest.Notification("evt-panel-2", "BK-2"))
	first := c.WaitMessages(bk1, "BK-1 delivered", delivered)
	c.WaitMessages(bk2, "BK-2 delivered", delivered)
	// Globex has a booking with the same id: its panel is its own.
	globexBody := webtest.Notification("evt-globex-1", "BK-1")
	globexBody["recipients"] = []map[string]any{{"name": "Gus Globex", "phone": "+4915188887777", "email": "gus@globex.example"}}
	c.submitOther(globexBody)
	require.Eventually(t, func() bool {
		return c.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1 AND status IN ('DELIVERED', 'READ')`, c.other.ID) == 2
	}, dbtest.HangGuard, 50*time.Millisecond)

	t.Run("SearchForm", func(t *testing.T) {
		s := c.signIn(asSupport)
		doc := s.page("/t/acme/bookings")
		require.Contains(t, text(doc.Find(".empty")), "Look up a booking")
		require.Equal(t, 1, doc.Find(`form[role=search] select[name=type]`).Length())

		_, resp := s.get("/t/acme/bookings?type=booking&id=" + url.QueryEscape(" BK-1 "))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/t/acme/bookings/booking/BK-1", resp.Header.Get("Location"))

		_, resp = s.get("/t/acme/bookings?type=invoice&id=" + url.QueryEscape("INV/7 b"))
		require.Equal(t, "/t/acme/bookings/invoice/INV%2F7%20b", resp.Header.Get("Location"), "ids are escaped into one path segment")
		doc = s.page(resp.Header.Get("Location"))
		require.Contains(t, text(doc.Find(".empty")), "Nothing found for invoice INV/7 b")

		for q, field := range map[string]string{
			"type=booking&id=":                         "id",
			"type=cruise&id=BK-1":                      "type",
			"type=trip&id=" + strings.Repeat("x", 201): "id",
		} {
			doc, resp := s.get("/t/acme/bookings?" + q)
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, q)
			require.NotEmpty(t, text(doc.Find(`[name=`+field+`] ~ .field-error`)), q)
		}

		_, resp = s.get("/t/acme/bookings/cruise/BK-1")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	t.Run("NothingFound", func(t *testing.T) {
		doc := c.signIn(asManager).page("/t/acme/bookings/booking/BK-404")
		require.Contains(t, text(doc.Find(".empty")), "Nothing found for booking BK-404")
		require.Zero(t, doc.Find("#messages").Length())
		require.Zero(t, doc.Find(`form[action$="/resend"]`).Length(), "nothing to resend")
	})

	t.Run("ShowsOnlyThisBooking", func(t *testing.T) {
		doc := c.signIn(asManager).page("/t/acme/bookings/booking/BK-1")
		events := doc.Find(`tr[id^="event-"]`)
		require.Equal(t, 1, events.Length())
		require.Equal(t, "event-"+bk1.String(), events.AttrOr("id", ""))
		require.Contains(t, text(events), "BOOKING_CONFIRMED")
		require.Contains(t, text(events), "ROUTED")
		require.Contains(t, text(events), "evt-panel-1")

		rows := doc.Find(`tr[id^="message-"]`)
		require.Equal(t, 2, rows.Length())
		for _, m := range first {
			row := doc.Find("#message-" + m.ID.String())
			require.Equal(t, 1, row.Length(), "message %s", m.ID)
			require.Contains(t, text(row), string(m.Channel))
			require.Contains(t, text(row), "automatic")
			statuses := rowTexts(row.Find(".timeline .badge"))
			require.Contains(t, statuses, "QUEUED")
			require.Contains(t, statuses, "SENT")
			require.Contains(t, statuses, "DELIVERED")
			require.Contains(t, text(row.Find(".timeline")), "sandbox", "the provider shows in the timeline")
			href, _ := row.Find(`a[href*="/messages/"]`).Attr("href")
			require.Equal(t, "/t/acme/messages/"+m.ID.String(), href)
		}
		html, _ := doc.Html()
		require.NotContains(t, html, "evt-panel-2", "another booking's events stay out")
		require.NotContains(t, html, "evt-globex-1", "another tenant's booking with the same id stays out")
		require.NotContains(t, html, "Gus Globex")
		require.NotContains(t, html, "4915188887777")
	})

	t.Run("Resend", func(t *testing.T) {
		s := c.signIn(asSupport)
		doc := s.page("/t/acme/bookings/booking/BK-1")
		form := doc.Find(`form[action="/t/acme/bookings/booking/BK-1/resend"]`)
		require.Equal(t, 1, form.Length(), "support may resend")
		require.NotEmpty(t, form.AttrOr("data-confirm", ""))
		// The template choice offers the booking's events' templates only.
		options := rowTexts(form.Find(`select[name=template_id] optgroup option`))
		require.NotEmpty(t, options)
		for _, o := range options {
			require.Contains(t, o, "BOOKING_CONFIRMED")
		}
		emailTemplate := form.Find(`optgroup[label=EMAIL] option`).First().AttrOr("value", "")
		waTemplate := form.Find(`optgroup[label=WHATSAPP] option`).First().AttrOr("value", "")
		require.NotEmpty(t, emailTemplate)
		require.NotEmpty(t, waTemplate)

		before := c.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1`, c.Tenant.ID)
		for name, tc := range map[string]struct {
			form  url.Values
			field string
			want  string
		}{
			"NoChannel":       {url.Values{"channel": {""}}, "channel", "is not a channel"},
			"UnknownChannel":  {url.Values{"channel": {"PIGEON"}}, "channel", "is not a channel"},
			"TemplateChannel": {url.Values{"channel": {"EMAIL"}, "template_id": {waTemplate}}, "template_id", "not EMAIL"},
			"BadTemplateID":   {url.Values{"channel": {"EMAIL"}, "template_id": {"nope"}}, "template_id", "Choose a template"},
		} {
			t.Run(name, func(t *testing.T) {
				doc, resp := s.postPage("/t/acme/bookings/booking/BK-1/resend", tc.form)
				require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
				require.Contains(t, text(doc.Find(`[name=`+tc.field+`] ~ .field-error`)), tc.want)
				require.Equal(t, 2, doc.Find(`tr[id^="message-"]`).Length(), "the panel is still shown")
			})
		}
		t.Run("UnknownTemplate", func(t *testing.T) {
			doc, resp := s.postPage("/t/acme/bookings/booking/BK-1/resend", url.Values{"channel": {"EMAIL"}, "template_id": {uuid.NewString()}})
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
			require.Contains(t, text(doc.Find(".msg-resend .flash-error")), "not found")
		})
		t.Run("NothingToResend", func(t *testing.T) {
			doc, resp := s.postPage("/t/acme/bookings/booking/BK-404/resend", url.Values{"channel": {"EMAIL"}})
			require.Equal(t, http.StatusNotFound, resp.StatusCode)
			require.Contains(t, text(doc.Find(".flash-error")), "No notification about booking BK-404")
		})
		require.Equal(t, before, c.Count(`SELECT count(*) FROM messages WHERE tenant_id = $1`, c.Tenant.ID), "bad resends store nothing")
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'message.resend'`))

		resp := s.post("/t/acme/bookings/booking/BK-1/resend", url.Values{"channel": {"EMAIL"}, "template_id": {emailTemplate}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/t/acme/bookings/booking/BK-1#messages", resp.Header.Get("Location"))
		doc = s.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "1 new message")

		var resent app.Message
		require.NoError(t, c.Services.Store.InTenant(c.Ctx, c.Tenant.ID, func(tx *db.Tx) error {
			ms, err := tx.MessagesByEntity(c.Ctx, c.Tenant.ID, "booking", "BK-1")
			for _, m := range ms {
				if m.TriggeredBy != nil {
					resent = *m
				}
			}
			return err
		}))
		require.Equal(t, c.users[asSupport].ID, *resent.TriggeredBy)
		require.True(t, strings.HasPrefix(resent.IdempotencyKey, "manual:BK-1:EMAIL:"+emailTemplate+":"))
		row := doc.Find("#message-" + resent.ID.String())
		require.Equal(t, 1, row.Length(), "the new message is on the panel")
		require.Contains(t, text(row), "support@acme.test")
		require.Contains(t, text(row), "manual")
		require.Equal(t, 3, doc.Find(`tr[id^="message-"]`).Length(), "both the original and the resend are shown")
		original := byChannel(first, app.Email)
		require.Contains(t, text(doc.Find("#message-"+original.ID.String())), "automatic")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = $2 AND triggered_by IS NULL`,
			original.ID, c.Event(bk1).Messages[0].Status), "the original is untouched")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'message.resend' AND actor_id = $1 AND target_id = 'BK-1'`,
			c.users[asSupport].ID))

		// The resend goes out like any message.
		require.Eventually(t, func() bool {
			return c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status IN ('DELIVERED', 'READ')`, resent.ID) == 1
		}, dbtest.HangGuard, 50*time.Millisecond)
		detail := s.page("/t/acme/messages/" + resent.ID.String())
		require.Contains(t, text(detail.Find("dl.facts")), "support@acme.test (manual)")
	})

	t.Run("OperatorResendIsNamed", func(t *testing.T) {
		s := c.signIn(asOperator)
		s.page("/t/acme/bookings/booking/BK-2")
		resp := s.post("/t/acme/bookings/booking/BK-2/resend", url.Values{"channel": {"WHATSAPP"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc := s.follow(resp)
		require.Contains(t, text(doc.Find(`tr[id^="message-"]`)), "a Herald operator")
	})

	t.Run("ResendNeedsCSRF", func(t *testing.T) {
		s := c.signIn(asManager)
		s.page("/t/acme/bookings/booking/BK-1")
		before := c.Count(`SELECT count(*) FROM messages`)
		resp := s.post("/t/acme/bookings/booking/BK-1/resend", url.Values{"csrf": {"forged"}, "channel": {"EMAIL"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Equal(t, before, c.Count(`SELECT count(*) FROM messages`))
	})
}

func TestConsoleMessages_Explorer(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})

	// Fourteen confirmed bookings (e-mail and WhatsApp each), one cancelled
	// booking for another passenger, and a globex message.
	var confirmed []*app.Message
	for i := range 14 {
		id := c.Submit(webtest.Notification("evt-x-"+string(rune('a'+i)), "BK-X"+string(rune('a'+i))))
		confirmed = append(confirmed, c.routeNow(c.Tenant.ID, id)...)
	}
	cancelled := webtest.Notification("evt-cancel", "BK-C")
	cancelled["trigger_event"] = "BOOKING_CANCELLED"
	cancelled["context"].(map[string]any)["cancellation_fee"] = "45,00 €"
	cancelled["recipients"] = []map[string]any{{"name": "Ben Berg", "phone": "+4915199990001", "email": "ben@example.com"}}
	ben := c.routeNow(c.Tenant.ID, c.Submit(cancelled))
	globex := c.routeNow(c.other.ID, c.submitOther(webtest.Notification("evt-globex", "BK-G")))

	failed, stale, lateNight := confirmed[0], confirmed[1], confirmed[2]
	c.Exec(`UPDATE messages SET status = 'FAILED', failed_reason = 'provider_rejected', error_code = 'sandbox_rejected', failed_at = now() WHERE id = $1`, failed.ID)
	c.Exec(`UPDATE messages SET status = 'SENT', sent_at = now() - interval '2 days', stale_at = now() WHERE id = $1`, stale.ID)
	// 23:30 UTC on 10 March is already 11 March in Berlin.
	c.Exec(`UPDATE messages SET created_at = '2026-03-10T23:30:00Z' WHERE id = $1`, lateNight.ID)

	s := c.signIn(asManager)
	ids := func(doc *goquery.Document) []string {
		return doc.Find(`.msg-table tbody tr a[href*="/messages/"]`).Map(func(_ int, a *goquery.Selection) string {
			href, _ := a.Attr("href")
			return href[strings.LastIndexByte(href, '/')+1:]
		})
	}
	only := func(ms ...*app.Message) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = m.ID.String()
		}
		return out
	}

	t.Run("NewestFirstAndPaginated", func(t *testing.T) {
		doc := s.page("/t/acme/messages")
		require.Len(t, ids(doc), 25)
		require.ElementsMatch(t, only(ben...), ids(doc)[:2], "newest first")
		next, ok := doc.Find(`.pager a[rel=next]`).Attr("href")
		require.True(t, ok)
		page2 := s.page(next)
		require.Len(t, ids(page2), 30-25)
		require.NotContains(t, ids(page2), ids(doc)[0])

		doc = s.page("/t/acme/messages?event=BOOKING_CONFIRMED")
		require.Len(t, ids(doc), 25)
		next, _ = doc.Find(`.pager a[rel=next]`).Attr("href")
		require.Contains(t, next, "event=BOOKING_CONFIRMED", "the filters stay on the next page")
		require.Contains(t, next, "page=2")
		require.Len(t, ids(s.page(next)), 3)
	})

	t.Run("Filters", func(t *testing.T) {
		for name, tc := range map[string]struct {
			query string
			want  []string
		}{
			"Status":              {"status=FAILED", only(failed)},
			"StatusCase":          {"status=failed", only(failed)},
			"Stale":               {"stale=1", only(stale)},
			"Event":               {"event=BOOKING_CANCELLED", only(ben[0], ben[1])},
			"AddressPhone":        {"address=" + url.QueryEscape("+49 151 99990001"), only(byChannel(ben, app.WhatsApp))},
			"AddressEmail":        {"address=BEN@example.com", only(byChannel(ben, app.Email))},
			"DayInTenantTimezone": {"from=2026-03-11&to=2026-03-11", only(lateNight)},
			"NotTheUTCDay":        {"from=2026-03-10&to=2026-03-10", nil},
			"Combined":            {"event=BOOKING_CANCELLED&channel=EMAIL", only(byChannel(ben, app.Email))},
			"EventID":             {"event_id=" + ben[0].EventID.String(), only(ben[0], ben[1])},
		} {
			t.Run(name, func(t *testing.T) {
				doc := s.page("/t/acme/messages?" + tc.query)
				require.ElementsMatch(t, tc.want, ids(doc), tc.query)
				require.Zero(t, doc.Find(".msg-filter-errors").Length())
				if len(tc.want) == 0 {
					require.Contains(t, text(doc.Find(".empty")), "No message matches these filters")
				}
			})
		}
		t.Run("Channel", func(t *testing.T) {
			got := ids(s.page("/t/acme/messages?channel=WHATSAPP"))
			require.Len(t, got, 15)
			for _, m := range append(confirmed, ben...) {
				if m.Channel == app.WhatsApp {
					require.Contains(t, got, m.ID.String())
				}
			}
		})
		t.Run("NoOtherTenant", func(t *testing.T) {
			doc := s.page("/t/acme/messages?event=BOOKING_CONFIRMED&page=2")
			for _, m := range globex {
				require.NotContains(t, ids(doc), m.ID.String())
			}
			require.Empty(t, ids(s.page("/t/acme/messages?address=gus%40globex.example")))
		})
		t.Run("FormKeepsValues", func(t *testing.T) {
			doc := s.page("/t/acme/messages?status=FAILED&channel=EMAIL&from=2026-01-01&stale=1")
			require.Equal(t, "FAILED", doc.Find(`select[name=status] option[selected]`).AttrOr("value", ""))
			require.Equal(t, "EMAIL", doc.Find(`select[name=channel] option[selected]`).AttrOr("value", ""))
			require.Equal(t, "2026-01-01", doc.Find(`input[name=from]`).AttrOr("value", ""))
			_, checked := doc.Find(`input[name=stale]`).Attr("checked")
			require.True(t, checked)
		})
	})

	t.Run("BadFilters", func(t *testing.T) {
		for name, tc := range map[string]struct {
			query, want string
			rows        int
		}{
			"UnknownStatus":  {"status=LOST", `Unknown status "LOST"`, 25},
			"UnknownChannel": {"channel=PIGEON", `Unknown channel "PIGEON"`, 25},
			"UnknownEvent":   {"event=BOOKING_EXPLODED", `Unknown event "BOOKING_EXPLODED"`, 25},
			"BadDate":        {"from=2026-13-45", `"2026-13-45" is not a date`, 25},
			"FromAfterTo":    {"from=2026-03-12&to=2026-03-11", `"From" is after "to"`, 25},
			"BadAddress":     {"address=12345", "full phone number", 25},
			"BadStale":       {"stale=maybe", "stale is 1", 25},
			"BadEventID":     {"event_id=42", "not a notification id", 25},
			"BadWithGood":    {"status=LOST&event=BOOKING_CANCELLED", `Unknown status "LOST"`, 2},
		} {
			t.Run(name, func(t *testing.T) {
				doc := s.page("/t/acme/messages?" + tc.query)
				require.Contains(t, text(doc.Find(".msg-filter-errors")), tc.want)
				require.Len(t, ids(doc), tc.rows, "the list shows without the bad filter")
			})
		}
		_, resp := s.get("/t/acme/messages?page=-3")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		doc := s.page("/t/acme/messages?page=999")
		require.Len(t, ids(doc), 25, "pages are reached by cursor; a page number alone is the first page")
	})

	t.Run("Empty", func(t *testing.T) {
		doc := c.signIn(asOtherManager).page("/t/globex/messages?status=READ")
		require.Contains(t, text(doc.Find(".empty")), "No message matches")
	})
}

func TestConsoleMessages_Detail(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})

	id := c.Submit(webtest.Notification("evt-detail", "BK-D"))
	ms := c.WaitMessages(id, "delivered", delivered)
	wa, email := byChannel(ms, app.WhatsApp), byChannel(ms, app.Email)
	// Anna answers on WhatsApp; a provider's raw receipt quotes her number.
	_, err := c.Server.Inbound.Record(c.Ctx, c.Tenant.ID, app.InboundMessage{
		Channel: app.WhatsApp, Provider: "meta", ExternalID: "wamid.reply-1", From: annaPhone, Kind: "text",
		Body: "Danke! Bitte ruft mich an: " + annaPhone, ReceivedAt: time.Now(),
	})
	require.NoError(t, err)
	c.Exec(`INSERT INTO message_events (tenant_id, message_id, source, detail, at)
		VALUES ($1, $2, 'webhook', $3, now())`, c.Tenant.ID, wa.ID,
		`{"receipt": "info", "raw": "{\"recipient_id\":\"4915123456789\",\"status\":\"read\"}", "code": "131047"}`)

	t.Run("EveryField", func(t *testing.T) {
		doc := c.signIn(asManager).page("/t/acme/messages/" + email.ID.String())
		facts := text(doc.Find("dl.facts"))
		for _, want := range []string{"EMAIL", annaEmail, "BOOKING_CONFIRMED", "booking BK-D", "sandbox", *email.ExternalMessageID,
			email.IdempotencyKey, email.ID.String(), email.TemplateID.String(), "de-DE", "automatic", "evt-detail"} {
			require.Contains(t, facts, want)
		}
		require.Equal(t, "/t/acme/bookings/booking/BK-D#event-"+id.String(), doc.Find(`dl.facts a[href*="#event-"]`).AttrOr("href", ""))
		require.Equal(t, 1, doc.Find(`.page-head a[href="/t/acme/bookings/booking/BK-D"]`).Length())
		statuses := rowTexts(doc.Find(".timeline .badge"))
		require.Contains(t, statuses, "QUEUED")
		require.Contains(t, statuses, "SENT")
		require.Contains(t, statuses, "DELIVERED")
		require.Zero(t, doc.Find(`form[action$="/retry"], form[action$="/cancel"]`).Length(), "a delivered message has no actions")
	})

	t.Run("EmailPreviewIsText", func(t *testing.T) {
		// A template author's HTML must never run in the console.
		c.Exec(`UPDATE messages SET body = $2 WHERE id = $1`, email.ID,
			`<p>Hallo Anna,</p><script>alert(1)</script><img src=x onerror="alert(2)"><p>Gardasee &amp; mehr</p>`)
		doc := c.signIn(asManager).page("/t/acme/messages/" + email.ID.String())
		require.Zero(t, doc.Find("main script, main img").Length())
		preview := text(doc.Find("pre.preview").First())
		require.Contains(t, preview, "Hallo Anna,")
		require.Contains(t, preview, "Gardasee & mehr")
		require.NotContains(t, preview, "<p>")
		require.Contains(t, doc.Find(`iframe.email-frame[sandbox="allow-same-origin"]`).AttrOr("srcdoc", ""), `<script>alert(1)</script>`, "the HTML goes only into the sandboxed frame, which runs no script")
	})

	t.Run("TimelineWithReplyAndReceipt", func(t *testing.T) {
		doc := c.signIn(asManager).page("/t/acme/messages/" + wa.ID.String())
		timeline := text(doc.Find(".timeline"))
		require.Contains(t, timeline, "Reply from "+annaPhone)
		require.Contains(t, text(doc.Find(".msg-reply")), "Danke! Bitte ruft mich an: "+annaPhone)
		require.Contains(t, timeline, "131047")
		require.Contains(t, timeline, "4915123456789")
		require.Contains(t, text(doc.Find("pre.preview")), "Gardasee", "WhatsApp text is shown as sent")

		panel := c.signIn(asManager).page("/t/acme/bookings/booking/BK-D")
		require.Contains(t, text(panel.Find("#replies ~ .table-wrap")), "Danke!")
		require.Contains(t, text(panel.Find("#message-"+wa.ID.String()+" summary")), "1 replies")
		require.NotContains(t, text(panel.Find("#message-"+email.ID.String()+" .timeline")), "Danke!", "a WhatsApp reply answers the WhatsApp message")
	})

	t.Run("Masking", func(t *testing.T) {
		pages := []string{
			"/t/acme/bookings/booking/BK-D",
			"/t/acme/messages",
			"/t/acme/messages/" + wa.ID.String(),
			"/t/acme/messages/" + email.ID.String(),
			"/t/acme/messages?address=" + url.QueryEscape(annaPhone),
		}
		support, manager := c.signIn(asSupport), c.signIn(asManager)
		for _, path := range pages {
			doc := support.page(path)
			doc.Find(`form[role=search]`).Remove() // the filter echoes what support typed
			html, err := doc.Html()
			require.NoError(t, err)
			for _, secret := range []string{annaPhone, "4915123456789", annaEmail, "151 23456789"} {
				require.NotContains(t, html, secret, "support sees %s on %s", secret, path)
			}
			full, err := manager.page(path).Html()
			require.NoError(t, err)
			if path != "/t/acme/messages/"+email.ID.String() {
				require.Contains(t, html, "+49 ••• ••• 6789", path)
				require.Contains(t, full, annaPhone, "managers see full numbers on %s", path)
				require.NotContains(t, full, "+49 ••• ••• 6789", path)
			}
			if path != "/t/acme/messages/"+wa.ID.String() && !strings.Contains(path, "address=") {
				require.Contains(t, html, "a•••@example.com", path)
				require.Contains(t, full, annaEmail, "managers see full e-mail addresses on %s", path)
				require.NotContains(t, full, "a•••@example.com", path)
			}
		}
		// Support finds the passenger by the full number, and sees the list masked.
		doc := support.page("/t/acme/messages?address=" + url.QueryEscape(annaPhone))
		require.Len(t, doc.Find(".msg-table tbody tr").Nodes, 1)
		require.Equal(t, "+49 ••• ••• 6789", text(doc.Find(".msg-table .address")))
		// The passenger's name in the body is fine to show.
		require.Contains(t, text(support.page("/t/acme/messages/"+wa.ID.String()).Find("pre.preview")), "Anna")
	})

	t.Run("OtherTenant404", func(t *testing.T) {
		_, resp := c.signIn(asOtherManager).get("/t/globex/messages/" + wa.ID.String())
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		_, resp = c.signIn(asOtherManager).get("/t/acme/messages/" + wa.ID.String())
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		s := c.signIn(asOperator)
		_, resp = s.get("/t/globex/messages/" + wa.ID.String())
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "an id from another tenant is not found inside this one")
		s.page("/t/globex/messages")
		require.Equal(t, http.StatusNotFound, s.post("/t/globex/messages/"+wa.ID.String()+"/retry", nil).StatusCode)
		require.Equal(t, http.StatusNotFound, s.post("/t/globex/messages/"+wa.ID.String()+"/cancel", nil).StatusCode)
		_, resp = s.get("/t/acme/messages/not-a-uuid")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

func TestConsoleMessages_Retry(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})

	// The sandbox rejects numbers ending in 0000 for good.
	body := webtest.Notification("evt-retry", "BK-R")
	body["recipients"] = []map[string]any{{"name": "Rita Reject", "phone": "+4915123450000", "email": "rita@example.com"}}
	id := c.Submit(body)
	ms := c.WaitMessages(id, "WhatsApp failed, e-mail delivered", func(ms []*app.Message) bool {
		wa, em := byChannel(ms, app.WhatsApp), byChannel(ms, app.Email)
		return wa != nil && em != nil && wa.Status == app.MessageFailed && (em.Status == app.MessageDelivered || em.Status == app.MessageRead)
	})
	failed, email := byChannel(ms, app.WhatsApp), byChannel(ms, app.Email)
	require.Equal(t, "sandbox_rejected", *failed.ErrorCode)

	t.Run("ExplorerListsFailed", func(t *testing.T) {
		doc := c.signIn(asSupport).page("/t/acme/messages?status=FAILED")
		rows := doc.Find(".msg-table tbody tr")
		require.Equal(t, 1, rows.Length())
		require.Contains(t, text(rows), "sandbox_rejected")
	})

	support := c.signIn(asSupport)
	doc := support.page("/t/acme/messages/" + failed.ID.String())
	retry := doc.Find(`form[action="/t/acme/messages/` + failed.ID.String() + `/retry"]`)
	require.Equal(t, 1, retry.Length(), "support may retry")
	require.NotEmpty(t, retry.AttrOr("data-confirm", ""), "retry asks first")
	require.Contains(t, text(doc.Find("dl.facts")), "sandbox_rejected")

	resp := support.post("/t/acme/messages/"+failed.ID.String()+"/retry", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	next := resp.Header.Get("Location")
	require.NotEqual(t, "/t/acme/messages/"+failed.ID.String(), next)
	retryID := uuid.MustParse(strings.TrimPrefix(next, "/t/acme/messages/"))
	doc = support.follow(resp)
	require.Contains(t, text(doc.Find(".flash-success")), "Retry queued")
	require.Contains(t, text(doc.Find(".msg-links")), "This message retries a failed WHATSAPP message")
	require.Equal(t, "/t/acme/messages/"+failed.ID.String(), doc.Find(".msg-links a").AttrOr("href", ""))
	require.Contains(t, text(doc.Find("dl.facts")), "support@acme.test (manual)")

	require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND idempotency_key = $2 AND triggered_by = $3
		AND channel = 'WHATSAPP' AND event_id = $4`, retryID, "retry:"+failed.ID.String(), c.users[asSupport].ID, id))
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'FAILED'`, failed.ID), "the failed message stays FAILED")
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM message_events WHERE message_id = $1 AND source = 'console' AND detail->>'retried_as' = $2`,
		failed.ID, retryID.String()))
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'message.retry' AND target_id = $1 AND actor_id = $2
		AND metadata->>'retry_id' = $3`, failed.ID.String(), c.users[asSupport].ID, retryID.String()))

	// The retry is dispatched like any message (and this address fails again).
	require.Eventually(t, func() bool {
		return c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'FAILED'`, retryID) == 1
	}, dbtest.HangGuard, 50*time.Millisecond)

	t.Run("LinkedBothWays", func(t *testing.T) {
		doc := support.page("/t/acme/messages/" + failed.ID.String())
		require.Contains(t, text(doc.Find(".msg-links")), "Retried as a new message")
		require.Zero(t, doc.Find(`form[action$="/retry"]`).Length(), "a failed message is retried once; its retry carries on")
		require.Contains(t, text(doc.Find(".timeline")), retryID.String())
		panel := support.page("/t/acme/bookings/booking/BK-R")
		require.Equal(t, 3, panel.Find(`tr[id^="message-"]`).Length())
		require.Zero(t, panel.Find("#message-"+failed.ID.String()+` form[action$="/retry"]`).Length(), "retried already")
		require.Equal(t, 1, panel.Find("#message-"+retryID.String()+` form[action$="/retry"]`).Length(), "the failed retry may be retried")
		require.Contains(t, text(panel.Find("#message-"+retryID.String())), "support@acme.test")
	})

	t.Run("OnlyOnce", func(t *testing.T) {
		support.page("/t/acme/messages/" + failed.ID.String())
		resp := support.post("/t/acme/messages/"+failed.ID.String()+"/retry", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(support.follow(resp).Find(".flash-error")), "retried already")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE idempotency_key = $1`, "retry:"+failed.ID.String()))
	})

	t.Run("OnlyFailed", func(t *testing.T) {
		before := c.Count(`SELECT count(*) FROM messages`)
		support.page("/t/acme/messages/" + email.ID.String())
		resp := support.post("/t/acme/messages/"+email.ID.String()+"/retry", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(support.follow(resp).Find(".flash-error")), "Only failed messages can be retried")
		require.Equal(t, before, c.Count(`SELECT count(*) FROM messages`))
	})

	t.Run("NeedsCSRF", func(t *testing.T) {
		s := c.signIn(asManager)
		s.page("/t/acme/messages/" + retryID.String())
		resp := s.post("/t/acme/messages/"+retryID.String()+"/retry", url.Values{"csrf": {"forged"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Zero(t, c.Count(`SELECT count(*) FROM messages WHERE idempotency_key = $1`, "retry:"+retryID.String()))
	})
}

func TestConsoleMessages_Cancel(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})

	id := c.Submit(webtest.Notification("evt-cancel-q", "BK-Q"))
	ms := c.routeNow(c.Tenant.ID, id)
	queued := byChannel(ms, app.Email)
	require.Equal(t, app.MessageQueued, queued.Status)
	path := "/t/acme/messages/" + queued.ID.String()

	t.Run("SupportCannot", func(t *testing.T) {
		s := c.signIn(asSupport)
		panel := s.page("/t/acme/bookings/booking/BK-Q")
		require.Equal(t, 2, panel.Find(`tr[id^="message-"]`).Length())
		require.Zero(t, panel.Find(`form[action$="/cancel"]`).Length(), "support sees no cancel button on the panel")
		require.Equal(t, 2, c.signIn(asManager).page("/t/acme/bookings/booking/BK-Q").Find(`tr[id^="message-"] form[action$="/cancel"]`).Length(),
			"managers cancel queued messages from the panel")
		doc := s.page(path)
		require.Zero(t, doc.Find(`form[action$="/cancel"]`).Length(), "support sees no cancel button")
		require.Zero(t, doc.Find(`form[action$="/retry"]`).Length(), "a queued message cannot be retried")
		require.Equal(t, http.StatusForbidden, s.post(path+"/cancel", nil).StatusCode)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'QUEUED'`, queued.ID))
	})

	t.Run("NeedsCSRF", func(t *testing.T) {
		s := c.signIn(asManager)
		s.page(path)
		require.Equal(t, http.StatusForbidden, s.post(path+"/cancel", url.Values{"csrf": {"forged"}}).StatusCode)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'QUEUED'`, queued.ID))
	})

	s := c.signIn(asManager)
	doc := s.page(path)
	form := doc.Find(`form[action="` + path + `/cancel"]`)
	require.Equal(t, 1, form.Length(), "managers may cancel")
	require.NotEmpty(t, form.AttrOr("data-confirm", ""), "cancel asks first")

	resp := s.post(path+"/cancel", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, path, resp.Header.Get("Location"))
	doc = s.follow(resp)
	require.Contains(t, text(doc.Find(".flash-success")), "cancelled")
	require.Contains(t, rowTexts(doc.Find("dl.facts .badge")), "CANCELLED")
	require.Contains(t, text(doc.Find(".timeline li").Last()), "console")
	require.Contains(t, text(doc.Find(".timeline li").Last()), "manager@acme.test")
	require.Zero(t, doc.Find(`form[action$="/cancel"]`).Length())

	require.Equal(t, 1, c.Count(`SELECT count(*) FROM message_events WHERE message_id = $1 AND from_status = 'QUEUED' AND to_status = 'CANCELLED' AND source = 'console'`, queued.ID))
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'message.cancel' AND target_id = $1 AND actor_id = $2`,
		queued.ID.String(), c.users[asManager].ID))
	other := byChannel(ms, app.WhatsApp)
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'QUEUED'`, other.ID), "only that message is cancelled")

	t.Run("DispatchJobDoesNothing", func(t *testing.T) {
		completed := false
		out, err := c.Services.Dispatcher.Dispatch(c.Ctx, app.DispatchJob{TenantID: c.Tenant.ID, MessageID: queued.ID, Channel: app.Email}, 1, 5,
			func(ctx context.Context, tx app.Tx) error { completed = true; return nil })
		require.NoError(t, err)
		require.True(t, out.Done)
		require.False(t, completed)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE id = $1 AND status = 'CANCELLED' AND sent_at IS NULL AND external_message_id IS NULL`, queued.ID))
		require.Zero(t, c.Count(`SELECT coalesce(sum(count), 0) FROM usage_counters WHERE tenant_id = $1`, c.Tenant.ID))
	})

	t.Run("Twice", func(t *testing.T) {
		s.page(path)
		resp := s.post(path+"/cancel", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(s.follow(resp).Find(".flash-error")), "Only queued messages can be cancelled")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'message.cancel'`))
	})

	t.Run("ShownOnPanel", func(t *testing.T) {
		doc := c.signIn(asSupport).page("/t/acme/bookings/booking/BK-Q")
		row := doc.Find("#message-" + queued.ID.String())
		require.Contains(t, rowTexts(row.Find(".badge")), "CANCELLED")
		require.Contains(t, text(row.Find(".timeline")), "manager@acme.test")
	})
}

func TestConsoleMessages_Scheduled(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})

	body := webtest.Notification("evt-later", "BK-S")
	sendAt := time.Date(2031, 5, 4, 6, 30, 0, 0, time.UTC)
	body["send_at"] = sendAt.Format(time.RFC3339)
	id := c.Submit(body)

	doc := c.signIn(asSupport).page("/t/acme/bookings/booking/BK-S")
	pending := doc.Find(".msg-pending")
	require.Contains(t, text(pending), "BOOKING_CONFIRMED")
	require.Contains(t, text(pending), "SCHEDULED")
	require.Contains(t, text(pending), "04 May 2031 08:30 CEST", "times show in the tenant's timezone")
	require.Contains(t, text(doc.Find("#event-"+id.String())), "04 May 2031 08:30 CEST")
	require.Contains(t, text(doc.Find("#messages ~ p")), "No message was created yet")
}

// A provider's failure reason (an SES bounce's DiagnosticCode) and an
// event's error quote addresses: support sees them masked like every other
// address, managers in full.
func TestConsoleMessages_FailureReasonsMasked(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	id := c.Submit(webtest.Notification("evt-bounce", "BK-F"))
	email := byChannel(c.routeNow(c.Tenant.ID, id), app.Email)
	const bounce = "550 5.1.1 <" + annaEmail + "> user unknown"
	c.Exec(`UPDATE messages SET status = 'FAILED', failed_reason = $2, error_code = 'bounce', failed_at = now() WHERE id = $1`, email.ID, bounce)
	c.Exec(`UPDATE events SET error = $2 WHERE id = $1`, id, "WhatsApp refused "+annaPhone+" and ben.o@example.org")

	support, manager := c.signIn(asSupport), c.signIn(asManager)
	pages := map[string]string{
		"panel":    "/t/acme/bookings/booking/BK-F",
		"detail":   "/t/acme/messages/" + email.ID.String(),
		"explorer": "/t/acme/messages?status=FAILED",
	}
	for name, path := range pages {
		t.Run(name, func(t *testing.T) {
			doc := support.page(path)
			html, err := doc.Html()
			require.NoError(t, err)
			require.NotContains(t, html, annaEmail, "the bounce's address is masked for support")
			require.Contains(t, text(doc.Find("main")), "550 5.1.1 <a•••@example.com> user unknown", "the rest of the reason stays readable")

			full := text(manager.page(path).Find("main"))
			require.Contains(t, full, bounce, "managers see the reason as the provider sent it")
		})
	}

	t.Run("EventError", func(t *testing.T) {
		doc := support.page(pages["panel"])
		errText := text(doc.Find(`#event-` + id.String() + ` .field-error`))
		require.Contains(t, errText, "WhatsApp refused +49 ••• ••• 6789 and b•••@example.org")
		html, err := doc.Html()
		require.NoError(t, err)
		for _, secret := range []string{annaPhone, "ben.o@example.org"} {
			require.NotContains(t, html, secret)
		}
		require.Contains(t, text(manager.page(pages["panel"]).Find(`#event-`+id.String()+` .field-error`)), "WhatsApp refused "+annaPhone+" and ben.o@example.org")
	})
}

// The booking panel pages its messages, newest first, 25 a page; the
// notifications and what is scheduled stay on every page.
func TestConsoleMessages_PanelPaginated(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	id := c.Submit(webtest.Notification("evt-many", "BK-MANY"))
	email := byChannel(c.routeNow(c.Tenant.ID, id), app.Email)
	// 29 older copies of the e-mail, one a minute back: 31 messages in all.
	c.Exec(`INSERT INTO messages (`+c.MessageColumns("")+`) SELECT `+c.MessageColumns("r")+`
		FROM messages m, generate_series(1, 29) g, jsonb_populate_record(NULL::messages, to_jsonb(m) || jsonb_build_object(
			'id', gen_random_uuid(), 'idempotency_key', m.idempotency_key || ':copy-' || g, 'conversation_id', NULL,
			'created_at', m.created_at - make_interval(mins => g), 'queued_at', m.queued_at - make_interval(mins => g))) r
		WHERE m.id = $1`, email.ID)
	var all []*app.Message
	require.NoError(t, c.Services.Store.InTenant(c.Ctx, c.Tenant.ID, func(tx *db.Tx) (err error) {
		all, err = tx.MessagesByEntity(c.Ctx, c.Tenant.ID, "booking", "BK-MANY")
		return err
	}))
	require.Len(t, all, 31)
	// The oldest failed and was retried by the newest: its Retry button is
	// gone on page 2 too.
	oldest := all[30]
	c.Exec(`UPDATE messages SET status = 'FAILED', failed_at = now() WHERE id = $1`, oldest.ID)
	c.Exec(`UPDATE messages SET idempotency_key = $2 WHERE id = $1`, all[0].ID, "retry:"+oldest.ID.String())
	unretried := all[29]
	c.Exec(`UPDATE messages SET status = 'FAILED', failed_at = now() WHERE id = $1`, unretried.ID)

	ids := func(doc *goquery.Document) []string {
		return doc.Find(`tr[id^="message-"]`).Map(func(_ int, s *goquery.Selection) string {
			return strings.TrimPrefix(s.AttrOr("id", ""), "message-")
		})
	}
	want := make([]string, len(all))
	for i, m := range all {
		want[i] = m.ID.String()
	}

	s := c.signIn(asManager)
	doc := s.page("/t/acme/bookings/booking/BK-MANY")
	require.Equal(t, "Messages (31)", text(doc.Find("#messages")), "the heading counts every message")
	require.Equal(t, want[:25], ids(doc), "the 25 newest first")
	require.Zero(t, doc.Find(`tr[id^="message-"] details[open]`).Length(), "timelines stay collapsed")
	require.Equal(t, 25, doc.Find(`tr[id^="message-"] td.msg-timeline-cell details`).Length(), "each row keeps its timeline behind a summary")
	require.Equal(t, 1, doc.Find(`tr#event-`+id.String()).Length())
	next, ok := doc.Find(`.pager a[rel=next]`).Attr("href")
	require.True(t, ok)
	require.Equal(t, "/t/acme/bookings/booking/BK-MANY?page=2", next)

	doc = s.page(next)
	require.Equal(t, want[25:], ids(doc), "page 2 shows the older messages")
	for _, m := range all[25:] {
		for _, newer := range all[:25] {
			require.False(t, m.CreatedAt.After(newer.CreatedAt))
		}
	}
	require.Equal(t, "Messages (31)", text(doc.Find("#messages")))
	require.Equal(t, 1, doc.Find(`tr#event-`+id.String()).Length(), "the notifications show on every page")
	require.Zero(t, doc.Find(`.pager a[rel=next]`).Length())
	prev, _ := doc.Find(`.pager a[rel=prev]`).Attr("href")
	require.Equal(t, "/t/acme/bookings/booking/BK-MANY", prev)
	require.Zero(t, doc.Find(`#message-`+oldest.ID.String()+` form[action$="/retry"]`).Length(), "retried from page 1")
	require.Equal(t, 1, doc.Find(`#message-`+unretried.ID.String()+` form[action$="/retry"]`).Length())

	doc = s.page("/t/acme/bookings/booking/BK-MANY?page=9")
	require.Empty(t, ids(doc))
	require.Contains(t, text(doc.Find("#messages ~ p")), "No messages on this page")
	require.Equal(t, 1, doc.Find(`tr#event-`+id.String()).Length(), "past the last page the booking is still found")
}

// TestConsoleMessages_RetryRefusedAddress: Meta said the number is not on
// WhatsApp (131026). The message page and the booking panel say so beside
// the retry, whose confirmation repeats it; a retry without that
// confirmation (an old page, a hand-made form) is refused and sends
// nothing, one with it is queued like any retry.
func TestConsoleMessages_RetryRefusedAddress(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	id := c.Submit(webtest.Notification("evt-refused", "BK-REF"))
	wa := byChannel(c.routeNow(c.Tenant.ID, id), app.WhatsApp)
	require.NotNil(t, wa)
	c.Exec(`UPDATE messages SET status = 'FAILED', failed_reason = 'meta_131026', error_code = '131026', failed_at = now() WHERE id = $1`, wa.ID)

	support := c.signIn(asSupport)
	retryPath := "/t/acme/messages/" + wa.ID.String() + "/retry"
	for _, page := range []string{"/t/acme/messages/" + wa.ID.String(), "/t/acme/bookings/booking/BK-REF"} {
		form := support.page(page).Find(`form[action="` + retryPath + `"]`)
		require.Equal(t, 1, form.Length(), page)
		require.Equal(t, "1", form.Find(`input[name=anyway]`).AttrOr("value", ""), page)
		require.Contains(t, text(form.Find(".refused-note")), "not on WhatsApp", page)
		require.Contains(t, form.AttrOr("data-confirm", ""), "(131026)", page)
		require.Contains(t, form.AttrOr("data-confirm", ""), "Send anyway?", page)
	}

	resend := func() *goquery.Selection { return support.page("/t/acme/bookings/booking/BK-REF").Find(".msg-resend") }
	form := resend()
	require.Equal(t, 1, form.Find(`.resend-refused li`).Length(), "only the refused address; the e-mail was not refused")
	require.Contains(t, text(form.Find(`.resend-refused li[data-refused-channel=WHATSAPP]`)), "not on WhatsApp")
	require.Contains(t, form.Find("form").AttrOr("data-confirm", ""), "refused an address on WHATSAPP before")

	resp := support.post(retryPath, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, text(support.follow(resp).Find(".flash-error")), "most likely fail the same way")
	require.Zero(t, c.Count(`SELECT count(*) FROM messages WHERE idempotency_key = $1`, "retry:"+wa.ID.String()), "nothing queued without the confirmation")

	support.page("/t/acme/messages/" + wa.ID.String())
	resp = support.post(retryPath, url.Values{"anyway": {"1"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, text(support.follow(resp).Find(".flash-success")), "Retry queued")
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM messages WHERE idempotency_key = $1 AND status = 'QUEUED'`, "retry:"+wa.ID.String()))
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'message.retry' AND target_id = $1
		AND metadata->>'address_refused' = 'true'`, wa.ID.String()))
	require.Equal(t, 1, resend().Find(`.resend-refused li`).Length(), "a retry on its way does not clear the warning")

	c.Exec(`UPDATE messages SET status = 'DELIVERED' WHERE idempotency_key = $1`, "retry:"+wa.ID.String())
	form = resend()
	require.Zero(t, form.Find(`.resend-refused`).Length(), "a later message that reached the number clears it")
	require.Equal(t, "Send this message to the passenger again?", form.Find("form").AttrOr("data-confirm", ""))
}
