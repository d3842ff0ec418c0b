package web

import (
	"cmp"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
)

// templateJSON is a template as the API shows it.
type templateJSON struct {
	ID               uuid.UUID                 `json:"id"`
	TriggerEvent     string                    `json:"trigger_event"`
	Channel          app.Channel               `json:"channel"`
	Locale           string                    `json:"locale"`
	Subject          string                    `json:"subject"`
	Body             string                    `json:"body"`
	BodyFormat       app.BodyFormat            `json:"body_format,omitempty"`
	WhatsAppTemplate *app.WhatsAppTemplateSpec `json:"whatsapp_template"`
	Version          int                       `json:"version"`
	Active           bool                      `json:"active"`
	CreatedAt        time.Time                 `json:"created_at"`
	UpdatedAt        time.Time                 `json:"updated_at"`
	// Warnings name the placeholders the event does not provide (they
	// render empty); only answers to a save carry them.
	Warnings []string `json:"warnings,omitempty"`
}

func templateOut(t *app.Template, warnings []string) (*templateJSON, error) {
	spec, err := t.Spec()
	if err != nil {
		return nil, err
	}
	return &templateJSON{
		ID: t.ID, TriggerEvent: t.TriggerEvent, Channel: t.Channel, Locale: t.Locale, Subject: t.Subject, Body: t.Body, BodyFormat: cmp.Or(t.BodyFormat, app.BodyHTML),
		WhatsAppTemplate: spec, Version: t.Version, Active: t.IsActive, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		Warnings: warnings,
	}, nil
}

// templateFieldNames maps the template services' field names to the API's.
func templateFieldNames(field string) string {
	if field == "event" {
		return "trigger_event"
	}
	return field
}

// templateFilterOfAPI reads the template list's filters. Unlike the
// console's, which drops what it does not know, the API refuses a filter it
// cannot apply: a typo must not silently list everything.
func (s *Server) templateFilterOfAPI(c *fiber.Ctx) (console.TemplateFilter, error) {
	var f console.TemplateFilter
	if v := strings.TrimSpace(c.Query("trigger_event")); v != "" {
		def, ok, err := s.Events.Known(c.UserContext(), apiKeyOf(c).TenantID, v)
		if err != nil {
			return f, err
		}
		if !ok {
			return f, app.Invalid("unknown_event", "trigger_event", "trigger_event %q is not a known event; GET /api/v1/events lists them.", v)
		}
		f.Event = def.Name
	}
	if v := strings.TrimSpace(c.Query("channel")); v != "" {
		ch, ok := app.ParseChannel(v)
		if !ok {
			return f, app.Invalid("unknown_channel", "channel", "%q is not a channel (WHATSAPP, EMAIL, SMS, WEBHOOK).", v)
		}
		f.Channel = ch
	}
	if v := strings.TrimSpace(c.Query("locale")); v != "" {
		loc, err := app.NormalizeLocale(v)
		if err != nil {
			return f, app.Invalid("invalid_locale", "locale", "%s", err.Error())
		}
		f.Locale = loc
	}
	switch v := c.Query("active"); v {
	case "":
	case "true", "false":
		active := v == "true"
		f.Active = &active
	default:
		return f, app.Invalid("invalid_active", "active", "active must be true or false.")
	}
	return f, nil
}

// handleAPITemplateList lists the tenant's templates, most recently updated
// first: ?trigger_event=, ?channel=, ?locale=, ?active=, ?limit=, ?offset=.
func (s *Server) handleAPITemplateList(c *fiber.Ctx) error {
	f, err := s.templateFilterOfAPI(c)
	if err != nil {
		return err
	}
	req, err := apiPageOf(c)
	if err != nil {
		return err
	}
	rows, more, err := s.Templates.List(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, f, req)
	if err != nil {
		return err
	}
	out := make([]*templateJSON, len(rows))
	for i, t := range rows {
		if out[i], err = templateOut(t, nil); err != nil {
			return err
		}
	}
	return c.JSON(fiber.Map{"templates": out, "page": pageInfo(req, len(rows), more)})
}

