package db_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// TestStore_ConfirmationWindows: the windows the settings store are the
// ones the dispatcher's lookup finds, the event's own before '*', each
// tenant only its own.
func TestStore_ConfirmationWindows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acme, globex := createTenant(t, b, "acme"), createTenant(t, b, "globex")
	now := time.Now().UTC().Truncate(time.Second)
	inTenant := func(tn *app.Tenant, fn func(tx *db.Tx) error) {
		t.Helper()
		require.NoError(t, b.store.InTenant(b.ctx, tn.ID, fn))
	}
	window := func(tn *app.Tenant, event string) (time.Duration, bool) {
		t.Helper()
		var d time.Duration
		var ok bool
		inTenant(tn, func(tx *db.Tx) (err error) {
			d, ok, err = tx.ConfirmWindow(b.ctx, tn.ID, event)
			return err
		})
		return d, ok
	}

	inTenant(acme, func(tx *db.Tx) error {
		for _, w := range []*app.ConfirmationWindow{
			{TenantID: acme.ID, TriggerEvent: "DEPARTURE_CHANGED", Seconds: 30, UpdatedAt: now},
			{TenantID: acme.ID, TriggerEvent: app.AnyEvent, Seconds: 600, UpdatedAt: now},
			{TenantID: acme.ID, TriggerEvent: "BOOKING_CONFIRMED", Seconds: 0, UpdatedAt: now},
			{TenantID: acme.ID, TriggerEvent: "DEPARTURE_CHANGED", Seconds: 45, UpdatedAt: now.Add(time.Second)},
		} {
			if err := tx.SetConfirmationWindow(b.ctx, w); err != nil {
				return err
			}
		}
		return nil
	})
	var ws []*app.ConfirmationWindow
	inTenant(acme, func(tx *db.Tx) (err error) {
		ws, err = tx.ConfirmationWindows(b.ctx, acme.ID)
		return err
	})
	require.Len(t, ws, 3, "setting an event again replaces its window")
	require.Equal(t, []string{app.AnyEvent, "BOOKING_CONFIRMED", "DEPARTURE_CHANGED"},
		[]string{ws[0].TriggerEvent, ws[1].TriggerEvent, ws[2].TriggerEvent}, "every event's first, then by name")
	require.Equal(t, 45, ws[2].Seconds)
	require.True(t, now.Add(time.Second).Equal(ws[2].UpdatedAt))

	d, ok := window(acme, "DEPARTURE_CHANGED")
	require.True(t, ok)
	require.Equal(t, 45*time.Second, d, "the event's own window")
	d, ok = window(acme, "BOOKING_CONFIRMED")
	require.True(t, ok)
	require.Zero(t, d, "0 is a window: decide at once")
	d, ok = window(acme, "FINAL_PAYMENT_DUE")
	require.True(t, ok)
	require.Equal(t, 10*time.Minute, d, "every event's window")
	_, ok = window(globex, "DEPARTURE_CHANGED")
	require.False(t, ok, "another tenant's windows are not its own")
	inTenant(globex, func(tx *db.Tx) (err error) {
		ws, err = tx.ConfirmationWindows(b.ctx, acme.ID)
		return err
	})
	require.Empty(t, ws, "row-level security hides them even when asked by id")

	inTenant(acme, func(tx *db.Tx) error {
		seconds, removed, err := tx.DeleteConfirmationWindow(b.ctx, acme.ID, app.AnyEvent)
		require.NoError(t, err)
		require.True(t, removed)
		require.Equal(t, 600, seconds)
		_, removed, err = tx.DeleteConfirmationWindow(b.ctx, acme.ID, app.AnyEvent)
		require.False(t, removed, "nothing left to remove")
		return err
	})
	_, ok = window(acme, "FINAL_PAYMENT_DUE")
	require.False(t, ok, "without a * window the default applies")

	t.Run("SchemaRefusesMoreThanADay", func(t *testing.T) {
		err := b.store.InTenant(b.ctx, acme.ID, func(tx *db.Tx) error {
			return tx.SetConfirmationWindow(b.ctx, &app.ConfirmationWindow{TenantID: acme.ID, TriggerEvent: app.AnyEvent, Seconds: 86401, UpdatedAt: now})
		})
		require.Error(t, err)
	})
}
