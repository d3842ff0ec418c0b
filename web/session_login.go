package web

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// handleHome sends a signed-in user to their start page and everyone else
// to the sign-in form.
// (requireUser runs first).
func (s *Server) handleHome(c *fiber.Ctx) error {
	home, err := s.homeOf(c, userOf(c))
	if err != nil {
		return err
	}
	return c.Redirect(home, fiber.StatusSeeOther)
}

// handleLoginPage shows the sign-in form, or the start page to a user who is
// signed in already.
func (s *Server) handleLoginPage(c *fiber.Ctx) error {
	if claims, err := s.parseSession(c.Cookies(cookieSession)); err == nil {
		if u, err := s.Sessions.User(c.UserContext(), uuid.MustParse(claims.Subject), claims.Version); err == nil {
			home, err := s.homeOf(c, u)
			if err != nil {
				return err
			}
			return c.Redirect(safeNext(c.Query("next"), home), fiber.StatusSeeOther)
		}
	}
	p := s.page(c, "Sign in")
	p.Flash = s.flashes(c)
	return s.render(c, views.LoginPage(p, views.LoginForm{Next: safeNext(c.Query("next"), ""), CSRF: s.loginCSRF(c)}))
}

// handleLogin checks the sign-in form and starts a session. When the
// password opens accounts in several organisations it asks which one, and
// the same handler takes the answer (the form's account field) with the
// choice cookie set in between.
func (s *Server) handleLogin(c *fiber.Ctx) error {
	form := views.LoginForm{Email: c.FormValue("email"), Next: safeNext(c.FormValue("next"), "")}
	fail := func(status int, msg string) error {
		form.Error, form.CSRF = msg, s.loginCSRF(c)
		c.Status(status)
		return s.render(c, views.LoginPage(s.page(c, "Sign in"), form))
	}
	if !s.checkLoginCSRF(c) {
		return fail(fiber.StatusForbidden, "The sign-in form expired. Please try again (your browser must accept cookies).")
	}
	if c.FormValue("account") != "" {
		return s.handleLoginChoice(c, form, fail)
	}
	accounts, err := s.Sessions.Login(c.UserContext(), form.Email, c.FormValue("password"), c.IP())
	switch app.ErrorCode(err) {
	case "":
	case app.ETOOMANY:
		setRetryAfter(c, console.RetryAfter(err))
		return fail(fiber.StatusTooManyRequests, app.ErrorMessage(err))
	case app.EUNAUTHORIZED:
		return fail(fiber.StatusUnauthorized, app.ErrorMessage(err))
	default:
		return err
	}
	if len(accounts) == 1 && accounts[0].User.TwoFactorAt != nil {
		return s.toSecondStep(c, accounts[0].User, form.Next)
	}
	if len(accounts) > 1 {
		s.setChoice(c, accounts)
		for _, a := range accounts {
			form.Choices = append(form.Choices, views.LoginChoice{Account: a.User.ID.String(), Organisation: a.Organisation})
		}
		form.CSRF = s.loginCSRF(c)
		return s.render(c, views.LoginPage(s.page(c, "Sign in"), form))
	}
	return s.startSession(c, accounts[0].User, form.Next)
}

// handleLoginChoice signs in the account chosen among those the password
// opened, if the choice cookie names it.
func (s *Server) handleLoginChoice(c *fiber.Ctx, form views.LoginForm, fail func(int, string) error) error {
	choice, err := s.parseChoice(c.Cookies(cookieChoice))
	if err != nil {
		s.clearCookie(c, cookieChoice)
		return fail(fiber.StatusUnauthorized, app.ErrorMessage(console.ErrChoiceEnded))
	}
	for _, a := range choice.Accounts {
		if a.ID != c.FormValue("account") {
			continue
		}
		u, err := s.Sessions.Choose(c.UserContext(), uuid.MustParse(a.ID), a.Version, c.IP())
		s.clearCookie(c, cookieChoice)
		switch app.ErrorCode(err) {
		case "":
			if u.TwoFactorAt != nil {
				return s.toSecondStep(c, u, form.Next)
			}
			return s.startSession(c, u, form.Next)
		case app.EUNAUTHORIZED:
			return fail(fiber.StatusUnauthorized, app.ErrorMessage(err))
		default:
			return err
		}
	}
	return fail(fiber.StatusUnauthorized, app.ErrorMessage(console.ErrChoiceEnded))
}

// startSession issues the session of a user who just signed in and sends
// them on.
func (s *Server) startSession(c *fiber.Ctx, u *app.User, next string) error {
	s.issueSession(c, u, "", time.Time{})
	s.clearCookie(c, cookieLogin)
	if u.NeedsTwoFactor() && !u.MustChangePassword {
		// Required and missing: the user enrols before anything else.
		return c.Redirect("/account/two-factor", fiber.StatusSeeOther)
	}
	home, err := s.homeOf(c, u)
	if err != nil {
		return err
	}
	return c.Redirect(safeNext(next, home), fiber.StatusSeeOther)
}

// setRetryAfter tells the client how many seconds to wait, rounded up.
func setRetryAfter(c *fiber.Ctx, wait time.Duration) {
	if wait > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	}
}

// handleLogout ends every session of the user.
func (s *Server) handleLogout(c *fiber.Ctx) error {
	if err := s.Sessions.Logout(c.UserContext(), userOf(c)); err != nil {
		return err
	}
	s.clearCookie(c, cookieSession)
	s.flash(c, "success", "You are signed out on every device.")
	return c.Redirect("/login", fiber.StatusSeeOther)
}

// handlePasswordPage shows the password change form.
func (s *Server) handlePasswordPage(c *fiber.Ctx) error {
	return s.render(c, views.PasswordPage(s.page(c, "Change password"), nil))
}

// handlePassword changes the user's password. Every other session ends;
// this browser gets a new session at the new version.
func (s *Server) handlePassword(c *fiber.Ctx) error {
	u := userOf(c)
	err := s.Sessions.ChangePassword(c.UserContext(), u, c.IP(), c.FormValue("current"), c.FormValue("new"), c.FormValue("confirm"))
	switch app.ErrorCode(err) {
	case "":
	case app.EINVALID:
		c.Status(fiber.StatusUnprocessableEntity)
		return s.render(c, views.PasswordPage(s.page(c, "Change password"), views.FormErrorsOf(err)))
	case app.ETOOMANY:
		setRetryAfter(c, console.RetryAfter(err))
		c.Status(fiber.StatusTooManyRequests)
		return s.render(c, views.PasswordPage(s.page(c, "Change password"), views.FormErrorsOf(err)))
	default:
		return err
	}
	// The user just proved the password: the new session starts a new
	// lifetime.
	s.issueSession(c, u, "", time.Time{})
	s.flash(c, "success", "Password changed. Every other session has been signed out.")
	home, err := s.homeOf(c, u)
	if err != nil {
		return err
	}
	return c.Redirect(home, fiber.StatusSeeOther)
}
