package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/web/webtest"
)

func TestAPI_DeliveryDeadlines(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})
	type list struct {
		DeliveryDeadlines []struct {
			TriggerEvent string `json:"trigger_event"`
			Channel      string `json:"channel"`
			Minutes      int    `json:"minutes"`
			Stage        string `json:"stage"`
			Before       int    `json:"before_departure_minutes"`
		} `json:"delivery_deadlines"`
	}

	var got list
	require.Equal(t, http.StatusOK, p.Request(http.MethodGet, "/api/v1/delivery-deadlines", nil, &got))
	require.Empty(t, got.DeliveryDeadlines, "off by default")

	body := map[string]any{"trigger_event": "BOOKING_CONFIRMED", "channel": "WHATSAPP", "minutes": 15}
	require.Equal(t, http.StatusOK, p.Request(http.MethodPut, "/api/v1/delivery-deadlines", body, &got))
	require.Len(t, got.DeliveryDeadlines, 1)
	require.Equal(t, 15, got.DeliveryDeadlines[0].Minutes)
	require.Equal(t, 1, p.Count(`SELECT count(*) FROM audit_log WHERE action = 'delivery_deadline.set' AND actor_type = 'api_key'`))

	body["minutes"] = 5000
	require.Equal(t, http.StatusUnprocessableEntity, p.Request(http.MethodPut, "/api/v1/delivery-deadlines", body, nil))

	body["minutes"] = 0
	require.Equal(t, http.StatusOK, p.Request(http.MethodPut, "/api/v1/delivery-deadlines", body, &got))
	require.Empty(t, got.DeliveryDeadlines)

	// "Not acknowledged two hours before the departure."
	ack := map[string]any{"trigger_event": "BOOKING_CONFIRMED", "channel": "SMS", "stage": "ACKNOWLEDGED", "before_departure_minutes": 120}
	require.Equal(t, http.StatusOK, p.Request(http.MethodPut, "/api/v1/delivery-deadlines", ack, &got))
	require.Len(t, got.DeliveryDeadlines, 1)
	require.Equal(t, 120, got.DeliveryDeadlines[0].Before)
	require.Zero(t, got.DeliveryDeadlines[0].Minutes)

	for name, tc := range map[string]struct {
		body  map[string]any
		field string
	}{
		"Both":        {map[string]any{"minutes": 30, "before_departure_minutes": 120}, "minutes"},
		"Neither":     {map[string]any{}, "minutes"},
		"TooFar":      {map[string]any{"before_departure_minutes": 20000}, "before_departure_minutes"},
		"Negative":    {map[string]any{"before_departure_minutes": -1}, "before_departure_minutes"},
		"NotAckStage": {map[string]any{"before_departure_minutes": 120, "stage": "READ"}, "before_departure_minutes"},
	} {
		body := map[string]any{"trigger_event": "BOOKING_CONFIRMED", "channel": "SMS", "stage": "ACKNOWLEDGED"}
		for k, v := range tc.body {
			body[k] = v
		}
		var res struct {
			Error struct{ Code, Message, Field string } `json:"error"`
		}
		require.Equal(t, http.StatusUnprocessableEntity, p.Request(http.MethodPut, "/api/v1/delivery-deadlines", body, &res), name)
		require.Equal(t, tc.field, res.Error.Field, name)
		require.NotEmpty(t, res.Error.Message, name)
	}
	require.Equal(t, http.StatusOK, p.Request(http.MethodGet, "/api/v1/delivery-deadlines", nil, &got))
	require.Len(t, got.DeliveryDeadlines, 1, "nothing stored")
	require.Equal(t, 120, got.DeliveryDeadlines[0].Before)

	delete(ack, "before_departure_minutes")
	ack["before_departure_minutes"] = 0
	require.Equal(t, http.StatusOK, p.Request(http.MethodPut, "/api/v1/delivery-deadlines", ack, &got))
	require.Empty(t, got.DeliveryDeadlines)
}
