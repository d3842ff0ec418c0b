package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web/webtest"
)

// scheduled is a BOOKING_CONFIRMED request for booking, sent at at.
func scheduled(eventID, booking string, at time.Time) map[string]any {
	b := webtest.Notification(eventID, booking)
	b["send_at"] = at.UTC().Format(time.RFC3339)
	return b
}

// rowIDs returns the event ids of a list's rows, in order.
func rowIDs(doc *goquery.Document) []string {
	return doc.Find("tr[data-event-id]").Map(func(_ int, s *goquery.Selection) string {
		id, _ := s.Attr("data-event-id")
		return id
	})
}

// storedSchedule is an event's send_at, version and status as stored.
type storedSchedule struct {
	SendAt  time.Time
	Version int
	Status  string
}

func (c *consoleBundle) schedule(id uuid.UUID) storedSchedule {
	c.T.Helper()
	var s storedSchedule
	require.NoError(c.T, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
		e, err := tx.EventByID(c.Ctx, c.Tenant.ID, id, false)
		if err != nil {
			return err
		}
		s = storedSchedule{SendAt: *e.SendAt, Version: e.Version, Status: e.Status}
		return nil
	}))
	return s
}

// globexKey returns an API key of the other tenant.
func (c *consoleBundle) globexKey() string {
	c.T.Helper()
	_, key, err := c.Services.APIKeys.Create(c.Ctx, app.CLIActor, c.other.ID, "globex system")
	require.NoError(c.T, err)
	return key
}

func (c *consoleBundle) submitWithKey(key string, body map[string]any) uuid.UUID {
	c.T.Helper()
	var res struct{ ID uuid.UUID }
	require.Equal(c.T, http.StatusAccepted, c.RequestWithKey(key, http.MethodPost, "/api/v1/notifications", body, &res))
	return res.ID
}

