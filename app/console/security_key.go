package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// CeremonyTTL is how long a security key has to answer a challenge.
const CeremonyTTL = 5 * time.Minute

// MaxSecurityKeys is how many security keys one user may register.
const MaxSecurityKeys = 10

// Ceremony purposes: adding a key, and signing in with one.
const (
	PurposeRegister = "register"
	PurposeSignIn   = "sign_in"
)

// SecurityKey is a WebAuthn credential a user registered as a second
// factor: the authenticator's credential id and public key, its signature
// counter as last seen, and the library's credential record (flags,
// transports) as JSON.
type SecurityKey struct {
	ID           uuid.UUID  `db:"id"`
	UserID       uuid.UUID  `db:"user_id"`
	TenantID     *uuid.UUID `db:"tenant_id"`
	Name         string     `db:"name"`
	CredentialID []byte     `db:"credential_id"`
	PublicKey    []byte     `db:"public_key"`
	SignCount    int64      `db:"sign_count"`
	Credential   []byte     `db:"credential"`
	CreatedAt    time.Time  `db:"created_at"`
	LastUsedAt   *time.Time `db:"last_used_at"`
}

// Ceremony is a registration or sign-in with a security key under way: the
// challenge and what else the library checks the answer against, bound to
// one session of the user (Binding, SessionVersion).
type Ceremony struct {
	UserID         uuid.UUID  `db:"user_id"`
	Purpose        string     `db:"purpose"`
	TenantID       *uuid.UUID `db:"tenant_id"`
	Binding        string     `db:"binding"`
	SessionVersion int        `db:"session_version"`
	SessionData    []byte     `db:"session_data"`
	ExpiresAt      time.Time  `db:"expires_at"`
}

// Security keys answer these when a ceremony cannot go on.
var (
	// ErrBadSecurityKey answers every refused assertion at sign-in,
	// whatever the reason (which is audited).
	ErrBadSecurityKey = app.Errorf(app.EUNAUTHORIZED, "The security key's answer was not accepted. Try again, or type a code instead.")
	// ErrCeremonyEnded answers an answer to a challenge that expired, was
	// answered already, or belongs to another session.
	ErrCeremonyEnded = app.Errorf(app.EUNAUTHORIZED, "This request to your security key has expired or was used already. Try again.")
	errNoKeys        = app.Errorf(app.ECONFLICT, "Security keys are unavailable here: the console is not served under a host name.")
)

// KeysAvailable reports whether security keys can be used: the console's
// public address is a host name.
func (s *TwoFactor) KeysAvailable() bool {
	return s.WebAuthn != nil
}

// NewRelyingParty returns the WebAuthn relying party of a console served at
// base: base's host name is the relying party id, and its origin the only
// origin accepted. Herald asks for no attestation (any key will do) and no
// user verification: the key is the second factor after a password.
func NewRelyingParty(base *url.URL, name string) (*webauthn.WebAuthn, error) {
	if base == nil || base.Host == "" {
		return nil, errors.New("security keys need the console's public base URL")
	}
	if net.ParseIP(base.Hostname()) != nil {
		return nil, fmt.Errorf("security keys need the console under a host name, not the IP address %s (HERALD_BASE_URL)", base.Hostname())
	}
	return webauthn.New(&webauthn.Config{
		RPID:                  base.Hostname(),
		RPDisplayName:         name,
		RPOrigins:             []string{base.Scheme + "://" + base.Host},
		AttestationPreference: protocol.PreferNoAttestation,
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:      protocol.ResidentKeyRequirementDiscouraged,
			UserVerification: protocol.VerificationDiscouraged,
		},
	})
}

// SecurityKeyTx is what security keys run. Every statement names the user
// and filters on the user's tenant (nil for operators).
type SecurityKeyTx interface {
	app.Tx
	InsertAudit(ctx context.Context, e *app.AuditEntry) error
	factorStore
	// InsertSecurityKey stores a new key; ECONFLICT when its credential id
	// is registered already.
	InsertSecurityKey(ctx context.Context, k *SecurityKey) error
	// DeleteSecurityKey removes and returns the user's key id; ENOTFOUND
	// when the user has no such key.
	DeleteSecurityKey(ctx context.Context, tenantID *uuid.UUID, userID, id uuid.UUID) (*SecurityKey, error)
	// TakeSignCount sets the key's signature counter to count, and its
	// last use to at, when count is above the stored one (or both are 0),
	// and reports whether it did.
	TakeSignCount(ctx context.Context, tenantID *uuid.UUID, userID, id uuid.UUID, count int64, at time.Time) (bool, error)
	// SaveCeremony stores a ceremony, replacing the user's one of the same
	// purpose.
	SaveCeremony(ctx context.Context, c *Ceremony) error
	// TakeCeremony removes and returns the user's ceremony of purpose;
	// ENOTFOUND when there is none.
	TakeCeremony(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID, purpose string) (*Ceremony, error)
}

