package console

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// The second factor's administration: who must have one, and resets for
// someone who lost their device.

// reset deletes every second factor of u (authenticator app, security
// keys, recovery codes) for someone who lost them, ends u's sessions (a
// session that got past a second factor should not outlive it) and audits
// the reset by actor; ECONFLICT when u has no second factor.
func (s *TwoFactor) reset(ctx context.Context, actor app.Actor, u *app.User) error {
	return s.in(ctx, u.TenantID, func(tx TwoFactorTx) error {
		had, err := tx.DeleteSecondFactor(ctx, u.TenantID, u.ID)
		if err != nil {
			return err
		}
		keys, err := tx.DeleteSecurityKeys(ctx, u.TenantID, u.ID)
		if err != nil {
			return err
		}
		if !had && keys == 0 {
			return app.Errorf(app.ECONFLICT, "%s has no second factor.", u.Email)
		}
		if err := tx.ReplaceRecoveryCodes(ctx, u.TenantID, u.ID, nil); err != nil {
			return err
		}
		if err := tx.BumpUserSessions(ctx, u.TenantID, u.ID, s.Now()); err != nil {
			return err
		}
		u.TwoFactorAt = nil
		return tx.InsertAudit(ctx, actor.Entry(u.TenantID, "user.two_factor_reset", "user", u.ID.String(),
			map[string]any{"email": u.Email, "authenticator_app": had, "security_keys": keys}))
	})
}

// removeTOTP deletes u's authenticator app, and the recovery codes when u
// has no security key either, and audits it as u's own doing.
func (s *TwoFactor) removeTOTP(ctx context.Context, u *app.User) error {
	return s.in(ctx, u.TenantID, func(tx TwoFactorTx) error {
		had, err := tx.DeleteSecondFactor(ctx, u.TenantID, u.ID)
		if err != nil {
			return err
		}
		if !had {
			return app.Errorf(app.ECONFLICT, "You have no authenticator app to remove.")
		}
		if err := s.dropCodesWhenNoFactor(ctx, tx, u); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, u.Actor().Entry(u.TenantID, "user.two_factor_disable", "user", u.ID.String(),
			map[string]any{"email": u.Email, "method": "totp"}))
	})
}

// replaceRecoveryCodes gives u new recovery codes, in place of the old
// ones, which stop working; ECONFLICT when u has no second factor.
func (s *TwoFactor) replaceRecoveryCodes(ctx context.Context, u *app.User) ([]string, error) {
	if u.TwoFactorAt == nil {
		return nil, app.Errorf(app.ECONFLICT, "Recovery codes come with a second factor: set one up first.")
	}
	codes, hashes := newRecoveryCodes()
	err := s.in(ctx, u.TenantID, func(tx TwoFactorTx) error {
		if err := tx.ReplaceRecoveryCodes(ctx, u.TenantID, u.ID, hashes); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, u.Actor().Entry(u.TenantID, "user.two_factor_recovery_codes_replaced", "user", u.ID.String(),
			map[string]any{"count": len(codes)}))
	})
	return codes, err
}

// ResetInTenant removes every second factor of one of the tenant's users
// for someone who lost their device, and ends their sessions; a manager
// does it. The user enrols again
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
	return s.reset(ctx, actor.Actor(), u)
}

// ResetOperator removes every second factor of an operator and ends their
// sessions; another operator does it (one who lost their own device asks a colleague).
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
	return s.reset(ctx, actor.Actor(), u)
}

// ResetByEmail removes every second factor of the account under email
// and ends its sessions: the
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
	return s.reset(ctx, actor, u)
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
