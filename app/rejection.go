package app

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// APIRejection is one rejected API request as the tenant's Requests page
// shows it: what was asked (the body redacted), what Herald answered, when.
// It is kept so that a tenant can find out why nothing was sent without
// asking Herald's operators for their logs.
type APIRejection struct {
	ID       uuid.UUID `db:"id"`
	TenantID uuid.UUID `db:"tenant_id"`
	At       time.Time `db:"at"`
	Method   string    `db:"method"`
	Path     string    `db:"path"`
	// Status is the HTTP status of the answer; Code, Message and Field its
	// error.
	Status  int     `db:"status"`
	Code    string  `db:"code"`
	Message string  `db:"message"`
	Field   *string `db:"field"`
	// EventID is the event id the body names (event_id), if any.
	EventID *string `db:"event_id"`
	// KeyPrefix is the visible prefix of the API key the request carried.
	KeyPrefix *string `db:"api_key_prefix"`
	RequestID string  `db:"request_id"`
	// Body is the request body redacted by RedactBody; BodySize is the size
	// of the body as it was sent.
	Body     string `db:"body"`
	BodySize int    `db:"body_size"`
	// Suppressed counts the tenant's rejections not kept just before this
	// one because they came faster than RejectionRate.
	Suppressed int `db:"suppressed"`
}

// DefaultRejectionCap is how many rejected requests a tenant keeps: the
// newest ones.
const DefaultRejectionCap = 10000

// Rejection recording rate, per tenant and process: a burst of
// RejectionBurst, then RejectionRate a second. A client that fails in a
// tight loop sends the same mistake again and again; the first ones say
// what is wrong, the rest are counted on the next one kept.
const (
	RejectionRate  = 5.0
	RejectionBurst = 50.0
)

// rejectionBucketsMax bounds the throttle's memory; past it the throttle
// starts over, so that requests naming many tenants cannot grow it.
const rejectionBucketsMax = 10000

// RejectionTx lists the statements Rejections runs.
type RejectionTx interface {
	Tx
	// RecordRejection stores r in the tenant's ring of capacity rows,
	// overwriting the oldest once it is full, in one statement.
	RecordRejection(ctx context.Context, r *APIRejection, capacity int) error
}

// KeyPrefixLookup finds the tenant of an API key prefix, for requests whose
// key was refused (unknown secret, revoked, suspended tenant).
type KeyPrefixLookup interface {
	// TenantOfKeyPrefix returns the tenant whose key has the prefix, or
	// ENOTFOUND.
	TenantOfKeyPrefix(ctx context.Context, prefix string) (uuid.UUID, error)
}

// Rejections keeps the tenant's rejected API requests. A flood of bad
// requests costs at most RejectionBurst rows at once and RejectionRate rows a
// second per tenant and process (the rest are counted, not stored), and
// never more than Cap rows per tenant in all: the store's ring overwrites
// its oldest row.
type Rejections struct {
	Store  Store[RejectionTx]
	Lookup KeyPrefixLookup
	Now    Clock
	Log    *slog.Logger
	// Cap is how many rows a tenant keeps; 0 means DefaultRejectionCap.
	Cap int
	// Rate and Burst override RejectionRate and RejectionBurst (tests).
	Rate, Burst float64

	mu      sync.Mutex
	buckets map[uuid.UUID]*rejectionBucket
}

type rejectionBucket struct {
	tokens     float64
	at         time.Time
	suppressed int
}

// TenantOfKey returns the tenant a refused API key secret names by its
// visible prefix, and the prefix; ok is false when it names none.
func (s *Rejections) TenantOfKey(ctx context.Context, secret string) (uuid.UUID, string, bool) {
	if !strings.HasPrefix(secret, apiKeyPrefix) || len(secret) < apiKeyVisible {
		return uuid.Nil, "", false
	}
	prefix := secret[:apiKeyVisible]
	id, err := s.Lookup.TenantOfKeyPrefix(ctx, prefix)
	if err != nil {
		if ErrorCode(err) != ENOTFOUND {
			s.Log.WarnContext(ctx, "rejected request: key prefix lookup failed", "err", err)
		}
		return uuid.Nil, "", false
	}
	return id, prefix, true
}

// Record keeps r unless the tenant's rejections come faster than the
// throttle allows; then it only counts it. It returns whether r was stored.
// Recording runs outside the request's own transaction, which has rolled
// back, so nothing the request tried to store is kept with it.
func (s *Rejections) Record(ctx context.Context, r *APIRejection) (bool, error) {
	now := s.Now()
	suppressed, ok := s.take(r.TenantID, now)
	if !ok {
		return false, nil
	}
	r.ID, r.At, r.Suppressed = NewID(), now, suppressed
	err := s.Store.InTenant(ctx, r.TenantID, func(tx RejectionTx) error {
		return tx.RecordRejection(ctx, r, s.capacity())
	})
	if err != nil {
		// The count goes back, so that the next row kept still says how many
		// went unrecorded.
		s.mu.Lock()
		if b := s.buckets[r.TenantID]; b != nil {
			b.suppressed += suppressed + 1
		}
		s.mu.Unlock()
		return false, err
	}
	return true, nil
}

func (s *Rejections) capacity() int {
	if s.Cap > 0 {
		return s.Cap
	}
	return DefaultRejectionCap
}

// take takes a token from the tenant's bucket. It returns how many
// rejections went unrecorded since the last one recorded, and false (after
// counting this one) when there is no token.
func (s *Rejections) take(tenantID uuid.UUID, now time.Time) (int, bool) {
	rate, burst := s.Rate, s.Burst
	if rate <= 0 {
		rate = RejectionRate
	}
	if burst <= 0 {
		burst = RejectionBurst
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buckets == nil || len(s.buckets) >= rejectionBucketsMax {
		s.buckets = make(map[uuid.UUID]*rejectionBucket)
	}
	b := s.buckets[tenantID]
	if b == nil {
		b = &rejectionBucket{tokens: burst, at: now}
		s.buckets[tenantID] = b
	}
	if elapsed := now.Sub(b.at).Seconds(); elapsed > 0 {
		b.tokens = min(burst, b.tokens+elapsed*rate)
	}
	b.at = now
	if b.tokens < 1 {
		b.suppressed++
		return 0, false
	}
	b.tokens--
	n := b.suppressed
	b.suppressed = 0
	return n, true
}
