package console

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// The second factor's administration: who must have one, and resets for
// someone who lost their device.

// remove deletes u's second factor and audits action by actor; ECONFLICT
// when there is none.
func (s *TwoFactor) remove(ctx context.Context, actor app.Actor, u *app.User, action string) error {
	return s.in(ctx, u.TenantID, func(tx TwoFactorTx) error {
		had, err := tx.DeleteSecondFactor(ctx, u.TenantID, u.ID)
		if err != nil {
			return err
		}
		if !had {
			return app.Errorf(app.ECONFLICT, "%s has no second factor.", u.Email)
		}
		u.TwoFactorAt = nil
		return tx.InsertAudit(ctx, actor.Entry(u.TenantID, action, "user", u.ID.String(), map[string]any{"email": u.Email}))
	})
}

// ResetInTenant removes the second factor of one of the tenant's users for
// someone who lost their device; a manager does it. The user enrols again
// at the next sign-in when the tenant requires it.
func (s *TwoFactor) ResetInTenant(ctx context.Context, actor *app.User, tenantID, userID uuid.UUID) error {
	if err := requireTenantAccess(actor, app.PermUsers, tenantID); err != nil {
		return err
	}
	var u *app.User
	err := s.Store.InTenant(ctx, tenantID, func(tx TwoFactorTx) (err error) {
		u, err = tx.UserByID(ctx, userID)
		if err == nil && (u.TenantID == nil || *u.TenantID != tenantID) {
			err = app.Errorf(app.ENOTFOUND, "User %s not found.", userID)
		}
		return err
	})
	if err != nil {
		return err
	}
	return s.remove(ctx, actor.Actor(), u, "user.two_factor_reset")
}

// ResetOperator removes the second factor of an operator; another operator
// does it (one who lost their own device asks a colleague).
func (s *TwoFactor) ResetOperator(ctx context.Context, actor *app.User, userID uuid.UUID) error {
	if !actor.Can(app.PermPlatform) {
		return app.Errorf(app.EFORBIDDEN, "Only operators reset an operator's second factor.")
	}
	if actor.ID == userID {
		return app.Errorf(app.EINVALID, "Reset your own second factor on your account's two-factor page.")
	}
	var u *app.User
	err := s.Store.InPlatform(ctx, func(tx TwoFactorTx) (err error) {
		u, err = tx.UserByID(ctx, userID)
		if err == nil && u.TenantID != nil {
			err = app.Errorf(app.ENOTFOUND, "Operator %s not found.", userID)
		}
		return err
	})
	if err != nil {
		return err
	}
	return s.remove(ctx, actor.Actor(), u, "user.two_factor_reset")
}

// ResetByEmail removes the second factor of the account under email: the
// operator's when tenantSlug is empty, else that tenant's user's. The
// herald command does it, for an operator who lost their device with no
// other operator to reset it.
func (s *TwoFactor) ResetByEmail(ctx context.Context, actor app.Actor, email, tenantSlug string) error {
	norm, err := app.NormalizeEmail("email", email)
	if err != nil {
		return err
	}
	var u *app.User
	err = s.Store.InPlatform(ctx, func(tx TwoFactorTx) error {
		var tenantID *uuid.UUID
		if tenantSlug != "" {
			t, err := tx.TenantBySlug(ctx, tenantSlug)
			if err != nil {
				return err
			}
			tenantID = &t.ID
		}
		users, err := tx.UsersByEmail(ctx, norm)
		if err != nil {
			return err
		}
		for _, c := range users {
			if (c.TenantID == nil && tenantID == nil) || (c.TenantID != nil && tenantID != nil && *c.TenantID == *tenantID) {
				u = c
			}
		}
		if u == nil {
			return app.Errorf(app.ENOTFOUND, "No account %s there.", norm)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.remove(ctx, actor, u, "user.two_factor_reset")
}

// TenantRequired reports whether the tenant requires a second factor.
func (s *TwoFactor) TenantRequired(ctx context.Context, tenantID uuid.UUID) (required bool, err error) {
	err = s.Store.InTenant(ctx, tenantID, func(tx TwoFactorTx) error {
		required, err = tx.TenantTwoFactor(ctx, tenantID)
		return err
	})
	return required, err
}

// RequireInTenant sets whether the tenant's users must sign in with a
// second factor; a manager decides. Those without one are sent to enrol at
// their next page.
func (s *TwoFactor) RequireInTenant(ctx context.Context, actor *app.User, tenantID uuid.UUID, required bool) error {
	if err := requireTenantAccess(actor, app.PermUsers, tenantID); err != nil {
		return err
	}
	return s.Store.InTenant(ctx, tenantID, func(tx TwoFactorTx) error {
		if err := tx.SetTenantTwoFactor(ctx, tenantID, required, s.Now()); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Actor().Entry(&tenantID, "tenant.two_factor_requirement", "tenant", tenantID.String(), map[string]any{"required": required}))
	})
}

// Operators returns every operator and whether operators must have a
// second factor.
func (s *TwoFactor) Operators(ctx context.Context, actor *app.User) (users []*app.User, required bool, err error) {
	if !actor.Can(app.PermPlatform) {
		return nil, false, app.Errorf(app.EFORBIDDEN, "Only operators see the operators.")
	}
	err = s.Store.InPlatform(ctx, func(tx TwoFactorTx) error {
		if users, err = tx.ListOperators(ctx); err != nil {
			return err
		}
		required, err = tx.OperatorTwoFactor(ctx)
		return err
	})
	return users, required, err
}

// RequireForOperators sets whether operators must sign in with a second
// factor.
func (s *TwoFactor) RequireForOperators(ctx context.Context, actor *app.User, required bool) error {
	if !actor.Can(app.PermPlatform) {
		return app.Errorf(app.EFORBIDDEN, "Only operators change the platform's settings.")
	}
	return s.Store.InPlatform(ctx, func(tx TwoFactorTx) error {
		if err := tx.SetOperatorTwoFactor(ctx, required, s.Now()); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Actor().Entry(nil, "platform.two_factor_requirement", "platform", "operators", map[string]any{"required": required}))
	})
}
