package web_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestSendsAtOnce submits twenty bookings' confirmations at once, so that
// their dispatch jobs send and record at the same time: every message ends
// READ, SENT once on its timeline and counted once in the usage, and the
// sandbox's receipts, stored before each send was recorded, are applied.
func TestSendsAtOnce(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{})
	const passengers = 20
	ids := make([]uuid.UUID, passengers)
	for i := range passengers {
		body := webtest.Notification(fmt.Sprintf("at-once-%d", i), fmt.Sprintf("BK-AO%d", i))
		body["recipients"] = []map[string]any{{"name": fmt.Sprintf("Passenger %d", i), "email": fmt.Sprintf("p%d@example.com", i), "locale": "de-DE"}}
		body["channels"] = []string{"EMAIL"}
		ids[i] = h.Submit(body)
	}
	for _, id := range ids {
		m := webtest.OnlyMessage(t, h.WaitMessages(id, "the message read", webtest.AllStatus(app.MessageRead)))
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM message_events WHERE message_id = $1 AND to_status = 'SENT'`, m.ID), "message %s", m.ID)
		require.NotNil(t, m.ExternalMessageID)
	}
	require.Equal(t, passengers, h.Count(`SELECT coalesce(sum(count), 0)::int FROM usage_counters WHERE tenant_id = $1 AND channel = 'EMAIL'`, h.Tenant.ID))
	h.WaitReceipts()
	require.Zero(t, h.Count(`SELECT count(*) FROM receipt_inbox`), "no receipt left waiting")
}