func TestConsoleScheduled(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	// A timezone without daylight saving keeps the expected texts exact.
	c.Exec(`UPDATE tenants SET timezone = 'Asia/Tokyo' WHERE id = $1`, c.Tenant.ID)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)

	now := time.Now().Truncate(time.Minute)
	inThree := c.Submit(scheduled("sch-3h", "BK-300", now.Add(3*time.Hour)))
	inOne := c.Submit(scheduled("sch-1h", "BK-100", now.Add(time.Hour)))
	inTwo := c.Submit(scheduled("sch-2h", "BK-200", now.Add(2*time.Hour)))
	c.Submit(webtest.Notification("now-1", "BK-NOW")) // not scheduled: never listed
	globexEvent := c.submitWithKey(c.globexKey(), scheduled("globex-1", "GX-1", now.Add(time.Hour)))

	manager, support := c.signIn(asManager), c.signIn(asSupport)

	t.Run("ListSoonestFirst", func(t *testing.T) {
		doc := manager.page("/t/acme/scheduled")
		require.Equal(t, []string{inOne.String(), inTwo.String(), inThree.String()}, rowIDs(doc),
			"soonest first; the event sent now and the other tenant's are absent")
		row := doc.Find(`tr[data-event-id="` + inOne.String() + `"]`)
		require.Contains(t, text(row), "BOOKING_CONFIRMED")
		require.Contains(t, text(row), "sch-1h")
		require.Contains(t, text(row), "booking BK-100")
		require.Equal(t, "1", text(row.Find("td.recipients")))
		require.Equal(t, "1", text(row.Find("td.version")))
		require.Contains(t, text(row), "SCHEDULED")
		require.Equal(t, now.Add(time.Hour).In(tokyo).Format("02 Jan 2006 15:04 MST"), text(row.Find("td.send-at")),
			"send_at in the tenant's timezone")
		require.Equal(t, 1, row.Find(`form[action$="/reschedule"] input[type=datetime-local][name=send_at]`).Length())
		require.Equal(t, 1, row.Find(`form[action$="/cancel"][data-confirm]`).Length(), "cancel asks first")
		require.Contains(t, text(doc.Find(".page-head")), "Asia/Tokyo")
	})

	t.Run("Filters", func(t *testing.T) {
		doc := manager.page("/t/acme/scheduled?entity=BK-200")
		require.Equal(t, []string{inTwo.String()}, rowIDs(doc))
		doc = manager.page("/t/acme/scheduled?event=BOOKING_CANCELLED")
		require.Empty(t, rowIDs(doc))
		require.Contains(t, text(doc.Find(".empty")), "No scheduled notification matches")

		doc, resp := manager.get("/t/acme/scheduled?event=NOT_AN_EVENT")
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, text(doc.Find(`select[name=event] ~ .field-error`)), `"NOT_AN_EVENT" is not a known event`)
	})

	t.Run("EmptyState", func(t *testing.T) {
		doc := c.signIn(asOtherManager).page("/t/globex/scheduled?event=BOOKING_REFUNDED")
		require.Contains(t, text(doc.Find(".empty")), "No scheduled notification matches")
		c.Exec(`UPDATE events SET status = 'CANCELLED' WHERE tenant_id = $1`, c.other.ID)
		doc = c.signIn(asOtherManager).page("/t/globex/scheduled")
		require.Empty(t, rowIDs(doc))
		require.Contains(t, text(doc.Find(".empty")), "Nothing is scheduled")
	})

	t.Run("Reschedule", func(t *testing.T) {
		before := c.schedule(inTwo)
		page := manager.page("/t/acme/scheduled/" + inTwo.String())
		value, _ := page.Find(`input[name=send_at]`).Attr("value")
		require.Equal(t, before.SendAt.In(tokyo).Format("2006-01-02T15:04"), value, "the form starts at the current time, in the tenant's timezone")

		newLocal := now.Add(26 * time.Hour).In(tokyo).Format("2006-01-02T15:04")
		resp := manager.post("/t/acme/scheduled/"+inTwo.String()+"/reschedule", url.Values{"send_at": {newLocal}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc := manager.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "version 2")

		after := c.schedule(inTwo)
		want, _ := time.ParseInLocation("2006-01-02T15:04", newLocal, tokyo)
		require.True(t, want.Equal(after.SendAt), "the time typed is read in the tenant's timezone: want %s, got %s", want, after.SendAt)
		require.Equal(t, 2, after.Version)
		require.Equal(t, app.EventScheduled, after.Status)
		require.Equal(t, []string{inOne.String(), inThree.String(), inTwo.String()}, rowIDs(doc), "the list follows the new time")
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'notification.reschedule' AND target_id = $1 AND actor_type = 'user' AND actor_id = $2`,
			inTwo.String(), c.users[asManager].ID))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1 AND (args->>'version')::int = 2`, inTwo.String()),
			"a route job for the new version")
	})

	t.Run("RescheduleRefused", func(t *testing.T) {
		before := c.schedule(inThree)
		for _, tc := range []struct{ value, want string }{
			{now.Add(-time.Hour).In(tokyo).Format("2006-01-02T15:04"), "has passed; choose a time in the future"},
			{"next tuesday", `"next tuesday" is not a date and time such as 2027-04-12T07:15`},
			{"2027-13-45T25:99", "is not a date and time"},
			{"", "Choose the new date and time."},
		} {
			manager.page("/t/acme/scheduled")
			doc, resp := manager.postPage("/t/acme/scheduled/"+inThree.String()+"/reschedule", url.Values{"send_at": {tc.value}})
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, "value %q", tc.value)
			require.Contains(t, text(doc.Find(`input[name=send_at] ~ .field-error`)), tc.want, "value %q", tc.value)
			typed, _ := doc.Find(`input[name=send_at]`).Attr("value")
			require.Equal(t, tc.value, typed, "what was typed stays in the field")
			require.Equal(t, before, c.schedule(inThree), "nothing changed for %q", tc.value)
		}
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'notification.reschedule' AND target_id = $1`, inThree.String()))
	})

	t.Run("Cancel", func(t *testing.T) {
		manager.page("/t/acme/scheduled")
		resp := manager.post("/t/acme/scheduled/"+inThree.String()+"/cancel", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc := manager.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "cancelled")
		require.NotContains(t, rowIDs(doc), inThree.String())
		require.Equal(t, app.EventCancelled, c.schedule(inThree).Status)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'notification.cancel' AND target_id = $1 AND actor_id = $2`,
			inThree.String(), c.users[asManager].ID))

		// A cancelled event cannot be rescheduled: a readable conflict.
		doc, resp = manager.postPage("/t/acme/scheduled/"+inThree.String()+"/reschedule", url.Values{"send_at": {now.Add(5 * time.Hour).In(tokyo).Format("2006-01-02T15:04")}})
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, text(doc.Find(".flash-error")), "no longer waiting to be sent")
	})

	t.Run("SupportSeesWithoutActions", func(t *testing.T) {
		doc := support.page("/t/acme/scheduled")
		require.Contains(t, rowIDs(doc), inOne.String())
		require.Zero(t, doc.Find(`form[action*="/scheduled/"]`).Length(), "no reschedule or cancel for support")
		doc = support.page("/t/acme/scheduled/" + inOne.String())
		require.Zero(t, doc.Find(`form[action*="/scheduled/"]`).Length())
		require.Contains(t, text(doc.Find("table")), "+49 ••• ••• 6789", "support sees the phone masked")
		require.NotContains(t, doc.Text(), "+4915123456789")
		require.NotContains(t, doc.Text(), "anna@example.com")

		before := c.schedule(inOne)
		resp := support.post("/t/acme/scheduled/"+inOne.String()+"/reschedule", url.Values{"send_at": {now.Add(9 * time.Hour).In(tokyo).Format("2006-01-02T15:04")}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		resp = support.post("/t/acme/scheduled/"+inOne.String()+"/cancel", nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Equal(t, before, c.schedule(inOne))
	})

	t.Run("ManagerSeesAddresses", func(t *testing.T) {
		doc := manager.page("/t/acme/scheduled/" + inOne.String())
		require.Contains(t, text(doc.Find("table")), "+4915123456789")
		require.Contains(t, text(doc.Find("table")), "anna@example.com")
	})

	t.Run("CSRF", func(t *testing.T) {
		before := c.schedule(inOne)
		resp := manager.post("/t/acme/scheduled/"+inOne.String()+"/cancel", url.Values{"csrf": {"forged"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		resp = manager.post("/t/acme/scheduled/"+inOne.String()+"/reschedule", url.Values{"csrf": {"forged"}, "send_at": {now.Add(7 * time.Hour).In(tokyo).Format("2006-01-02T15:04")}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Equal(t, before, c.schedule(inOne))
	})

	t.Run("OtherTenantsEvent404", func(t *testing.T) {
		manager.page("/t/acme/scheduled")
		for _, path := range []string{"/t/acme/scheduled/" + globexEvent.String(), "/t/acme/scheduled/not-a-uuid"} {
			_, resp := manager.get(path)
			require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		}
		resp := manager.post("/t/acme/scheduled/"+globexEvent.String()+"/cancel", nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		resp = manager.post("/t/acme/scheduled/"+globexEvent.String()+"/reschedule", url.Values{"send_at": {"2099-01-01T10:00"}})
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM events WHERE id = $1 AND version = 1`, globexEvent))

		other := c.signIn(asOtherManager)
		_, resp = other.get("/t/globex/scheduled/" + inOne.String())
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

func TestConsoleScheduled_Pagination(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	start := time.Now().Add(time.Hour).Truncate(time.Minute)
	var ids []string
	for i := range 27 {
		id := c.Submit(scheduled("page-"+strconv.Itoa(i), "BK-P"+strconv.Itoa(i), start.Add(time.Duration(i)*time.Minute)))
		ids = append(ids, id.String())
	}
	s := c.signIn(asSupport)
	doc := s.page("/t/acme/scheduled")
	require.Equal(t, ids[:25], rowIDs(doc))
	next, ok := doc.Find(`.pager a[rel=next]`).Attr("href")
	require.True(t, ok)
	require.Equal(t, "/t/acme/scheduled?page=2", next)
	doc = s.page(next)
	require.Equal(t, ids[25:], rowIDs(doc))
	require.Zero(t, doc.Find(`.pager a[rel=next]`).Length())
}

// incident is an INCIDENT_BROADCAST request, which waits for approval.
func incident(eventID string) map[string]any {
	return map[string]any{
		"event_id": eventID, "trigger_event": "INCIDENT_BROADCAST",
		"recipients": []map[string]any{{"name": "Anna Schmidt", "phone": "+4915123456789", "email": "anna@example.com", "locale": "en"}},
		"context": map[string]any{"passenger_name": "Anna", "tour_name": "Lake Garda <Spring>",
			"incident_message": "The coach is delayed by 90 minutes.", "operator_phone": "+49 89 1234567"},
		"conversation_context": map[string]any{"type": "trip", "id": "TR-9"},
	}
}

func TestConsoleApprovals(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})
	manager, support := c.signIn(asManager), c.signIn(asSupport)

	t.Run("EmptyState", func(t *testing.T) {
		doc := manager.page("/t/acme/approvals")
		require.Contains(t, text(doc.Find(".empty")), "Nothing awaits approval")
	})

	first := c.Submit(incident("inc-1"))
	second := c.Submit(incident("inc-2"))
	third := c.Submit(incident("inc-3"))
	globexEvent := c.submitWithKey(c.globexKey(), incident("globex-inc"))

	t.Run("ListShowsRenderedMessages", func(t *testing.T) {
		doc := manager.page("/t/acme/approvals")
		cards := doc.Find("section.approval")
		ids := cards.Map(func(_ int, s *goquery.Selection) string { v, _ := s.Attr("data-event-id"); return v })
		require.Equal(t, []string{third.String(), second.String(), first.String()}, ids, "newest first, this tenant's only")

		card := doc.Find(`section.approval[data-event-id="` + first.String() + `"]`)
		require.Contains(t, text(card), "AWAITING APPROVAL")
		require.Contains(t, text(card), "fallback chain")
		wa := card.Find(`.planned[data-channel=WHATSAPP]`)
		require.Equal(t, "send", wa.AttrOr("data-role", ""), "the first channel of the chain is sent")
		require.Contains(t, text(wa.Find(".body")), "Important information about your trip Lake Garda <Spring>", "rendered from the tenant's English template")
		require.Contains(t, text(wa.Find(".body")), "The coach is delayed by 90 minutes.")
		require.Contains(t, text(wa), "+4915123456789", "managers see addresses")
		require.Contains(t, text(wa), "template en")
		require.Equal(t, "fallback", card.Find(`.planned[data-channel=SMS]`).AttrOr("data-role", ""))
		email := card.Find(`.planned[data-channel=EMAIL]`)
		require.Equal(t, "fallback", email.AttrOr("data-role", ""))
		require.Contains(t, text(email.Find(".subject")), "Important information about your trip Lake Garda <Spring>")
		require.NotContains(t, text(email.Find("pre.body")), "<p>", "e-mail shown as its text")
		require.Contains(t, text(email.Find("details pre")), "<strong>Lake Garda &lt;Spring&gt;</strong>", "the HTML as sent, values escaped")

		require.Equal(t, 1, card.Find(`form[action$="/approve"][data-confirm]`).Length())
		require.Equal(t, 1, card.Find(`form[action$="/reject"] textarea[name=reason]`).Length())
	})

	t.Run("PreviewFollowsRouting", func(t *testing.T) {
		// Without an active WhatsApp account routing skips it; the preview says so.
		c.Exec(`UPDATE channel_accounts SET status = 'SUSPENDED' WHERE tenant_id = $1 AND channel = 'WHATSAPP'`, c.Tenant.ID)
		defer c.Exec(`UPDATE channel_accounts SET status = 'ACTIVE' WHERE tenant_id = $1 AND channel = 'WHATSAPP'`, c.Tenant.ID)
		doc := manager.page("/t/acme/approvals/" + second.String())
		wa := doc.Find(`.planned[data-channel=WHATSAPP]`)
		require.Equal(t, "skipped", wa.AttrOr("data-role", ""))
		require.Contains(t, text(wa), "No active channel account")
		require.Equal(t, "send", doc.Find(`.planned[data-channel=SMS]`).AttrOr("data-role", ""), "SMS moves up the chain")
		// The decision comes before the recipients, so a long list does
		// not hide it.
		require.NotZero(t, doc.Find(`section.approval > .decision ~ .recipient-plan`).Length())
		require.Zero(t, doc.Find(`section.approval > .recipient-plan ~ .decision`).Length())
	})

	t.Run("SupportSeesMaskedWithoutButtons", func(t *testing.T) {
		doc := support.page("/t/acme/approvals")
		require.Equal(t, 3, doc.Find("section.approval").Length())
		require.Zero(t, doc.Find(`form[action*="/approvals/"]`).Length(), "no decisions for support")
		require.Contains(t, text(doc.Find(`.planned[data-channel=WHATSAPP] .to`).First()), "+49 ••• ••• 6789")
		require.NotContains(t, doc.Text(), "+4915123456789")
		require.NotContains(t, doc.Text(), "anna@example.com")
		doc = support.page("/t/acme/approvals/" + first.String())
		require.Zero(t, doc.Find(`form[action*="/approvals/"]`).Length())

		resp := support.post("/t/acme/approvals/"+first.String()+"/approve", nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		resp = support.post("/t/acme/approvals/"+first.String()+"/reject", url.Values{"reason": {"no"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Equal(t, app.EventAwaitingApproval, c.Event(first).Status)
	})

	t.Run("RejectNeedsReason", func(t *testing.T) {
		manager.page("/t/acme/approvals")
		for _, reason := range []string{"", "   "} {
			doc, resp := manager.postPage("/t/acme/approvals/"+second.String()+"/reject", url.Values{"reason": {reason}})
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			require.Contains(t, text(doc.Find(`textarea[name=reason] ~ .field-error`)), "Say why the notification is rejected")
			require.Equal(t, app.EventAwaitingApproval, c.Event(second).Status)
		}
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'notification.reject'`))

		resp := manager.post("/t/acme/approvals/"+second.String()+"/reject", url.Values{"reason": {"False alarm: the road is open."}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc := manager.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "rejected")
		require.Zero(t, doc.Find(`section.approval[data-event-id="`+second.String()+`"]`).Length())
		require.Equal(t, app.EventRejected, c.Event(second).Status)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM events WHERE id = $1 AND decision_reason = 'False alarm: the road is open.' AND decided_by = $2`,
			second, c.users[asManager].ID))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'notification.reject' AND target_id = $1 AND actor_id = $2 AND metadata->>'reason' = 'False alarm: the road is open.'`,
			second.String(), c.users[asManager].ID))
		require.Zero(t, c.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, second.String()),
			"a rejected event is never routed")
		require.Empty(t, c.Event(second).Messages)
	})

	t.Run("ApproveRoutes", func(t *testing.T) {
		manager.page("/t/acme/approvals/" + first.String())
		resp := manager.post("/t/acme/approvals/"+first.String()+"/approve", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(manager.follow(resp).Find(".flash-success")), "approved")
		m := webtest.OnlyMessage(t, c.WaitMessages(first, "the WhatsApp message read", webtest.AllStatus(app.MessageRead)))
		require.Equal(t, app.WhatsApp, m.Channel)
		require.Contains(t, m.Body, "The coach is delayed by 90 minutes.")
		require.Equal(t, app.EventRouted, c.Event(first).Status)
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'notification.approve' AND target_id = $1 AND actor_id = $2`,
			first.String(), c.users[asManager].ID))

		// The event's page now shows the stored messages, not a plan.
		doc := manager.page("/t/acme/approvals/" + first.String())
		require.Contains(t, text(doc.Find(".stored-note")), "approved")
		stored := doc.Find(`.planned[data-role=stored]`)
		require.Equal(t, 1, stored.Length())
		require.Equal(t, "WHATSAPP", stored.AttrOr("data-channel", ""))
		require.Contains(t, text(stored), "READ")
		require.Contains(t, text(stored.Find(".body")), "The coach is delayed by 90 minutes.")
		require.Zero(t, doc.Find(`form[action$="/approve"]`).Length())
		doc = support.page("/t/acme/approvals/" + first.String())
		require.Contains(t, text(doc.Find(`.planned[data-role=stored] .to`)), "+49 ••• ••• 6789")
		require.NotContains(t, doc.Text(), "+4915123456789")

		// Deciding again is a readable conflict, not a second send.
		manager.page("/t/acme/approvals")
		doc, resp = manager.postPage("/t/acme/approvals/"+first.String()+"/approve", nil)
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		require.Contains(t, text(doc.Find(".flash-error")), "no longer awaiting approval")
		require.Zero(t, doc.Find(`form[action$="/approve"]`).Length())
	})

	t.Run("OtherTenantsEvent404", func(t *testing.T) {
		manager.page("/t/acme/approvals")
		_, resp := manager.get("/t/acme/approvals/" + globexEvent.String())
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		for _, action := range []string{"/approve", "/reject"} {
			resp = manager.post("/t/acme/approvals/"+globexEvent.String()+action, url.Values{"reason": {"x"}})
			require.Equal(t, http.StatusNotFound, resp.StatusCode, action)
		}
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM events WHERE id = $1 AND status = 'AWAITING_APPROVAL'`, globexEvent))
	})

	t.Run("CSRF", func(t *testing.T) {
		resp := manager.post("/t/acme/approvals/"+third.String()+"/approve", url.Values{"csrf": {"forged"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		resp = manager.post("/t/acme/approvals/"+third.String()+"/reject", url.Values{"csrf": {"forged"}, "reason": {"x"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		require.Equal(t, app.EventAwaitingApproval, c.Event(third).Status)
	})

	t.Run("ScheduledApprovalWaits", func(t *testing.T) {
		b := incident("inc-later")
		at := time.Now().Add(3 * time.Hour)
		b["send_at"] = at.UTC().Format(time.RFC3339)
		id := c.Submit(b)
		// It is listed on both pages: it has a time and waits for a decision.
		require.Contains(t, rowIDs(manager.page("/t/acme/scheduled")), id.String())
		manager.page("/t/acme/approvals")
		resp := manager.post("/t/acme/approvals/"+id.String()+"/approve", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, text(manager.follow(resp).Find(".flash-success")), "it goes out at")
		require.Equal(t, app.EventScheduled, c.Event(id).Status)
	})
}

// queryCounter counts the statements sent to Postgres through one pool.
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}

func (q *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countingSchedules is the console's Schedules service over a pool of its
// own that counts every statement (BEGIN, the tenant scope and COMMIT too).
func (c *consoleBundle) countingSchedules() (*console.Schedules, *queryCounter) {
	c.T.Helper()
	counter := &queryCounter{}
	cfg := c.Services.DB.Pool.Config()
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(c.Ctx, cfg)
	require.NoError(c.T, err)
	d := db.New(pool)
	c.T.Cleanup(d.Close)
	return &console.Schedules{Store: db.Scope[console.ScheduleTx](d.Store()), Intake: c.Services.Intake, Router: c.Services.Router, Now: time.Now}, counter
}

// incidentFor is an INCIDENT_BROADCAST to three people.
func incidentFor(eventID string, n int) map[string]any {
	b := incident(eventID)
	b["recipients"] = []map[string]any{
		{"name": "Anna Schmidt", "phone": "+4915123456789", "email": "anna@example.com", "locale": "en"},
		{"name": "Ben Ode", "phone": "+4917612345" + fmt.Sprintf("%03d", n), "email": fmt.Sprintf("ben%d@example.com", n), "locale": "de-DE"},
		{"name": "Cleo Park", "phone": "+4917698765" + fmt.Sprintf("%03d", n), "email": fmt.Sprintf("cleo%d@example.com", n)},
	}
	return b
}

// The approvals list previews up to ten events × three recipients × every
// channel of the chain; its queries must not grow with that product.
func TestConsoleApprovals_QueryCount(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	for i := range 10 {
		c.Submit(incidentFor("inc-q-"+strconv.Itoa(i), i))
	}
	schedules, counter := c.countingSchedules()
	manager := c.users[asManager]

	counter.n.Store(0)
	previews, more, err := schedules.Pending(c.Ctx, manager, c.Tenant.ID, console.PageRequest{Limit: 11}, 3)
	require.NoError(t, err)
	require.False(t, more)
	require.Len(t, previews, 10)
	for _, p := range previews {
		require.Len(t, p.Recipients, 3)
		for _, rp := range p.Recipients {
			require.Len(t, rp.Messages, 3, "WhatsApp, SMS and e-mail planned")
		}
	}
	list := counter.n.Load()
	t.Logf("approvals list, 10 events × 3 recipients × 3 channels: %d statements", list)

	// One event to a hundred people, on its own page.
	big := incident("inc-q-big")
	var people []map[string]any
	for i := range 100 {
		people = append(people, map[string]any{"name": "P" + strconv.Itoa(i), "phone": fmt.Sprintf("+49170100%05d", i), "email": fmt.Sprintf("p%d@example.com", i), "locale": "en"})
	}
	big["recipients"] = people
	bigID := c.Submit(big)
	counter.n.Store(0)
	p, err := schedules.Preview(c.Ctx, manager, c.Tenant.ID, bigID, 100)
	require.NoError(t, err)
	require.Len(t, p.Recipients, 100)
	one := counter.n.Load()
	t.Logf("one event's approval page, 100 recipients × 3 channels: %d statements", one)

	// BEGIN, the tenant scope, the page, the tenant, the active accounts,
	// the templates per (channel, locale chain), the contacts, one batch of
	// idempotency keys, COMMIT: independent of events × recipients × channels.
	require.LessOrEqual(t, list, int64(20), "the list's queries must not grow with events × recipients × channels (254 before)")
	require.LessOrEqual(t, one, int64(20), "nor the event page's with its recipients (805 before)")
}

// Support sees every phone number and e-mail address in a preview masked,
// not only the recipient's own: templates print others from the context.
func TestConsoleApprovals_MasksEveryAddress(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{})
	b := incident("inc-mask")
	b["context"].(map[string]any)["incident_message"] = "Questions? Write to ops.desk@example.org or call the driver on +4930987654321."
	b["context"].(map[string]any)["operator_phone"] = "+4989123456789"
	id := c.Submit(b)
	manager, support := c.signIn(asManager), c.signIn(asSupport)
	others := []string{"ops.desk@example.org", "+4930987654321", "4930987654321", "+4989123456789", "4989123456789", "+4915123456789", "anna@example.com"}

	check := func(t *testing.T, stored bool) {
		t.Helper()
		pages := []string{"/t/acme/approvals/" + id.String()}
		if !stored {
			pages = append(pages, "/t/acme/approvals")
		}
		for _, path := range pages {
			doc := support.page(path)
			planned := doc.Find(".planned")
			require.NotZero(t, planned.Length(), path)
			for _, addr := range others {
				require.NotContains(t, doc.Text(), addr, "%s shows %s to support", path, addr)
			}
			body := text(doc.Find(`.planned[data-channel=WHATSAPP] .body`))
			require.Contains(t, body, "o•••@example.org", path)
			require.Contains(t, body, "+49 ••• ••• 4321", path)
			require.Contains(t, body, "+49 ••• ••• 6789", path)

			doc = manager.page(path)
			body = text(doc.Find(`.planned[data-channel=WHATSAPP] .body`))
			require.Contains(t, body, "ops.desk@example.org", path)
			require.Contains(t, body, "+4930987654321", path)
			require.Contains(t, body, "+4989123456789", path)
		}
		if !stored {
			email := support.page("/t/acme/approvals/" + id.String()).Find(`.planned[data-channel=EMAIL]`)
			require.Contains(t, text(email.Find("details pre")), "o•••@example.org", "the e-mail's HTML too")
			require.NotContains(t, text(email), "ops.desk@")
		}
	}

	t.Run("Preview", func(t *testing.T) { check(t, false) })

	t.Run("Stored", func(t *testing.T) {
		manager.page("/t/acme/approvals/" + id.String())
		resp := manager.post("/t/acme/approvals/"+id.String()+"/approve", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		c.WaitMessages(id, "the WhatsApp message read", webtest.AllStatus(app.MessageRead))
		require.NotZero(t, support.page("/t/acme/approvals/"+id.String()).Find(`.planned[data-role=stored]`).Length())
		check(t, true)
	})
}

// Events whose time has passed but are not routed yet (the scheduler lags)
// and events awaiting approval without a time can still be cancelled, so
// the scheduled list shows them: due ones first, labelled, those without a
// time last.
func TestConsoleScheduled_DueAndUntimed(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	now := time.Now().Truncate(time.Minute)
	later := c.Submit(scheduled("sch-later", "BK-L", now.Add(2*time.Hour)))
	soon := c.Submit(scheduled("sch-soon", "BK-S", now.Add(time.Hour)))
	due := c.Submit(scheduled("sch-due", "BK-D", now.Add(3*time.Hour)))
	c.Exec(`UPDATE events SET send_at = now() - interval '5 minutes' WHERE id = $1`, due)
	untimed := c.Submit(incident("inc-untimed"))
	require.Equal(t, app.EventAwaitingApproval, c.Event(untimed).Status)

	manager := c.signIn(asManager)
	doc := manager.page("/t/acme/scheduled")
	require.Equal(t, []string{due.String(), soon.String(), later.String(), untimed.String()}, rowIDs(doc),
		"soonest first: the due one, then by time, then the one without a time")
	dueRow := doc.Find(`tr[data-event-id="` + due.String() + `"]`)
	require.Equal(t, "due", text(dueRow.Find("td.send-at .due")))
	require.Zero(t, doc.Find(`tr[data-event-id="`+soon.String()+`"] .due`).Length(), "a future time is not due")
	untimedRow := doc.Find(`tr[data-event-id="` + untimed.String() + `"]`)
	require.Equal(t, "when approved", text(untimedRow.Find("td.send-at")))
	require.Contains(t, text(untimedRow), "AWAITING APPROVAL")
	require.Equal(t, 1, untimedRow.Find(`form[action$="/cancel"]`).Length(), "still cancellable")

	// Both can be cancelled from the list.
	for _, id := range []uuid.UUID{due, untimed} {
		resp := manager.post("/t/acme/scheduled/"+id.String()+"/cancel", nil)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		doc = manager.follow(resp)
		require.NotContains(t, rowIDs(doc), id.String())
		require.Equal(t, app.EventCancelled, c.Event(id).Status)
	}
	require.Equal(t, []string{soon.String(), later.String()}, rowIDs(doc))
}
