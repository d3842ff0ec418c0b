package console

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"github.com/heraldhq/herald/app"
)

// SessionTTL is how long a console session lasts without activity; the web
// layer renews it while the user works.
const SessionTTL = 12 * time.Hour

// SessionMaxAge is how long a console session lasts at most, however busy:
// renewals keep the time of sign-in, and a session signed in longer ago
// ends, so a stolen cookie does not live forever.
const SessionMaxAge = 7 * 24 * time.Hour

// SessionTx is what sign-in needs beyond reading users.
type SessionTx interface {
	app.Tx
	InsertAudit(ctx context.Context, e *app.AuditEntry) error
	UserByID(ctx context.Context, id uuid.UUID) (*app.User, error)
	// UsersByEmail returns every account under the address, in every
	// tenant and among operators.
	UsersByEmail(ctx context.Context, email string) ([]*app.User, error)
	TenantByID(ctx context.Context, id uuid.UUID) (*app.Tenant, error)
	// LockLoginCounts returns the throttling counts of keys, creating the
	// missing ones at zero and starting again those whose last failure is
	// at or before since, each locked until the transaction ends.
	LockLoginCounts(ctx context.Context, keys []string, since, at time.Time) ([]LoginCount, error)
	// SaveLoginCounts stores counts locked by LockLoginCounts; a count of
	// zero is removed.
	SaveLoginCounts(ctx context.Context, counts []LoginCount) error
	// DeleteQuietLoginCounts removes at most limit counts with neither a
	// failure nor a block since before.
	DeleteQuietLoginCounts(ctx context.Context, before time.Time, limit int) error
	// LockFailureWindow returns the failure window of (email, client),
	// created empty at at when there is none, locked until the
	// transaction ends.
	LockFailureWindow(ctx context.Context, email, client string, at time.Time) (*FailureWindow, error)
	SaveFailureWindow(ctx context.Context, w *FailureWindow) error
	// TakeFailureWindow removes and returns the window of (email, client);
	// ENOTFOUND when there is none.
	TakeFailureWindow(ctx context.Context, email, client string) (*FailureWindow, error)
	// TakeEndedFailureWindows removes and returns at most limit windows
	// opened at or before before.
	TakeEndedFailureWindows(ctx context.Context, before time.Time, limit int) ([]*FailureWindow, error)
	// RecordLogin stamps the user's last sign-in.
	RecordLogin(ctx context.Context, userID uuid.UUID, at time.Time) error
	// BumpSessionVersion revokes every session of the user and returns the
	// new version.
	BumpSessionVersion(ctx context.Context, userID uuid.UUID, at time.Time) (int, error)
	// SetPassword replaces the user's password hash and revokes every
	// session; it returns the new session version.
	SetPassword(ctx context.Context, userID uuid.UUID, hash []byte, at time.Time) (int, error)
}

// Sessions signs users in and out of the console and checks that a
// session is still valid. The web layer carries the session in a signed
// cookie holding the user id and the session version; bumping the version
// here revokes every cookie issued before.
type Sessions struct {
	Store app.Store[SessionTx]
	Users *app.Users
	Now   app.Clock
	// Throttle replaces the default throttling rules field by field: a
	// zero field keeps DefaultThrottle's.
	Throttle Throttle
	// TwoFactor checks the second step of users with a second factor.
	TwoFactor *TwoFactor

	dummyOnce sync.Once
	dummy     []byte
}

// LoginHashChecks is how many password hashes every sign-in compares,
// dummies making up the difference when the address has fewer accounts,
// so that the time a sign-in takes does not tell whether the address has
// an account, nor how many. An address with more accounts than this costs
// one comparison more per account.
const LoginHashChecks = 3

// Account is one account a sign-in's password matched, with the name of the
// organisation it belongs to.
type Account struct {
	User         *app.User
	Organisation string
}

// OperatorOrganisation is how the sign-in page names the platform, the
// organisation of operator accounts.
const OperatorOrganisation = "Herald platform (operator)"

// ErrBadCredentials is what every failed sign-in answers, whether the
// address is unknown, the password wrong or the user disabled, so that the
// answer tells an attacker nothing.
var ErrBadCredentials = app.Errorf(app.EUNAUTHORIZED, "E-mail address or password is wrong.")

