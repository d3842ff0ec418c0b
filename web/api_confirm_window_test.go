package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
)

func TestAPI_ConfirmationWindows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const path = "/api/v1/confirmation-windows"
	type list struct {
		ConfirmationWindows []struct {
			TriggerEvent string `json:"trigger_event"`
			Seconds      int    `json:"seconds"`
		} `json:"confirmation_windows"`
		DefaultSeconds       int `json:"default_seconds"`
		DefaultUrgentSeconds int `json:"default_urgent_seconds"`
	}

	t.Run("EmptyWithTheDefaults", func(t *testing.T) {
		var got list
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, path, nil, &got))
		require.NotNil(t, got.ConfirmationWindows, "an empty list, not null")
		require.Empty(t, got.ConfirmationWindows)
		require.Equal(t, 300, got.DefaultSeconds)
		require.Equal(t, 60, got.DefaultUrgentSeconds)
	})

	t.Run("SetChangeAndRemove", func(t *testing.T) {
		var got list
		require.Equal(t, http.StatusOK, b.Request(http.MethodPut, path, map[string]any{"trigger_event": "BOOKING_CONFIRMED", "seconds": 120}, &got))
		require.Equal(t, http.StatusOK, b.Request(http.MethodPut, path, map[string]any{"trigger_event": "*", "seconds": 0}, &got))
		require.Len(t, got.ConfirmationWindows, 2)
		require.Equal(t, "*", got.ConfirmationWindows[0].TriggerEvent, "every event's window first")
		require.Equal(t, 0, got.ConfirmationWindows[0].Seconds, "0 is a window: decide at once")
		require.Equal(t, 120, got.ConfirmationWindows[1].Seconds)

		require.Equal(t, http.StatusOK, b.Request(http.MethodPut, path, map[string]any{"trigger_event": "BOOKING_CONFIRMED", "seconds": 86400}, &got))
		require.Equal(t, 86400, got.ConfirmationWindows[1].Seconds, "a day is the longest")
		require.Equal(t, 3, b.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'confirmation_window.set' AND actor_type = 'api_key'`, b.Tenant.ID))

		require.Equal(t, http.StatusOK, b.Request(http.MethodPut, path, map[string]any{"trigger_event": "BOOKING_CONFIRMED", "remove": true}, &got))
		require.Len(t, got.ConfirmationWindows, 1)
		require.Equal(t, "*", got.ConfirmationWindows[0].TriggerEvent)
		require.Equal(t, http.StatusOK, b.Request(http.MethodPut, path, map[string]any{"trigger_event": "BOOKING_CONFIRMED", "remove": true}, &got),
			"removing a window that is not there is no error")
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM audit_log WHERE tenant_id = $1 AND action = 'confirmation_window.remove'
			AND target_id = 'BOOKING_CONFIRMED' AND metadata->>'seconds' = '86400'`, b.Tenant.ID), "one removal, naming what was removed")
	})

	t.Run("BadInputChangesNothing", func(t *testing.T) {
		before := b.Count(`SELECT count(*) FROM audit_log WHERE action LIKE 'confirmation_window.%'`)
		for _, tc := range []struct {
			name   string
			body   map[string]any
			status int
			code   string
			field  string
		}{
			{"UnknownEvent", map[string]any{"trigger_event": "BOOKING_EXPLODED", "seconds": 60}, 422, "invalid", "trigger_event"},
			{"NoEvent", map[string]any{"seconds": 60}, 422, "invalid", "trigger_event"},
			{"TooLong", map[string]any{"trigger_event": "*", "seconds": 86401}, 422, "invalid", "seconds"},
			{"Negative", map[string]any{"trigger_event": "*", "seconds": -1}, 422, "invalid", "seconds"},
			{"NoSeconds", map[string]any{"trigger_event": "*"}, 422, "invalid", "seconds"},
			{"NullSeconds", map[string]any{"trigger_event": "*", "seconds": nil}, 422, "invalid", "seconds"},
			{"RemoveWithSeconds", map[string]any{"trigger_event": "*", "seconds": 60, "remove": true}, 422, "invalid", "seconds"},
			{"RemoveUnknownEvent", map[string]any{"trigger_event": "BOOKING_EXPLODED", "remove": true}, 422, "invalid", "trigger_event"},
			{"Fraction", map[string]any{"trigger_event": "*", "seconds": 1.5}, 400, "malformed_json", "seconds"},
			{"String", map[string]any{"trigger_event": "*", "seconds": "300"}, 400, "malformed_json", "seconds"},
			{"Minutes", map[string]any{"trigger_event": "*", "minutes": 5}, 422, "unknown_field", "minutes"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var res apiErrorBody
				require.Equal(t, tc.status, b.Request(http.MethodPut, path, tc.body, &res), "%+v", res)
				require.Equal(t, tc.code, res.Error.Code)
				require.Equal(t, tc.field, res.Error.Field, res.Error.Message)
				require.NotEmpty(t, res.Error.Message)
			})
		}
		require.Equal(t, before, b.Count(`SELECT count(*) FROM audit_log WHERE action LIKE 'confirmation_window.%'`))
		var got list
		require.Equal(t, http.StatusOK, b.Request(http.MethodGet, path, nil, &got))
		require.Len(t, got.ConfirmationWindows, 1, "only the * window of SetChangeAndRemove")
	})

	t.Run("AnotherTenantsKey", func(t *testing.T) {
		other, err := b.Services.Tenants.Create(b.Ctx, app.CLIActor, app.TenantInput{Slug: "globex", Name: "Globex Travel"})
		require.NoError(t, err)
		key := keyWith(t, b.Herald, other.ID, app.ScopeRead, app.ScopeManage)
		var got list
		require.Equal(t, http.StatusOK, b.RequestWithKey(key, http.MethodGet, path, nil, &got))
		require.Empty(t, got.ConfirmationWindows, "acme's windows are acme's")
		require.Equal(t, http.StatusOK, b.RequestWithKey(key, http.MethodPut, path, map[string]any{"trigger_event": "*", "remove": true}, &got))
		require.Equal(t, http.StatusOK, b.RequestWithKey(key, http.MethodPut, path, map[string]any{"trigger_event": "*", "seconds": 30}, &got))
		require.Len(t, got.ConfirmationWindows, 1)
		require.Equal(t, 30, got.ConfirmationWindows[0].Seconds)
		require.Equal(t, 1, b.Count(`SELECT count(*) FROM confirmation_windows WHERE tenant_id = $1 AND trigger_event = '*' AND seconds = 0`, b.Tenant.ID),
			"acme's * window is untouched")
	})
}
