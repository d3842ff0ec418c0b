package web

import (
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
)

// Postgres cannot store a NUL character in text, so input with one would
// end as a 500 deep in a statement. The API and the console refuse it
// before any handler runs; both read the query the same way.

// refuseNUL answers 400 invalid_text for an API request with a NUL
// character in a query parameter or anywhere in its JSON body.
func (s *Server) refuseNUL(c *fiber.Ctx) error {
	if err := queryText(c); err != nil {
		return err
	}
	// An upload's CSV is not JSON; its reader refuses NUL in any row.
	if isUpload(c) {
		return c.Next()
	}
	if body := c.Body(); len(body) > 0 {
		if err := app.CheckJSONText(body); err != nil {
			return err
		}
	}
	return c.Next()
}

// refuseConsoleNUL answers the console's 400 page for a request with a NUL
// character in its path (%00 in an id), a query parameter (a filter) or a
// form field, naming where it was: no id, filter or form of the console
// takes one.
func (s *Server) refuseConsoleNUL(c *fiber.Ctx) error {
	if err := pathText(c); err != nil {
		return err
	}
	if err := queryText(c); err != nil {
		return err
	}
	if err := formText(c); err != nil {
		return err
	}
	return c.Next()
}

// queryText refuses a NUL character in a query parameter's name or value
// (fasthttp has decoded %00 by then).
func queryText(c *fiber.Ctx) error {
	return argsText(c.Request().URI().QueryArgs().VisitAll)
}

// formText refuses a NUL character in a URL-encoded or multipart form.
func formText(c *fiber.Ctx) error {
	if err := argsText(c.Request().PostArgs().VisitAll); err != nil {
		return err
	}
	if !strings.HasPrefix(c.Get(fiber.HeaderContentType), fiber.MIMEMultipartForm) {
		return nil
	}
	form, err := c.MultipartForm()
	if err != nil {
		return nil
	}
	for k, vs := range form.Value {
		for _, v := range append([]string{k}, vs...) {
			if err := app.CheckText(k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func argsText(visitAll func(func(k, v []byte))) error {
	var err error
	visitAll(func(k, v []byte) {
		if err == nil {
			if err = app.CheckText(string(k), string(k)); err == nil {
				err = app.CheckText(string(k), string(v))
			}
		}
	})
	return err
}

// pathText refuses a NUL character in the path, raw or as %00: handlers
// unescape some parameters (a booking's reference, a trip's id).
func pathText(c *fiber.Ctx) error {
	p := c.Path()
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	if strings.IndexByte(p, 0) >= 0 {
		return &app.Error{Code: app.EMALFORMED, Reason: "invalid_text", Field: "path",
			Message: "The address contains a NUL character (%00); no page or id has one."}
	}
	return nil
}

// refuseDeepBody answers 400 body_too_deep for a request whose body nests
// deeper than app.MaxJSONDepth, before anything else reads the body: ahead
// of the API key, so that a request without one costs no more than the
// scan, and ahead of the webhooks' signature checks and parsers.
func (s *Server) refuseDeepBody(c *fiber.Ctx) error {
	if isUpload(c) {
		// An upload's CSV is not JSON.
		return c.Next()
	}
	if err := app.CheckJSONDepth(c.Body()); err != nil {
		return err
	}
	return c.Next()
}

// refuseEncodedBody answers 415 for a request whose body is sent with a
// content coding (gzip, deflate, br). Fiber's Body decodes it on every
// call with no bound on what it grows to (a 1 MiB gzip of one repeated
// byte decodes to a gigabyte), which no other bound would see in time. No
// browser and no provider compresses what it posts to Herald. Every
// Content-Encoding header counts: Body decodes by the last one.
func (s *Server) refuseEncodedBody(c *fiber.Ctx) error {
	if len(c.Request().Body()) == 0 {
		return c.Next()
	}
	encoded := false
	c.Request().Header.VisitAll(func(k, v []byte) {
		if strings.EqualFold(string(k), fiber.HeaderContentEncoding) {
			for _, coding := range strings.Split(string(v), ",") {
				if coding = strings.TrimSpace(coding); coding != "" && !strings.EqualFold(coding, "identity") {
					encoded = true
				}
			}
		}
	})
	if !encoded {
		return c.Next()
	}
	c.Set(fiber.HeaderAcceptEncoding, "identity")
	return fiber.NewError(fiber.StatusUnsupportedMediaType, "Herald reads request bodies uncompressed: send this one without Content-Encoding.")
}
