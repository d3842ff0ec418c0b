package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// apiKeyPrefix marks Herald API keys so that secret scanners and people
// recognise them.
const apiKeyPrefix = "hk_"

// apiKeyVisible is how many leading characters of a secret are stored in the
// clear, so that a key can be recognised in lists without revealing it.
const apiKeyVisible = len(apiKeyPrefix) + 8

// apiKeyTouchEvery limits how often last_used_at is written, so that a busy
// key does not turn every request into a write.
const apiKeyTouchEvery = time.Minute

// APIKey lets a tenant's systems call the API. Only a SHA-256 hash of the
// secret is stored; the secret itself is shown once, at creation.
type APIKey struct {
	ID         uuid.UUID  `db:"id"`
	TenantID   uuid.UUID  `db:"tenant_id"`
	Name       string     `db:"name"`
	Prefix     string     `db:"prefix"`
	Hash       []byte     `db:"hash"`
	CreatedBy  *uuid.UUID `db:"created_by"`
	LastUsedAt *time.Time `db:"last_used_at"`
	RevokedAt  *time.Time `db:"revoked_at"`
	CreatedAt  time.Time  `db:"created_at"`
	// Scopes say what the key may do through the API (ScopeSend, ...).
	Scopes StringList `db:"scopes"`
	// TenantStatus is the status of the key's tenant, filled in by the
	// lookup that authenticates a request.
	TenantStatus string `db:"tenant_status"`
	// TenantLocale and TenantTimezone are the tenant's default locale and
	// time zone, filled in by the same lookup: intake's limits count in the
	// tenant's country and day (intake_limits.go).
	TenantLocale   string `db:"tenant_locale"`
	TenantTimezone string `db:"tenant_timezone"`
}

// API key scopes: what a key may do through the API. Every /api/v1 route
// requires exactly one of them.
const (
	// ScopeSend submits notifications and resends messages.
	ScopeSend = "send"
	// ScopeRead reads everything the API shows (GET).
	ScopeRead = "read"
	// ScopeManage changes what a manager changes in the console: templates,
	// channel accounts, delivery deadlines, confirmation windows, contacts,
	// callback endpoints, and reschedules and cancels scheduled
	// notifications.
	ScopeManage = "manage"
	// ScopeApprove approves and rejects notifications awaiting approval.
	ScopeApprove = "approve"
)

// Scopes lists every scope, in the order the console shows them.
var Scopes = []string{ScopeSend, ScopeRead, ScopeManage, ScopeApprove}

// DefaultScopes are what a key made without naming scopes may do, and what
// keys made before scopes existed kept: what a booking system needs.
var DefaultScopes = []string{ScopeSend, ScopeRead}

// scopePermissions is what each scope lets a key do through the services
// the console shares with the API, in the console's vocabulary. The API's
// routes check the scope first; the services check these permissions
// again, so a route that forgot its scope still cannot change anything.
var scopePermissions = map[string][]Permission{
	ScopeSend:    {PermResend, PermReply},
	ScopeRead:    {PermMessages, PermSchedules, PermAddresses, PermViewTemplates, PermViewChannels},
	ScopeManage:  {PermTemplates, PermChannels, PermManageSchedules},
	ScopeApprove: {PermApprove},
}

// ScopeDescriptions says what each scope allows, for people choosing them.
var ScopeDescriptions = map[string]string{
	ScopeSend:    "submit notifications, resend messages and answer passengers' conversations",
	ScopeRead:    "read notifications, messages, templates, channel accounts, schedules and approvals",
	ScopeManage:  "change templates, channel accounts, delivery deadlines, confirmation windows, contacts and callback endpoints; reschedule and cancel notifications",
	ScopeApprove: "approve or reject notifications awaiting approval (never ones the same key submitted)",
}

// NormalizeScopes checks a choice of scopes: at least one, each known. It
// returns them without repeats in the order of Scopes.
func NormalizeScopes(in []string) ([]string, error) {
	want := map[string]bool{}
	for _, s := range in {
		s = strings.ToLower(strings.TrimSpace(s))
		if !slices.Contains(Scopes, s) {
			return nil, &Error{Code: EINVALID, Reason: "unknown_scope", Field: "scopes",
				Message: fmt.Sprintf("%q is not a scope; choose from %s.", s, strings.Join(Scopes, ", "))}
		}
		want[s] = true
	}
	if len(want) == 0 {
		return nil, &Error{Code: EINVALID, Reason: "missing_scope", Field: "scopes",
			Message: "Choose at least one scope: what the key may do."}
	}
	out := make([]string, 0, len(want))
	for _, s := range Scopes {
		if want[s] {
			out = append(out, s)
		}
	}
	return out, nil
}

// HasScope reports whether the key holds scope s.
func (k *APIKey) HasScope(s string) bool {
	return k != nil && slices.Contains(k.Scopes, s)
}

