package webtest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/web/webtest"
)

// recorder is a testing.TB that keeps the failures reported to it.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

const (
	tenantJSON    = `{"id":"6f1c0e52-3b1a-4c47-9a55-0d2b8f1e4a77","slug":"acme","name":"Acme","plan":"PRO","default_locale":"de-DE","timezone":"Europe/Berlin","retention_days":90,"status":"ACTIVE"`
	validRequest  = `{"event_id":"e-1","trigger_event":"BOOKING_CONFIRMED","recipients":[{"name":"Anna","email":"anna@example.com"}],"context":{"tour_name":"Garda"}}`
	submitted     = `{"id":"6f1c0e52-3b1a-4c47-9a55-0d2b8f1e4a77","status":"RECEIVED"}`
	notFoundError = `{"error":{"code":"not_found","message":"Not found."}}`
)

// TestContract_CatchesDrift runs a stand-in for Herald that answers what
// each case says, through the same transport the harness uses, and checks
// what the contract reports: a server that drifts from the document fails
// the test that called it, with the operation and the JSON path at fault.
func TestContract_CatchesDrift(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		method, path, body string
		status             int
		contentType        string
		answer             string
		location           string
		garbage            bool
		want               []string // substrings of the one failure; none: no failure
	}{
		"Conforming": {
			method: "GET", path: "/api/v1/tenant", status: 200, answer: tenantJSON + `}`,
		},
		"UndocumentedField": {
			method: "GET", path: "/api/v1/tenant", status: 200, answer: tenantJSON + `,"owner_email":"boss@example.com"}`,
			want: []string{"operation getTenant", "$.body.owner_email", "not declared"},
		},
		"MissingField": {
			method: "GET", path: "/api/v1/tenant", status: 200, answer: `{"id":"6f1c0e52-3b1a-4c47-9a55-0d2b8f1e4a77"}`,
			want: []string{"operation getTenant", "missing properties"},
		},
		"WrongTypeDeepInside": {
			method: "GET", path: "/api/v1/events", status: 200,
			answer: `{"events":[{"trigger_event":"X","description":"d","channels":["PIGEON"],"variables":[],"requires_approval":false,"once_per_entity":true,"category":"transactional","sample_context":{}}]}`,
			want:   []string{"operation listEvents", "$.events[0].channels[0]"},
		},
		"FreeFormMapsHoldAnything": {
			method: "GET", path: "/api/v1/events", status: 200,
			answer: `{"events":[{"trigger_event":"X","description":"d","channels":["EMAIL"],"variables":[],"requires_approval":false,"once_per_entity":true,"category":"transactional","sample_context":{"any":{"nested":"keys"}},"variable_types":[],"urgent":false,"builtin":true}]}`,
		},
		"UndocumentedStatus": {
			method: "GET", path: "/api/v1/tenant", status: 418, answer: `{"error":{"code":"teapot","message":"No."}}`,
			want: []string{"operation getTenant", "418"},
		},
		"WrongContentType": {
			method: "GET", path: "/api/v1/tenant", status: 200, contentType: "text/plain", answer: tenantJSON + `}`,
			want: []string{"operation getTenant", "text/plain"},
		},
		"ErrorWithoutMessage": {
			method: "GET", path: "/api/v1/notifications/6f1c0e52-3b1a-4c47-9a55-0d2b8f1e4a77", status: 404, answer: `{"error":{"code":"not_found"}}`,
			want: []string{"operation getNotification", "message"},
		},
		"MissingRequiredHeader": {
			method: "POST", path: "/api/v1/notifications", body: validRequest, status: 202, answer: submitted,
			want: []string{"operation createNotification", "Location"},
		},
		"UndocumentedRoute": {
			method: "GET", path: "/api/v1/widgets", status: 200, answer: `{"widgets":[]}`,
			want: []string{"GET /api/v1/widgets answered 200", "no operation"},
		},
		"UndocumentedMethod": {
			method: "DELETE", path: "/api/v1/tenant", status: 200, answer: tenantJSON + `}`,
			want: []string{"no operation DELETE /api/v1/tenant"},
		},
		"UndocumentedRouteRefused": {
			method: "GET", path: "/api/v1/widgets", status: 404, answer: notFoundError,
		},
		"AcceptedInvalidRequest": {
			method: "POST", path: "/api/v1/notifications", body: `{"event_id":"e-1"}`, status: 202, answer: submitted,
			location: "/api/v1/notifications/6f1c0e52-3b1a-4c47-9a55-0d2b8f1e4a77",
			want:     []string{"accepted a request the document refuses", "missing property"},
		},
		"GarbageRequestIsNotCompared": {
			method: "POST", path: "/api/v1/notifications", body: `{"event_id":"e-1"}`, status: 202, answer: submitted,
			location: "/api/v1/notifications/6f1c0e52-3b1a-4c47-9a55-0d2b8f1e4a77", garbage: true,
		},
		"GarbageRequestResponseIsCompared": {
			method: "POST", path: "/api/v1/notifications", body: "{\"event_id\":\"\x00\"}", status: 400,
			answer:  `{"error":{"code":"invalid_text","message":"NUL.","details":[{"code":"invalid_text","message":"NUL."}],"extra":true}}`,
			garbage: true,
			want:    []string{"operation createNotification", "$.body.error.extra"},
		},
		"RefusedButDocumentAccepts": {
			method: "POST", path: "/api/v1/notifications", body: validRequest, status: 422,
			answer: `{"error":{"code":"no_recipient","message":"At least one recipient is required.","field":"recipients","details":[{"code":"no_recipient","message":"At least one recipient is required.","field":"recipients"}]}}`,
			want:   []string{"refused the request (no_recipient), but the document accepts it"},
		},
		"RefusedByARuleTheDocumentCannotExpress": {
			method: "POST", path: "/api/v1/notifications", body: validRequest, status: 422,
			answer: `{"error":{"code":"missing_variable","message":"context.passenger_name is required.","field":"context.passenger_name","details":[{"code":"missing_variable","message":"context.passenger_name is required.","field":"context.passenger_name"}]}}`,
		},
		"UnknownQueryParameter": {
			method: "GET", path: "/api/v1/notifications?event_id=e-1&tenant=acme", status: 200,
			answer: `{"id":"6f1c0e52-3b1a-4c47-9a55-0d2b8f1e4a77","event_id":"e-1","trigger_event":"BOOKING_CONFIRMED","recipients":[],"context":{},"version":1,"status":"ROUTED","created_at":"2027-01-01T00:00:00Z","updated_at":"2027-01-01T00:00:00Z","messages":[]}`,
			want:   []string{"accepted a request the document refuses", "tenant"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ct := tc.contentType
				if ct == "" {
					ct = "application/json"
				}
				w.Header().Set("Content-Type", ct)
				if tc.location != "" {
					w.Header().Set("Location", tc.location)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.answer)
			}))
			t.Cleanup(srv.Close)

			rec := &recorder{TB: t}
			client := &http.Client{Transport: &webtest.ContractTransport{T: rec, Next: http.DefaultTransport, Garbage: tc.garbage}}
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, body)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer hk_test")
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			require.NoError(t, err)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.answer, string(got), "the caller still reads the answer")
			resp.Body.Close()

			if len(tc.want) == 0 {
				require.Empty(t, rec.errors)
				return
			}
			require.Len(t, rec.errors, 1)
			for _, w := range tc.want {
				require.Contains(t, rec.errors[0], w)
			}
		})
	}
}

// TestContract_OnlyTheAPI leaves everything outside /api/ alone.
func TestContract_OnlyTheAPI(t *testing.T) {
	t.Parallel()
	c, err := webtest.APIContract()
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodGet, "/t/acme/messages", nil)
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/html"}}}
	require.NoError(t, c.Check(webtest.Exchange{Request: req, Response: resp, ResponseBody: []byte("<html>")}))
}