// factorStore reads which second factors a user has and replaces their
// recovery codes; TwoFactorTx and SecurityKeyTx both do.
type factorStore interface {
	SecondFactor(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID) (*SecondFactor, error)
	SecurityKeys(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID) ([]*SecurityKey, error)
	ReplaceRecoveryCodes(ctx context.Context, tenantID *uuid.UUID, userID uuid.UUID, hashes [][]byte) error
}

// keysIn runs fn in the scope of the user's tenant, or the platform's for
// an operator.
func (s *TwoFactor) keysIn(ctx context.Context, tenantID *uuid.UUID, fn func(SecurityKeyTx) error) error {
	if tenantID == nil {
		return s.Keys.InPlatform(ctx, fn)
	}
	return s.Keys.InTenant(ctx, *tenantID, fn)
}

// keyUser is a user as the WebAuthn library sees them: the user handle is
// the user id, the credentials their registered keys.
type keyUser struct {
	u     *app.User
	keys  []*SecurityKey
	creds []webauthn.Credential
}

func newKeyUser(u *app.User, keys []*SecurityKey) (*keyUser, error) {
	ku := &keyUser{u: u, keys: keys}
	for _, k := range keys {
		var c webauthn.Credential
		if err := json.Unmarshal(k.Credential, &c); err != nil {
			return nil, fmt.Errorf("security key %s: %w", k.ID, err)
		}
		// The row's columns are the truth; the record only adds flags
		// and transports.
		c.ID, c.PublicKey, c.Authenticator.SignCount = k.CredentialID, k.PublicKey, uint32(k.SignCount)
		ku.creds = append(ku.creds, c)
	}
	return ku, nil
}

func (k *keyUser) WebAuthnID() []byte                         { return k.u.ID[:] }
func (k *keyUser) WebAuthnName() string                       { return k.u.Email }
func (k *keyUser) WebAuthnCredentials() []webauthn.Credential { return k.creds }
func (k *keyUser) WebAuthnDisplayName() string {
	if k.u.Name != "" {
		return k.u.Name
	}
	return k.u.Email
}

// keyOf returns the key whose credential id is id, or nil.
func (k *keyUser) keyOf(id []byte) *SecurityKey {
	for _, key := range k.keys {
		if string(key.CredentialID) == string(id) {
			return key
		}
	}
	return nil
}

func (s *TwoFactor) keyUser(ctx context.Context, tx SecurityKeyTx, u *app.User) (*keyUser, error) {
	keys, err := tx.SecurityKeys(ctx, u.TenantID, u.ID)
	if err != nil {
		return nil, err
	}
	return newKeyUser(u, keys)
}

// startCeremony stores the session data of a ceremony of u bound to
// binding, replacing one of the same purpose.
func (s *TwoFactor) startCeremony(ctx context.Context, tx SecurityKeyTx, u *app.User, purpose, binding string, sd *webauthn.SessionData) error {
	data, err := json.Marshal(sd)
	if err != nil {
		return err
	}
	return tx.SaveCeremony(ctx, &Ceremony{UserID: u.ID, Purpose: purpose, TenantID: u.TenantID, Binding: binding,
		SessionVersion: u.SessionVersion, SessionData: data, ExpiresAt: s.Now().Add(CeremonyTTL)})
}

// takeCeremony removes u's ceremony of purpose, in a transaction of its own
// so that it is gone whatever comes of the answer, and returns its session
// data when it belongs to binding, u's current session and has not
// expired; ErrCeremonyEnded otherwise.
func (s *TwoFactor) takeCeremony(ctx context.Context, u *app.User, purpose, binding string) (*webauthn.SessionData, error) {
	var c *Ceremony
	err := s.keysIn(ctx, u.TenantID, func(tx SecurityKeyTx) (err error) {
		c, err = tx.TakeCeremony(ctx, u.TenantID, u.ID, purpose)
		return err
	})
	switch {
	case app.ErrorCode(err) == app.ENOTFOUND:
		return nil, ErrCeremonyEnded
	case err != nil:
		return nil, err
	case binding == "" || c.Binding != binding || c.SessionVersion != u.SessionVersion || !s.Now().Before(c.ExpiresAt):
		return nil, ErrCeremonyEnded
	}
	var sd webauthn.SessionData
	if err := json.Unmarshal(c.SessionData, &sd); err != nil {
		return nil, fmt.Errorf("ceremony of %s: %w", u.ID, err)
	}
	return &sd, nil
}

