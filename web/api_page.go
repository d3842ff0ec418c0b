package web

import (
	"errors"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// API list paging: ?limit= (1 to apiMaxLimit, apiDefaultLimit unless given)
// and ?offset=; answers say has_more and, when there is more, next_offset.
const (
	apiDefaultLimit = 50
	apiMaxLimit     = 200
	apiMaxOffset    = 100000
)

// apiPageOf reads a list's ?limit= and ?offset=. The request it returns
// asks the store for one row more than the limit, which console.Page trims
// and turns into has_more.
func apiPageOf(c *fiber.Ctx) (console.PageRequest, error) {
	limit, offset := apiDefaultLimit, 0
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > apiMaxLimit {
			return console.PageRequest{}, app.Invalid("invalid_limit", "limit", "limit must be a whole number from 1 to %d.", apiMaxLimit)
		}
		limit = n
	}
	if v := c.Query("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > apiMaxOffset {
			return console.PageRequest{}, app.Invalid("invalid_offset", "offset", "offset must be a whole number from 0 to %d.", apiMaxOffset)
		}
		offset = n
	}
	return console.PageRequest{Limit: limit + 1, Offset: offset}, nil
}

// apiCursorPageOf reads the ?limit= and ?cursor= of a list that pages by
// keyset (the cursor comes from the previous page's next_cursor). Like
// apiPageOf it asks for one row more than the limit.
func apiCursorPageOf(c *fiber.Ctx) (console.PageRequest, error) {
	if c.Query("offset") != "" {
		return console.PageRequest{}, app.Invalid("invalid_offset", "offset", "This list pages by cursor: pass the previous answer's page.next_cursor as cursor.")
	}
	req, err := apiPageOf(c)
	if err != nil {
		return req, err
	}
	if v := c.Query("cursor"); v != "" {
		cur, err := console.ParseCursor("cursor", v)
		if err != nil || cur.Before {
			return console.PageRequest{}, app.Invalid("invalid_cursor", "cursor", "cursor is not a next_cursor this list handed out; start again without it.")
		}
		req.Cursor = cur
	}
	return req, nil
}

// apiPage is the paging part of a list answer.
type apiPage struct {
	HasMore    bool    `json:"has_more"`
	NextOffset *int    `json:"next_offset,omitempty"`
	NextCursor *string `json:"next_cursor,omitempty"`
}

// messagePageInfo says whether more messages follow the shown ones and,
// when they do, the cursor of the next page.
func messagePageInfo(ms []*app.Message, more bool) apiPage {
	p := apiPage{HasMore: more}
	if more && len(ms) > 0 {
		last := ms[len(ms)-1]
		next := console.After(last.CreatedAt, last.ID).String()
		p.NextCursor = &next
	}
	return p
}

// pageInfo says whether more rows follow the shown ones.
func pageInfo(req console.PageRequest, shown int, more bool) apiPage {
	p := apiPage{HasMore: more}
	if more {
		next := req.Offset + shown
		p.NextOffset = &next
	}
	return p
}

// apiFields renames the fields an error (and each of its details) names,
// from the console's form names to the API's JSON names (rename returns
// the API's name of a form field), so that field always names what the
// caller sent.
func apiFields(err error, rename func(field string) string) error {
	var e *app.Error
	if !errors.As(err, &e) {
		return err
	}
	return renameFields(e, rename)
}

func renameFields(e *app.Error, rename func(string) string) *app.Error {
	one := func(x *app.Error) *app.Error {
		cp := *x
		if cp.Field != "" {
			cp.Field = rename(cp.Field)
		}
		return &cp
	}
	out := one(e)
	if len(e.Details) > 0 {
		out.Details = make([]*app.Error, len(e.Details))
		for i, d := range e.Details {
			out.Details[i] = one(d)
		}
	}
	return out
}
