package console

import (
	"context"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// SecondStep finishes the sign-in of a user with a second factor, whose
// password Login or Choose accepted at sessionVersion: code is a current
// TOTP code or an unused recovery code. Attempts pass the sign-in throttle
// under the user's address and the client address ip like passwords do, so
// a wrong code counts as a failed sign-in; a password change, reset or
// disabling since the password step voids it (ErrChoiceEnded).
func (s *Sessions) SecondStep(ctx context.Context, userID uuid.UUID, sessionVersion int, code, ip string) (*app.User, error) {
	u, err := s.pendingUser(ctx, userID, sessionVersion)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	name := loginName(u.Email)
	keys := throttleKeys(name, ip)
	wait, err := s.admit(ctx, keys, now)
	if err != nil {
		return nil, err
	}
	if wait > 0 {
		if err := s.recordFailure(ctx, name, ip, now, wait); err != nil {
			return nil, err
		}
		return nil, errThrottled(wait)
	}
	method, err := s.TwoFactor.Verify(ctx, u, code)
	switch {
	case app.ErrorCode(err) == app.EUNAUTHORIZED:
		// The attempt stays counted as a failure.
		if err := s.recordFailure(ctx, name, ip, now, 0); err != nil {
			return nil, err
		}
		return nil, ErrBadSecondFactor
	case err != nil:
		return nil, err
	}
	err = s.Store.InPlatform(ctx, func(tx SessionTx) error {
		if err := s.release(ctx, tx, keys, now); err != nil {
			return err
		}
		if err := s.closeWindow(ctx, tx, name, ip); err != nil {
			return err
		}
		return s.recordLogin(ctx, tx, u, ip, now, map[string]any{"second_factor": method})
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// pendingUser returns the user a password step accepted at sessionVersion,
// or ErrChoiceEnded when that no longer holds.
func (s *Sessions) pendingUser(ctx context.Context, userID uuid.UUID, sessionVersion int) (*app.User, error) {
	var u *app.User
	err := s.Store.InPlatform(ctx, func(tx SessionTx) (err error) {
		u, err = tx.UserByID(ctx, userID)
		return err
	})
	switch {
	case app.ErrorCode(err) == app.ENOTFOUND:
		return nil, ErrChoiceEnded
	case err != nil:
		return nil, err
	case u.DisabledAt != nil || u.SessionVersion != sessionVersion || u.TwoFactorAt == nil:
		return nil, ErrChoiceEnded
	}
	return u, nil
}

// DisableTwoFactor removes the signed-in user's second factor once they
// prove it is them: with a current code, a recovery code or their
// password. Checks pass the throttle, as ChangePassword's do, so a stolen
// session cannot guess its way through.
func (s *Sessions) DisableTwoFactor(ctx context.Context, u *app.User, ip, proof string) error {
	now := s.Now()
	keys := throttleKeys(loginName(u.Email), ip)
	wait, err := s.admit(ctx, keys, now)
	if err != nil {
		return err
	}
	if wait > 0 {
		return errThrottled(wait)
	}
	if !u.CheckPassword(proof) {
		if _, err := s.TwoFactor.Verify(ctx, u, proof); app.ErrorCode(err) == app.EUNAUTHORIZED {
			return app.FieldErrorf("proof", "That is neither a current code, a recovery code nor your password.")
		} else if err != nil {
			return err
		}
	}
	if err := s.Store.InPlatform(ctx, func(tx SessionTx) error { return s.release(ctx, tx, keys, now) }); err != nil {
		return err
	}
	return s.TwoFactor.remove(ctx, u.Actor(), u, "user.two_factor_disable")
}
