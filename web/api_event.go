package web

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
)

// eventVariableJSON is one variable as the registry shows it: its type,
// and the format that type accepts in words.
type eventVariableJSON struct {
	Name   string           `json:"name"`
	Type   app.VariableType `json:"type"`
	Format string           `json:"format"`
	Values []string         `json:"values,omitempty"`
}

// eventJSON is the registry entry as the API shows it.
type eventJSON struct {
	Name             string        `json:"trigger_event"`
	Description      string        `json:"description"`
	Channels         []app.Channel `json:"channels"`
	FallbackChain    []app.Channel `json:"fallback_chain,omitempty"`
	Variables        []string      `json:"variables"`
	RequiresApproval bool          `json:"requires_approval"`
	OncePerEntity    bool          `json:"once_per_entity"`
	// Category is transactional (always sent) or optional (opt-outs honoured).
	Category app.EventCategory `json:"category"`
	// VariableTypes are the variables with their types, in Variables' order.
	VariableTypes []eventVariableJSON `json:"variable_types"`
	Urgent        bool                `json:"urgent"`
	Supersedes    []string            `json:"supersedes,omitempty"`
	// Builtin: Herald's own event, read-only; else the tenant's, at Version.
	Builtin       bool           `json:"builtin"`
	Version       int            `json:"version,omitempty"`
	SampleContext map[string]any `json:"sample_context"`
}

func eventJSONOf(e *app.EventDef) eventJSON {
	out := eventJSON{Name: e.Name, Description: e.Description, Channels: e.Channels, FallbackChain: e.Fallback, Variables: e.Variables,
		RequiresApproval: e.RequiresApproval, OncePerEntity: e.OncePerEntity, Category: e.Category, SampleContext: e.Sample,
		Urgent: e.Urgent, Supersedes: e.Supersedes, Builtin: !e.Tenant, Version: e.Version, VariableTypes: []eventVariableJSON{}}
	for _, v := range e.Types {
		out.VariableTypes = append(out.VariableTypes, eventVariableJSON{Name: v.Name, Type: v.Type, Format: v.Format(), Values: v.Values})
	}
	return out
}

// handleAPIEvents lists the tenant's trigger-event registry: the built-in
// events and its own.
func (s *Server) handleAPIEvents(c *fiber.Ctx) error {
	events, err := s.Events.Events(c.UserContext(), apiKeyOf(c).TenantID)
	if err != nil {
		return err
	}
	out := make([]eventJSON, len(events))
	for i := range events {
		out[i] = eventJSONOf(&events[i])
	}
	return c.JSON(fiber.Map{"events": out})
}

// handleAPIEventGet shows one event of the tenant's registry.
func (s *Server) handleAPIEventGet(c *fiber.Ctx) error {
	def, err := s.Events.Lookup(c.UserContext(), apiKeyOf(c).TenantID, c.Params("name"))
	if err != nil {
		return err
	}
	return c.JSON(eventJSONOf(def))
}

// handleAPIEventCreate defines an event of the tenant's own.
func (s *Server) handleAPIEventCreate(c *fiber.Ctx) error {
	var in app.TenantEventInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	te, err := s.Events.Create(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, in)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(te)
}

// handleAPIEventUpdate changes one of the tenant's events: its next
// version. The name in the path is the event's; the body's, if any, must
// be the same.
func (s *Server) handleAPIEventUpdate(c *fiber.Ctx) error {
	var in app.TenantEventInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	name := c.Params("name")
	if in.Name != "" && in.Name != name {
		return app.Invalid("name_mismatch", "trigger_event", "An event keeps its name; the body names %s, the path %s.", in.Name, name)
	}
	te, err := s.Events.Update(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, name, in)
	if err != nil {
		return err
	}
	return c.JSON(te)
}

// handleAPIEventDelete removes one of the tenant's events.
func (s *Server) handleAPIEventDelete(c *fiber.Ctx) error {
	if err := s.Events.Delete(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, c.Params("name")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// handleAPIEventVersions lists every version of one of the tenant's
// events, newest first.
func (s *Server) handleAPIEventVersions(c *fiber.Ctx) error {
	vs, err := s.Events.Versions(c.UserContext(), apiKeyOf(c).TenantID, c.Params("name"))
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"versions": vs})
}

// handleAPIEventVersion shows one version of one of the tenant's events.
func (s *Server) handleAPIEventVersion(c *fiber.Ctx) error {
	n, err := strconv.Atoi(c.Params("version"))
	if err != nil || n < 1 {
		return app.Invalid("invalid_version", "version", "version is a whole number from 1.")
	}
	v, err := s.Events.Version(c.UserContext(), apiKeyOf(c).TenantID, c.Params("name"), n)
	if err != nil {
		return err
	}
	return c.JSON(v)
}
