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
