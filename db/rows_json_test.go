package db_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// TestInsertEvents_StoresWhatInsertEventStores checks that events stored
// as JSON rows read back as the same events stored one by one: missing
// times and ids stay missing, times keep their microseconds (truncated,
// as pgx sends them), lists and documents come back equal, and the events
// given are left as they were.
func TestInsertEvents_StoresWhatInsertEventStores(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := createTenant(t, b, "json-rows")
	at := time.Date(2027, 4, 12, 9, 30, 15, 123456789, time.UTC)
	locale, entity, rule := "de-DE", "booking", "after:72h"
	sendAt := at.Add(time.Hour)
	events := []*app.Event{
		{TenantID: tn.ID, TriggerEvent: "BOOKING_CONFIRMED", Recipients: app.JSON(`[{"email":"anna@example.com"}]`),
			Context: app.JSON(`{"tour_name":"Gardasee"}`), Version: 1, Status: app.EventReceived, PayloadSize: 120,
			CreatedAt: at, UpdatedAt: at},
		{TenantID: tn.ID, TriggerEvent: "PRE_TRIP_REMINDER", Recipients: app.JSON(`[]`), Context: app.JSON(`null`),
			Channels: app.StringList{"EMAIL", "SMS"}, FallbackChain: app.StringList{"SMS", "EMAIL"}, Locale: &locale,
			EntityType: &entity, EntityID: strPtr("BK-1"), SendAt: &sendAt, SendAtRule: app.JSON(`{"before":"departure_at","offset":"48h"}`),
			ExpiresAt: &sendAt, ExpiresRule: &rule, Version: 1, Status: app.EventScheduled, PayloadSize: 300,
			CreatedAt: at, UpdatedAt: at},
	}
	for _, batch := range []bool{false, true} {
		var stored []*app.Event
		for i, e := range events {
			c := *e
			c.ID = uuid.New()
			c.SourceEventID = "json-" + map[bool]string{false: "one-", true: "batch-"}[batch] + string(rune('a'+i))
			stored = append(stored, &c)
		}
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			if batch {
				ids, err := tx.InsertEvents(b.ctx, stored)
				require.Len(t, ids, len(stored))
				return err
			}
			for _, e := range stored {
				if _, err := tx.InsertEvent(b.ctx, e); err != nil {
					return err
				}
			}
			return nil
		}))
		require.Nil(t, stored[0].SendAt, "the event given is not changed")
		for i, e := range stored {
			require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
				got, err := tx.EventByID(b.ctx, tn.ID, e.ID, false)
				require.NoError(t, err)
				require.Nil(t, got.DecidedAt)
				require.Nil(t, got.APIKeyID)
				require.Equal(t, e.SendAt == nil, got.SendAt == nil)
				require.True(t, got.CreatedAt.Equal(at.Truncate(time.Microsecond)), "event %d (batch %t): %s", i, batch, got.CreatedAt)
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
	}

	t.Run("ASourceIDUsedBeforeOrTwiceIsSkipped", func(t *testing.T) {
		t.Parallel()
		mk := func(source string) *app.Event {
			return &app.Event{ID: uuid.New(), TenantID: tn.ID, SourceEventID: source, TriggerEvent: "BOOKING_CONFIRMED",
				Recipients: app.JSON(`[]`), Context: app.JSON(`{}`), Version: 1, Status: app.EventReceived, CreatedAt: at, UpdatedAt: at}
		}
		first, again, twiceA, twiceB := mk("json-one-a"), mk("json-new"), mk("json-twice"), mk("json-twice")
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, func(tx *db.Tx) error {
			ids, err := tx.InsertEvents(b.ctx, []*app.Event{first, again, twiceA, twiceB})
			require.Equal(t, map[uuid.UUID]bool{again.ID: true, twiceA.ID: true}, ids)
			return err
		}))
	})
}

func strPtr(s string) *string { return &s }

