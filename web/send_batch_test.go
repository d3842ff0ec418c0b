package web_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestSendBatch holds the first batch of accepted sends until two sends
// share a batch: every message ends SENT once (one timeline entry, counted
// once in the usage), and the sandbox's receipts, which came before the
// record, are applied with it.
func TestSendBatch(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	batch := h.Services.Dispatcher.SendBatch
	batch.Writers = 1
	held, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	first := true
	batch.Observe = func(n int) {
		mu.Lock()
		sizes = append(sizes, n)
		wait := first
		first = false
		mu.Unlock()
		if wait {
			close(held)
			<-release
		}
	}
	h.Worker = h.StartWorkers()

	// Twenty bookings' confirmations at once: twenty route jobs send at
	// the same time, each its message's first attempt.
	const passengers = 20
	ids := make([]uuid.UUID, passengers)
	for i := range passengers {
		body := webtest.Notification(fmt.Sprintf("send-batch-%d", i), fmt.Sprintf("BK-SB%d", i))
		body["recipients"] = []map[string]any{{"name": fmt.Sprintf("Passenger %d", i), "email": fmt.Sprintf("p%d@example.com", i), "locale": "de-DE"}}
		body["channels"] = []string{"EMAIL"}
		ids[i] = h.Submit(body)
	}

	<-held
	// The first batch's record holds the one writer; the sends accepted
	// meanwhile wait for the next batch (unless the first took them).
	h.WaitUntil("two sends in one batch", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return sizes[0] >= 2 || batch.Waiting() >= 2
	})
	close(release)

	var ms []*app.Message
	for _, id := range ids {
		ms = append(ms, webtest.OnlyMessage(t, h.WaitMessages(id, "the message read", webtest.AllStatus(app.MessageRead))))
	}
	for _, m := range ms {
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM message_events WHERE message_id = $1 AND to_status = 'SENT'`, m.ID), "message %s", m.ID)
		require.NotNil(t, m.ExternalMessageID)
	}
	require.Equal(t, passengers, h.Count(`SELECT coalesce(sum(count), 0)::int FROM usage_counters WHERE tenant_id = $1 AND channel = 'EMAIL'`, h.Tenant.ID))
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, slices.Max(sizes), 2, "some sends shared a transaction: %v", sizes)
	require.Equal(t, passengers, sum(sizes), "every send was recorded in a batch: %v", sizes)
}

func sum(ns []int) int {
	total := 0
	for _, n := range ns {
		total += n
	}
	return total
}
