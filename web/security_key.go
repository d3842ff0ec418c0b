package web

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// Security keys: /static/security-key.js asks the options routes for a
// challenge (JSON), hands it to navigator.credentials, and posts the
// browser's answer in an ordinary form, so that errors and recovery codes
// come back as pages like every other form's.

// keyOptionsPaths answer JSON, errors included: the page's script reads
// them.
var keyOptionsPaths = map[string]bool{
	"/account/two-factor/keys/options": true,
	"/login/two-factor/key/options":    true,
}

// handleSecurityKeyOptions starts adding a security key: the challenge is
// bound to this session.
func (s *Server) handleSecurityKeyOptions(c *fiber.Ctx) error {
	creation, err := s.TwoFactor.BeginKeyRegistration(c.UserContext(), userOf(c), sessionID(c))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(creation)
}

// sessionID is the id of the signed-in session (its jti), which
// renewals keep.
func sessionID(c *fiber.Ctx) string {
	if claims, ok := c.Locals(localClaims).(*sessionClaims); ok {
		return claims.ID
	}
	return ""
}

// handleSecurityKeyAdd adds the key whose answer the form carries, and
// shows the recovery codes when it is the user's first second factor.
func (s *Server) handleSecurityKeyAdd(c *fiber.Ctx) error {
	key, codes, err := s.TwoFactor.FinishKeyRegistration(c.UserContext(), userOf(c), sessionID(c), c.FormValue("name"), []byte(c.FormValue("credential")))
	switch {
	case errors.Is(err, console.ErrCeremonyEnded):
		c.Status(fiber.StatusConflict)
		return s.renderTwoFactor(c, views.FormErrors{"credential": app.ErrorMessage(err)})
	case err != nil:
		return s.formFailure(c, err, func(errs views.FormErrors) error { return s.renderTwoFactor(c, errs) })
	}
	if len(codes) > 0 {
		c.Set(fiber.HeaderCacheControl, "no-store")
		return s.render(c, views.TwoFactorPage(s.page(c, "Two-factor sign-in"), views.TwoFactorView{Keys: []*console.SecurityKey{key}, RecoveryCodes: codes}))
	}
	s.flash(c, "success", "Security key “"+key.Name+"” added.")
	return c.Redirect("/account/two-factor", fiber.StatusSeeOther)
}

// handleSecurityKeyRemove removes one of the user's keys once they prove
// it is them.
func (s *Server) handleSecurityKeyRemove(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	key, err := s.Sessions.RemoveSecurityKey(c.UserContext(), userOf(c), c.IP(), c.FormValue("proof"), id)
	if err != nil {
		return s.proofFailure(c, err, "key_proof")
	}
	s.flash(c, "success", "Security key “"+key.Name+"” removed.")
	return c.Redirect("/account/two-factor", fiber.StatusSeeOther)
}

// handleRecoveryCodesRenew replaces the user's recovery codes and shows
// the new ones, in the answer to this POST only.
func (s *Server) handleRecoveryCodesRenew(c *fiber.Ctx) error {
	codes, err := s.Sessions.NewRecoveryCodes(c.UserContext(), userOf(c), c.IP(), c.FormValue("proof"))
	if err != nil {
		return s.proofFailure(c, err, "renew_proof")
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return s.render(c, views.TwoFactorPage(s.page(c, "Two-factor sign-in"), views.TwoFactorView{RecoveryCodes: codes}))
}

// proofFailure shows the two-factor page again with a refused proof under
// the form field it came from.
func (s *Server) proofFailure(c *fiber.Ctx, err error, field string) error {
	if app.ErrorCode(err) == app.ETOOMANY {
		setRetryAfter(c, console.RetryAfter(err))
		c.Status(fiber.StatusTooManyRequests)
		return s.renderTwoFactor(c, views.FormErrorsOf(err))
	}
	return s.formFailure(c, err, func(errs views.FormErrors) error {
		if msg, ok := errs["proof"]; ok {
			delete(errs, "proof")
			errs[field] = msg
		}
		return s.renderTwoFactor(c, errs)
	})
}

// handleLoginKeyOptions starts the second step of a sign-in with a
// security key: the challenge is bound to the sign-in's second-step
// cookie.
func (s *Server) handleLoginKeyOptions(c *fiber.Ctx) error {
	if !s.checkLoginCSRF(c) {
		return app.Errorf(app.EFORBIDDEN, "The sign-in form expired. Please start again (your browser must accept cookies).")
	}
	claims, id, err := s.parseSecondStep(c.Cookies(cookieSecondStep))
	if err != nil {
		return console.ErrChoiceEnded
	}
	assertion, err := s.Sessions.BeginKeyStep(c.UserContext(), id, claims.Version, claims.ID)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(assertion)
}

// handleLoginKey checks the security key's answer of the sign-in's second
// step and starts the session.
func (s *Server) handleLoginKey(c *fiber.Ctx) error {
	if !s.checkLoginCSRF(c) {
		return s.secondStepFailure(c, fiber.StatusForbidden, "The sign-in form expired. Please try again (your browser must accept cookies).")
	}
	claims, id, err := s.parseSecondStep(c.Cookies(cookieSecondStep))
	if err != nil {
		return s.secondStepEnded(c)
	}
	u, err := s.Sessions.KeyStep(c.UserContext(), id, claims.Version, claims.ID, []byte(c.FormValue("credential")), c.IP())
	return s.secondStepDone(c, claims, u, err)
}
