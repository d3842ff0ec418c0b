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
}
