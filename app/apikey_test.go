package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

// keyDB is an in-memory stand-in for the API-key rows: the lookup, the
// touch and the revocation, counting the lookups.
type keyDB struct {
	mu      sync.Mutex
	keys    map[string]*app.APIKey // by hash
	lookups int
	touches int
	// touchGate, when set, holds every touch until it is closed; each
	// touch says on touched that it began.
	touchGate chan struct{}
	touched   chan struct{}
	// failTouch, when set, is what every touch returns.
	failTouch error
}

func (d *keyDB) APIKeyByHash(_ context.Context, hash []byte) (*app.APIKey, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lookups++
	k, ok := d.keys[string(hash)]
	if !ok {
		return nil, app.Errorf(app.ENOTFOUND, "API key not found.")
	}
	c := *k
	return &c, nil
}

// revokeElsewhere revokes a key behind the cache's back, as another
// process would.
func (d *keyDB) revokeElsewhere(id uuid.UUID, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range d.keys {
		if k.ID == id {
			k.RevokedAt = &at
		}
	}
}

// keyStore runs every transaction on a keyTx.
type keyStore struct{ d *keyDB }

func (s keyStore) InTenant(_ context.Context, _ uuid.UUID, fn func(app.APIKeyTx) error) error {
	return fn(keyTx{d: s.d})
}

func (s keyStore) InPlatform(_ context.Context, fn func(app.APIKeyTx) error) error {
	return fn(keyTx{d: s.d})
}

// keyTx implements the statements API keys run (app.APIKeyTx).
type keyTx struct {
	d *keyDB
}

func (t keyTx) TenantID() uuid.UUID { return uuid.Nil }

func (t keyTx) TouchAPIKey(_ context.Context, _, id uuid.UUID, at time.Time) error {
	if t.d.touchGate != nil {
		t.d.touched <- struct{}{}
		<-t.d.touchGate
	}
	t.d.mu.Lock()
	defer t.d.mu.Unlock()
	if t.d.failTouch != nil {
		return t.d.failTouch
	}
	t.d.touches++
	for _, k := range t.d.keys {
		if k.ID == id {
			k.LastUsedAt = &at
		}
	}
	return nil
}

func (t keyTx) RevokeAPIKey(_ context.Context, _, id uuid.UUID, at time.Time) (*app.APIKey, bool, error) {
	t.d.revokeElsewhere(id, at)
	return &app.APIKey{ID: id, RevokedAt: &at}, true, nil
}

func (t keyTx) CreateAPIKey(_ context.Context, k *app.APIKey) error {
	t.d.mu.Lock()
	defer t.d.mu.Unlock()
	c := *k
	t.d.keys[string(k.Hash)] = &c
	return nil
}

func (t keyTx) InsertAudit(context.Context, *app.AuditEntry) error { return nil }

type apiKeyBundle struct {
	keys   *app.APIKeys
	db     *keyDB
	now    time.Time
	key    *app.APIKey
	secret string
	ctx    context.Context
}

func setupAPIKeys(t *testing.T, ttl time.Duration) *apiKeyBundle {
	t.Helper()
	b := &apiKeyBundle{db: &keyDB{keys: map[string]*app.APIKey{}}, now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), ctx: context.Background()}
	b.keys = &app.APIKeys{Store: keyStore{b.db}, Lookup: b.db, Now: func() time.Time { return b.now }, CacheTTL: ttl}
	var err error
	b.key, b.secret, err = b.keys.Create(b.ctx, app.CLIActor, uuid.New(), "booking system")
	require.NoError(t, err)
	return b
}