// Can reports whether one of the key's scopes allows permission p. With
// Actor and CanOpenTenant it makes a key a Principal, so the API calls the
// console's services under the same checks.
func (k *APIKey) Can(p Permission) bool {
	if k == nil || k.RevokedAt != nil {
		return false
	}
	for _, s := range k.Scopes {
		if slices.Contains(scopePermissions[s], p) {
			return true
		}
	}
	return false
}

// CanOpenTenant reports whether the key works in the tenant: its own only.
func (k *APIKey) CanOpenTenant(tenantID uuid.UUID) bool {
	return k != nil && k.TenantID == tenantID
}

// Actor is the key as the audit log names it.
func (k *APIKey) Actor() Actor {
	id := k.ID
	return Actor{Type: ActorAPIKey, ID: &id, Label: k.Name + " (" + k.Prefix + "…)"}
}

// HashAPIKey returns the stored form of an API key secret.
func HashAPIKey(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// newAPIKeySecret returns a fresh secret: the prefix and 26 characters of
// base32 from crypto/rand (128 bits).
func newAPIKeySecret() string {
	return apiKeyPrefix + rand.Text()
}

// APIKeyLookup finds a key by the hash of its secret in one round trip;
// it runs on every API request.
type APIKeyLookup interface {
	APIKeyByHash(ctx context.Context, hash []byte) (*APIKey, error)
}

// apiKeyCacheMax bounds the authentication cache; past it the cache starts
// over, so that a flood of distinct valid keys cannot grow it without end.
const apiKeyCacheMax = 10000

// APIKeyTx lists the statements APIKeys runs.
type APIKeyTx interface {
	Tx
	CreateAPIKey(ctx context.Context, k *APIKey) error
	TouchAPIKey(ctx context.Context, tenantID, id uuid.UUID, at time.Time) error
	RevokeAPIKey(ctx context.Context, tenantID, id uuid.UUID, at time.Time) (k *APIKey, revoked bool, err error)
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// APIKeys creates, authenticates and revokes API keys.
type APIKeys struct {
	Store  Store[APIKeyTx]
	Lookup APIKeyLookup
	Now    Clock
	// CacheTTL is how long an authenticated key is trusted without asking
	// the database again; 0 asks on every request. Revoke drops the key from
	// this process's cache at once; other processes stop accepting it within
	// CacheTTL.
	CacheTTL time.Duration

	mu    sync.Mutex
	cache map[string]cachedAPIKey // by hash of the secret, never the secret
	// revocations counts Revoke calls, so that a lookup that started before
	// a revocation does not put the key back into the cache after it.
	revocations uint64
	// touching holds, by key, when this process last set out to write
	// last_used_at, so that one request a minute writes it: the requests
	// that arrive while it is written go on without it, instead of
	// queueing on the key's row lock behind each other.
	touching map[uuid.UUID]time.Time
}

type cachedAPIKey struct {
	key     APIKey
	expires time.Time
}

// Create makes a key named name for the tenant with the scopes (none:
// DefaultScopes) and returns it with its secret, which is not stored and
// cannot be shown again.
func (s *APIKeys) Create(ctx context.Context, actor Actor, tenantID uuid.UUID, name string, scopes ...string) (*APIKey, string, error) {
	if len(scopes) == 0 {
		scopes = DefaultScopes
	}
	scopes, err := NormalizeScopes(scopes)
	if err != nil {
		return nil, "", err
	}
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return nil, "", FieldErrorf("name", "Name is required (say which system uses the key).")
	case len(name) > 100:
		return nil, "", FieldErrorf("name", "Name must be at most 100 characters.")
	}
	secret := newAPIKeySecret()
	k := &APIKey{
		ID:        uuid.New(),
		TenantID:  tenantID,
		Name:      name,
		Prefix:    secret[:apiKeyVisible],
		Hash:      HashAPIKey(secret),
		CreatedBy: actor.ID,
		CreatedAt: s.Now(),
		Scopes:    scopes,
	}
	err = s.Store.InTenant(ctx, tenantID, func(tx APIKeyTx) error {
		if err := tx.CreateAPIKey(ctx, k); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "api_key.create", "api_key", k.ID.String(), map[string]any{
			"name": k.Name, "prefix": k.Prefix, "scopes": scopes,
		}))
	})
	if err != nil {
		return nil, "", err
	}
	return k, secret, nil
}

