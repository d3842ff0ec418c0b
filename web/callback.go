package web

import (
	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/views"
)

// callbackList renders the tenant's callback endpoints with the create form.
func (s *Server) callbackList(c *fiber.Ctx, form app.CallbackEndpointInput, errs views.FormErrors) error {
	es, err := s.CallbackConsole.List(c.UserContext(), userOf(c), tenantOf(c).ID)
	if err != nil {
		return err
	}
	return s.render(c, views.CallbacksPage(s.page(c, "Callbacks"), views.CallbackList{Endpoints: es, Form: form, Errs: errs}))
}

// handleCallbacks lists the tenant's callback endpoints.
func (s *Server) handleCallbacks(c *fiber.Ctx) error {
	return s.callbackList(c, app.CallbackEndpointInput{EventTypes: app.CallbackEventTypes}, nil)
}

// handleCallbackCreate makes an endpoint and shows its secret in this answer
// only: no redirect, no flash cookie, not cacheable.
func (s *Server) handleCallbackCreate(c *fiber.Ctx) error {
	in := app.CallbackEndpointInput{URL: c.FormValue("url"), Description: c.FormValue("description"), EventTypes: []string{}}
	for _, t := range c.Request().PostArgs().PeekMulti("event_types") {
		in.EventTypes = append(in.EventTypes, string(t))
	}
	e, secret, err := s.CallbackConsole.Create(c.UserContext(), userOf(c), tenantOf(c).ID, in)
	if err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error { return s.callbackList(c, in, errs) })
	}
	c.Set("Pragma", "no-cache")
	return s.render(c, views.CallbackSecretPage(s.page(c, "Callback endpoint created"), views.CallbackSecret{Endpoint: e, Secret: secret}))
}

// handleCallbackShow shows an endpoint with its delivery log.
func (s *Server) handleCallbackShow(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	e, ds, err := s.CallbackConsole.Deliveries(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	return s.render(c, views.CallbackEndpointPage(s.page(c, "Callback endpoint"), views.CallbackDetail{Endpoint: e, Deliveries: ds}))
}

// handleCallbackEnable and handleCallbackDisable switch an endpoint on and
// off.
func (s *Server) handleCallbackEnable(c *fiber.Ctx) error  { return s.callbackSetEnabled(c, true) }
func (s *Server) handleCallbackDisable(c *fiber.Ctx) error { return s.callbackSetEnabled(c, false) }

func (s *Server) callbackSetEnabled(c *fiber.Ctx, enabled bool) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if _, err := s.CallbackConsole.SetEnabled(c.UserContext(), userOf(c), tenantOf(c).ID, id, enabled); err != nil {
		return err
	}
	msg := "The endpoint is disabled: nothing is posted to it until it is enabled."
	if enabled {
		msg = "The endpoint is enabled: it receives status changes from now on."
	}
	s.flash(c, "success", msg)
	return c.Redirect(tenantPath(c, "/settings/callbacks/"+id.String()), fiber.StatusSeeOther)
}

// handleCallbackRotate makes a new secret and shows it in this answer only.
func (s *Server) handleCallbackRotate(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	e, secret, err := s.CallbackConsole.RotateSecret(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	c.Set("Pragma", "no-cache")
	return s.render(c, views.CallbackSecretPage(s.page(c, "Signing secret rotated"), views.CallbackSecret{Endpoint: e, Secret: secret, Rotated: true}))
}

// handleCallbackTest posts a callback.test event to the endpoint.
func (s *Server) handleCallbackTest(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if _, err := s.CallbackConsole.SendTest(c.UserContext(), userOf(c), tenantOf(c).ID, id); err != nil {
		return s.flashFailure(c, err, "/settings/callbacks/"+id.String())
	}
	s.flash(c, "success", "Test event queued: its delivery is at the top of the log.")
	return c.Redirect(tenantPath(c, "/settings/callbacks/"+id.String()), fiber.StatusSeeOther)
}

// handleCallbackDelete deletes an endpoint with its delivery log.
func (s *Server) handleCallbackDelete(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if err := s.CallbackConsole.Delete(c.UserContext(), userOf(c), tenantOf(c).ID, id); err != nil {
		return err
	}
	s.flash(c, "success", "The endpoint is deleted.")
	return c.Redirect(tenantPath(c, "/settings/callbacks"), fiber.StatusSeeOther)
}

// handleCallbackReplay posts a finished delivery again.
func (s *Server) handleCallbackReplay(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	deliveryID, err := idParam(c, "delivery")
	if err != nil {
		return err
	}
	back := "/settings/callbacks/" + id.String()
	d, err := s.CallbackConsole.Replay(c.UserContext(), userOf(c), tenantOf(c).ID, id, deliveryID)
	if err != nil {
		return s.flashFailure(c, err, back)
	}
	s.flash(c, "success", "Replay of the "+d.EventType+" delivery queued, with the same webhook-id.")
	return c.Redirect(tenantPath(c, back), fiber.StatusSeeOther)
}

// flashFailure shows a refused action (a conflict) on the page it came
// from; other errors go to the error handler.
func (s *Server) flashFailure(c *fiber.Ctx, err error, back string) error {
	if app.ErrorCode(err) != app.ECONFLICT {
		return err
	}
	s.flash(c, "error", app.ErrorMessage(err))
	return c.Redirect(tenantPath(c, back), fiber.StatusSeeOther)
}
