package db_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/db"
)

// TestStore_TenantSuspension checks the schema's rule for suspensions: a
// suspended tenant says since when (and why), and an active one carries no
// suspension.
func TestStore_TenantSuspension(t *testing.T) {
	t.Parallel()
	b := setup(t)
	insert := func(status, suspendedAt, reason string) error {
		return b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, `
				INSERT INTO tenants (id, slug, name, status, suspended_at, suspended_reason)
				VALUES ($1, $2, 'Travel', $3, `+suspendedAt+`, $4)`, uuid.New(), "t-"+uuid.NewString()[:8], status, reason)
			return err
		})
	}

	require.NoError(t, insert("SUSPENDED", "now()", "Unpaid invoices"))
	require.NoError(t, insert("ACTIVE", "NULL", ""))
	require.ErrorContains(t, insert("SUSPENDED", "NULL", "Unpaid invoices"), "tenants_suspension", "a suspension without its time")
	require.ErrorContains(t, insert("ACTIVE", "now()", ""), "tenants_suspension", "an active tenant with a suspension time")
}