// ErrSessionEnded answers a cookie whose user is gone, disabled, or signed
// out everywhere since it was issued.
var ErrSessionEnded = app.Errorf(app.EUNAUTHORIZED, "Your session has ended. Sign in again.")

// ErrChoiceEnded answers the choice of an organisation whose account was
// disabled or had its password changed since the password was checked.
var ErrChoiceEnded = app.Errorf(app.EUNAUTHORIZED, "This sign-in is no longer valid. Sign in again.")

// Login checks an e-mail address and password coming from the network
// address ip (empty when unknown). The attempt passes the throttle first
// (see Throttle), atomically; a refused attempt is not checked at all. The
// password is then compared with every account under the address, and
// with dummies up to LoginHashChecks. It returns the enabled accounts whose
// password matched: when there is one, the user is signed in (recorded and
// audited); when there are several, nobody is signed in yet and the
// caller asks which organisation, then calls Choose. Failures answer
// ErrBadCredentials whatever the reason, and are audited in aggregate.
func (s *Sessions) Login(ctx context.Context, email, password, ip string) ([]Account, error) {
	now := s.Now()
	name := loginName(email)
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

	var users []*app.User
	if norm, err := app.NormalizeEmail("email", email); err == nil {
		err = s.Store.InPlatform(ctx, func(tx SessionTx) (err error) {
			users, err = tx.UsersByEmail(ctx, norm)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	matched := s.checkPasswords(users, password)
	if len(matched) == 0 {
		// The attempt stays counted as a failure.
		if err := s.recordFailure(ctx, name, ip, now, 0); err != nil {
			return nil, err
		}
		return nil, ErrBadCredentials
	}

	var accounts []Account
	err = s.Store.InPlatform(ctx, func(tx SessionTx) error {
		release := s.release
		for _, u := range matched {
			if u.TwoFactorAt != nil {
				// The second step clears the pair when it succeeds.
				release = s.releaseAttempt
			}
		}
		if err := release(ctx, tx, keys, now); err != nil {
			return err
		}
		if err := s.closeWindow(ctx, tx, name, ip); err != nil {
			return err
		}
		for _, u := range matched {
			a := Account{User: u, Organisation: OperatorOrganisation}
			if u.TenantID != nil {
				t, err := tx.TenantByID(ctx, *u.TenantID)
				if err != nil {
					return err
				}
				a.Organisation = t.Name
			}
			accounts = append(accounts, a)
		}
		if len(matched) > 1 || matched[0].TwoFactorAt != nil {
			// Nobody is signed in yet: the person chooses an
			// organisation, or types a code of their second factor.
			return nil
		}
		return s.recordLogin(ctx, tx, matched[0], ip, now, nil)
	})
	if err != nil {
		return nil, err
	}
	return accounts, nil
}

// Choose signs in the account userID that Login matched along with others,
// once the person has said which organisation they meant. sessionVersion is
// the account's version when Login checked the password: a password
// change, reset or disabling since then voids the choice.
func (s *Sessions) Choose(ctx context.Context, userID uuid.UUID, sessionVersion int, ip string) (*app.User, error) {
	now := s.Now()
	var u *app.User
	err := s.Store.InPlatform(ctx, func(tx SessionTx) (err error) {
		u, err = tx.UserByID(ctx, userID)
		switch {
		case app.ErrorCode(err) == app.ENOTFOUND:
			return ErrChoiceEnded
		case err != nil:
			return err
		case u.DisabledAt != nil || u.SessionVersion != sessionVersion:
			return ErrChoiceEnded
		case u.TwoFactorAt != nil:
			// SecondStep signs the user in.
			return nil
		}
		return s.recordLogin(ctx, tx, u, ip, now, nil)
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

func (s *Sessions) recordLogin(ctx context.Context, tx SessionTx, u *app.User, ip string, now time.Time, extra map[string]any) error {
	if err := tx.RecordLogin(ctx, u.ID, now); err != nil {
		return err
	}
	u.LastLoginAt = &now
	meta := map[string]any{"ip": ip}
	for k, v := range extra {
		meta[k] = v
	}
	return tx.InsertAudit(ctx, u.Actor().Entry(u.TenantID, "session.login", "user", u.ID.String(), meta))
}

// checkPasswords compares password with the hash of every account and with
// dummy hashes up to LoginHashChecks, and returns the enabled accounts it
// matches. Every hash is compared whatever the earlier ones gave, so the
// work is the same for no account, one or several.
func (s *Sessions) checkPasswords(users []*app.User, password string) []*app.User {
	var matched []*app.User
	for i := range max(LoginHashChecks, len(users)) {
		hash := s.dummyHash()
		if i < len(users) {
			hash = users[i].PasswordHash
		}
		ok := bcrypt.CompareHashAndPassword(hash, []byte(password)) == nil
		if i < len(users) && ok && users[i].DisabledAt == nil {
			matched = append(matched, users[i])
		}
	}
	return matched
}

func (s *Sessions) dummyHash() []byte {
	s.dummyOnce.Do(func() {
		s.dummy, _ = bcrypt.GenerateFromPassword([]byte("herald-timing-equaliser"), s.Users.HashCost())
	})
	return s.dummy
}

// User returns the signed-in user of a session naming userID at
// sessionVersion, or ErrSessionEnded.
func (s *Sessions) User(ctx context.Context, userID uuid.UUID, sessionVersion int) (*app.User, error) {
	var u *app.User
	err := s.Store.InPlatform(ctx, func(tx SessionTx) (err error) {
		u, err = tx.UserByID(ctx, userID)
		return err
	})
	switch {
	case app.ErrorCode(err) == app.ENOTFOUND:
		return nil, ErrSessionEnded
	case err != nil:
		return nil, err
	case u.DisabledAt != nil || u.SessionVersion != sessionVersion:
		return nil, ErrSessionEnded
	}
	return u, nil
}

// Logout ends every session of the user: signing out on one device signs
// out everywhere, which is what a user who fears a stolen session wants.
func (s *Sessions) Logout(ctx context.Context, u *app.User) error {
	return s.Store.InPlatform(ctx, func(tx SessionTx) error {
		v, err := tx.BumpSessionVersion(ctx, u.ID, s.Now())
		if err != nil {
			return err
		}
		u.SessionVersion = v
		return tx.InsertAudit(ctx, u.Actor().Entry(u.TenantID, "session.logout", "user", u.ID.String(), nil))
	})
}

// ChangePassword replaces the user's password after checking the current
// one. Every session ends, the caller's too: it signs in again with the new
// password, or the web layer issues it a fresh session at the new version.
// Checks of the current password pass the throttle like sign-ins from the
// client address ip do, so a stolen session cannot be used to guess the
// password.
func (s *Sessions) ChangePassword(ctx context.Context, u *app.User, ip, current, next, confirm string) error {
	now := s.Now()
	keys := throttleKeys(loginName(u.Email), ip)
	wait, err := s.admit(ctx, keys, now)
	if err != nil {
		return err
	}
	if wait > 0 {
		_ = s.audit(ctx, u.TenantID, u.Actor(), "user.password_change_throttled", map[string]any{"ip": ip})
		return errThrottled(wait)
	}
	if !u.CheckPassword(current) {
		return app.FieldErrorf("current", "The current password is wrong.")
	}
	if err := s.Store.InPlatform(ctx, func(tx SessionTx) error {
		return s.release(ctx, tx, keys, now)
	}); err != nil {
		return err
	}
	if err := app.ValidatePassword(next); err != nil {
		err.(*app.Error).Field = "new"
		return err
	}
	if next != confirm {
		return app.FieldErrorf("confirm", "The two new passwords differ.")
	}
	if next == current {
		return app.FieldErrorf("new", "The new password must differ from the current one.")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(next), s.Users.HashCost())
	if err != nil {
		return err
	}
	return s.Store.InPlatform(ctx, func(tx SessionTx) error {
		v, err := tx.SetPassword(ctx, u.ID, hash, s.Now())
		if err != nil {
			return err
		}
		u.PasswordHash, u.SessionVersion = hash, v
		return tx.InsertAudit(ctx, u.Actor().Entry(u.TenantID, "user.password_change", "user", u.ID.String(), nil))
	})
}

func (s *Sessions) audit(ctx context.Context, tenantID *uuid.UUID, actor app.Actor, action string, meta map[string]any) error {
	return s.Store.InPlatform(ctx, func(tx SessionTx) error {
		return tx.InsertAudit(ctx, actor.Entry(tenantID, action, "session", "", meta))
	})
}
