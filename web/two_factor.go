package web

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	qrcode "github.com/skip2/go-qrcode"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// cookieSecondStep holds a sign-in whose password was right and whose
// second factor is still to come: signed, short-lived, and no session.
const cookieSecondStep = "herald_login_second"

// secondStepTTL is how long the second step of a sign-in may take.
const secondStepTTL = 5 * time.Minute

// secondStepIssuer sets second-step cookies apart from sessions and choice
// cookies: none passes for another.
const secondStepIssuer = "herald-login-second-step"

// secondStepClaims names the user whose password was right, at the session
// version it had then, which second factors they have, and where to go
// after signing in. Its id (jti) binds a security key's challenge to this
// sign-in.
type secondStepClaims struct {
	jwt.RegisteredClaims
	Version int    `json:"sv"`
	Next    string `json:"next,omitempty"`
	Keys    bool   `json:"keys,omitempty"`
	TOTP    bool   `json:"totp,omitempty"`
}

// toSecondStep sets the second-step cookie for u and asks for a security
// key or a code.
func (s *Server) toSecondStep(c *fiber.Ctx, u *app.User, next string) error {
	st, err := s.TwoFactor.StatusOf(c.UserContext(), u)
	if err != nil {
		return err
	}
	now := time.Now()
	claims := secondStepClaims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: secondStepIssuer, Subject: u.ID.String(), ID: rand.Text(),
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(secondStepTTL)),
	}, Version: u.SessionVersion, Next: next, Keys: len(st.Keys) > 0 && s.TwoFactor.KeysAvailable(), TOTP: st.Enrolled}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.Config.SessionKey)
	if err != nil {
		// HS256 over a byte key cannot fail.
		panic(err)
	}
	s.setCookie(c, cookieSecondStep, token, now.Add(secondStepTTL))
	return s.render(c, views.SecondStepPage(s.page(c, "Two-factor sign-in"),
		views.SecondStepForm{CSRF: s.loginCSRF(c), Next: next, Keys: claims.Keys, TOTP: claims.TOTP}))
}

// parseSecondStep returns the claims of a valid, unexpired second-step
// cookie.
func (s *Server) parseSecondStep(token string) (*secondStepClaims, uuid.UUID, error) {
	var claims secondStepClaims
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return s.Config.SessionKey, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(secondStepIssuer), jwt.WithExpirationRequired())
	if err != nil {
		return nil, uuid.Nil, err
	}
	id, err := uuid.Parse(claims.Subject)
	if err != nil {
		return nil, uuid.Nil, errors.New("second step naming no account")
	}
	return &claims, id, nil
}

// handleLoginSecondStep checks the code of the sign-in's second step and
// starts the session.
func (s *Server) handleLoginSecondStep(c *fiber.Ctx) error {
	if !s.checkLoginCSRF(c) {
		return s.secondStepFailure(c, fiber.StatusForbidden, "The sign-in form expired. Please try again (your browser must accept cookies).")
	}
	claims, id, err := s.parseSecondStep(c.Cookies(cookieSecondStep))
	if err != nil {
		return s.secondStepEnded(c)
	}
	u, err := s.Sessions.SecondStep(c.UserContext(), id, claims.Version, c.FormValue("code"), c.IP())
	return s.secondStepDone(c, claims, u, err)
}

// secondStepDone starts the session of a second step that passed, or says
// why it did not.
func (s *Server) secondStepDone(c *fiber.Ctx, claims *secondStepClaims, u *app.User, err error) error {
	switch {
	case err == nil:
		s.clearCookie(c, cookieSecondStep)
		return s.startSession(c, u, safeNext(claims.Next, ""))
	case errors.Is(err, console.ErrChoiceEnded):
		return s.secondStepEnded(c)
	case app.ErrorCode(err) == app.ETOOMANY:
		setRetryAfter(c, console.RetryAfter(err))
		return s.secondStepFailure(c, fiber.StatusTooManyRequests, app.ErrorMessage(err))
	case app.ErrorCode(err) == app.EUNAUTHORIZED:
		return s.secondStepFailure(c, fiber.StatusUnauthorized, app.ErrorMessage(err))
	}
	return err
}

// secondStepFailure shows the second step again with msg, offering what
// the second-step cookie says the user has.
func (s *Server) secondStepFailure(c *fiber.Ctx, status int, msg string) error {
	f := views.SecondStepForm{CSRF: s.loginCSRF(c), Next: safeNext(c.FormValue("next"), ""), Error: msg}
	if claims, _, err := s.parseSecondStep(c.Cookies(cookieSecondStep)); err == nil {
		f.Keys, f.TOTP = claims.Keys, claims.TOTP
	}
	c.Status(status)
	return s.render(c, views.SecondStepPage(s.page(c, "Two-factor sign-in"), f))
}

// secondStepEnded sends back to the password a second step that expired or
// whose account changed since.
func (s *Server) secondStepEnded(c *fiber.Ctx) error {
	s.clearCookie(c, cookieSecondStep)
	c.Status(fiber.StatusUnauthorized)
	return s.render(c, views.LoginPage(s.page(c, "Sign in"), views.LoginForm{
		CSRF: s.loginCSRF(c), Error: app.ErrorMessage(console.ErrChoiceEnded),
	}))
}

