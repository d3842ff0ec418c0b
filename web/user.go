package web

import (
	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/views"
)

// handleUsers lists the tenant's console users, newest first.
func (s *Server) handleUsers(c *fiber.Ctx) error {
	page, req := pageOf(c)
	rows, more, err := s.Users.ListInTenant(c.UserContext(), userOf(c), tenantOf(c).ID, req)
	if err != nil {
		return err
	}
	required, err := s.TwoFactor.TenantRequired(c.UserContext(), tenantOf(c).ID)
	if err != nil {
		return err
	}
	return s.render(c, views.UsersPage(s.page(c, "Users"), views.UserList{
		Rows: rows, Pager: pagerOf(c, page, len(rows), more), Self: userOf(c).ID, TwoFactorRequired: required,
	}))
}

// handleUserNew shows the add-user form.
func (s *Server) handleUserNew(c *fiber.Ctx) error {
	return s.render(c, views.UserNewPage(s.page(c, "Add user"), views.UserForm{Role: app.RoleSupport}, nil))
}

// temporaryPassword renders a generated password straight into the answer
// of the POST that made it: no redirect, no flash cookie, not cacheable, so
// it is shown once and never again.
func (s *Server) temporaryPassword(c *fiber.Ctx, title string, v views.TemporaryPassword) error {
	c.Set("Pragma", "no-cache")
	return s.render(c, views.TemporaryPasswordPage(s.page(c, title), v))
}

// handleUserCreate adds a user with a temporary password, shown once.
func (s *Server) handleUserCreate(c *fiber.Ctx) error {
	f := views.UserForm{Name: c.FormValue("name"), Email: c.FormValue("email"), Role: c.FormValue("role")}
	u, password, err := s.Users.Invite(c.UserContext(), userOf(c), tenantOf(c).ID, console.InviteInput{Name: f.Name, Email: f.Email, Role: f.Role})
	if err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			return s.render(c, views.UserNewPage(s.page(c, "Add user"), f, errs))
		})
	}
	return s.temporaryPassword(c, "User added", views.TemporaryPassword{User: u, Password: password})
}

// userDetail renders a user's page.
func (s *Server) userDetail(c *fiber.Ctx, u *app.User, errs views.FormErrors) error {
	return s.render(c, views.UserPage(s.page(c, userNameOf(u)), views.UserDetail{
		User: u, Self: u.ID == userOf(c).ID, Role: u.Role, Errs: errs,
	}))
}

func userNameOf(u *app.User) string {
	if u.Name != "" {
		return u.Name
	}
	return u.Email
}

// handleUserShow shows one of the tenant's users; another tenant's is 404.
func (s *Server) handleUserShow(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	u, err := s.Users.InTenant(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	if err != nil {
		return err
	}
	return s.userDetail(c, u, nil)
}

// userAction runs a change on one of the tenant's users: refused input
// shows the user's page with the error, success redirects to it.
func (s *Server) userAction(c *fiber.Ctx, do func(id uuid.UUID) (*app.User, error), done func(u *app.User) string) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	u, err := do(id)
	if err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			u, err := s.Users.InTenant(c.UserContext(), userOf(c), tenantOf(c).ID, id)
			if err != nil {
				return err
			}
			return s.userDetail(c, u, errs)
		})
	}
	s.flash(c, "success", done(u))
	return c.Redirect(tenantPath(c, "/users/"+u.ID.String()), fiber.StatusSeeOther)
}

// handleUserRole changes a user's role.
func (s *Server) handleUserRole(c *fiber.Ctx) error {
	return s.userAction(c, func(id uuid.UUID) (*app.User, error) {
		return s.Users.ChangeRole(c.UserContext(), userOf(c), tenantOf(c).ID, id, c.FormValue("role"))
	}, func(u *app.User) string { return u.Email + " is now " + u.Role + "." })
}

// handleUserDisable disables a user and ends their sessions.
func (s *Server) handleUserDisable(c *fiber.Ctx) error {
	return s.userAction(c, func(id uuid.UUID) (*app.User, error) {
		return s.Users.Disable(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	}, func(u *app.User) string { return u.Email + " is disabled and signed out everywhere." })
}

// handleUserEnable lets a disabled user sign in again.
func (s *Server) handleUserEnable(c *fiber.Ctx) error {
	return s.userAction(c, func(id uuid.UUID) (*app.User, error) {
		return s.Users.Enable(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	}, func(u *app.User) string { return u.Email + " can sign in again." })
}

// handleUserResetPassword gives a user a new temporary password, shown once.
func (s *Server) handleUserResetPassword(c *fiber.Ctx) error {
	id, err := idParam(c, "id")
	if err != nil {
		return err
	}
	u, password, err := s.Users.ResetPassword(c.UserContext(), userOf(c), tenantOf(c).ID, id)
	if err != nil {
		return s.formFailure(c, err, func(errs views.FormErrors) error {
			u, err := s.Users.InTenant(c.UserContext(), userOf(c), tenantOf(c).ID, id)
			if err != nil {
				return err
			}
			return s.userDetail(c, u, errs)
		})
	}
	return s.temporaryPassword(c, "Password reset", views.TemporaryPassword{User: u, Password: password, Reset: true})
}
