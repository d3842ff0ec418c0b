package db_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/db"
)

// TestContactSearch_UsesIndexes checks, on a database where other tenants
// hold most contacts, that the search reads only the tenant's own: its phone
// and e-mail lookups go through their indexes, and its name lookup (ILIKE,
// which row-level security keeps from any index) through the tenant's index
// instead of every tenant's rows. The expressions are the ones
// db/contact_search.go writes.
func TestContactSearch_UsesIndexes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "search-plan")
	other := createTenant(t, b, "search-plan-other")
	// Each tenant's contacts in a transaction of that tenant's.
	for tenant, n := range map[uuid.UUID]int{other.ID: 20000, tn.ID: 300} {
		require.NoError(t, b.store.InTenant(b.ctx, tenant, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, `
				INSERT INTO contacts (id, tenant_id, name, phone, email)
				SELECT gen_random_uuid(), $1, 'Passenger ' || i, '+4917000' || lpad(i::text, 5, '0'), 'p' || i || '@example.org'
				FROM generate_series(1, $2::int) AS i`, tenant, n)
			return err
		}))
	}
	_, err := b.db.SQL.ExecContext(b.ctx, `ANALYZE contacts`)
	require.NoError(t, err)
	tx, err := b.db.SQL.BeginTxx(b.ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(b.ctx, `SELECT set_config('herald.tenant_id', $1, true)`, tn.ID.String())
	require.NoError(t, err)

	for query, index := range map[string]string{
		`SELECT id FROM contacts WHERE tenant_id = $1 AND (name || ' ' || coalesce(email, '')) ILIKE '%senger 123%'`: "contacts_tenant_updated_idx",
		`SELECT id FROM contacts WHERE tenant_id = $1 AND phone = '+491700000123'`:                                   "contacts_phone_idx",
		`SELECT id FROM contacts WHERE tenant_id = $1 AND email = 'p123@example.org'`:                                "contacts_email_idx",
	} {
		var plan []string
		require.NoError(t, tx.SelectContext(b.ctx, &plan, `EXPLAIN `+query, tn.ID))
		text := strings.Join(plan, "\n")
		require.Contains(t, text, index, "%s\n%s", query, text)
		require.NotContains(t, text, "Seq Scan", "%s\n%s", query, text)
	}
}
