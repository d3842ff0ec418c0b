package web

import (
	"fmt"
	"io"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
)

// Request bodies are streamed (fiber's StreamRequestBody): fasthttp reads
// the first few kilobytes with the headers and leaves the rest on the
// connection, so that each route decides how much it reads. limitBody
// does that for every route before anything reads a body: BodyLimit for
// all of them but the uploads, whose CSV is parsed from the stream by its
// handler, up to UploadBodyLimit.

// UploadBodyLimit caps an upload's body: the largest file
// (app.MaxUploadBytes) and a form's other fields.
const UploadBodyLimit = app.MaxUploadBytes + 64<<10

// localStreamedBody marks a request whose body its handler streams:
// nothing before it reads the body.
const localStreamedBody = "streamed_body"

// limitBody refuses a body over its route's limit with 413, by its
// Content-Length at once, before a byte of it is read; a chunked body is
// read up to the limit and one byte more. A body within BodyLimit is then
// held in memory as before, for the middleware and handlers that read it.
// An upload's body is left to its handler (see uploadBody). A connection
// whose body was not read to its end is closed after the answer: its
// unread rest would otherwise be taken for the next request.
func (s *Server) limitBody(c *fiber.Ctx) error {
	streamed := isUploadRoute(c)
	limit := BodyLimit
	if streamed {
		limit = UploadBodyLimit
	}
	if n := c.Request().Header.ContentLength(); n > limit {
		c.Context().SetConnectionClose()
		return bodyTooLarge(limit)
	}
	if streamed {
		c.Locals(localStreamedBody, true)
		c.Context().SetConnectionClose()
		return c.Next()
	}
	stream := c.Context().RequestBodyStream()
	if stream == nil {
		return c.Next()
	}
	body, err := io.ReadAll(io.LimitReader(stream, int64(limit)+1))
	if err != nil {
		c.Context().SetConnectionClose()
		return &app.Error{Code: app.EMALFORMED, Reason: "unreadable_body", Message: "The request body could not be read to its end."}
	}
	if len(body) > limit {
		c.Context().SetConnectionClose()
		return bodyTooLarge(limit)
	}
	c.Request().SetBody(body)
	return c.Next()
}

// bodyTooLarge is the answer to a body over limit bytes.
func bodyTooLarge(limit int) error {
	return app.Errorf(app.ETOOLARGE, "The request body is larger than this address takes (%d bytes).", limit)
}

// isUploadRoute reports whether the request posts an upload's file: to
// the API, or from the console's upload form.
func isUploadRoute(c *fiber.Ctx) bool {
	if c.Method() != fiber.MethodPost {
		return false
	}
	p := strings.TrimSuffix(c.Path(), "/")
	if p == "/api/v1/uploads" {
		return true
	}
	parts := strings.Split(p, "/")
	return len(parts) == 4 && parts[1] == "t" && parts[3] == "uploads"
}

// streamedBody reports whether the request's body is its handler's to
// stream, which no middleware may read.
func streamedBody(c *fiber.Ctx) bool {
	v, _ := c.Locals(localStreamedBody).(bool)
	return v
}

// uploadBody is an upload's body as its handler reads it: at most
// UploadBodyLimit bytes, and an error past them.
func uploadBody(c *fiber.Ctx) io.Reader {
	stream := c.Context().RequestBodyStream()
	if stream == nil {
		return strings.NewReader("")
	}
	return &limitedBody{r: io.LimitReader(stream, UploadBodyLimit+1)}
}

// limitedBody reads a body and fails once it passes UploadBodyLimit.
type limitedBody struct {
	r io.Reader
	n int
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.n += n; b.n > UploadBodyLimit {
		return n, &app.Error{Code: app.ETOOLARGE, Reason: "payload_too_large",
			Message: fmt.Sprintf("The upload is larger than %d bytes (16 MiB); split the list into several files.", UploadBodyLimit)}
	}
	return n, err
}