func TestAPIKeys_Authenticate(t *testing.T) {
	t.Parallel()

	t.Run("CachedWithinTTL", func(t *testing.T) {
		t.Parallel()
		b := setupAPIKeys(t, 5*time.Second)
		for range 10 {
			k, err := b.keys.Authenticate(b.ctx, b.secret)
			require.NoError(t, err)
			require.Equal(t, b.key.ID, k.ID)
			require.Equal(t, b.key.TenantID, k.TenantID)
			b.now = b.now.Add(400 * time.Millisecond)
		}
		require.Equal(t, 1, b.db.lookups, "one lookup serves the TTL")
		require.Equal(t, 1, b.db.touches, "last_used_at is written once")

		b.now = b.now.Add(2 * time.Second)
		_, err := b.keys.Authenticate(b.ctx, b.secret)
		require.NoError(t, err)
		require.Equal(t, 2, b.db.lookups, "an expired entry is read again")
	})

	t.Run("RevokeTakesEffectAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setupAPIKeys(t, time.Minute)
		_, err := b.keys.Authenticate(b.ctx, b.secret)
		require.NoError(t, err)
		_, err = b.keys.Revoke(b.ctx, app.CLIActor, b.key.TenantID, b.key.ID)
		require.NoError(t, err)
		_, err = b.keys.Authenticate(b.ctx, b.secret)
		require.Equal(t, app.EUNAUTHORIZED, app.ErrorCode(err), "the revoking process never answers from its cache")
	})

	t.Run("RevokedElsewhereRefusedAfterTTL", func(t *testing.T) {
		t.Parallel()
		b := setupAPIKeys(t, 5*time.Second)
		_, err := b.keys.Authenticate(b.ctx, b.secret)
		require.NoError(t, err)
		b.db.revokeElsewhere(b.key.ID, b.now)
		b.now = b.now.Add(5 * time.Second)
		_, err = b.keys.Authenticate(b.ctx, b.secret)
		require.Equal(t, app.EUNAUTHORIZED, app.ErrorCode(err), "another process's revocation holds once the entry expires")
		_, err = b.keys.Authenticate(b.ctx, b.secret)
		require.Equal(t, app.EUNAUTHORIZED, app.ErrorCode(err), "a revoked key is not cached")
	})

	t.Run("UnknownIsNeverCached", func(t *testing.T) {
		t.Parallel()
		b := setupAPIKeys(t, time.Minute)
		// Another last character, whatever the secret's own is.
		last := "X"
		if b.secret[len(b.secret)-1] == 'X' {
			last = "Y"
		}
		wrong := b.secret[:len(b.secret)-1] + last
		for range 3 {
			_, err := b.keys.Authenticate(b.ctx, wrong)
			require.Equal(t, app.EUNAUTHORIZED, app.ErrorCode(err))
		}
		require.Equal(t, 3, b.db.lookups)
	})

	t.Run("BusyKeyTouchedOncePerMinute", func(t *testing.T) {
		t.Parallel()
		b := setupAPIKeys(t, 5*time.Second)
		for range 300 { // five minutes, a request a second
			_, err := b.keys.Authenticate(b.ctx, b.secret)
			require.NoError(t, err)
			b.now = b.now.Add(time.Second)
		}
		require.InDelta(t, 5, b.db.touches, 1)
		require.InDelta(t, 60, b.db.lookups, 1, "re-read every TTL")
	})

	t.Run("ConcurrentRequestsTouchOnce", func(t *testing.T) {
		// A busy key's minute passes with many requests in flight: one
		// writes last_used_at, and the others neither write it too nor
		// wait for that write.
		t.Parallel()
		for _, ttl := range []time.Duration{0, 5 * time.Second} {
			b := setupAPIKeys(t, ttl)
			_, err := b.keys.Authenticate(b.ctx, b.secret)
			require.NoError(t, err)
			require.Equal(t, 1, b.db.touches)

			b.db.touchGate, b.db.touched = make(chan struct{}), make(chan struct{}, 1)
			b.now = b.now.Add(2 * time.Minute)
			const n = 20
			done := make(chan error, n)
			for range n {
				go func() {
					_, err := b.keys.Authenticate(b.ctx, b.secret)
					done <- err
				}()
			}
			<-b.db.touched
			for range n - 1 {
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(time.Minute):
					t.Fatal("requests waited for another request's write of last_used_at")
				}
			}
			close(b.db.touchGate)
			require.NoError(t, <-done)
			require.Equal(t, 2, b.db.touches, "one write for the minute (cache TTL %s)", ttl)
			require.Equal(t, 0, len(b.db.touched), "no second touch began")
		}
	})

	t.Run("FailedTouchIsRetried", func(t *testing.T) {
		t.Parallel()
		b := setupAPIKeys(t, 0)
		b.db.failTouch = app.Errorf(app.EUNAVAILABLE, "database unavailable")
		_, err := b.keys.Authenticate(b.ctx, b.secret)
		require.Equal(t, app.EUNAVAILABLE, app.ErrorCode(err))
		b.db.failTouch = nil
		_, err = b.keys.Authenticate(b.ctx, b.secret)
		require.NoError(t, err)
		require.Equal(t, 1, b.db.touches, "the next request writes last_used_at")
	})

	t.Run("NoCacheReadsEveryTime", func(t *testing.T) {
		t.Parallel()
		b := setupAPIKeys(t, 0)
		for range 3 {
			_, err := b.keys.Authenticate(b.ctx, b.secret)
			require.NoError(t, err)
		}
		require.Equal(t, 3, b.db.lookups)
	})
}
