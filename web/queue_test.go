package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/jobs"
	"github.com/heraldhq/herald/web/webtest"
)

// riverJob puts a job in River's table in the given state, as River would
// have left it, and returns its id. errs are the errors of failed attempts.
func (c *consoleBundle) riverJob(queue, kind, state string, args map[string]any, errs ...string) int64 {
	c.T.Helper()
	raw, err := json.Marshal(args)
	require.NoError(c.T, err)
	var finalized, attempted *time.Time
	now := time.Now()
	switch state {
	case console.JobCompleted, console.JobCancelled, console.JobDiscarded:
		finalized = &now
	}
	if len(errs) > 0 || state == console.JobRunning || finalized != nil {
		attempted = &now
	}
	var jsonErrs []string
	for i, e := range errs {
		b, _ := json.Marshal(map[string]any{"at": now.Add(time.Duration(i-len(errs)) * time.Second), "attempt": i + 1, "error": e, "trace": ""})
		jsonErrs = append(jsonErrs, string(b))
	}
	errArray := "{}"
	if len(jsonErrs) > 0 {
		quoted := make([]string, len(jsonErrs))
		for i, e := range jsonErrs {
			q, _ := json.Marshal(e)
			quoted[i] = string(q)
		}
		errArray = "{" + strings.Join(quoted, ",") + "}"
	}
	attempt := len(errs)
	if state == console.JobRunning || state == console.JobCompleted {
		attempt++
	}
	scheduled := now
	if state == console.JobScheduled {
		scheduled = now.Add(time.Hour)
	}
	var id int64
	require.NoError(c.T, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(c.Ctx, `
			INSERT INTO river_job (args, kind, queue, state, attempt, max_attempts, errors, scheduled_at, attempted_at, finalized_at)
			VALUES ($1, $2, $3, $4, $5, 5, $6::jsonb[], $7, $8, $9) RETURNING id`,
			raw, kind, queue, state, attempt, errArray, scheduled, attempted, finalized).Scan(&id)
	}))
	return id
}

// jobState reads a job's state straight from River's table.
func (c *consoleBundle) jobState(id int64) string {
	c.T.Helper()
	var st string
	require.NoError(c.T, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(c.Ctx, `SELECT state::text FROM river_job WHERE id = $1`, id).Scan(&st)
	}))
	return st
}

// riverPaused reports what River's own client says about a queue's pause.
func (c *consoleBundle) riverPaused(name string) (known, paused bool) {
	c.T.Helper()
	require.NoError(c.T, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
		qs, err := c.Services.Queue.Admin().Queues(c.Ctx, tx)
		for _, q := range qs {
			if q.Name == name {
				known, paused = true, q.PausedAt != nil
			}
		}
		return err
	}))
	return known, paused
}

