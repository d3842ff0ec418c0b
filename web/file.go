package web

import (
	"mime"

	"github.com/gofiber/fiber/v2"
)

// handleFile serves a message's file behind its signed short link (an
// SMS's ticket, the document WhatsApp fetches), without a login. Every
// link that serves nothing (forged, altered, expired, of a file retention
// deleted) is the same 404. The bytes go with the content type that was
// checked against them at intake or fetch, never sniffed again by the
// browser (nosniff), and under a policy that runs nothing they contain.
func (s *Server) handleFile(c *fiber.Ctx) error {
	f, err := s.Files.Open(c.UserContext(), c.Params("token"))
	if err != nil {
		return err
	}
	// A PDF or an image opens in the browser; a calendar entry or a
	// wallet pass is handed to the app that imports it.
	disposition := "attachment"
	switch f.ContentType {
	case "application/pdf", "image/jpeg", "image/png", "image/gif", "image/webp":
		disposition = "inline"
	}
	c.Set(fiber.HeaderContentType, f.ContentType)
	if d := mime.FormatMediaType(disposition, map[string]string{"filename": f.Filename}); d != "" {
		disposition = d
	}
	c.Set(fiber.HeaderContentDisposition, disposition)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; sandbox")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	// The link is the key: no shared cache keeps a copy.
	c.Set(fiber.HeaderCacheControl, "private, max-age=3600")
	return c.Send(f.Content)
}
