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

// TestInsertEvent checks the intake's one insert of an event: it reads
// back as given (missing times and ids stay missing, times keep their
// microseconds, lists and documents come back equal), a source id the
// tenant used before is skipped, and another tenant's use of the same id
// is not in the way.
func TestInsertEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "insert-event")
	at := time.Date(2027, 4, 12, 9, 30, 15, 123456789, time.UTC)
	locale, entity, rule := "de-DE", "booking", "after:72h"
	sendAt := at.Add(time.Hour)
	mk := func(tenant uuid.UUID, source string) *app.Event {
		return &app.Event{ID: uuid.New(), TenantID: tenant, SourceEventID: source, TriggerEvent: "BOOKING_CONFIRMED",
			Recipients: app.JSON(`[]`), Context: app.JSON(`{}`), Version: 1, Status: app.EventReceived, CreatedAt: at, UpdatedAt: at}
	}
	insert := func(tenant uuid.UUID, e *app.Event) (stored bool) {
		t.Helper()
		require.NoError(t, b.store.InTenant(b.ctx, tenant, func(tx *db.Tx) (err error) {
			stored, _, err = tx.InsertEvent(b.ctx, e, nil)
			return err
		}))
		return stored
	}

	// The insert counts the tenant's events accepted within BurstWindow
	// before the new one's time, up to BurstShare: its share of the queues.
	t.Run("CountsTheTenantsRecentEvents", func(t *testing.T) {
		t.Parallel()
		busy, other := createTenant(t, b, "recent-busy"), createTenant(t, b, "recent-other")
		base := time.Date(2027, 5, 1, 8, 0, 0, 0, time.UTC)
		recent := func(tenant uuid.UUID, source string, at time.Time, peers ...string) int {
			t.Helper()
			e := mk(tenant, source)
			e.CreatedAt, e.UpdatedAt = at, at
			var n int
			require.NoError(t, b.store.InTenant(b.ctx, tenant, func(tx *db.Tx) error {
				stored, got, err := tx.InsertEvent(b.ctx, e, peers)
				require.True(t, stored)
				n = got
				return err
			}))
			return n
		}
		require.Equal(t, 0, recent(busy.ID, "r-0", base), "the first event has nobody before it")
		require.Equal(t, 1, recent(busy.ID, "r-1", base.Add(time.Second)))
		require.Equal(t, 0, recent(other.ID, "o-0", base.Add(time.Second)), "another tenant's events are not counted")
		require.Equal(t, 1, recent(busy.ID, "r-2", base.Add(app.BurstWindow)), "r-0 is a whole window before")
		for i := range app.BurstShare + 5 {
			recent(busy.ID, fmt.Sprintf("r-more-%d", i), base.Add(app.BurstWindow))
		}
		require.Equal(t, app.BurstShare, recent(busy.ID, "r-last", base.Add(app.BurstWindow)), "counted up to the share only")
		require.Equal(t, 0, recent(busy.ID, "r-peers", base.Add(app.BurstWindow), "DEPARTURE_CHANGED"),
			"only the peers named count: these were all BOOKING_CONFIRMED")
		require.Equal(t, app.BurstShare, recent(busy.ID, "r-peers-2", base.Add(app.BurstWindow), "DEPARTURE_CHANGED", "BOOKING_CONFIRMED"))
	})

	t.Run("StoresWhatItIsGiven", func(t *testing.T) {
		t.Parallel()
		events := []*app.Event{
			{ID: uuid.New(), TenantID: tn.ID, SourceEventID: "given-a", TriggerEvent: "BOOKING_CONFIRMED",
				Recipients: app.JSON(`[{"email":"anna@example.com"}]`), Context: app.JSON(`{"tour_name":"Gardasee"}`),
				Version: 1, Status: app.EventReceived, PayloadSize: 120, CreatedAt: at, UpdatedAt: at},
			{ID: uuid.New(), TenantID: tn.ID, SourceEventID: "given-b", TriggerEvent: "PRE_TRIP_REMINDER",
				Recipients: app.JSON(`[]`), Context: app.JSON(`null`),
				Channels: app.StringList{"EMAIL", "SMS"}, FallbackChain: app.StringList{"SMS", "EMAIL"}, Locale: &locale,
				EntityType: &entity, EntityID: strPtr("BK-1"), SendAt: &sendAt, SendAtRule: app.JSON(`{"before":"departure_at","offset":"48h"}`),
				ExpiresAt: &sendAt, ExpiresRule: &rule, Version: 1, Status: app.EventScheduled, PayloadSize: 300,
				CreatedAt: at, UpdatedAt: at},
		}
		for _, e := range events {
			require.True(t, insert(tn.ID, e))
		}
		require.Nil(t, events[0].SendAt, "the event given is not changed")
		for i, e := range events {
			require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
				got, err := tx.EventByID(b.ctx, tn.ID, e.ID, false)
				require.NoError(t, err)
				require.Nil(t, got.DecidedAt)
				require.Nil(t, got.APIKeyID)
				require.Equal(t, e.SendAt == nil, got.SendAt == nil)
				require.True(t, got.CreatedAt.Equal(at.Truncate(time.Microsecond)), "event %d: %s", i, got.CreatedAt)
				require.Equal(t, []string(e.Channels), []string(got.Channels))
				require.JSONEq(t, string(e.Context), string(got.Context))
				require.JSONEq(t, string(e.Recipients), string(got.Recipients))
				if e.SendAtRule != nil {
					require.JSONEq(t, string(e.SendAtRule), string(got.SendAtRule))
				} else {
					require.Empty(t, got.SendAtRule)
				}
				require.Equal(t, e.Locale, got.Locale)
				require.Equal(t, e.ExpiresRule, got.ExpiresRule)
				return nil
			}))
		}
	})

	t.Run("ASourceIDUsedBeforeIsSkipped", func(t *testing.T) {
		t.Parallel()
		first := mk(tn.ID, "used-once")
		require.True(t, insert(tn.ID, first))
		again := mk(tn.ID, "used-once")
		require.False(t, insert(tn.ID, again), "the tenant used the id before")
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			got, err := tx.EventBySourceID(b.ctx, tn.ID, "used-once")
			require.NoError(t, err)
			require.Equal(t, first.ID, got.ID, "the first event stays")
			return nil
		}))
	})

	t.Run("AnotherTenantMayUseTheSameSourceID", func(t *testing.T) {
		t.Parallel()
		other := createTenant(t, b, "insert-event-other")
		require.True(t, insert(tn.ID, mk(tn.ID, "shared-id")))
		theirs := mk(other.ID, "shared-id")
		require.True(t, insert(other.ID, theirs), "source ids are per tenant")
		var tenant uuid.UUID
		require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.ctx, `SELECT tenant_id FROM events WHERE id = $1`, theirs.ID).Scan(&tenant)
		}))
		require.Equal(t, other.ID, tenant)
	})
}

func strPtr(s string) *string { return &s }
