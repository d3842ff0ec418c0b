package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
)

// refuseNUL answers 400 invalid_text for an API request with a NUL
// character in a query parameter or anywhere in its JSON body, before any
// handler runs: Postgres cannot store NUL, so without this check such input
// would end as a 500 deep in a statement.
func (s *Server) refuseNUL(c *fiber.Ctx) error {
	var err error
	c.Request().URI().QueryArgs().VisitAll(func(k, v []byte) {
		if err == nil {
			if err = app.CheckText(string(k), string(k)); err == nil {
				err = app.CheckText(string(k), string(v))
			}
		}
	})
	if err != nil {
		return err
	}
	if body := c.Body(); len(body) > 0 {
		if err := app.CheckJSONText(body); err != nil {
			return err
		}
	}
	return c.Next()
}

// refuseDeepBody answers 400 body_too_deep for a request whose body nests
// deeper than app.MaxJSONDepth, before anything else reads the body: ahead
// of the API key, so that a request without one costs no more than the
// scan, and ahead of the webhooks' signature checks and parsers.
func (s *Server) refuseDeepBody(c *fiber.Ctx) error {
	if err := app.CheckJSONDepth(c.Body()); err != nil {
		return err
	}
	return c.Next()
}
