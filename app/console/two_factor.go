package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"net/url"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/heraldhq/herald/app"
)

// TOTPPeriod is the length of one TOTP time step (RFC 6238's default).
const TOTPPeriod = 30

// TOTPSkew is how many steps before and after the current one a code is
// still accepted, for clocks a little apart.
const TOTPSkew = 1

// RecoveryCodeCount is how many recovery codes an enrolment hands out.
const RecoveryCodeCount = 10

// totpOpts are the parameters every authenticator app understands.
var totpOpts = totp.ValidateOpts{Period: TOTPPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// SecondFactor is a user's TOTP enrolment: the secret sealed with the
// deployment's key, the time step of the last code accepted, and when the
// user proved it with a first code (nil while enrolment is under way).
type SecondFactor struct {
	UserID      uuid.UUID  `db:"user_id"`
	TenantID    *uuid.UUID `db:"tenant_id"`
	Secret      []byte     `db:"secret"`
	KeyID       string     `db:"key_id"`
	LastStep    int64      `db:"last_step"`
	ConfirmedAt *time.Time `db:"confirmed_at"`
	CreatedAt   time.Time  `db:"created_at"`
}

// TwoFactorTx is what the second factor's service runs. Every statement
// names the user and filters on the user's tenant (nil for operators).
type TwoFactorTx interface {
	app.Tx
	InsertAudit(ctx context.Context, e *app.AuditEntry) error
	UserByID(ctx context.Context, id uuid.UUID) (*app.User, error)
	UsersByEmail(ctx context.Context, email string) ([]*app.User, error)
	TenantBySlug(ctx context.Context, slug string) (*app.Tenant, error)
	// SecondFactor returns the user's enrolment; ENOTFOUND when none.
	SecondFactor(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID) (*SecondFactor, error)
	// BeginSecondFactor stores an unconfirmed enrolment, replacing an
	// unconfirmed one; ECONFLICT when a confirmed one exists.
	BeginSecondFactor(ctx context.Context, f *SecondFactor) error
	// ConfirmSecondFactor confirms the unconfirmed enrolment, taking step
	// as its last step; ENOTFOUND when there is none to confirm.
	ConfirmSecondFactor(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID, step int64, at time.Time) error
	// TakeTimeStep raises the confirmed enrolment's last step to step when
	// it is below, and reports whether it did: a code is accepted once.
	TakeTimeStep(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID, step int64) (bool, error)
	// DeleteSecondFactor removes the confirmed enrolment and reports
	// whether there was one; the recovery codes stay.
	DeleteSecondFactor(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID) (bool, error)
	// ReplaceRecoveryCodes stores hashes as the user's only recovery codes.
	ReplaceRecoveryCodes(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID, hashes [][]byte) error
	// UseRecoveryCode marks the unused code with hash used and reports
	// whether there was one.
	UseRecoveryCode(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID, hash []byte, at time.Time) (bool, error)
	// CountRecoveryCodes returns how many unused recovery codes remain.
	CountRecoveryCodes(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID) (int, error)
	// SetTenantTwoFactor sets whether the tenant requires a second factor.
	SetTenantTwoFactor(ctx context.Context, tenantID uuid.UUID, required bool, at time.Time) error
	// TenantTwoFactor reports whether the tenant requires a second factor.
	TenantTwoFactor(ctx context.Context, tenantID uuid.UUID) (bool, error)
	// SetOperatorTwoFactor sets whether operators must have a second factor.
	SetOperatorTwoFactor(ctx context.Context, required bool, at time.Time) error
	// OperatorTwoFactor reports whether operators must have a second factor.
	OperatorTwoFactor(ctx context.Context) (bool, error)
	// ListOperators returns every operator account, oldest first.
	ListOperators(ctx context.Context) ([]*app.User, error)
	// SecurityKeys returns the user's security keys, oldest first.
	SecurityKeys(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID) ([]*SecurityKey, error)
	// DeleteSecurityKeys removes every key of the user and says how many.
	DeleteSecurityKeys(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID) (int, error)
	// BumpUserSessions ends every session of the user.
	BumpUserSessions(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID, at time.Time) error
}

// Sealer seals and opens secrets at rest; app.Sealer is one.
type Sealer interface {
	Seal(tenantID, accountID uuid.UUID, secrets map[string]string) ([]byte, string, error)
	Open(tenantID, accountID uuid.UUID, keyID string, sealed []byte) (map[string]string, error)
}

// TwoFactor enrols console users in a second factor (an authenticator
// app's TOTP codes, security keys, or both, with recovery codes), checks
// it at sign-in, and lets managers and operators require it and reset it
// for someone who lost their device.
type TwoFactor struct {
	Store  app.Store[TwoFactorTx]
	Sealer Sealer
	Now    app.Clock
	// Issuer names Herald in authenticator apps.
	Issuer string
	// Keys runs the statements of security keys and their ceremonies.
	Keys app.Store[SecurityKeyTx]
	// WebAuthn is the relying party security keys answer to (see
	// NewRelyingParty).
	WebAuthn *webauthn.WebAuthn
}

// Enrolment is an enrolment under way: the secret to type in and the
// otpauth URL a QR code carries.
type Enrolment struct {
	Secret string
	URL    string
}

// Second factors answer these when a code is wrong or a step is missing.
var (
	ErrBadSecondFactor = app.Errorf(app.EUNAUTHORIZED, "That code is wrong or was used already. Type the current code from your authenticator app, or one of your recovery codes.")
	errNotEnrolled     = app.Errorf(app.ECONFLICT, "You have no second factor.")
)

// in runs fn in the scope of the user's tenant, or the platform's for an
// operator.
func (s *TwoFactor) in(ctx context.Context, tenantID *uuid.UUID, fn func(TwoFactorTx) error) error {
	if tenantID == nil {
		return s.Store.InPlatform(ctx, fn)
	}
	return s.Store.InTenant(ctx, *tenantID, fn)
}

// sealScope is the tenant the secret is sealed under: the user's, or the
// nil uuid for an operator. The user id stands for the account id, so a
// sealed secret opens only as its own user's.
func sealScope(tenantID *uuid.UUID) uuid.UUID {
	if tenantID == nil {
		return uuid.Nil
	}
	return *tenantID
}

// Begin starts (or shows again) the enrolment of u: a new secret, sealed at
// rest, unless an unconfirmed one exists. ECONFLICT when u has a confirmed
// second factor: that one is disabled first.
func (s *TwoFactor) Begin(ctx context.Context, u *app.User) (*Enrolment, error) {
	var secret string
	err := s.in(ctx, u.TenantID, func(tx TwoFactorTx) error {
		f, err := tx.SecondFactor(ctx, u.TenantID, u.ID)
		switch {
		case err == nil && f.ConfirmedAt != nil:
			return app.Errorf(app.ECONFLICT, "You have a second factor already.")
		case err == nil:
			secret, err = s.open(u, f)
			return err
		case app.ErrorCode(err) != app.ENOTFOUND:
			return err
		}
		key, err := totp.Generate(totp.GenerateOpts{Issuer: s.issuer(), AccountName: u.Email, Period: TOTPPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
		if err != nil {
			return err
		}
		secret = key.Secret()
		sealed, keyID, err := s.Sealer.Seal(sealScope(u.TenantID), u.ID, map[string]string{"totp": secret})
		if err != nil {
			return err
		}
		return tx.BeginSecondFactor(ctx, &SecondFactor{UserID: u.ID, TenantID: u.TenantID, Secret: sealed, KeyID: keyID, CreatedAt: s.Now()})
	})
	if err != nil {
		return nil, err
	}
	return &Enrolment{Secret: secret, URL: keyURL(s.issuer(), u.Email, secret)}, nil
}

// keyURL is the otpauth URL authenticator apps read from a QR code.
func keyURL(issuer, account, secret string) string {
	v := url.Values{}
	v.Set("secret", secret)
	v.Set("issuer", issuer)
	v.Set("period", "30")
	v.Set("digits", "6")
	v.Set("algorithm", "SHA1")
	u := url.URL{Scheme: "otpauth", Host: "totp", Path: "/" + issuer + ":" + account, RawQuery: v.Encode()}
	return u.String()
}

func (s *TwoFactor) issuer() string {
	if s.Issuer == "" {
		return "Herald"
	}
	return s.Issuer
}

func (s *TwoFactor) open(u *app.User, f *SecondFactor) (string, error) {
	m, err := s.Sealer.Open(sealScope(u.TenantID), u.ID, f.KeyID, f.Secret)
	if err != nil {
		return "", err
	}
	return m["totp"], nil
}

// Confirm finishes the enrolment of u with a current code and returns the
// recovery codes, which are shown this once: only their hashes are kept.
func (s *TwoFactor) Confirm(ctx context.Context, u *app.User, code string) ([]string, error) {
	var codes []string
	err := s.in(ctx, u.TenantID, func(tx TwoFactorTx) error {
		f, err := tx.SecondFactor(ctx, u.TenantID, u.ID)
		switch {
		case app.ErrorCode(err) == app.ENOTFOUND:
			return app.Errorf(app.ECONFLICT, "This enrolment has ended. Start again.")
		case err != nil:
			return err
		case f.ConfirmedAt != nil:
			return app.Errorf(app.ECONFLICT, "You have a second factor already.")
		}
		secret, err := s.open(u, f)
		if err != nil {
			return err
		}
		step, ok := matchTOTP(secret, code, s.Now())
		if !ok {
			return app.FieldErrorf("code", "That code is wrong. Type the code your authenticator app shows now.")
		}
		now := s.Now()
		if err := tx.ConfirmSecondFactor(ctx, u.TenantID, u.ID, step, now); err != nil {
			return err
		}
		var hashes [][]byte
		codes, hashes = newRecoveryCodes()
		if err := tx.ReplaceRecoveryCodes(ctx, u.TenantID, u.ID, hashes); err != nil {
			return err
		}
		u.TwoFactorAt = &now
		return tx.InsertAudit(ctx, u.Actor().Entry(u.TenantID, "user.two_factor_enrol", "user", u.ID.String(), map[string]any{"method": "totp"}))
	})
	return codes, err
}

// Status is what the enrolment page shows of a user's second factors:
// Enrolled and ConfirmedAt are the authenticator app's, Keys the security
// keys.
type Status struct {
	Enrolled      bool
	ConfirmedAt   *time.Time
	RecoveryCodes int
	Keys          []*SecurityKey
}

// StatusOf returns u's second factor.
func (s *TwoFactor) StatusOf(ctx context.Context, u *app.User) (Status, error) {
	var st Status
	err := s.in(ctx, u.TenantID, func(tx TwoFactorTx) (err error) {
		if st.Keys, err = tx.SecurityKeys(ctx, u.TenantID, u.ID); err != nil {
			return err
		}
		f, err := tx.SecondFactor(ctx, u.TenantID, u.ID)
		switch {
		case err == nil && f.ConfirmedAt != nil:
			st.Enrolled, st.ConfirmedAt = true, f.ConfirmedAt
		case err != nil && app.ErrorCode(err) != app.ENOTFOUND:
			return err
		}
		st.RecoveryCodes, err = tx.CountRecoveryCodes(ctx, u.TenantID, u.ID)
		return err
	})
	return st, err
}

// Verify checks a code of u's second factor: a TOTP code of the current
// step (give or take TOTPSkew) not used before, when u has an
// authenticator app, or an unused recovery code, which is used up. It
// returns "totp" or "recovery_code", or ErrBadSecondFactor. Using a
// recovery code is audited.
func (s *TwoFactor) Verify(ctx context.Context, u *app.User, code string) (string, error) {
	var method string
	err := s.in(ctx, u.TenantID, func(tx TwoFactorTx) error {
		if u.TwoFactorAt == nil {
			return errNotEnrolled
		}
		f, err := tx.SecondFactor(ctx, u.TenantID, u.ID)
		if err != nil && app.ErrorCode(err) != app.ENOTFOUND {
			return err
		}
		if norm := strings.TrimSpace(code); isDigits(norm) {
			if f == nil || f.ConfirmedAt == nil {
				// Security keys only: no code of six digits is right.
				return ErrBadSecondFactor
			}
			secret, err := s.open(u, f)
			if err != nil {
				return err
			}
			step, ok := matchTOTP(secret, norm, s.Now())
			if !ok {
				return ErrBadSecondFactor
			}
			// The step is taken in one statement that only raises it, so
			// of two requests with the same code only one passes.
			if ok, err := tx.TakeTimeStep(ctx, u.TenantID, u.ID, step); err != nil || !ok {
				return cmpErr(err, ErrBadSecondFactor)
			}
			method = "totp"
			return nil
		}
		used, err := tx.UseRecoveryCode(ctx, u.TenantID, u.ID, hashRecoveryCode(code), s.Now())
		if err != nil || !used {
			return cmpErr(err, ErrBadSecondFactor)
		}
		left, err := tx.CountRecoveryCodes(ctx, u.TenantID, u.ID)
		if err != nil {
			return err
		}
		method = "recovery_code"
		return tx.InsertAudit(ctx, u.Actor().Entry(u.TenantID, "user.two_factor_recovery_used", "user", u.ID.String(), map[string]any{"remaining": left}))
	})
	return method, err
}

// cmpErr returns err when set, else fallback.
func cmpErr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

// matchTOTP returns the time step whose code is code, among the steps
// around now, comparing in constant time.
func matchTOTP(secret, code string, now time.Time) (int64, bool) {
	code = strings.TrimSpace(code)
	if len(code) != 6 || !isDigits(code) {
		return 0, false
	}
	step := now.Unix() / TOTPPeriod
	for d := int64(-TOTPSkew); d <= TOTPSkew; d++ {
		want, err := totp.GenerateCodeCustom(secret, time.Unix((step+d)*TOTPPeriod, 0), totpOpts)
		if err == nil && subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return step + d, true
		}
	}
	return 0, false
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// newRecoveryCodes returns RecoveryCodeCount codes of 16 base32
// characters (80 bits) in groups of four, and their hashes.
func newRecoveryCodes() ([]string, [][]byte) {
	codes := make([]string, RecoveryCodeCount)
	hashes := make([][]byte, RecoveryCodeCount)
	for i := range codes {
		t := rand.Text()[:16]
		codes[i] = t[:4] + "-" + t[4:8] + "-" + t[8:12] + "-" + t[12:]
		hashes[i] = hashRecoveryCode(codes[i])
	}
	return codes, hashes
}

// hashRecoveryCode hashes a recovery code as typed: case, spaces and
// dashes do not matter.
func hashRecoveryCode(code string) []byte {
	norm := strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToUpper(strings.TrimSpace(code)))
	h := sha256.Sum256([]byte("herald-recovery-code\x00" + norm))
	return h[:]
}