// handleAPITemplateGet returns one template.
func (s *Server) handleAPITemplateGet(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	t, err := s.Templates.Get(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, id)
	if err != nil {
		return err
	}
	out, err := templateOut(t, nil)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// templateCreateBody is what POST /api/v1/templates takes.
type templateCreateBody struct {
	TriggerEvent     string                    `json:"trigger_event"`
	Channel          string                    `json:"channel"`
	Locale           string                    `json:"locale"`
	Subject          string                    `json:"subject"`
	Body             string                    `json:"body"`
	BodyFormat       app.BodyFormat            `json:"body_format,omitempty"`
	WhatsAppTemplate *app.WhatsAppTemplateSpec `json:"whatsapp_template"`
}

// handleAPITemplateCreate creates a template at version 1, active, as the
// console's editor does: 201 with the template and its warnings.
func (s *Server) handleAPITemplateCreate(c *fiber.Ctx) error {
	var body templateCreateBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	t, warnings, err := s.Templates.Create(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, console.NewTemplateInput{
		Event: body.TriggerEvent, Channel: body.Channel, Locale: body.Locale,
		TemplateInput: app.TemplateInput{Subject: strings.TrimSpace(body.Subject), Body: body.Body, BodyFormat: body.BodyFormat, WhatsAppTemplate: body.WhatsAppTemplate},
	})
	if err != nil {
		return apiFields(err, templateFieldNames)
	}
	out, err := templateOut(t, warnings)
	if err != nil {
		return err
	}
	c.Location("/api/v1/templates/" + t.ID.String())
	return c.Status(fiber.StatusCreated).JSON(out)
}

// templateUpdateBody is what PUT /api/v1/templates/{id} takes: the whole
// content, and the version it was written from.
type templateUpdateBody struct {
	Subject          string                    `json:"subject"`
	Body             string                    `json:"body"`
	BodyFormat       app.BodyFormat            `json:"body_format,omitempty"`
	WhatsAppTemplate *app.WhatsAppTemplateSpec `json:"whatsapp_template"`
	// BaseVersion is the version the caller read; when the template was
	// saved since, nothing is stored (409), as in the console's editor.
	BaseVersion int `json:"base_version"`
}

// handleAPITemplateUpdate saves new content as the next version; the
// previous one stays in the history.
func (s *Server) handleAPITemplateUpdate(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var body templateUpdateBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if body.BaseVersion < 1 {
		return app.Invalid("missing_base_version", "base_version",
			"base_version is required: the version you read, so that a save never replaces changes you have not seen.")
	}
	in := app.TemplateInput{Subject: strings.TrimSpace(body.Subject), Body: body.Body, BodyFormat: body.BodyFormat, WhatsAppTemplate: body.WhatsAppTemplate}
	t, warnings, err := s.Templates.Edit(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, id, body.BaseVersion, in)
	if err != nil {
		return apiFields(err, templateFieldNames)
	}
	out, err := templateOut(t, warnings)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// templateVersionJSON is one version of a template's content.
type templateVersionJSON struct {
	Version          int                       `json:"version"`
	Subject          string                    `json:"subject"`
	Body             string                    `json:"body"`
	BodyFormat       app.BodyFormat            `json:"body_format,omitempty"`
	WhatsAppTemplate *app.WhatsAppTemplateSpec `json:"whatsapp_template"`
	Author           string                    `json:"author"`
	CreatedAt        time.Time                 `json:"created_at"`
	Current          bool                      `json:"current"`
}

// handleAPITemplateVersions lists a template's versions, the current one
// first.
func (s *Server) handleAPITemplateVersions(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	req, err := apiPageOf(c)
	if err != nil {
		return err
	}
	_, rows, more, err := s.Templates.History(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, id, req)
	if err != nil {
		return err
	}
	out := make([]templateVersionJSON, len(rows))
	for i, v := range rows {
		spec, err := v.Spec()
		if err != nil {
			return err
		}
		out[i] = templateVersionJSON{Version: v.Version, Subject: v.Subject, Body: v.Body, BodyFormat: cmp.Or(v.BodyFormat, app.BodyHTML), WhatsAppTemplate: spec,
			Author: v.Author(), CreatedAt: v.CreatedAt, Current: v.Current}
	}
	return c.JSON(fiber.Map{"versions": out, "page": pageInfo(req, len(rows), more)})
}

// handleAPITemplateRestore makes an earlier version's content current
// again, as a new version: {"base_version": the current version read}.
func (s *Server) handleAPITemplateRestore(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	version, err := strconv.Atoi(c.Params("version"))
	if err != nil || version < 1 {
		return app.Errorf(app.ENOTFOUND, "Not found.")
	}
	var body struct {
		BaseVersion int `json:"base_version"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if body.BaseVersion < 1 {
		return app.Invalid("missing_base_version", "base_version",
			"base_version is required: the current version you read, so that a restore never replaces changes you have not seen.")
	}
	t, err := s.Templates.Restore(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, id, version, body.BaseVersion)
	if err != nil {
		return err
	}
	out, err := templateOut(t, nil)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// handleAPITemplateActivate puts a template (back) into routing.
func (s *Server) handleAPITemplateActivate(c *fiber.Ctx) error {
	return s.setAPITemplateActive(c, true)
}

// handleAPITemplateDeactivate takes a template out of routing: routing
// falls back along the locale chain.
func (s *Server) handleAPITemplateDeactivate(c *fiber.Ctx) error {
	return s.setAPITemplateActive(c, false)
}

func (s *Server) setAPITemplateActive(c *fiber.Ctx, active bool) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	t, err := s.Templates.SetActive(c.UserContext(), apiKeyOf(c), apiKeyOf(c).TenantID, id, active)
	if err != nil {
		return err
	}
	out, err := templateOut(t, nil)
	if err != nil {
		return err
	}
	return c.JSON(out)
}