// Authenticate resolves a secret to its key. Unknown, malformed and revoked
// secrets are all EUNAUTHORIZED with the same message, so a caller learns
// nothing about which keys exist. A key that authenticated within CacheTTL
// is answered from memory; only valid keys are cached.
func (s *APIKeys) Authenticate(ctx context.Context, secret string) (*APIKey, error) {
	denied := Errorf(EUNAUTHORIZED, "The API key is missing, unknown or revoked.")
	if !strings.HasPrefix(secret, apiKeyPrefix) || len(secret) < apiKeyVisible+16 || len(secret) > 200 {
		return nil, denied
	}
	hash := HashAPIKey(secret)
	now := s.Now()
	k, gen, cached := s.cached(hash, now)
	if !cached {
		var err error
		if k, err = s.Lookup.APIKeyByHash(ctx, hash); ErrorCode(err) == ENOTFOUND {
			return nil, denied
		} else if err != nil {
			return nil, err
		}
	}
	if k.RevokedAt != nil {
		return nil, denied
	}
	if k.TenantStatus == TenantSuspended {
		return nil, ErrTenantSuspended
	}
	touched := false
	if (k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) > apiKeyTouchEvery) && s.claimTouch(k.ID, now) {
		err := s.Store.InTenant(ctx, k.TenantID, func(tx APIKeyTx) error { return tx.TouchAPIKey(ctx, k.TenantID, k.ID, now) })
		if err != nil {
			s.releaseTouch(k.ID)
		}
		if ErrorCode(err) == ENOTFOUND {
			return nil, denied
		} else if err != nil {
			return nil, err
		}
		k.LastUsedAt, touched = &now, true
	}
	if !cached || touched {
		s.remember(hash, k, gen, now)
	}
	return k, nil
}

// ErrTenantSuspended refuses the API keys of a suspended tenant: the key is
// valid, so the answer says why it is refused, and nothing is accepted.
var ErrTenantSuspended = &Error{
	Code: EFORBIDDEN, Reason: "tenant_suspended",
	Message: "This tenant is suspended: Herald accepts no requests from its API keys. Contact your Herald operator.",
}

// claimTouch reports whether this request writes the key's last_used_at:
// true for one request per key and apiKeyTouchEvery in this process.
func (s *APIKeys) claimTouch(keyID uuid.UUID, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.touching[keyID]; ok && now.Sub(at) <= apiKeyTouchEvery {
		return false
	}
	if s.touching == nil || len(s.touching) >= apiKeyCacheMax {
		s.touching = make(map[uuid.UUID]time.Time)
	}
	s.touching[keyID] = now
	return true
}

// releaseTouch lets the next request write last_used_at after this one
// failed to.
func (s *APIKeys) releaseTouch(keyID uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.touching, keyID)
}

// cached returns a copy of the cached key of hash while it is fresh, and
// the revocation count to pass to remember.
func (s *APIKeys) cached(hash []byte, now time.Time) (*APIKey, uint64, bool) {
	if s.CacheTTL <= 0 {
		return nil, 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cache[string(hash)]
	if !ok || !now.Before(c.expires) {
		return nil, s.revocations, false
	}
	k := c.key
	return &k, s.revocations, true
}

// remember caches a copy of k, unless a key was revoked since the lookup
// began (gen). A refresh keeps the entry's expiry, so that a busy key is
// still re-read from the database every CacheTTL.
func (s *APIKeys) remember(hash []byte, k *APIKey, gen uint64, now time.Time) {
	if s.CacheTTL <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.revocations {
		return
	}
	if s.cache == nil || len(s.cache) >= apiKeyCacheMax {
		s.cache = make(map[string]cachedAPIKey)
	}
	expires := now.Add(s.CacheTTL)
	if c, ok := s.cache[string(hash)]; ok && now.Before(c.expires) {
		expires = c.expires
	}
	s.cache[string(hash)] = cachedAPIKey{key: *k, expires: expires}
}

// forget drops a key from the cache and keeps lookups that are under way
// from caching it again.
func (s *APIKeys) forget(keyID uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revocations++
	for h, c := range s.cache {
		if c.key.ID == keyID {
			delete(s.cache, h)
		}
	}
}

// ForgetTenant drops the tenant's keys from the cache, after a change to
// the tenant that decides whether its keys are accepted (suspension).
func (s *APIKeys) ForgetTenant(tenantID uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revocations++
	for h, c := range s.cache {
		if c.key.TenantID == tenantID {
			delete(s.cache, h)
		}
	}
}

// Revoke makes the key unusable from now on and returns it. Revoking twice
// is harmless and audited once. A key of another tenant is ENOTFOUND.
func (s *APIKeys) Revoke(ctx context.Context, actor Actor, tenantID, keyID uuid.UUID) (*APIKey, error) {
	var k *APIKey
	err := s.Store.InTenant(ctx, tenantID, func(tx APIKeyTx) error {
		var revoked bool
		var err error
		if k, revoked, err = tx.RevokeAPIKey(ctx, tenantID, keyID, s.Now()); err != nil || !revoked {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "api_key.revoke", "api_key", keyID.String(), map[string]any{
			"name": k.Name, "prefix": k.Prefix,
		}))
	})
	// After the commit, so that no lookup can cache the key from the row
	// as it was before the revocation.
	s.forget(keyID)
	if err != nil {
		return nil, err
	}
	return k, nil
}
