package web

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// handleQueues shows every queue with its job counts and the latest errors.
func (s *Server) handleQueues(c *fiber.Ctx) error {
	o, err := s.Queues.Overview(c.UserContext(), userOf(c))
	if err != nil {
		return err
	}
	return s.render(c, views.QueuesPage(s.page(c, "Queues"), views.QueuesView{Overview: o, Self: "/queues"}))
}

// handleQueue shows one queue's jobs, newest first, optionally in one
// state. Pages are keyed by job id (?before= for older, ?after= for newer),
// so that jobs arriving meanwhile do not shift them.
func (s *Server) handleQueue(c *fiber.Ctx) error {
	u := userOf(c)
	q, err := s.Queues.Queue(c.UserContext(), u, c.Params("queue"))
	if err != nil {
		return err
	}
	v := views.QueueView{Queue: q, State: c.Query("state"), Self: c.OriginalURL()}
	if _, err := console.ParseJobState(v.State); err != nil {
		v.Errors = views.FormErrorsOf(err)
		c.Status(fiber.StatusUnprocessableEntity)
		return s.render(c, views.QueuePage(s.page(c, "Queue "+q.Name), v))
	}
	page, _ := pageOf(c)
	lq := console.JobListQuery{Limit: PerPage + 1}
	if v.State != "" {
		lq.States = []string{v.State}
	}
	lq.Before, _ = strconv.ParseInt(c.Query("before"), 10, 64)
	lq.After, _ = strconv.ParseInt(c.Query("after"), 10, 64)
	if lq.After > 0 {
		lq.Before = 0
	}
	jobs, err := s.Queues.Jobs(c.UserContext(), u, q.Name, lq)
	if err != nil {
		return err
	}
	more := len(jobs) > PerPage
	if more && lq.After > 0 {
		// Read towards the newest: the extra row is the newest one.
		jobs = jobs[1:]
	} else if more {
		jobs = jobs[:PerPage]
	}
	v.Jobs = jobs
	v.Pager = jobPager(c, q.Name, v.State, page, jobs, lq, more)
	return s.render(c, views.QueuePage(s.page(c, "Queue "+q.Name), v))
}

// jobPager links the newer and older pages around a page of jobs.
func jobPager(c *fiber.Ctx, queue, state string, page int, jobs []*console.Job, lq console.JobListQuery, more bool) views.Pager {
	pg := views.Pager{Page: page, Shown: len(jobs)}
	if len(jobs) == 0 {
		return pg
	}
	link := func(key string, id int64, n int) string {
		q := url.Values{}
		if state != "" {
			q.Set("state", state)
		}
		if n > 1 && key != "" {
			q.Set(key, strconv.FormatInt(id, 10))
			q.Set("page", strconv.Itoa(n))
		}
		path := "/queues/" + url.PathEscape(queue)
		if enc := q.Encode(); enc != "" {
			return path + "?" + enc
		}
		return path
	}
	newest, oldest := jobs[0].ID, jobs[len(jobs)-1].ID
	newer := lq.Before > 0 || (lq.After > 0 && more)
	older := more || lq.After > 0
	if lq.After > 0 && !more {
		// Nothing newer than this page: it is the first.
		pg.Page = 1
	}
	if newer {
		pg.PrevHref = link("after", newest, max(pg.Page-1, 1))
	}
	if older {
		pg.NextHref = link("before", oldest, pg.Page+1)
	}
	return pg
}

// handleJob shows one job with every error it met.
func (s *Server) handleJob(c *fiber.Ctx) error {
	id, err := console.ParseJobID(c.Params("id"))
	if err != nil {
		return err
	}
	j, err := s.Queues.Job(c.UserContext(), userOf(c), id)
	if err != nil {
		return err
	}
	return s.render(c, views.JobPage(s.page(c, "Job "+c.Params("id")), views.JobView{Job: j, Self: c.OriginalURL()}))
}

// handleQueuePause pauses a queue.
func (s *Server) handleQueuePause(c *fiber.Ctx) error {
	name := c.Params("queue")
	err := s.Queues.Pause(c.UserContext(), userActor(c), userOf(c), name)
	return s.afterQueueAction(c, err, "Queue "+name+" is paused: workers fetch none of its jobs until you resume it.")
}

// handleQueueResume resumes a paused queue.
func (s *Server) handleQueueResume(c *fiber.Ctx) error {
	name := c.Params("queue")
	err := s.Queues.Resume(c.UserContext(), userActor(c), userOf(c), name)
	return s.afterQueueAction(c, err, "Queue "+name+" runs again.")
}

// handleJobRetry makes a job available to run now.
func (s *Server) handleJobRetry(c *fiber.Ctx) error {
	id, err := console.ParseJobID(c.Params("id"))
	if err != nil {
		return err
	}
	j, err := s.Queues.Retry(c.UserContext(), userActor(c), userOf(c), id)
	msg := ""
	if err == nil {
		msg = "Job " + strconv.FormatInt(j.ID, 10) + " (" + j.Kind + ") will run again now."
	}
	return s.afterQueueAction(c, err, msg)
}

// handleJobCancel cancels a job, or asks its worker to stop.
func (s *Server) handleJobCancel(c *fiber.Ctx) error {
	id, err := console.ParseJobID(c.Params("id"))
	if err != nil {
		return err
	}
	j, err := s.Queues.Cancel(c.UserContext(), userActor(c), userOf(c), id)
	msg := ""
	if err == nil {
		msg = "Job " + strconv.FormatInt(j.ID, 10) + " (" + j.Kind + ") is cancelled."
		if j.State == console.JobRunning {
			msg = "Job " + strconv.FormatInt(j.ID, 10) + " (" + j.Kind + ") is running; its worker was asked to stop, and it is cancelled when it does."
		}
	}
	return s.afterQueueAction(c, err, msg)
}

// afterQueueAction redirects back to the page the action was sent from with
// a notice. A refused action (already paused, a job in the wrong state) is
// a notice too; an unknown queue or job is a not-found page.
func (s *Server) afterQueueAction(c *fiber.Ctx, err error, ok string) error {
	back := safeNext(c.FormValue("next"), "/queues")
	if !strings.HasPrefix(back, "/queues") {
		back = "/queues"
	}
	switch {
	case err == nil:
		s.flash(c, "success", ok)
	case app.ErrorCode(err) == app.ECONFLICT:
		s.flash(c, "error", app.ErrorMessage(err))
	default:
		return err
	}
	return c.Redirect(back, fiber.StatusSeeOther)
}
