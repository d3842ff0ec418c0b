package webtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// APIError is the JSON API's error answer.
type APIError struct {
	// Error is the code, message and (for invalid input) the field at fault.
	Error struct{ Code, Message, Field string }
}

// EventView is a notification as GET /api/v1/notifications/:id shows it.
type EventView struct {
	// ID is the event's id.
	ID uuid.UUID
	// Status is the event's status (app.EventReceived, ...).
	Status string
	// Version is 1 at intake and goes up with every reschedule.
	Version int
	// Messages are the messages the event has been routed to.
	Messages []*app.Message
}

// Request sends an API request with the tenant's key and decodes the JSON
// answer into out, unless out is nil; it returns the status code. A body
// that is a []byte or a string is sent as it is, anything else as JSON.
func (h *Herald) Request(method, path string, body any, out any) int {
	h.T.Helper()
	return h.RequestWithKey(h.Key, method, path, body, out)
}

// RequestWithKey is Request with another API key, another tenant's say.
func (h *Herald) RequestWithKey(key, method, path string, body any, out any) int {
	h.T.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(h.T, err)
		r = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, r)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.App.Test(req, -1)
	require.NoError(h.T, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(h.T, err)
	if out != nil && len(raw) > 0 {
		require.NoError(h.T, json.Unmarshal(raw, out), "body: %s", raw)
	}
	return resp.StatusCode
}

// Notification is a valid BOOKING_CONFIRMED request for one passenger, Anna
// Schmidt, by e-mail and WhatsApp.
func Notification(eventID, booking string) map[string]any {
	return map[string]any{
		"event_id":      eventID,
		"trigger_event": "BOOKING_CONFIRMED",
		"recipients": []map[string]any{{
			"name": "Anna Schmidt", "phone": "+49 151 23456789", "email": "anna@example.com", "locale": "de-DE",
		}},
		"context": map[string]any{
			"passenger_name": "Anna Schmidt", "tour_name": "Gardasee", "departure_date": "2027-04-12",
			"booking_reference": booking, "deposit_amount": "150,00 €",
		},
		"conversation_context": map[string]any{"type": "booking", "id": booking},
	}
}

// WithRecipient returns a BOOKING_CONFIRMED request for one recipient, on
// the channels named, or the event's own when none are.
func WithRecipient(eventID, booking string, recipient map[string]any, channels ...string) map[string]any {
	b := Notification(eventID, booking)
	b["recipients"] = []map[string]any{recipient}
	if len(channels) > 0 {
		b["channels"] = channels
	}
	return b
}

// Submit posts a notification, which must be accepted, and returns its id.
func (h *Herald) Submit(body map[string]any) uuid.UUID {
	h.T.Helper()
	var res struct {
		ID     uuid.UUID
		Status string
	}
	status := h.Request(http.MethodPost, "/api/v1/notifications", body, &res)
	require.Equal(h.T, http.StatusAccepted, status)
	return res.ID
}

// Event reads a notification of the tenant through the API.
func (h *Herald) Event(id uuid.UUID) EventView {
	h.T.Helper()
	var e EventView
	require.Equal(h.T, http.StatusOK, h.Request(http.MethodGet, "/api/v1/notifications/"+id.String(), nil, &e))
	return e
}

// WaitMessages waits until the event's messages satisfy ok, what says what
// that means for the failure message, and returns them.
func (h *Herald) WaitMessages(id uuid.UUID, what string, ok func([]*app.Message) bool) []*app.Message {
	h.T.Helper()
	var last []*app.Message
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		last = h.Event(id).Messages
		if ok(last) {
			return last
		}
		time.Sleep(30 * time.Millisecond)
	}
	h.T.Fatalf("timed out waiting for %s; messages: %s", what, DescribeMessages(last))
	return nil
}

// DescribeMessages lists the messages' channels, statuses and failure
// reasons, for failure messages.
func DescribeMessages(ms []*app.Message) string {
	var b strings.Builder
	for _, m := range ms {
		reason := ""
		if m.FailedReason != nil {
			reason = *m.FailedReason
		}
		fmt.Fprintf(&b, "[%s %s %s] ", m.Channel, m.Status, reason)
	}
	return b.String()
}

// AllStatus is a condition for WaitMessages: there are messages, and all
// have the status.
func AllStatus(status string) func([]*app.Message) bool {
	return func(ms []*app.Message) bool {
		if len(ms) == 0 {
			return false
		}
		for _, m := range ms {
			if m.Status != status {
				return false
			}
		}
		return true
	}
}

// OnlyMessage returns the one message of ms, failing t if there are more
// or none.
func OnlyMessage(t testing.TB, ms []*app.Message) *app.Message {
	t.Helper()
	require.Len(t, ms, 1, DescribeMessages(ms))
	return ms[0]
}

// Timeline reads a message's delivery timeline through the API.
func (h *Herald) Timeline(messageID uuid.UUID) []*app.MessageEvent {
	h.T.Helper()
	var d struct{ Timeline []*app.MessageEvent }
	require.Equal(h.T, http.StatusOK, h.Request(http.MethodGet, "/api/v1/messages/"+messageID.String(), nil, &d))
	return d.Timeline
}

// Count runs a query that returns one number in the platform scope (every
// tenant's rows).
func (h *Herald) Count(query string, args ...any) int {
	h.T.Helper()
	var n int
	require.NoError(h.T, h.Services.Store.InPlatform(h.Ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(h.Ctx, query, args...).Scan(&n)
	}))
	return n
}

// Exec runs a statement in the platform scope, for tests that set up state
// no service offers to set.
func (h *Herald) Exec(query string, args ...any) {
	h.T.Helper()
	require.NoError(h.T, h.Services.Store.InPlatform(h.Ctx, func(tx *db.Tx) error {
		_, err := tx.SQL().ExecContext(h.Ctx, query, args...)
		return err
	}))
}

// ActiveAccount returns the tenant's ACTIVE channel account of a channel.
func (h *Herald) ActiveAccount(ch app.Channel) *app.ChannelAccount {
	h.T.Helper()
	var a *app.ChannelAccount
	require.NoError(h.T, h.Services.Store.InTenant(h.Ctx, h.Tenant.ID, func(tx *db.Tx) (err error) {
		a, err = tx.ActiveAccount(h.Ctx, h.Tenant.ID, ch)
		return err
	}))
	return a
}
