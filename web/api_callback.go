package web

import (
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// callbackEndpointWithSecret is an endpoint as created or rotated: the only
// answers that carry its signing secret.
type callbackEndpointWithSecret struct {
	*app.CallbackEndpoint
	Secret string `json:"secret"`
}

// handleAPICallbackList lists the tenant's callback endpoints.
func (s *Server) handleAPICallbackList(c *fiber.Ctx) error {
	es, err := s.Callbacks.List(c.UserContext(), apiKeyOf(c).TenantID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"callback_endpoints": es})
}

// handleAPICallbackCreate creates an endpoint, {"url", "description",
// "event_types", "enabled"}, and answers it with its secret, once.
func (s *Server) handleAPICallbackCreate(c *fiber.Ctx) error {
	var in app.CallbackEndpointInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	e, secret, err := s.Callbacks.Create(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, in)
	if err != nil {
		return err
	}
	c.Location("/api/v1/callback-endpoints/" + e.ID.String())
	return c.Status(fiber.StatusCreated).JSON(callbackEndpointWithSecret{e, secret})
}

// handleAPICallbackGet returns one endpoint.
func (s *Server) handleAPICallbackGet(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	e, err := s.Callbacks.Get(c.UserContext(), apiKeyOf(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.JSON(e)
}

// handleAPICallbackUpdate changes the fields the body names.
func (s *Server) handleAPICallbackUpdate(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var in app.CallbackEndpointUpdate
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	e, err := s.Callbacks.Update(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, id, in)
	if err != nil {
		return err
	}
	return c.JSON(e)
}

// handleAPICallbackDelete deletes an endpoint and its delivery log.
func (s *Server) handleAPICallbackDelete(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	if err := s.Callbacks.Delete(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// handleAPICallbackRotate gives the endpoint a new secret, answered once;
// the old one keeps signing for the grace period.
func (s *Server) handleAPICallbackRotate(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	e, secret, err := s.Callbacks.RotateSecret(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.JSON(callbackEndpointWithSecret{e, secret})
}

// handleAPICallbackTest posts a callback.test event to the endpoint.
func (s *Server) handleAPICallbackTest(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	d, err := s.Callbacks.SendTest(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(d)
}

// handleAPICallbackDeliveries lists the endpoint's latest deliveries.
func (s *Server) handleAPICallbackDeliveries(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	_, ds, err := s.Callbacks.Deliveries(c.UserContext(), apiKeyOf(c).TenantID, id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"deliveries": ds})
}

// handleAPICallbackReplay posts a finished delivery again, same payload and
// webhook-id.
func (s *Server) handleAPICallbackReplay(c *fiber.Ctx) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	deliveryID, err := uuid.Parse(c.Params("delivery"))
	if err != nil {
		return app.Errorf(app.ENOTFOUND, "Not found.")
	}
	d, err := s.Callbacks.Replay(c.UserContext(), apiActor(c), apiKeyOf(c).TenantID, id, deliveryID)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(d)
}
