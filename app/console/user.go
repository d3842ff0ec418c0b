package console

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"github.com/heraldhq/herald/app"
)

// Users is the console's user administration within a tenant: invitations,
// roles, disabling and password resets.
type Users struct {
	*app.Users
	Store app.Store[UserTx]
}

// UserTx reads and changes a tenant's console users. Every method
// takes the tenant and filters on it.
type UserTx interface {
	app.Tx
	InsertAudit(ctx context.Context, e *app.AuditEntry) error
	CreateUser(ctx context.Context, u *app.User) error
	// ListTenantUsers returns the tenant's users, newest first.
	ListTenantUsers(ctx context.Context, tenantID uuid.UUID, page PageRequest) ([]*app.User, error)
	// TenantUser returns one of the tenant's users, locking the row when
	// forUpdate is set.
	TenantUser(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*app.User, error)
	// LockTenantUsers takes the tenant's lock for changes to its users,
	// held until the transaction ends. Every change that may take a
	// manager away takes it before any user row, so two such changes in
	// one tenant run one after the other instead of deadlocking on each
	// other's rows.
	LockTenantUsers(ctx context.Context, tenantID uuid.UUID) error
	// LockActiveManagers locks and returns the ids of the tenant's
	// managers who are not disabled, so that two requests cannot each
	// remove one of the last two.
	LockActiveManagers(ctx context.Context, tenantID uuid.UUID) ([]uuid.UUID, error)
	// UpdateTenantUser stores role, disabled_at, session version, password
	// hash and must_change_password of u.
	UpdateTenantUser(ctx context.Context, u *app.User) error
}

// TenantRoles are the roles a tenant's users can hold; operators belong to
// no tenant and are made with `herald admin create-user`.
var TenantRoles = []string{app.RoleManager, app.RoleSupport}

// InviteInput is what adding a user to a tenant in the console takes.
type InviteInput struct {
	Name  string
	Email string
	Role  string
}

// NewTemporaryPassword returns a generated password for a user to sign in
// with once: five groups of four base32 characters (100 bits).
func NewTemporaryPassword() string {
	t := rand.Text()[:20]
	groups := make([]string, 0, 5)
	for i := 0; i < len(t); i += 4 {
		groups = append(groups, t[i:i+4])
	}
	return strings.Join(groups, "-")
}

func validateTenantRole(role string) (string, error) {
	role = strings.ToLower(strings.TrimSpace(role))
	switch role {
	case app.RoleManager, app.RoleSupport:
		return role, nil
	case app.RoleOperator:
		return "", app.FieldErrorf("role", "Operators run the platform and belong to no tenant; choose manager or support.")
	case "":
		return "", app.FieldErrorf("role", "Choose a role: manager or support.")
	}
	return "", app.FieldErrorf("role", "Role %q is not one of manager, support.", role)
}

// ListInTenant returns one page of the tenant's users, newest first, and
// whether more follow.
func (s *Users) ListInTenant(ctx context.Context, actor *app.User, tenantID uuid.UUID, page PageRequest) ([]*app.User, bool, error) {
	if err := requireTenantAccess(actor, app.PermUsers, tenantID); err != nil {
		return nil, false, err
	}
	var rows []*app.User
	err := s.Store.InTenant(ctx, tenantID, func(tx UserTx) (err error) {
		rows, err = tx.ListTenantUsers(ctx, tenantID, page)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	rows, more := Page(rows, page)
	return rows, more, nil
}

// InTenant returns one of the tenant's users; a user of another tenant is
// ENOTFOUND.
func (s *Users) InTenant(ctx context.Context, actor *app.User, tenantID, id uuid.UUID) (*app.User, error) {
	if err := requireTenantAccess(actor, app.PermUsers, tenantID); err != nil {
		return nil, err
	}
	var u *app.User
	err := s.Store.InTenant(ctx, tenantID, func(tx UserTx) (err error) {
		u, err = tx.TenantUser(ctx, tenantID, id, false)
		return err
	})
	return u, err
}

// Invite adds a manager or support user to the tenant with a generated
// temporary password, which it returns: Herald sends no mail, so whoever
// invites passes it on, and the new user chooses their own at the first
// sign-in. An address already used in this tenant is ECONFLICT on the email
// field; an address used in another tenant is invited like any other (the
// uniqueness that decides is per tenant, and the statement runs in the
// tenant's scope), so an invitation never tells whether a person uses
// Herald elsewhere.
func (s *Users) Invite(ctx context.Context, actor *app.User, tenantID uuid.UUID, in InviteInput) (*app.User, string, error) {
	if err := requireTenantAccess(actor, app.PermUsers, tenantID); err != nil {
		return nil, "", err
	}
	name := strings.TrimSpace(in.Name)
	switch {
	case name == "":
		return nil, "", app.FieldErrorf("name", "Name is required (so that colleagues know who is who).")
	case len(name) > 200:
		return nil, "", app.FieldErrorf("name", "Name must be at most 200 characters.")
	}
	email, err := app.NormalizeEmail("email", in.Email)
	if err != nil {
		return nil, "", err
	}
	role, err := validateTenantRole(in.Role)
	if err != nil {
		return nil, "", err
	}
	password := NewTemporaryPassword()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.HashCost())
	if err != nil {
		return nil, "", err
	}
	now := s.Now()
	u := &app.User{
		ID: uuid.New(), TenantID: &tenantID, Email: email, Name: name, PasswordHash: hash, Role: role,
		SessionVersion: 1, MustChangePassword: true, CreatedAt: now, UpdatedAt: now,
	}
	err = s.Store.InTenant(ctx, tenantID, func(tx UserTx) error {
		if err := tx.CreateUser(ctx, u); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Actor().Entry(&tenantID, "user.create", "user", u.ID.String(), map[string]any{
			"email": u.Email, "role": u.Role, "name": u.Name,
		}))
	})
	if err != nil {
		return nil, "", err
	}
	return u, password, nil
}

