package web

import (
	"io/fs"
	"mime"
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/static"
)

// handleStatic serves the embedded static files. They change only with a new
// binary, so browsers may keep them for a day and revalidate by ETag.
func (s *Server) handleStatic(c *fiber.Ctx) error {
	name := strings.TrimPrefix(path.Clean("/"+c.Params("*")), "/")
	b, err := fs.ReadFile(static.FS, name)
	if err != nil || name == "" || strings.HasSuffix(name, ".go") {
		return fiber.ErrNotFound
	}
	etag := `"` + s.Version + "-" + name + `"`
	c.Set(fiber.HeaderETag, etag)
	c.Set(fiber.HeaderCacheControl, "public, max-age=86400")
	if c.Get(fiber.HeaderIfNoneMatch) == etag {
		return c.SendStatus(fiber.StatusNotModified)
	}
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		c.Set(fiber.HeaderContentType, ct)
	}
	return c.Send(b)
}
