package console

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"github.com/heraldhq/herald/app"
)

// Sign-in throttling (defaults): an account is locked for the rest of the
// window after AccountFailures failed attempts, an address after
// AddressFailures, whichever comes first. Counts live in Postgres, so every
// web process shares them. An attempt is counted before its password is
// checked, so parallel attempts cannot all slip under the limit.
const (
	LoginWindow          = 15 * time.Minute
	LoginAccountFailures = 5
	LoginAddressFailures = 20
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
	UserByEmail(ctx context.Context, email string) (*app.User, error)
	// CountLoginAttempt counts one attempt under each key in a single
	// atomic step and returns every key's count; a count whose window
	// started before since starts again at one.
	CountLoginAttempt(ctx context.Context, keys []string, since, at time.Time) (map[string]int, error)
	// ReleaseLoginAttempt takes back one attempt counted under key.
	ReleaseLoginAttempt(ctx context.Context, key string) error
	ClearLoginFailures(ctx context.Context, key string) error
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
	Store        app.Store[SessionTx]
	Users        *app.Users
	Now          app.Clock
	AccountLimit int
	AddressLimit int
	Window       time.Duration

	dummyOnce sync.Once
	dummy     []byte
}

func (s *Sessions) limits() (account, address int, window time.Duration) {
	account, address, window = s.AccountLimit, s.AddressLimit, s.Window
	if account == 0 {
		account = LoginAccountFailures
	}
	if address == 0 {
		address = LoginAddressFailures
	}
	if window == 0 {
		window = LoginWindow
	}
	return account, address, window
}

// ErrBadCredentials is what every failed sign-in answers, whether the
// address is unknown, the password wrong or the user disabled, so that the
// answer tells an attacker nothing.
var ErrBadCredentials = app.Errorf(app.EUNAUTHORIZED, "E-mail address or password is wrong.")

// ErrSessionEnded answers a cookie whose user is gone, disabled, or signed
// out everywhere since it was issued.
var ErrSessionEnded = app.Errorf(app.EUNAUTHORIZED, "Your session has ended. Sign in again.")

func accountKey(email string) string { return "account:" + strings.ToLower(strings.TrimSpace(email)) }
func addressKey(ip string) string    { return "address:" + ip }

// errThrottled answers a sign-in or password check refused because too
// many attempts failed within the window.
func errThrottled(window time.Duration) error {
	return app.Errorf(app.ETOOMANY, "Too many failed sign-ins. Wait %d minutes and try again.", int(window.Minutes()))
}

// countAttempt counts one attempt under the account key of email and, when
// ip is known, under the address key of ip, before any password is looked
// at. It reports whether either count is now over its limit.
func (s *Sessions) countAttempt(ctx context.Context, email, ip string) (throttled bool, err error) {
	accountLimit, addressLimit, window := s.limits()
	now := s.Now()
	keys := []string{accountKey(email)}
	if ip != "" {
		keys = append(keys, addressKey(ip))
	}
	var counts map[string]int
	err = s.Store.InPlatform(ctx, func(tx SessionTx) (err error) {
		counts, err = tx.CountLoginAttempt(ctx, keys, now.Add(-window), now)
		return err
	})
	if err != nil {
		return false, err
	}
	return counts[keys[0]] > accountLimit || ip != "" && counts[addressKey(ip)] > addressLimit, nil
}

// Login checks an e-mail address and password coming from the network
// address ip (empty when unknown: then only the account is throttled).
// Every attempt is counted first, atomically; throttled attempts are refused
// before the password is looked at. Failures and successes are audited.
func (s *Sessions) Login(ctx context.Context, email, password, ip string) (*app.User, error) {
	_, _, window := s.limits()
	now := s.Now()

	throttled, err := s.countAttempt(ctx, email, ip)
	if err != nil {
		return nil, err
	}
	if throttled {
		_ = s.audit(ctx, nil, app.Actor{Type: app.ActorSystem, Label: ip}, "session.login_throttled", map[string]any{"email": email, "ip": ip})
		return nil, errThrottled(window)
	}

	var u *app.User
	err = s.Store.InPlatform(ctx, func(tx SessionTx) error {
		norm, err := app.NormalizeEmail("email", email)
		if err == nil {
			u, err = tx.UserByEmail(ctx, norm)
		}
		if err != nil && app.ErrorCode(err) != app.ENOTFOUND && app.ErrorCode(err) != app.EINVALID {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if u == nil {
		// Spend the time a real check takes, so timing does not tell
		// which addresses exist.
		_ = bcrypt.CompareHashAndPassword(s.dummyHash(), []byte(password))
	}
	if u == nil || !u.CheckPassword(password) || u.DisabledAt != nil {
		// The attempt stays counted as a failure.
		var tenantID *uuid.UUID
		meta := map[string]any{"email": email, "ip": ip}
		if u != nil {
			tenantID = u.TenantID
			meta["user_id"] = u.ID.String()
		}
		err := s.Store.InPlatform(ctx, func(tx SessionTx) error {
			return tx.InsertAudit(ctx, app.Actor{Type: app.ActorSystem, Label: ip}.Entry(tenantID, "session.login_failed", "user", email, meta))
		})
		if err != nil {
			return nil, err
		}
		return nil, ErrBadCredentials
	}

	err = s.Store.InPlatform(ctx, func(tx SessionTx) error {
		// A success clears the account's count and takes back the attempt
		// counted under the address, so that many people signing in from
		// one office do not lock it.
		if err := tx.ClearLoginFailures(ctx, accountKey(email)); err != nil {
			return err
		}
		if ip != "" {
			if err := tx.ReleaseLoginAttempt(ctx, addressKey(ip)); err != nil {
				return err
			}
		}
		if err := tx.RecordLogin(ctx, u.ID, now); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, u.Actor().Entry(u.TenantID, "session.login", "user", u.ID.String(), map[string]any{"ip": ip}))
	})
	if err != nil {
		return nil, err
	}
	u.LastLoginAt = &now
	return u, nil
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
// Checks of the current password count under the account like sign-ins do,
// so a stolen session cannot be used to guess the password.
func (s *Sessions) ChangePassword(ctx context.Context, u *app.User, current, next, confirm string) error {
	_, _, window := s.limits()
	throttled, err := s.countAttempt(ctx, u.Email, "")
	if err != nil {
		return err
	}
	if throttled {
		_ = s.audit(ctx, u.TenantID, u.Actor(), "user.password_change_throttled", nil)
		return errThrottled(window)
	}
	if !u.CheckPassword(current) {
		return app.FieldErrorf("current", "The current password is wrong.")
	}
	if err := s.Store.InPlatform(ctx, func(tx SessionTx) error {
		return tx.ClearLoginFailures(ctx, accountKey(u.Email))
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
