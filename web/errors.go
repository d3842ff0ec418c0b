package web

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/views"
)

// statusOf maps app error codes to HTTP statuses. This is the only place
// that knows both vocabularies.
var statusOf = map[string]int{
	app.EINVALID:      fiber.StatusUnprocessableEntity,
	app.EMALFORMED:    fiber.StatusBadRequest,
	app.ENOTFOUND:     fiber.StatusNotFound,
	app.ECONFLICT:     fiber.StatusConflict,
	app.EUNAUTHORIZED: fiber.StatusUnauthorized,
	app.EFORBIDDEN:    fiber.StatusForbidden,
	app.ETOOLARGE:     fiber.StatusRequestEntityTooLarge,
	app.ETOOMANY:      fiber.StatusTooManyRequests,
	app.EUNAVAILABLE:  fiber.StatusServiceUnavailable,
	app.EINTERNAL:     fiber.StatusInternalServerError,
}

// codeOfStatus names fiber's own errors (unknown route, wrong method, body
// too large) in the app vocabulary.
func codeOfStatus(status int) string {
	switch {
	case status == fiber.StatusNotFound:
		return app.ENOTFOUND
	case status == fiber.StatusUnauthorized:
		return app.EUNAUTHORIZED
	case status == fiber.StatusForbidden:
		return app.EFORBIDDEN
	case status == fiber.StatusRequestEntityTooLarge:
		return app.ETOOLARGE
	case status == fiber.StatusConflict:
		return app.ECONFLICT
	case status == fiber.StatusBadRequest:
		return app.EMALFORMED
	case status < 500:
		return app.EINVALID
	default:
		return app.EINTERNAL
	}
}

// apiError is the JSON body of every API error.
type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// Details lists every problem of an input that has several (the first
	// is the error itself), so a caller sees them all in one answer.
	Details []apiErrorDetail `json:"details,omitempty"`
}

// apiErrorDetail is one problem of an input.
type apiErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// errorDetails renders the problems an error lists; an error about input
// that lists none is its own one problem, so callers can always read
// details of a 400, 413 or 422.
func errorDetails(status int, body apiErrorBody, err error) []apiErrorDetail {
	ds := app.ErrorDetails(err)
	if len(ds) == 0 {
		switch status {
		case fiber.StatusBadRequest, fiber.StatusRequestEntityTooLarge, fiber.StatusUnprocessableEntity:
			return []apiErrorDetail{{Code: body.Code, Message: body.Message, Field: body.Field}}
		}
		return nil
	}
	out := make([]apiErrorDetail, len(ds))
	for i, d := range ds {
		out[i] = apiErrorDetail{Code: app.ErrorReason(d), Message: d.Message, Field: d.Field}
	}
	return out
}

// handleError is fiber's error handler: every error a handler returns ends
// here. Internal errors are logged with the request id and shown only as a
// generic message; JSON for /api and webhooks, an HTML page for the console.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	code, message, field := app.ErrorCode(err), app.ErrorMessage(err), app.ErrorField(err)
	status := statusOf[code]
	if reason := app.ErrorReason(err); reason != code {
		code = reason
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		status, code, message = fe.Code, codeOfStatus(fe.Code), fe.Message
		switch status {
		case fiber.StatusNotFound:
			message = "Not found."
		case fiber.StatusMethodNotAllowed:
			// Fiber has set Allow to the methods the path answers.
			code = "method_not_allowed"
			message = fmt.Sprintf("%s is not allowed on %s; allowed: %s.", c.Method(), c.Path(), c.GetRespHeader(fiber.HeaderAllow))
		case fiber.StatusUnsupportedMediaType:
			code = "unsupported_media_type"
		}
	}
	if wait := app.ErrorRetryAfter(err); wait > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	}
	switch {
	case status == fiber.StatusServiceUnavailable:
		// The database is away (a restart, a failover): the request may
		// simply be made again, and callers are told when.
		s.Log.WarnContext(c.UserContext(), "request failed: database unavailable", "path", loggedPath(c), "request_id", requestIDOf(c), "err", err)
		c.Set(fiber.HeaderRetryAfter, retryAfterUnavailable)
		if !wantsJSON(c) {
			message = "Herald cannot reach its database at the moment. Nothing was changed; please try again in a few seconds."
		}
	case status >= 500:
		s.Log.ErrorContext(c.UserContext(), "request failed", "path", loggedPath(c), "request_id", requestIDOf(c), "err", err)
		message = "Internal error."
	}

	if wantsJSON(c) {
		body := apiErrorBody{Code: code, Message: message, Field: field}
		if status < 500 {
			body.Details = errorDetails(status, body, err)
		}
		return c.Status(status).JSON(apiError{Error: body})
	}
	c.Status(status)
	c.Type("html", "utf-8")
	return views.ErrorPage(s.page(c, message), status, message, requestIDOf(c)).
		Render(c.UserContext(), c.Response().BodyWriter())
}

// retryAfterUnavailable is the Retry-After of a 503 while the database is
// away, in seconds: a restart takes a few.
const retryAfterUnavailable = "5"

// wantsJSON reports whether the request is for the API or a webhook, whose
// callers are programs.
func wantsJSON(c *fiber.Ctx) bool {
	p := c.Path()
	return strings.HasPrefix(p, "/api/") || p == "/api" || strings.HasPrefix(p, "/webhooks/") || keyOptionsPaths[p]
}
