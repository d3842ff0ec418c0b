package db_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// TestContactCandidates checks that a tenant's contacts are found by any of
// their identifiers, each contact once, in the order they were created,
// and never another tenant's.
func TestContactCandidates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acme := createTenant(t, b, "candidates-acme")
	globex := createTenant(t, b, "candidates-globex")
	base := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	create := func(tenant uuid.UUID, at time.Duration, profile, phone, email string) *app.Contact {
		c := &app.Contact{ID: app.NewID(), TenantID: tenant, CreatedAt: base.Add(at), UpdatedAt: base.Add(at)}
		if profile != "" {
			c.PassengerProfileID = &profile
		}
		if phone != "" {
			c.Phone = &phone
		}
		if email != "" {
			c.Email = &email
		}
		require.NoError(t, b.store.InTenant(b.ctx, tenant, func(tx *db.Tx) error {
			_, err := tx.CreateContact(b.ctx, c)
			return err
		}))
		return c
	}
	// Two passengers share one address; Anna is found by her profile and
	// her address alike.
	anna := create(acme.ID, 3*time.Minute, "P-1", "", "anna@example.com")
	ben := create(acme.ID, time.Minute, "", "+4915123456789", "family@example.com")
	clara := create(acme.ID, 2*time.Minute, "", "", "family@example.com")
	create(acme.ID, 4*time.Minute, "P-2", "+4915199999999", "other@example.com")
	create(globex.ID, 0, "P-1", "+4915123456789", "anna@example.com")

	find := func(profiles, phones, emails []string) []uuid.UUID {
		var ids []uuid.UUID
		require.NoError(t, b.store.InTenant(b.ctx, acme.ID, func(tx *db.Tx) error {
			cs, err := tx.ContactCandidates(b.ctx, acme.ID, profiles, phones, emails)
			for _, c := range cs {
				ids = append(ids, c.ID)
			}
			return err
		}))
		return ids
	}
	require.Equal(t, []uuid.UUID{ben.ID, clara.ID, anna.ID},
		find([]string{"P-1"}, []string{"+4915123456789"}, []string{"anna@example.com", "family@example.com"}))
	require.Equal(t, []uuid.UUID{anna.ID}, find([]string{"P-1"}, nil, []string{"anna@example.com"}), "once, though found twice")
	require.Equal(t, []uuid.UUID{ben.ID}, find(nil, []string{"+4915123456789"}, nil))
	require.Empty(t, find([]string{"P-9"}, []string{"+4915100000000"}, []string{"nobody@example.com"}))
	require.Empty(t, find(nil, nil, nil))
}

// TestContactCandidates_PlanUsesIdentifierIndexes checks the plan
// Postgres makes for the lookup as routing gets it: generic, and made on a
// table never analyzed, as each new connection of a young deployment
// makes it and keeps it. Each identifier must be an index condition
// together with the tenant, so that the lookup costs the same at a hundred
// contacts as at millions; a scan of the tenant's contacts filtered by
// identifier grows with them.
func TestContactCandidates_PlanUsesIdentifierIndexes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "candidates-plan")
	plan := func() string {
		return explainGeneric(t, b, tn.ID, db.ContactCandidatesQuery, "uuid, text[], text[], text[]",
			fmt.Sprintf(`'%s', '{P-1}', '{+4915123456789}', '{anna@example.com}'`, tn.ID))
	}
	check := func(t *testing.T, p string) {
		require.NotContains(t, p, "contacts_tenant_updated_idx", p)
		require.NotContains(t, p, "Seq Scan on contacts", p)
		for _, cond := range []string{"(passenger_profile_id = k.v)", "(phone = k_1.v)", "(email = k_2.v)"} {
			require.Contains(t, p, "Index Cond: ((tenant_id = $1) AND "+cond+")", p)
		}
	}
	t.Run("EmptyTable", func(t *testing.T) { check(t, plan()) })
	t.Run("GrownWithoutAnalyze", func(t *testing.T) {
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, `INSERT INTO contacts (id, tenant_id, email, created_at, updated_at)
				SELECT gen_random_uuid(), $1, 'p' || g || '@example.com', now(), now() FROM generate_series(1, 2000) g`, tn.ID)
			return err
		}))
		check(t, plan())
	})
}