func TestConsoleQueues(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})

	// Two events route now, one later: River holds their route jobs.
	c.Submit(webtest.Notification("evt-q1", "BK-Q1"))
	c.Submit(webtest.Notification("evt-q2", "BK-Q2"))
	later := webtest.Notification("evt-q3", "BK-Q3")
	later["send_at"] = time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	c.Submit(later)

	msgID := uuid.New()
	secretArgs := map[string]any{"tenant_id": c.Tenant.ID, "message_id": msgID, "channel": "EMAIL", "to": "anna.secret@example.com", "body": "Your PIN is 4711"}
	discarded := c.riverJob(app.QueueDispatchEmail, "dispatch", console.JobDiscarded, secretArgs,
		"ses: throttled", "ses: throttled", "ses: throttled", "ses: throttled", "ses: 550 mailbox unavailable")
	retryable := c.riverJob(app.QueueDispatchSMS, "dispatch", console.JobRetryable, map[string]any{"tenant_id": c.other.ID, "message_id": uuid.New()}, "sns: timeout after 10s")
	completed := c.riverJob(app.QueueDispatchWhatsApp, "dispatch", console.JobCompleted, map[string]any{"tenant_id": c.Tenant.ID, "message_id": uuid.New()})
	c.riverJob(app.QueueDispatchWhatsApp, "dispatch", console.JobCompleted, map[string]any{"tenant_id": c.Tenant.ID, "message_id": uuid.New()})
	c.riverJob(app.QueueMaintenance, "retention", console.JobCancelled, map[string]any{})
	running := c.riverJob(app.QueueDispatchWebhook, "dispatch", console.JobRunning, map[string]any{"tenant_id": c.Tenant.ID, "message_id": uuid.New()})

	ops := c.signIn(asOperator)
	audits := func(action string) int {
		return c.Count(`SELECT count(*) FROM audit_log WHERE action = $1 AND tenant_id IS NULL AND actor_id = $2`, action, c.users[asOperator].ID)
	}

	t.Run("CountsMatchRiver", func(t *testing.T) {
		doc := ops.page("/queues")
		for _, q := range console.HeraldQueues {
			row := doc.Find(fmt.Sprintf(`table.queues tr[data-queue=%q]`, q))
			require.Equal(t, 1, row.Length(), q)
			for _, st := range console.JobStates {
				want := c.Count(`SELECT count(*) FROM river_job WHERE queue = $1 AND state = $2::river_job_state`, q, st)
				require.Equal(t, strconv.Itoa(want), text(row.Find(fmt.Sprintf(`td[data-state=%q]`, st))), "%s %s", q, st)
			}
			require.Equal(t, "running", text(row.Find("[data-queue-state]")))
		}
		require.Equal(t, "2", text(doc.Find(`tr[data-queue=route] td[data-state=available]`)), "the two events that route now")
		require.Equal(t, "1", text(doc.Find(`tr[data-queue=route] td[data-state=scheduled]`)))
		require.Equal(t, "/queues/route?state=available", doc.Find(`tr[data-queue=route] td[data-state=available] a`).AttrOr("href", ""))
	})

	t.Run("RecentErrorsWithoutPayloads", func(t *testing.T) {
		doc := ops.page("/queues")
		rows := doc.Find("table.jobs tbody tr")
		require.Equal(t, 2, rows.Length(), "the retryable and the discarded job")
		d := doc.Find(fmt.Sprintf(`table.jobs tr[data-job="%d"]`, discarded))
		require.Contains(t, text(d), "ses: 550 mailbox unavailable", "the last error")
		require.Contains(t, text(d), "5 / 5")
		require.Contains(t, text(d), "dispatch_email")
		require.Equal(t, "discarded", text(d.Find(".badge")))
		require.Equal(t, c.Tenant.ID.String(), d.Find(".ref").First().AttrOr("title", ""))
		require.Contains(t, text(doc.Find(fmt.Sprintf(`table.jobs tr[data-job="%d"]`, retryable))), "sns: timeout after 10s")
		html, _ := doc.Html()
		require.NotContains(t, html, "anna.secret@example.com")
		require.NotContains(t, html, "4711")

		doc = ops.page(fmt.Sprintf("/queues/jobs/%d", discarded))
		require.Len(t, doc.Find("ol.job-errors li").Nodes, 5, "every attempt's error")
		require.Contains(t, text(doc.Find("ol.job-errors li").Last()), "Attempt 5")
		require.Contains(t, text(doc.Find("dl.facts")), msgID.String())
		require.Contains(t, text(doc.Find("dl.facts")), c.Tenant.ID.String())
		html, _ = doc.Html()
		require.NotContains(t, html, "anna.secret@example.com")
		require.NotContains(t, html, "4711")
	})

	t.Run("PauseAndResume", func(t *testing.T) {
		known, _ := c.riverPaused(app.QueueDispatchEmail)
		require.False(t, known, "no worker has registered the queue yet")

		ops.page("/queues")
		resp := ops.post("/queues/dispatch_email/pause", url.Values{"next": {"/queues"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/queues", resp.Header.Get("Location"))
		doc := ops.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "Queue dispatch_email is paused")
		require.Equal(t, "paused", text(doc.Find(`tr[data-queue=dispatch_email] [data-queue-state]`)))
		require.Equal(t, "running", text(doc.Find(`tr[data-queue=dispatch_sms] [data-queue-state]`)), "other queues run on")
		_, paused := c.riverPaused(app.QueueDispatchEmail)
		require.True(t, paused, "River's client reports the queue paused")
		require.Equal(t, 1, audits("queue.pause"))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'queue.pause' AND target_type = 'queue' AND target_id = 'dispatch_email'`))

		// Pausing again changes nothing and says why.
		doc = ops.follow(ops.post("/queues/dispatch_email/pause", url.Values{"next": {"/queues/dispatch_email"}}))
		require.Contains(t, text(doc.Find(".flash-error")), "Queue dispatch_email is already paused.")
		require.Equal(t, 1, audits("queue.pause"))

		// The queue's page offers resume.
		require.Equal(t, 1, doc.Find(`form[action="/queues/dispatch_email/resume"][data-confirm]`).Length())
		resp = ops.post("/queues/dispatch_email/resume", url.Values{"next": {"/queues/dispatch_email"}})
		require.Equal(t, "/queues/dispatch_email", resp.Header.Get("Location"))
		doc = ops.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "Queue dispatch_email runs again.")
		_, paused = c.riverPaused(app.QueueDispatchEmail)
		require.False(t, paused)
		require.Equal(t, 1, audits("queue.resume"))

		doc = ops.follow(ops.post("/queues/dispatch_email/resume", nil))
		require.Contains(t, text(doc.Find(".flash-error")), "Queue dispatch_email is not paused.")
		require.Equal(t, 1, audits("queue.resume"))
	})

	t.Run("RetryDiscardedJob", func(t *testing.T) {
		doc := ops.page("/queues/dispatch_email?state=discarded")
		form := doc.Find(fmt.Sprintf(`form[action="/queues/jobs/%d/retry"]`, discarded))
		require.Equal(t, 1, form.Length())
		require.NotEmpty(t, form.AttrOr("data-confirm", ""), "asks first")
		require.Zero(t, doc.Find(fmt.Sprintf(`form[action="/queues/jobs/%d/cancel"]`, discarded)).Length(), "a discarded job cannot be cancelled")

		resp := ops.post(fmt.Sprintf("/queues/jobs/%d/retry", discarded), url.Values{"next": {form.Find("input[name=next]").AttrOr("value", "")}})
		require.Equal(t, "/queues/dispatch_email?state=discarded", resp.Header.Get("Location"))
		doc = ops.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), fmt.Sprintf("Job %d (dispatch) will run again now.", discarded))
		require.Equal(t, console.JobAvailable, c.jobState(discarded))
		require.Equal(t, 1, audits("job.retry"))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'job.retry' AND target_id = $1
			AND metadata->>'from_state' = 'discarded' AND metadata->>'to_state' = 'available'
			AND metadata->>'tenant_id' = $2 AND metadata->>'message_id' = $3 AND metadata->>'queue' = 'dispatch_email'`,
			strconv.FormatInt(discarded, 10), c.Tenant.ID.String(), msgID.String()))
		require.Zero(t, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'job.retry' AND metadata::text LIKE '%anna.secret%'`))
	})

	t.Run("CancelScheduledJob", func(t *testing.T) {
		var scheduled int64
		require.NoError(t, c.Services.Store.InPlatform(c.Ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(c.Ctx, `SELECT id FROM river_job WHERE queue = 'route' AND state = 'scheduled'`).Scan(&scheduled)
		}))
		doc := ops.page("/queues/route?state=scheduled")
		require.Equal(t, 1, doc.Find("table.jobs tbody tr").Length())
		require.Contains(t, text(doc.Find("table.jobs")), "event")
		resp := ops.post(fmt.Sprintf("/queues/jobs/%d/cancel", scheduled), url.Values{"next": {"/queues/route?state=scheduled"}})
		doc = ops.follow(resp)
		require.Contains(t, text(doc.Find(".flash-success")), "is cancelled")
		require.Equal(t, console.JobCancelled, c.jobState(scheduled))
		require.Equal(t, "No scheduled jobs", text(doc.Find(".empty-title")))
		require.Equal(t, 1, c.Count(`SELECT count(*) FROM audit_log WHERE action = 'job.cancel' AND target_id = $1 AND metadata->>'from_state' = 'scheduled' AND metadata->>'event_id' IS NOT NULL`,
			strconv.FormatInt(scheduled, 10)))
	})

	t.Run("CancelRunningJobAsksItsWorker", func(t *testing.T) {
		ops.page("/queues/dispatch_webhook")
		doc := ops.follow(ops.post(fmt.Sprintf("/queues/jobs/%d/cancel", running), url.Values{"next": {"/queues/dispatch_webhook"}}))
		require.Contains(t, text(doc.Find(".flash-success")), "its worker was asked to stop")
		require.Equal(t, console.JobRunning, c.jobState(running), "River cancels it when the worker stops")
	})

	t.Run("RefusedActionsChangeNothing", func(t *testing.T) {
		before := c.Count(`SELECT count(*) FROM audit_log`)
		ops.page("/queues")
		doc := ops.follow(ops.post(fmt.Sprintf("/queues/jobs/%d/cancel", completed), url.Values{"next": {"/queues"}}))
		require.Contains(t, text(doc.Find(".flash-error")), fmt.Sprintf("Job %d is already completed; there is nothing to cancel.", completed))
		require.Equal(t, console.JobCompleted, c.jobState(completed))

		doc = ops.follow(ops.post(fmt.Sprintf("/queues/jobs/%d/retry", running), url.Values{"next": {"/queues"}}))
		require.Contains(t, text(doc.Find(".flash-error")), "only jobs that are retryable, discarded, cancelled or completed can be retried")
		require.Equal(t, before, c.Count(`SELECT count(*) FROM audit_log`))
	})

	t.Run("BadInputs", func(t *testing.T) {
		before := c.Count(`SELECT count(*) FROM audit_log`)
		doc, resp := ops.get("/queues/nope")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Contains(t, text(doc.Find("main, .error-card")), `There is no queue named "nope".`)

		ops.page("/queues")
		doc, resp = ops.postPage("/queues/nope/pause", nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Contains(t, text(doc.Find(".error-card")), `There is no queue named "nope".`)
		known, _ := c.riverPaused("nope")
		require.False(t, known, "no queue was made up")

		doc, resp = ops.get("/queues/jobs/987654321")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Contains(t, text(doc.Find(".error-card")), "There is no job 987654321.")
		ops.page("/queues")
		_, resp = ops.postPage("/queues/jobs/987654321/retry", nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		ops.page("/queues")
		_, resp = ops.postPage("/queues/jobs/-3/cancel", nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		_, resp = ops.get("/queues/jobs/abc")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)

		doc, resp = ops.get("/queues/route?state=exploded")
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, text(doc.Find(".state-tabs ~ .field-error")), `There is no job state "exploded". Choose one of: available, scheduled, running, retryable, completed, cancelled, discarded.`)
		require.Zero(t, doc.Find("table.jobs").Length())

		// A forged form changes nothing either.
		resp = ops.post("/queues/route/pause", url.Values{"csrf": {"forged"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		_, paused := c.riverPaused(app.QueueRoute)
		require.False(t, paused)

		// Only pages inside /queues are places to return to.
		ops.page("/queues")
		resp = ops.post("/queues/route/pause", url.Values{"next": {"https://evil.example/"}})
		require.Equal(t, "/queues", resp.Header.Get("Location"))
		ops.page("/queues")
		require.Equal(t, http.StatusSeeOther, ops.post("/queues/route/resume", nil).StatusCode)
		require.Equal(t, before+2, c.Count(`SELECT count(*) FROM audit_log`), "only the pause and resume that happened")
	})

	t.Run("OnlyOperators", func(t *testing.T) {
		for _, who := range []string{asManager, asSupport, asOtherManager} {
			s := c.signIn(who)
			doc := s.page(pathHome(c, who))
			require.NotContains(t, doc.Find(".mainnav a").Map(func(_ int, a *goquery.Selection) string { return a.Text() }), "Queues", who)
			require.Zero(t, doc.Find(`a[href="/queues"]`).Length(), who)
			_, resp := s.get("/queues")
			require.Equal(t, http.StatusForbidden, resp.StatusCode, who)
			resp = s.post("/queues/route/pause", nil)
			require.Equal(t, http.StatusForbidden, resp.StatusCode, who)
			resp = s.post(fmt.Sprintf("/queues/jobs/%d/retry", retryable), nil)
			require.Equal(t, http.StatusForbidden, resp.StatusCode, who)
		}
		_, paused := c.riverPaused(app.QueueRoute)
		require.False(t, paused)
		require.Equal(t, console.JobRetryable, c.jobState(retryable))

		doc := ops.page("/tenants")
		require.Equal(t, "/queues", doc.Find(`.mainnav a:contains("Queues")`).AttrOr("href", ""))
		doc = ops.page("/queues/route")
		require.Equal(t, "page", doc.Find(`.mainnav a:contains("Queues")`).AttrOr("aria-current", ""), "the queue pages sit under Queues")
	})
}

// pathHome is where a user's start page is.
func pathHome(c *consoleBundle, who string) string {
	if who == asOtherManager {
		return "/t/globex/"
	}
	return "/t/acme/"
}

func TestConsoleQueues_Pagination(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	var ids []int64
	for i := range 30 {
		ids = append(ids, c.riverJob(app.QueueMaintenance, "retention", console.JobCompleted, map[string]any{"n": i}))
	}
	c.riverJob(app.QueueMaintenance, "retention", console.JobDiscarded, map[string]any{}, "boom")
	ops := c.signIn(asOperator)
	shown := func(doc *goquery.Document) []int64 {
		var out []int64
		doc.Find("table.jobs tbody tr").Each(func(_ int, tr *goquery.Selection) {
			id, _ := strconv.ParseInt(tr.AttrOr("data-job", ""), 10, 64)
			out = append(out, id)
		})
		return out
	}
	newestFirst := func(ids []int64) []int64 {
		out := make([]int64, len(ids))
		for i, id := range ids {
			out[len(ids)-1-i] = id
		}
		return out
	}
	want := newestFirst(ids)

	first := ops.page("/queues/maintenance?state=completed")
	require.Equal(t, want[:25], shown(first), "25 per page, newest first")
	require.Zero(t, first.Find(`.pager a[rel=prev]`).Length())
	next := first.Find(`.pager a[rel=next]`).AttrOr("href", "")
	require.Equal(t, fmt.Sprintf("/queues/maintenance?before=%d&page=2&state=completed", want[24]), next)

	second := ops.page(next)
	require.Equal(t, want[25:], shown(second))
	require.Contains(t, text(second.Find(".pager")), "Page 2")
	require.Zero(t, second.Find(`.pager a[rel=next]`).Length(), "nothing older")
	prev := second.Find(`.pager a[rel=prev]`).AttrOr("href", "")
	require.NotEmpty(t, prev)

	back := ops.page(prev)
	require.Equal(t, want[:25], shown(back), "back to the newest page")
	require.Contains(t, text(back.Find(".pager")), "Page 1")
	require.Zero(t, back.Find(`.pager a[rel=prev]`).Length())

	all := ops.page("/queues/maintenance")
	require.Len(t, shown(all), 25, "every state, newest first")
	require.Equal(t, "31 jobs", text(all.Find(".page-head p")))
	require.Equal(t, "30", text(all.Find(`.state-tabs a[href="/queues/maintenance?state=completed"] .count`)))
	require.Equal(t, "1", text(all.Find(`.state-tabs a[href="/queues/maintenance?state=discarded"] .count`)))
}

// TestConsoleQueues_PauseHoldsWorkers checks pause and resume against real
// River workers: a queue paused before any worker started holds its jobs
// once workers run, and they run when it resumes.
func TestConsoleQueues_PauseHoldsWorkers(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	ops := c.signIn(asOperator)
	ops.page("/queues")
	require.Equal(t, http.StatusSeeOther, ops.post("/queues/route/pause", nil).StatusCode)
	_, paused := c.riverPaused(app.QueueRoute)
	require.True(t, paused)

	id := c.Submit(webtest.Notification("evt-paused", "BK-P"))
	c.StartWorkers()
	// A job queued after the paused one, on a queue that is not paused,
	// runs to completion: the workers are fetching, and had every chance to
	// take the route job too.
	probe := c.riverJob(app.QueueMaintenance, jobs.AuditVerifyArgs{}.Kind(), console.JobAvailable, map[string]any{})
	c.WaitUntil("the maintenance probe job to complete", func() bool { return c.jobState(probe) == console.JobCompleted })
	require.Equal(t, app.EventReceived, c.Event(id).Status, "the route queue is paused")
	require.Equal(t, 1, c.Count(`SELECT count(*) FROM river_job WHERE queue = 'route' AND state = 'available'`))
	doc := ops.page("/queues")
	require.Equal(t, "paused", text(doc.Find(`tr[data-queue=route] [data-queue-state]`)))
	require.Equal(t, "1", text(doc.Find(`tr[data-queue=route] td[data-state=available]`)))

	require.Equal(t, http.StatusSeeOther, ops.post("/queues/route/resume", nil).StatusCode)
	c.WaitMessages(id, "both messages after resume", func(ms []*app.Message) bool { return len(ms) == 2 })
}