// BeginKeyRegistration starts adding a security key for u in the session
// binding names, and returns the options navigator.credentials.create
// takes. The keys u has are excluded, so one key is not added twice.
func (s *TwoFactor) BeginKeyRegistration(ctx context.Context, u *app.User, binding string) (*protocol.CredentialCreation, error) {
	if !s.KeysAvailable() {
		return nil, errNoKeys
	}
	var creation *protocol.CredentialCreation
	err := s.keysIn(ctx, u.TenantID, func(tx SecurityKeyTx) error {
		ku, err := s.keyUser(ctx, tx, u)
		if err != nil {
			return err
		}
		if len(ku.keys) >= MaxSecurityKeys {
			return app.Errorf(app.ECONFLICT, "You have %d security keys, the most there may be. Remove one first.", MaxSecurityKeys)
		}
		var sd *webauthn.SessionData
		creation, sd, err = s.WebAuthn.BeginRegistration(ku, webauthn.WithExclusions(webauthn.Credentials(ku.creds).CredentialDescriptors()))
		if err != nil {
			return fmt.Errorf("begin key registration: %w", err)
		}
		return s.startCeremony(ctx, tx, u, PurposeRegister, binding, sd)
	})
	return creation, err
}

// validKeyName checks the name a user gives a key.
func validKeyName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", app.FieldErrorf("name", "Name the key, so you can tell it from others (say, “YubiKey blue”).")
	case utf8.RuneCountInString(name) > 64:
		return "", app.FieldErrorf("name", "The name is too long: 64 characters at most.")
	}
	return name, nil
}

// FinishKeyRegistration adds the security key whose answer to the
// registration ceremony of binding is response (the credential's JSON as
// the browser gives it). When it is u's first second factor, it returns
// the recovery codes too, shown this once.
func (s *TwoFactor) FinishKeyRegistration(ctx context.Context, u *app.User, binding, name string, response []byte) (*SecurityKey, []string, error) {
	if !s.KeysAvailable() {
		return nil, nil, errNoKeys
	}
	name, err := validKeyName(name)
	if err != nil {
		return nil, nil, err
	}
	sd, err := s.takeCeremony(ctx, u, PurposeRegister, binding)
	if err != nil {
		return nil, nil, err
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return nil, nil, app.FieldErrorf("credential", "The security key's answer could not be read. Try again.")
	}
	var key *SecurityKey
	var codes []string
	err = s.keysIn(ctx, u.TenantID, func(tx SecurityKeyTx) error {
		ku, err := s.keyUser(ctx, tx, u)
		if err != nil {
			return err
		}
		cred, err := s.WebAuthn.CreateCredential(ku, *sd, parsed)
		if err != nil {
			return app.FieldErrorf("credential", "The security key's answer was not accepted (%s). Try again.", protocolReason(err))
		}
		record, err := json.Marshal(cred)
		if err != nil {
			return err
		}
		now := s.Now()
		key = &SecurityKey{ID: uuid.New(), UserID: u.ID, TenantID: u.TenantID, Name: name, CredentialID: cred.ID,
			PublicKey: cred.PublicKey, SignCount: int64(cred.Authenticator.SignCount), Credential: record, CreatedAt: now}
		if err := tx.InsertSecurityKey(ctx, key); err != nil {
			return err
		}
		if u.TwoFactorAt == nil {
			// The first second factor: recovery codes for when the key
			// is lost, as an authenticator app's enrolment hands out.
			var hashes [][]byte
			codes, hashes = newRecoveryCodes()
			if err := tx.ReplaceRecoveryCodes(ctx, u.TenantID, u.ID, hashes); err != nil {
				return err
			}
			u.TwoFactorAt = &now
		}
		return tx.InsertAudit(ctx, u.Actor().Entry(u.TenantID, "user.security_key_add", "user", u.ID.String(),
			map[string]any{"key_id": key.ID.String(), "name": name, "method": "security_key"}))
	})
	if err != nil {
		return nil, nil, err
	}
	return key, codes, nil
}

// protocolReason is what a WebAuthn error says, for the person trying.
func protocolReason(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Details != "" {
		return pe.Details
	}
	return err.Error()
}

// BeginKeySignIn starts the sign-in of u with one of their security keys,
// in the sign-in binding names, and returns the options
// navigator.credentials.get takes. ECONFLICT when u has no key.
func (s *TwoFactor) BeginKeySignIn(ctx context.Context, u *app.User, binding string) (*protocol.CredentialAssertion, error) {
	if !s.KeysAvailable() {
		return nil, errNoKeys
	}
	var assertion *protocol.CredentialAssertion
	err := s.keysIn(ctx, u.TenantID, func(tx SecurityKeyTx) error {
		ku, err := s.keyUser(ctx, tx, u)
		if err != nil {
			return err
		}
		if len(ku.keys) == 0 {
			return app.Errorf(app.ECONFLICT, "You have no security key. Type a code instead.")
		}
		var sd *webauthn.SessionData
		assertion, sd, err = s.WebAuthn.BeginLogin(ku, webauthn.WithUserVerification(protocol.VerificationDiscouraged))
		if err != nil {
			return fmt.Errorf("begin key sign-in: %w", err)
		}
		return s.startCeremony(ctx, tx, u, PurposeSignIn, binding, sd)
	})
	return assertion, err
}

