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
	"github.com/heraldhq/herald/db/dbtest"
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
	return h.request(h.T, false, key, method, path, body, out)
}

// RequestGarbage is Request for a body a test sends deliberately broken
// (NUL bytes, malformed JSON): the request is not compared with the OpenAPI
// document, the answer still is.
func (h *Herald) RequestGarbage(method, path string, body any, out any) int {
	h.T.Helper()
	return h.request(h.T, true, h.Key, method, path, body, out)
}

func (h *Herald) request(t testing.TB, garbage bool, key, method, path string, body any, out any) int {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(t, err)
		raw = j
	}
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(raw)
	}
	req := httptest.NewRequest(method, path, r)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp := h.do(t, req, raw, garbage)
	respBody, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil && len(respBody) > 0 {
		require.NoError(t, json.Unmarshal(respBody, out), "body: %s", respBody)
	}
	return resp.StatusCode
}

// Do sends a request to Herald's app and returns the answer, whose body
// the test reads and the test's end closes. A request to /api/ and its
// answer are checked against the OpenAPI document (see Contract); a
// departure fails t.
func (h *Herald) Do(t testing.TB, req *http.Request) *http.Response {
	t.Helper()
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		require.NoError(t, err)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	return h.do(t, req, body, false)
}

// DoGarbage is Do for a request a test sends deliberately broken: only the
// answer is checked against the OpenAPI document.
func (h *Herald) DoGarbage(t testing.TB, req *http.Request) *http.Response {
	t.Helper()
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		require.NoError(t, err)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	return h.do(t, req, body, true)
}

func (h *Herald) do(t testing.TB, req *http.Request, body []byte, garbage bool) *http.Response {
	t.Helper()
	check := req.Clone(req.Context())
	resp, err := h.App.Test(req, -1)
	require.NoError(t, err)
	respBody, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	CheckContract(t, Exchange{Request: check, RequestBody: body, Response: resp, ResponseBody: respBody, Garbage: garbage})
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// CheckContract fails t if an exchange with Herald's API departs from the
// OpenAPI document (see Contract).
func CheckContract(t testing.TB, x Exchange) {
	t.Helper()
	c, err := APIContract()
	require.NoError(t, err, "the OpenAPI document does not load")
	if err := c.Check(x); err != nil {
		t.Errorf("%v", err)
	}
}

// Client returns an HTTP client for a Herald served on a listener (browser
// tests, real connections) whose API requests and answers are checked
// against the OpenAPI document, as Request's are.
func Client(t testing.TB) *http.Client {
	return &http.Client{Transport: &ContractTransport{T: t, Next: http.DefaultTransport}}
}

// ContractTransport is an http.RoundTripper that checks each API request
// and answer against the OpenAPI document and fails T on a departure.
type ContractTransport struct {
	// T is failed (with Errorf, so a RoundTrip may run on any goroutine).
	T testing.TB
	// Next sends the request.
	Next http.RoundTripper
	// Garbage leaves the requests uncompared with the document, for a test
	// that sends them broken deliberately; the answers still are compared.
	Garbage bool
}

// RoundTrip implements http.RoundTripper.
func (ct *ContractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	check := req.Clone(req.Context())
	resp, err := ct.Next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	CheckContract(ct.T, Exchange{Request: check, RequestBody: body, Response: resp, ResponseBody: respBody, Garbage: ct.Garbage})
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	return resp, nil
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

// Reminder is a valid PRE_TRIP_REMINDER request (an optional event: opt-outs
// apply) for Anna Schmidt, on WhatsApp and e-mail.
func Reminder(eventID, booking string) map[string]any {
	b := Notification(eventID, booking)
	b["trigger_event"] = "PRE_TRIP_REMINDER"
	b["context"] = map[string]any{
		"passenger_name": "Anna Schmidt", "tour_name": "Gardasee", "departure_date": "2027-04-12",
		"boarding_point_name": "ZOB München", "boarding_time": "07:15", "passenger_instructions": "Bitte Ausweis mitbringen.",
	}
	return b
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
// that means for the failure message, and returns them. It gives up after
// dbtest.HangGuard.
func (h *Herald) WaitMessages(id uuid.UUID, what string, ok func([]*app.Message) bool) []*app.Message {
	h.T.Helper()
	var last []*app.Message
	deadline := time.Now().Add(dbtest.HangGuard)
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

// OwnerExec runs a statement in the platform scope as the role that owns
// the schema, for tests that change what the runtime role may not (a
// table, a function).
func (h *Herald) OwnerExec(query string, args ...any) {
	h.T.Helper()
	require.NoError(h.T, dbtest.OwnerDB(h.T, h.Services.DB).Store().InPlatform(h.Ctx, func(tx *db.Tx) error {
		_, err := tx.SQL().ExecContext(h.Ctx, query, args...)
		return err
	}))
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

// MessageColumns lists the columns of messages an insert may set (all but
// the generated ones), each prefixed with alias and a dot when alias is
// set, for tests that copy message rows.
func (h *Herald) MessageColumns(alias string) string {
	h.T.Helper()
	var cols string
	require.NoError(h.T, h.Services.Store.InPlatform(h.Ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(h.Ctx, `
			SELECT string_agg(CASE WHEN $1 = '' THEN '' ELSE $1 || '.' END || quote_ident(attname), ', ' ORDER BY attnum)
			FROM pg_attribute WHERE attrelid = 'messages'::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = ''`,
			alias).Scan(&cols)
	}))
	return cols
}
