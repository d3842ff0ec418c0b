package app

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"
)

// Sign-in throttling (defaults): an account is locked for the rest of the
// window after AccountFailures failed attempts, an address after
// AddressFailures, whichever comes first. Counts live in Postgres, so every
// web process shares them.
const (
	LoginWindow          = 15 * time.Minute
	LoginAccountFailures = 5
	LoginAddressFailures = 20
)

// SessionTTL is how long a console session lasts without activity; the web
// layer renews it while the user works.
const SessionTTL = 12 * time.Hour

// SessionStore is what sign-in needs beyond reading users.
type SessionStore interface {
	// LoginFailures returns the highest count of failures recorded since
	// since under any of keys.
	LoginFailures(ctx context.Context, keys []string, since time.Time) (int, error)
	// RecordLoginFailure counts one failure under each key; a count whose
	// window started before since starts again at one.
	RecordLoginFailure(ctx context.Context, keys []string, since, at time.Time) error
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
	Store        Store
	Users        *Users
	Now          Clock
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
var ErrBadCredentials = Errorf(EUNAUTHORIZED, "E-mail address or password is wrong.")

// ErrSessionEnded answers a cookie whose user is gone, disabled, or signed
// out everywhere since it was issued.
var ErrSessionEnded = Errorf(EUNAUTHORIZED, "Your session has ended. Sign in again.")

func accountKey(email string) string { return "account:" + strings.ToLower(strings.TrimSpace(email)) }
func addressKey(ip string) string    { return "address:" + ip }

// Login checks an e-mail address and password coming from the network
// address ip. Throttled attempts are refused before the password is looked
// at; failures and successes are audited.
func (s *Sessions) Login(ctx context.Context, email, password, ip string) (*User, error) {
	accountLimit, addressLimit, window := s.limits()
	now := s.Now()
	keys := []string{accountKey(email), addressKey(ip)}

	var failures, addressFailures int
	err := s.Store.InPlatform(ctx, func(tx Tx) (err error) {
		if failures, err = tx.LoginFailures(ctx, keys[:1], now.Add(-window)); err != nil {
			return err
		}
		addressFailures, err = tx.LoginFailures(ctx, keys[1:], now.Add(-window))
		return err
	})
	if err != nil {
		return nil, err
	}
	if failures >= accountLimit || addressFailures >= addressLimit {
		_ = s.audit(ctx, nil, Actor{Type: ActorSystem, Label: ip}, "session.login_throttled", map[string]any{"email": email, "ip": ip})
		return nil, Errorf(ETOOMANY, "Too many failed sign-ins. Wait %d minutes and try again.", int(window.Minutes()))
	}

	var u *User
	err = s.Store.InPlatform(ctx, func(tx Tx) error {
		norm, err := NormalizeEmail("email", email)
		if err == nil {
			u, err = tx.UserByEmail(ctx, norm)
		}
		if err != nil && ErrorCode(err) != ENOTFOUND && ErrorCode(err) != EINVALID {
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
		err := s.Store.InPlatform(ctx, func(tx Tx) error {
			if err := tx.RecordLoginFailure(ctx, keys, now.Add(-window), now); err != nil {
				return err
			}
			var tenantID *uuid.UUID
			meta := map[string]any{"email": email, "ip": ip}
			if u != nil {
				tenantID = u.TenantID
				meta["user_id"] = u.ID.String()
			}
			return tx.InsertAudit(ctx, Actor{Type: ActorSystem, Label: ip}.Entry(tenantID, "session.login_failed", "user", email, meta))
		})
		if err != nil {
			return nil, err
		}
		return nil, ErrBadCredentials
	}

	err = s.Store.InPlatform(ctx, func(tx Tx) error {
		if err := tx.ClearLoginFailures(ctx, keys[0]); err != nil {
			return err
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
		s.dummy, _ = bcrypt.GenerateFromPassword([]byte("herald-timing-equaliser"), s.Users.cost())
	})
	return s.dummy
}

// User returns the signed-in user of a session naming userID at
// sessionVersion, or ErrSessionEnded.
func (s *Sessions) User(ctx context.Context, userID uuid.UUID, sessionVersion int) (*User, error) {
	var u *User
	err := s.Store.InPlatform(ctx, func(tx Tx) (err error) {
		u, err = tx.UserByID(ctx, userID)
		return err
	})
	switch {
	case ErrorCode(err) == ENOTFOUND:
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
func (s *Sessions) Logout(ctx context.Context, u *User) error {
	return s.Store.InPlatform(ctx, func(tx Tx) error {
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
func (s *Sessions) ChangePassword(ctx context.Context, u *User, current, next, confirm string) error {
	if !u.CheckPassword(current) {
		return FieldErrorf("current", "The current password is wrong.")
	}
	if err := ValidatePassword(next); err != nil {
		err.(*Error).Field = "new"
		return err
	}
	if next != confirm {
		return FieldErrorf("confirm", "The two new passwords differ.")
	}
	if next == current {
		return FieldErrorf("new", "The new password must differ from the current one.")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(next), s.Users.cost())
	if err != nil {
		return err
	}
	return s.Store.InPlatform(ctx, func(tx Tx) error {
		v, err := tx.SetPassword(ctx, u.ID, hash, s.Now())
		if err != nil {
			return err
		}
		u.PasswordHash, u.SessionVersion = hash, v
		return tx.InsertAudit(ctx, u.Actor().Entry(u.TenantID, "user.password_change", "user", u.ID.String(), nil))
	})
}

func (s *Sessions) audit(ctx context.Context, tenantID *uuid.UUID, actor Actor, action string, meta map[string]any) error {
	return s.Store.InPlatform(ctx, func(tx Tx) error {
		return tx.InsertAudit(ctx, actor.Entry(tenantID, action, "session", "", meta))
	})
}

// Actor is the user as the audit log names them.
func (u *User) Actor() Actor {
	id := u.ID
	return Actor{Type: ActorUser, ID: &id, Label: u.Email}
}