// TestInsertTenantsEvents checks several tenants' events stored in one
// round trip: each under its own tenant, a source id skipped only when its
// own tenant used it, the transaction left in the last part's scope, and
// a part holding another tenant's event or a platform transaction refused
// with nothing stored.
func TestInsertTenantsEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ta, tb := createTenant(t, b, "parts-a"), createTenant(t, b, "parts-b")
	at := time.Date(2027, 4, 12, 9, 30, 0, 0, time.UTC)
	mk := func(tenant uuid.UUID, source string) *app.Event {
		return &app.Event{ID: uuid.New(), TenantID: tenant, SourceEventID: source, TriggerEvent: "BOOKING_CONFIRMED",
			Recipients: app.JSON(`[]`), Context: app.JSON(`{}`), Version: 1, Status: app.EventReceived, CreatedAt: at, UpdatedAt: at}
	}
	usedB := mk(tb.ID, "used")
	require.NoError(t, b.store.InTenant(b.ctx, tb.ID, func(tx *db.Tx) error {
		_, err := tx.InsertEvent(b.ctx, usedB)
		return err
	}))
	newB, againB, sameA, otherA := mk(tb.ID, "shared"), mk(tb.ID, "used"), mk(ta.ID, "shared"), mk(ta.ID, "used")
	var ids map[uuid.UUID]bool
	var left uuid.UUID
	require.NoError(t, b.store.InTenant(b.ctx, ta.ID, func(tx *db.Tx) error {
		var err error
		ids, err = tx.InsertTenantsEvents(b.ctx, [][]*app.Event{{newB, againB}, {sameA, otherA}})
		left = tx.TenantID()
		return err
	}))
	require.Equal(t, map[uuid.UUID]bool{newB.ID: true, sameA.ID: true, otherA.ID: true}, ids,
		"B's used source id is skipped; A may use the same ids as B")
	require.Equal(t, ta.ID, left, "the transaction is in the last part's scope")
	tenantOf := func(id uuid.UUID) (tenant uuid.UUID) {
		t.Helper()
		require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.ctx, `SELECT tenant_id FROM events WHERE id = $1`, id).Scan(&tenant)
		}))
		return tenant
	}
	firstA, thenB := mk(ta.ID, "first"), mk(tb.ID, "then")
	require.NoError(t, b.store.InTenant(b.ctx, ta.ID, func(tx *db.Tx) error {
		var err error
		ids, err = tx.InsertTenantsEvents(b.ctx, [][]*app.Event{{firstA}, {thenB}})
		left = tx.TenantID()
		return err
	}))
	require.Equal(t, map[uuid.UUID]bool{firstA.ID: true, thenB.ID: true}, ids, "a first part in the transaction's own scope")
	require.Equal(t, tb.ID, left)
	require.Equal(t, tb.ID, tenantOf(thenB.ID))
	require.Equal(t, tb.ID, tenantOf(newB.ID))
	require.Equal(t, ta.ID, tenantOf(sameA.ID))
	require.Equal(t, ta.ID, tenantOf(otherA.ID))

	count := func() (n int) {
		t.Helper()
		require.NoError(t, b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
			return tx.SQL().QueryRowContext(b.ctx, `SELECT count(*) FROM events`).Scan(&n)
		}))
		return n
	}
	before := count()
	mixed := b.store.InTenant(b.ctx, ta.ID, func(tx *db.Tx) error {
		_, err := tx.InsertTenantsEvents(b.ctx, [][]*app.Event{{mk(ta.ID, "mixed-a"), mk(tb.ID, "mixed-b")}})
		return err
	})
	require.ErrorContains(t, mixed, "is not of its part's tenant")
	platform := b.store.InPlatform(b.ctx, func(tx *db.Tx) error {
		_, err := tx.InsertTenantsEvents(b.ctx, [][]*app.Event{{mk(ta.ID, "platform-a")}})
		return err
	})
	require.Error(t, platform, "a platform transaction is not narrowed")
	require.Equal(t, before, count(), "nothing stored")
}