// changeUser locks one of the tenant's users, lets change edit it and
// stores it with an audit entry.
func (s *Users) changeUser(ctx context.Context, actor *app.User, tenantID, id uuid.UUID, action string,
	change func(tx UserTx, u *app.User) (map[string]any, error)) (*app.User, error) {
	if err := requireTenantAccess(actor, app.PermUsers, tenantID); err != nil {
		return nil, err
	}
	var u *app.User
	err := s.Store.InTenant(ctx, tenantID, func(tx UserTx) (err error) {
		// The tenant first, then the user: manager A demoting B while B
		// demotes A would otherwise each hold one row and wait for the
		// other's in lastManager.
		if err := tx.LockTenantUsers(ctx, tenantID); err != nil {
			return err
		}
		if u, err = tx.TenantUser(ctx, tenantID, id, true); err != nil {
			return err
		}
		meta, err := change(tx, u)
		if err != nil || meta == nil {
			return err
		}
		u.UpdatedAt = s.Now()
		if err := tx.UpdateTenantUser(ctx, u); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Actor().Entry(&tenantID, action, "user", u.ID.String(), meta))
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// lastManager refuses to take the tenant's last active manager away: the
// tenant would have nobody left who can manage it.
func lastManager(ctx context.Context, tx UserTx, u *app.User, doing string) error {
	if u.Role != app.RoleManager || u.DisabledAt != nil {
		return nil
	}
	ids, err := tx.LockActiveManagers(ctx, *u.TenantID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if id != u.ID {
			return nil
		}
	}
	return app.Errorf(app.ECONFLICT, "%s is the last active manager of this tenant and cannot be %s. Make someone else a manager first.", u.Email, doing)
}

// ChangeRole makes the user a manager or support. Nobody changes their own
// role, and the last active manager stays a manager.
func (s *Users) ChangeRole(ctx context.Context, actor *app.User, tenantID, id uuid.UUID, role string) (*app.User, error) {
	return s.changeUser(ctx, actor, tenantID, id, "user.role_change", func(tx UserTx, u *app.User) (map[string]any, error) {
		role, err := validateTenantRole(role)
		switch {
		case err != nil:
			return nil, err
		case role == u.Role:
			return nil, nil
		case u.ID == actor.ID:
			return nil, app.Errorf(app.ECONFLICT, "You cannot change your own role; ask another manager.")
		}
		if role != app.RoleManager {
			if err := lastManager(ctx, tx, u, "made "+role); err != nil {
				var e *app.Error
				if errors.As(err, &e) {
					e.Field = "role"
				}
				return nil, err
			}
		}
		meta := map[string]any{"email": u.Email, "from": u.Role, "to": role}
		u.Role = role
		return meta, nil
	})
}

// Disable stops the user: they cannot sign in, and every session they have
// ends at once. Nobody disables themselves, nor the last active manager.
func (s *Users) Disable(ctx context.Context, actor *app.User, tenantID, id uuid.UUID) (*app.User, error) {
	return s.changeUser(ctx, actor, tenantID, id, "user.disable", func(tx UserTx, u *app.User) (map[string]any, error) {
		switch {
		case u.DisabledAt != nil:
			return nil, nil
		case u.ID == actor.ID:
			return nil, app.Errorf(app.ECONFLICT, "You cannot disable your own account; ask another manager.")
		}
		if err := lastManager(ctx, tx, u, "disabled"); err != nil {
			return nil, err
		}
		now := s.Now()
		u.DisabledAt = &now
		u.SessionVersion++
		return map[string]any{"email": u.Email}, nil
	})
}

// Enable lets a disabled user sign in again.
func (s *Users) Enable(ctx context.Context, actor *app.User, tenantID, id uuid.UUID) (*app.User, error) {
	return s.changeUser(ctx, actor, tenantID, id, "user.enable", func(tx UserTx, u *app.User) (map[string]any, error) {
		if u.DisabledAt == nil {
			return nil, nil
		}
		u.DisabledAt = nil
		return map[string]any{"email": u.Email}, nil
	})
}

// ResetPassword gives the user a new temporary password, which it returns,
// and ends every session they have. The user chooses their own password at
// the next sign-in.
func (s *Users) ResetPassword(ctx context.Context, actor *app.User, tenantID, id uuid.UUID) (*app.User, string, error) {
	password := NewTemporaryPassword()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.HashCost())
	if err != nil {
		return nil, "", err
	}
	u, err := s.changeUser(ctx, actor, tenantID, id, "user.password_reset", func(tx UserTx, u *app.User) (map[string]any, error) {
		if u.ID == actor.ID {
			return nil, app.Errorf(app.ECONFLICT, "Change your own password under your account, not here.")
		}
		u.PasswordHash = hash
		u.MustChangePassword = true
		u.SessionVersion++
		return map[string]any{"email": u.Email}, nil
	})
	if err != nil {
		return nil, "", err
	}
	return u, password, nil
}
