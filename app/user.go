package app

import (
	"context"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"
)

// Roles of console users. Operators run the platform and belong to no tenant;
// managers and support staff belong to exactly one.
const (
	RoleOperator = "operator"
	RoleManager  = "manager"
	RoleSupport  = "support"
)

// MinPasswordLength is the shortest password Herald accepts.
const MinPasswordLength = 10

// User is a person who signs in to the console.
type User struct {
	ID             uuid.UUID  `db:"id"`
	TenantID       *uuid.UUID `db:"tenant_id"`
	Email          string     `db:"email"`
	Name           string     `db:"name"`
	PasswordHash   []byte     `db:"password_hash"`
	Role           string     `db:"role"`
	SessionVersion int        `db:"session_version"`
	DisabledAt     *time.Time `db:"disabled_at"`
	LastLoginAt    *time.Time `db:"last_login_at"`
	// MustChangePassword is set while the user signs in with a temporary
	// password a manager handed out; the console asks for a new one first.
	MustChangePassword bool      `db:"must_change_password"`
	CreatedAt          time.Time `db:"created_at"`
	UpdatedAt          time.Time `db:"updated_at"`
	// TwoFactorAt is when the user got their first second factor still
	// held (a confirmed TOTP app or a security key), nil while they have
	// none. Read only: the second factor's own statements
	// change it.
	TwoFactorAt *time.Time `db:"two_factor_at"`
	// TwoFactorRequired is set when the user's tenant (or, for an
	// operator, the platform) requires a second factor of its users.
	TwoFactorRequired bool `db:"two_factor_required"`
}

// NeedsTwoFactor reports whether the user must enrol a second factor before
// doing anything else in the console.
func (u *User) NeedsTwoFactor() bool {
	return u.TwoFactorRequired && u.TwoFactorAt == nil
}

// UserInput is what creating a user takes. TenantSlug is required for
// managers and support staff and must be empty for operators.
type UserInput struct {
	Email      string
	Name       string
	Password   string
	Role       string
	TenantSlug string
}

// ValidateRole checks that role is operator, manager or support.
func ValidateRole(role string) error {
	switch role {
	case RoleOperator, RoleManager, RoleSupport:
		return nil
	}
	return FieldErrorf("role", "Role %q is not one of operator, manager, support.", role)
}

// NormalizeEmail validates a bare e-mail address and returns it lower-cased.
func NormalizeEmail(field, s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", FieldErrorf(field, "E-mail address is required.")
	}
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Address != s || !strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".") {
		return "", FieldErrorf(field, "%q is not a valid e-mail address.", s)
	}
	return strings.ToLower(s), nil
}

// ValidatePassword checks the password policy.
func ValidatePassword(p string) error {
	switch {
	case len(p) < MinPasswordLength:
		return FieldErrorf("password", "Password must be at least %d characters long.", MinPasswordLength)
	case len(p) > 72:
		// bcrypt reads only the first 72 bytes; longer would silently ignore the rest.
		return FieldErrorf("password", "Password must be at most 72 bytes long.")
	}
	return nil
}

// UserTx lists the statements Users runs.
type UserTx interface {
	Tx
	CreateUser(ctx context.Context, u *User) error
	// UsersByEmail returns every account under the address: one person
	// may hold accounts in several tenants and among operators.
	UsersByEmail(ctx context.Context, email string) ([]*User, error)
	CountOperators(ctx context.Context) (int, error)
	TenantBySlug(ctx context.Context, slug string) (*Tenant, error)
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// Users creates and authenticates console users.
type Users struct {
	Store Store[UserTx]
	Now   Clock
	// PasswordCost is the bcrypt cost; tests lower it to stay fast.
	PasswordCost int
}

// Create validates in and stores the user with an audit entry. An address
// taken in the same tenant (or, for an operator, by another operator) is
// ECONFLICT; an unknown tenant is ENOTFOUND. Accounts in other tenants
// under the same address do not matter: identity is per tenant.
func (s *Users) Create(ctx context.Context, actor Actor, in UserInput) (*User, error) {
	email, err := NormalizeEmail("email", in.Email)
	if err != nil {
		return nil, err
	}
	role := strings.ToLower(strings.TrimSpace(in.Role))
	if err := ValidateRole(role); err != nil {
		return nil, err
	}
	slug := strings.ToLower(strings.TrimSpace(in.TenantSlug))
	switch {
	case role == RoleOperator && slug != "":
		return nil, FieldErrorf("tenant", "Operators belong to no tenant; leave the tenant out.")
	case role != RoleOperator && slug == "":
		return nil, FieldErrorf("tenant", "A %s belongs to a tenant; name it.", role)
	}
	if err := ValidatePassword(in.Password); err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(in.Password), s.HashCost())
	if err != nil {
		return nil, err
	}
	now := s.Now()
	u := &User{
		ID:           uuid.New(),
		Email:        email,
		Name:         strings.TrimSpace(in.Name),
		PasswordHash: hash,
		Role:         role,
		CreatedAt:    now,
		UpdatedAt:    now,
	}
	err = s.Store.InPlatform(ctx, func(tx UserTx) error {
		if slug != "" {
			t, err := tx.TenantBySlug(ctx, slug)
			if err != nil {
				return err
			}
			u.TenantID = &t.ID
		}
		if err := tx.CreateUser(ctx, u); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(u.TenantID, "user.create", "user", u.ID.String(), map[string]any{
			"email": u.Email, "role": u.Role,
		}))
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// CountOperators returns how many operator admins exist.
func (s *Users) CountOperators(ctx context.Context) (n int, err error) {
	err = s.Store.InPlatform(ctx, func(tx UserTx) error {
		n, err = tx.CountOperators(ctx)
		return err
	})
	return n, err
}

// CheckPassword reports whether password matches the user's hash, in constant
// time with respect to the password.
func (u *User) CheckPassword(password string) bool {
	return bcrypt.CompareHashAndPassword(u.PasswordHash, []byte(password)) == nil
}

// HashCost is the bcrypt cost of new password hashes.
func (s *Users) HashCost() int {
	if s.PasswordCost == 0 {
		return 11
	}
	return s.PasswordCost
}

// EnsureOperator creates an operator admin with the given address and
// password unless an operator with that address exists (accounts of the
// address in tenants do not count: they are other identities). It reports
// whether it created one.
func (s *Users) EnsureOperator(ctx context.Context, actor Actor, email, password string) (bool, error) {
	norm, err := NormalizeEmail("email", email)
	if err != nil {
		return false, err
	}
	var exists bool
	err = s.Store.InPlatform(ctx, func(tx UserTx) error {
		users, err := tx.UsersByEmail(ctx, norm)
		for _, u := range users {
			exists = exists || u.TenantID == nil
		}
		return err
	})
	if err != nil || exists {
		return false, err
	}
	_, err = s.Create(ctx, actor, UserInput{Email: norm, Name: "Operator", Password: password, Role: RoleOperator})
	if ErrorCode(err) == ECONFLICT {
		// Another process bootstrapped the same admin a moment ago.
		return false, nil
	}
	return err == nil, err
}

// Actor is the user as the audit log names them.
func (u *User) Actor() Actor {
	id := u.ID
	return Actor{Type: ActorUser, ID: &id, Label: u.Email}
}
