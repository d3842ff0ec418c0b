package web

import (
	"net/url"
	"strconv"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// render writes a templ component as the HTML response.
func (s *Server) render(c *fiber.Ctx, comp templ.Component) error {
	c.Type("html", "utf-8")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return comp.Render(c.UserContext(), c.Response().BodyWriter())
}

// PerPage is how many rows a console list shows per page.
const PerPage = 25

// pageOf reads the list page (?page=, from 1) of a console request. Lists
// ask the store for one row more than they show, to learn whether another
// page follows (console.Page trims it).
func pageOf(c *fiber.Ctx) (int, console.PageRequest) {
	n, err := strconv.Atoi(c.Query("page"))
	if err != nil || n < 1 {
		n = 1
	}
	if n > 10000 {
		n = 10000
	}
	return n, console.PageRequest{Limit: PerPage + 1, Offset: (n - 1) * PerPage}
}

// pagerOf links the pages around page of the current list, keeping its
// filters.
func pagerOf(c *fiber.Ctx, page, shown int, more bool) views.Pager {
	link := func(n int) string {
		q, _ := url.ParseQuery(string(c.Request().URI().QueryString()))
		if n == 1 {
			q.Del("page")
		} else {
			q.Set("page", strconv.Itoa(n))
		}
		if enc := q.Encode(); enc != "" {
			return c.Path() + "?" + enc
		}
		return c.Path()
	}
	pg := views.Pager{Page: page, Shown: shown}
	if page > 1 {
		pg.PrevHref = link(page - 1)
	}
	if more {
		pg.NextHref = link(page + 1)
	}
	return pg
}