// handleTwoFactorPage shows the user's second factor, or starts enrolling
// one: the key as a QR code and as text, shown until a first code confirms
// it and never after.
func (s *Server) handleTwoFactorPage(c *fiber.Ctx) error {
	return s.renderTwoFactor(c, nil)
}

func (s *Server) renderTwoFactor(c *fiber.Ctx, errs views.FormErrors) error {
	u := userOf(c)
	st, err := s.TwoFactor.StatusOf(c.UserContext(), u)
	if err != nil {
		return err
	}
	v := views.TwoFactorView{Enrolled: st.Enrolled, ConfirmedAt: st.ConfirmedAt, Keys: st.Keys, NoNewKeys: !s.TwoFactor.KeysAvailable(), RecoveryLeft: st.RecoveryCodes, Required: u.TwoFactorRequired, Errs: errs}
	if !st.Enrolled {
		e, err := s.TwoFactor.Begin(c.UserContext(), u)
		if err != nil {
			return err
		}
		png, err := qrcode.Encode(e.URL, qrcode.Medium, 220)
		if err != nil {
			return err
		}
		v.QR, v.Secret = "data:image/png;base64,"+base64.StdEncoding.EncodeToString(png), e.Secret
	}
	// The page holds a secret: no cache keeps it.
	c.Set(fiber.HeaderCacheControl, "no-store")
	return s.render(c, views.TwoFactorPage(s.page(c, "Two-factor sign-in"), v))
}

// handleTwoFactorConfirm confirms an enrolment with a first code and shows
// the recovery codes, in the answer to this POST only.
func (s *Server) handleTwoFactorConfirm(c *fiber.Ctx) error {
	codes, err := s.TwoFactor.Confirm(c.UserContext(), userOf(c), c.FormValue("code"))
	if err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error { return s.renderTwoFactor(c, errs) })
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return s.render(c, views.TwoFactorPage(s.page(c, "Two-factor sign-in"), views.TwoFactorView{Enrolled: true, RecoveryCodes: codes}))
}

// handleTwoFactorDisable turns the user's second factor off once they
// prove it is them.
func (s *Server) handleTwoFactorDisable(c *fiber.Ctx) error {
	err := s.Sessions.DisableTwoFactor(c.UserContext(), userOf(c), c.IP(), c.FormValue("proof"))
	switch app.ErrorCode(err) {
	case "":
	case app.ETOOMANY:
		setRetryAfter(c, console.RetryAfter(err))
		c.Status(fiber.StatusTooManyRequests)
		return s.renderTwoFactor(c, views.FormErrorsOf(err))
	default:
		return s.formFailure(c, err, func(errs views.FormErrors) error { return s.renderTwoFactor(c, errs) })
	}
	msg := "Two-factor sign-in is off."
	if userOf(c).TwoFactorAt != nil {
		msg = "The authenticator app is removed; your security keys still sign you in."
	}
	s.flash(c, "success", msg)
	return c.Redirect("/account/two-factor", fiber.StatusSeeOther)
}

// handleTenantTwoFactorRequire sets whether the tenant's users must sign in
// with a second factor.
func (s *Server) handleTenantTwoFactorRequire(c *fiber.Ctx) error {
	required := c.FormValue("required") == "on"
	if err := s.TwoFactor.RequireInTenant(c.UserContext(), userOf(c), tenantOf(c).ID, required); err != nil {
		return err
	}
	msg := "Two-factor sign-in is no longer required."
	if required {
		msg = "Two-factor sign-in is now required: users without it set it up at their next page."
	}
	s.flash(c, "success", msg)
	return c.Redirect(tenantPath(c, "/users"), fiber.StatusSeeOther)
}

// handleUserTwoFactorReset removes the second factor of one of the
// tenant's users who lost their device.
func (s *Server) handleUserTwoFactorReset(c *fiber.Ctx) error {
	return s.userAction(c, func(id uuid.UUID) (*app.User, error) {
		if err := s.TwoFactor.ResetInTenant(c.UserContext(), userOf(c), tenantOf(c).ID, id); err != nil {
			return nil, err
		}
		return s.Users.InTenant(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	}, func(u *app.User) string {
		return "The second factor of " + u.Email + " is reset."
	})
}

// handleOperators lists the operators with their second factor.
func (s *Server) handleOperators(c *fiber.Ctx) error {
	rows, required, err := s.TwoFactor.Operators(c.UserContext(), userOf(c))
	if err != nil {
		return err
	}
	return s.render(c, views.OperatorsPage(s.page(c, "Operators"), views.OperatorsView{Rows: rows, Self: userOf(c), Required: required}))
}

// handleOperatorTwoFactorRequire sets whether operators must sign in with a
// second factor.
func (s *Server) handleOperatorTwoFactorRequire(c *fiber.Ctx) error {
	required := c.FormValue("required") == "on"
	if err := s.TwoFactor.RequireForOperators(c.UserContext(), userOf(c), required); err != nil {
		return err
	}
	s.flash(c, "success", "Saved the operators' two-factor rule.")
	return c.Redirect("/operators", fiber.StatusSeeOther)
}

// handleOperatorTwoFactorReset removes the second factor of an operator who
// lost their device.
func (s *Server) handleOperatorTwoFactorReset(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	if err := s.TwoFactor.ResetOperator(c.UserContext(), userOf(c), id); err != nil {
		return err
	}
	s.flash(c, "success", "The operator's second factor is reset.")
	return c.Redirect("/operators", fiber.StatusSeeOther)
}
