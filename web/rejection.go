package web

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// localDuplicate marks a notification request answered with the event an
// earlier request stored under the same event id: accepted, but nothing new
// is sent, so the Requests page lists it with the rejections.
const localDuplicate = "duplicate"

// maxRecordedPath clips the path kept with a rejection.
const maxRecordedPath = 500

// recordRejections keeps every API request Herald refuses (an answer in
// 4xx) and every repeated event id on the tenant's Requests page. It runs
// the error handler itself, so that the answer is final; it records after
// the handler's transaction has rolled back, so nothing the request tried to
// store is kept with it. Requests whose tenant cannot be told (no key, or a
// key whose prefix no tenant has) are not kept anywhere: they would fill
// nobody's page, and anyone could send them.
func (s *Server) recordRejections(c *fiber.Ctx) error {
	if err := c.Next(); err != nil {
		if herr := c.App().ErrorHandler(c, err); herr != nil {
			return herr
		}
	}
	status := c.Response().StatusCode()
	dup, _ := c.Locals(localDuplicate).(bool)
	if s.Rejections == nil || (!dup && (status < 400 || status >= 500)) {
		return nil
	}
	ctx := c.UserContext()
	r := &app.APIRejection{Method: c.Method(), Status: status, RequestID: requestIDOf(c)}
	if k := apiKeyOf(c); k != nil {
		r.TenantID, r.KeyPrefix = k.TenantID, &k.Prefix
	} else {
		_, secret, _ := strings.Cut(c.Get(fiber.HeaderAuthorization), " ")
		id, prefix, ok := s.Rejections.TenantOfKey(ctx, strings.TrimSpace(secret))
		if !ok {
			return nil
		}
		r.TenantID, r.KeyPrefix = id, &prefix
	}
	r.Path = clipText(console.MaskText(readablePath(c)), maxRecordedPath)
	if dup {
		r.Code = "duplicate_event_id"
		r.Message = "An event with this event_id was submitted before: Herald answered with that event and sent nothing new."
		r.Field = ptr("event_id")
	} else {
		var answer apiError
		_ = json.Unmarshal(c.Response().Body(), &answer)
		r.Code, r.Message = answer.Error.Code, console.MaskText(answer.Error.Message)
		if answer.Error.Field != "" {
			r.Field = &answer.Error.Field
		}
	}
	// The bytes as sent: Body would decode a content coding, unbounded.
	// An upload's body is a passenger list: not kept.
	var body []byte
	if !isUpload(c) {
		body = c.Request().Body()
	}
	r.BodySize = len(body)
	r.Body = console.RedactBody(body)
	r.EventID = bodyEventID(body)
	r.Path, r.Code, r.Message, r.Body = cleanText(r.Path), cleanText(r.Code), cleanText(r.Message), cleanText(r.Body)
	if _, err := s.Rejections.Record(ctx, r); err != nil {
		// The answer stands: keeping a record of it must never change it.
		s.Log.WarnContext(ctx, "rejected request not recorded", "request_id", r.RequestID, "err", err)
	}
	return nil
}

// readablePath is the request's path and query as people read them
// (%2B49... as +49...), so that addresses in it are found and masked.
func readablePath(c *fiber.Ctx) string {
	p := c.OriginalURL()
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	return p
}

// bodyEventID is the event id a request body names, if any.
func bodyEventID(body []byte) *string {
	if len(body) == 0 || len(body) > console.MaxRedactInput || app.CheckJSONDepth(body) != nil {
		return nil
	}
	var v struct {
		EventID any `json:"event_id"`
	}
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	id, ok := v.EventID.(string)
	if id = cleanText(strings.TrimSpace(id)); !ok || id == "" {
		return nil
	}
	id = clipText(id, 200)
	return &id
}

// cleanText makes text storable: valid UTF-8 without NUL characters.
func cleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

func clipText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// handleRequestList lists the tenant's rejected API requests, newest first,
// filtered by status and event id and paged by keyset.
func (s *Server) handleRequestList(c *fiber.Ctx) error {
	p := s.page(c, "Requests")
	in := console.RejectionFilterInput{Status: c.Query("status"), EventID: c.Query("event_id")}
	filter, errs := console.ParseRejectionFilter(in)
	req := console.PageRequest{Limit: PerPage + 1}
	if v := c.Query("cursor"); v != "" {
		cur, err := console.ParseCursor("cursor", v)
		if err != nil {
			errs["cursor"] = "That page link is not valid any more; showing the newest requests."
		}
		req.Cursor = cur
	}
	rs, more, err := s.RejectionConsole.List(c.UserContext(), tenantOf(c).ID, filter, req)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		c.Status(fiber.StatusUnprocessableEntity)
	}
	pager := keysetPager(c, req.Cursor, rs, more, func(r *app.APIRejection) (time.Time, uuid.UUID) { return r.At, r.ID })
	return s.render(c, views.RequestListPage(p, views.RequestListView{
		Base: tenantPath(c, ""), Requests: rs, Pager: pager, Input: in, Errs: errs,
		Filtered: filter != (console.RejectionFilter{}),
	}))
}

// handleRequestShow shows one rejected request: what was asked, what Herald
// answered.
func (s *Server) handleRequestShow(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	r, err := s.RejectionConsole.Get(c.UserContext(), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	back := tenantPath(c, "/requests")
	if ref, err := url.Parse(c.Get(fiber.HeaderReferer)); err == nil && ref.Path == back {
		back += "?" + ref.RawQuery
	}
	return s.render(c, views.RequestPage(s.page(c, "Request "+strconv.Itoa(r.Status)), views.RequestDetailView{
		Base: tenantPath(c, ""), Request: r, Back: strings.TrimSuffix(back, "?"),
	}))
}
