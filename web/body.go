package web

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/heraldhq/herald/app"
)

// Body limits are decided per route from the request's headers, before
// fasthttp reads the body (fasthttp.Server.HeaderReceived): uploads may
// send UploadBodyLimit, everything else (the API, the console, provider
// webhooks) BodyLimit. fasthttp refuses a body announced larger with 413
// at once, before a byte of it is read, and reads a chunked body only up
// to the limit. Streaming bodies (fiber's StreamRequestBody) would not do:
// fasthttp then waits for the first 8 KiB of any body before a handler
// runs, and hands a body past the server's limit to the handler instead
// of refusing it, so every route would have to bound its own reads.

// UploadBodyLimit caps an upload's body: the largest file
// (app.MaxUploadBytes) and a form's other fields.
const UploadBodyLimit = app.MaxUploadBytes + 64<<10

// localUpload marks a request that posts an upload's file.
const localUpload = "upload"

// limitBodies gives the server its per-route body limits.
func limitBodies(a *fiber.App) {
	a.Server().HeaderReceived = func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		// Always an explicit limit: fasthttp keeps the last one given on
		// the connection otherwise.
		limit := BodyLimit
		if isUploadPath(string(h.Method()), string(h.RequestURI())) {
			limit = UploadBodyLimit
		}
		return fasthttp.RequestConfig{MaxRequestBodySize: limit}
	}
}

// markUpload marks an upload's request, whose body is a CSV file or a
// form holding one: the middleware that reads bodies as JSON leaves it,
// and a refused upload's rejection keeps no passenger list.
func (s *Server) markUpload(c *fiber.Ctx) error {
	if isUploadPath(c.Method(), c.OriginalURL()) {
		c.Locals(localUpload, true)
	}
	return c.Next()
}

// isUploadPath reports whether a request posts an upload's file: to the
// API, or from the console's upload form. Any other spelling of the path
// gets the ordinary limit.
func isUploadPath(method, uri string) bool {
	if method != fiber.MethodPost {
		return false
	}
	p, _, _ := strings.Cut(uri, "?")
	p = strings.TrimSuffix(p, "/")
	if p == "/api/v1/uploads" {
		return true
	}
	parts := strings.Split(p, "/")
	return len(parts) == 4 && parts[0] == "" && parts[1] == "t" && parts[2] != "" && parts[3] == "uploads"
}

// isUpload reports whether the request posts an upload (markUpload).
func isUpload(c *fiber.Ctx) bool {
	v, _ := c.Locals(localUpload).(bool)
	return v
}
