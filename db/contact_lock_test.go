package db_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/db"
)

// TestLockContactKeys_TakesEveryKey checks that the one statement locking a
// recipient's keys takes a lock on each of them, duplicates once, and no
// other: while the transaction holding them is open, another cannot take
// any of those keys' locks, and can take another key's.
func TestLockContactKeys_TakesEveryKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "contact-locks")
	keys := []string{"email:anna@example.com", "phone:+4915123456789", "profile:P-1", "email:anna@example.com"}
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			if err := tx.LockContactKeys(b.ctx, tn.ID, keys); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	try := func(key string) bool {
		var got bool
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended($1 || ':contact:' || $2, 0))`,
				tn.ID.String(), key).Scan(&got)
		}))
		return got
	}
	for _, k := range keys {
		require.False(t, try(k), "%s is locked", k)
	}
	require.True(t, try("email:ben@example.com"), "a key not asked for is free")
	close(release)
	require.NoError(t, <-done)
	for _, k := range keys {
		require.True(t, try(k), "%s is free once the transaction ends", k)
	}
}