// VerifyKey checks response, an assertion answering u's sign-in ceremony
// of binding, and returns the key that made it. The key's signature
// counter must move forward (or stay at 0 for keys without one): it is
// raised in one statement, so a cloned key or a replayed answer is
// refused. Every refusal is audited with its reason and answers
// ErrBadSecurityKey (ErrCeremonyEnded for a ceremony gone).
func (s *TwoFactor) VerifyKey(ctx context.Context, u *app.User, binding string, response []byte) (*SecurityKey, error) {
	if !s.KeysAvailable() {
		return nil, errNoKeys
	}
	sd, err := s.takeCeremony(ctx, u, PurposeSignIn, binding)
	if err != nil {
		if errors.Is(err, ErrCeremonyEnded) {
			return nil, s.refuseKey(ctx, u, nil, "challenge_ended", err)
		}
		return nil, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return nil, s.refuseKey(ctx, u, nil, "unreadable", ErrBadSecurityKey)
	}
	var key *SecurityKey
	var reason string
	err = s.keysIn(ctx, u.TenantID, func(tx SecurityKeyTx) error {
		ku, err := s.keyUser(ctx, tx, u)
		if err != nil {
			return err
		}
		// A credential not among u's keys (unknown, or someone else's)
		// is refused before the library looks at it.
		if key = ku.keyOf(parsed.RawID); key == nil {
			reason = "unknown_credential"
			return nil
		}
		cred, err := s.WebAuthn.ValidateLogin(ku, *sd, parsed)
		switch {
		case err != nil:
			reason = "assertion: " + protocolReason(err)
			return nil
		case cred.Authenticator.CloneWarning:
			reason = "counter_not_increased"
			return nil
		}
		ok, err := tx.TakeSignCount(ctx, u.TenantID, u.ID, key.ID, int64(parsed.Response.AuthenticatorData.Counter), s.Now())
		if err != nil {
			return err
		}
		if !ok {
			reason = "counter_not_increased"
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case reason != "":
		return nil, s.refuseKey(ctx, u, key, reason, ErrBadSecurityKey)
	}
	return key, nil
}

// refuseKey audits a refused assertion of u (with the key it named, when
// it is theirs) and returns answer.
func (s *TwoFactor) refuseKey(ctx context.Context, u *app.User, key *SecurityKey, reason string, answer error) error {
	meta := map[string]any{"reason": reason}
	if key != nil {
		meta["key_id"], meta["name"] = key.ID.String(), key.Name
	}
	err := s.keysIn(ctx, u.TenantID, func(tx SecurityKeyTx) error {
		return tx.InsertAudit(ctx, u.Actor().Entry(u.TenantID, "user.security_key_refused", "user", u.ID.String(), meta))
	})
	if err != nil {
		return err
	}
	return answer
}

// removeKey deletes u's key id, and u's recovery codes when no second
// factor is left, and audits it.
func (s *TwoFactor) removeKey(ctx context.Context, u *app.User, id uuid.UUID) (*SecurityKey, error) {
	var key *SecurityKey
	err := s.keysIn(ctx, u.TenantID, func(tx SecurityKeyTx) (err error) {
		if key, err = tx.DeleteSecurityKey(ctx, u.TenantID, u.ID, id); err != nil {
			return err
		}
		if err := s.dropCodesWhenNoFactor(ctx, tx, u); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, u.Actor().Entry(u.TenantID, "user.security_key_remove", "user", u.ID.String(),
			map[string]any{"key_id": key.ID.String(), "name": key.Name}))
	})
	return key, err
}

// dropCodesWhenNoFactor removes u's recovery codes once u has neither an
// authenticator app nor a security key: codes stand in for a second
// factor, and with none left they would be a way in of their own.
func (s *TwoFactor) dropCodesWhenNoFactor(ctx context.Context, tx factorStore, u *app.User) error {
	keys, err := tx.SecurityKeys(ctx, u.TenantID, u.ID)
	if err != nil {
		return err
	}
	f, err := tx.SecondFactor(ctx, u.TenantID, u.ID)
	switch {
	case err != nil && app.ErrorCode(err) != app.ENOTFOUND:
		return err
	case len(keys) > 0:
		u.TwoFactorAt = &keys[0].CreatedAt
		return nil
	case err == nil && f.ConfirmedAt != nil:
		u.TwoFactorAt = f.ConfirmedAt
		return nil
	}
	u.TwoFactorAt = nil
	return tx.ReplaceRecoveryCodes(ctx, u.TenantID, u.ID, nil)
}
