package console

import (
	"context"
	"errors"

	"github.com/go-webauthn/webauthn/protocol"
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
	return s.secondStep(ctx, userID, sessionVersion, ip, func(u *app.User) (map[string]any, error) {
		method, err := s.TwoFactor.Verify(ctx, u, code)
		return map[string]any{"second_factor": method}, err
	})
}

// BeginKeyStep starts the second step of a sign-in with a security key:
// the user whose password was accepted at sessionVersion is asked to
// answer a challenge bound to binding, the sign-in's own token.
func (s *Sessions) BeginKeyStep(ctx context.Context, userID uuid.UUID, sessionVersion int, binding string) (*protocol.CredentialAssertion, error) {
	u, err := s.pendingUser(ctx, userID, sessionVersion)
	if err != nil {
		return nil, err
	}
	return s.TwoFactor.BeginKeySignIn(ctx, u, binding)
}

// KeyStep finishes the sign-in begun by BeginKeyStep with response, the
// security key's assertion. It passes the throttle as SecondStep does, and
// a refused assertion counts as a failed sign-in.
func (s *Sessions) KeyStep(ctx context.Context, userID uuid.UUID, sessionVersion int, binding string, response []byte, ip string) (*app.User, error) {
	return s.secondStep(ctx, userID, sessionVersion, ip, func(u *app.User) (map[string]any, error) {
		key, err := s.TwoFactor.VerifyKey(ctx, u, binding, response)
		if err != nil {
			return nil, err
		}
		return map[string]any{"second_factor": "security_key", "key_id": key.ID.String(), "key_name": key.Name}, nil
	})
}

// secondStep passes a second step of the pending sign-in through the
// throttle, checks it with verify, and signs the user in with the audit
// metadata verify returns. An EUNAUTHORIZED answer of verify is a failed
// sign-in.
func (s *Sessions) secondStep(ctx context.Context, userID uuid.UUID, sessionVersion int, ip string, verify func(*app.User) (map[string]any, error)) (*app.User, error) {
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
	meta, err := verify(u)
	switch {
	case app.ErrorCode(err) == app.EUNAUTHORIZED:
		// The attempt stays counted as a failure.
		if err := s.recordFailure(ctx, name, ip, now, 0); err != nil {
			return nil, err
		}
		return nil, err
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
		return s.recordLogin(ctx, tx, u, ip, now, meta)
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// pendingUser returns the user a password step accepted at sessionVersion,
// or ErrChoiceEnded when that no longer holds: the account is gone,
// disabled, signed out everywhere, or has no second factor any more.
func (s *Sessions) pendingUser(ctx context.Context, userID uuid.UUID, sessionVersion int) (*app.User, error) {
	u, err := s.User(ctx, userID, sessionVersion)
	switch {
	case errors.Is(err, ErrSessionEnded):
		return nil, ErrChoiceEnded
	case err != nil:
		return nil, err
	case u.TwoFactorAt == nil:
		return nil, ErrChoiceEnded
	}
	return u, nil
}

// prove checks that the signed-in user u is at the keyboard before a
// change to their second factors: proof is a current code, a recovery code
// or their password. Checks pass the throttle, as ChangePassword's do, so
// a stolen session cannot guess its way through.
func (s *Sessions) prove(ctx context.Context, u *app.User, ip, proof string) error {
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
		if _, err := s.TwoFactor.Verify(ctx, u, proof); app.ErrorCode(err) == app.EUNAUTHORIZED || errors.Is(err, errNotEnrolled) {
			return app.FieldErrorf("proof", "That is neither a current code, a recovery code nor your password.")
		} else if err != nil {
			return err
		}
	}
	return s.Store.InPlatform(ctx, func(tx SessionTx) error { return s.release(ctx, tx, keys, now) })
}

// DisableTwoFactor removes the signed-in user's authenticator app once
// they prove it is them (see prove). Their security keys stay; the
// recovery codes go with the last second factor.
func (s *Sessions) DisableTwoFactor(ctx context.Context, u *app.User, ip, proof string) error {
	if err := s.prove(ctx, u, ip, proof); err != nil {
		return err
	}
	return s.TwoFactor.removeTOTP(ctx, u)
}

// RemoveSecurityKey removes one of the signed-in user's security keys once
// they prove it is them (see prove).
func (s *Sessions) RemoveSecurityKey(ctx context.Context, u *app.User, ip, proof string, id uuid.UUID) (*SecurityKey, error) {
	if err := s.prove(ctx, u, ip, proof); err != nil {
		return nil, err
	}
	return s.TwoFactor.removeKey(ctx, u, id)
}

// NewRecoveryCodes replaces the signed-in user's recovery codes once they
// prove it is them (see prove) and returns the new ones, shown this once;
// the old ones stop working.
func (s *Sessions) NewRecoveryCodes(ctx context.Context, u *app.User, ip, proof string) ([]string, error) {
	if err := s.prove(ctx, u, ip, proof); err != nil {
		return nil, err
	}
	return s.TwoFactor.replaceRecoveryCodes(ctx, u)
}
