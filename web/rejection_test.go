package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/web/webtest"
)

// sendAs sends an API request with key and the request id rid, and returns
// the answer's status. garbage skips the contract check of the request (a
// body sent broken on purpose); the answer is always checked.
func sendAs(t *testing.T, h *webtest.Herald, key, method, path, body, rid string, garbage bool) int {
	t.Helper()
	var req *http.Request
	if body == "" {
		req = httptest.NewRequest(method, path, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("X-Request-Id", rid)
	if garbage {
		return h.DoGarbage(t, req).StatusCode
	}
	return h.Do(t, req).StatusCode
}

// rejections lists every rejected request a tenant keeps, newest first.
func rejections(t *testing.T, h *webtest.Herald, tenantID uuid.UUID, f console.RejectionFilter) []*app.APIRejection {
	t.Helper()
	rs, _, err := h.Services.Console.Rejections.List(h.Ctx, tenantID, f, console.PageRequest{Limit: app.DefaultRejectionCap + 1})
	require.NoError(t, err)
	return rs
}

// rejectionOf returns the tenant's rejected request with the request id,
// or nil.
func rejectionOf(t *testing.T, h *webtest.Herald, tenantID uuid.UUID, rid string) *app.APIRejection {
	t.Helper()
	for _, r := range rejections(t, h, tenantID, console.RejectionFilter{}) {
		if r.RequestID == rid {
			return r
		}
	}
	return nil
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestRejections_Recorded(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	acme := c.Tenant.ID

	t.Run("ValidationError", func(t *testing.T) {
		t.Parallel()
		body := webtest.Notification("rej-invalid", "BK-RJ1")
		body["trigger_event"] = "BOOKING_EXPLODED"
		require.Equal(t, http.StatusUnprocessableEntity, sendAs(t, c.Herald, c.Key, http.MethodPost, "/api/v1/notifications", jsonOf(t, body), "rid-invalid", false))
		r := rejectionOf(t, c.Herald, acme, "rid-invalid")
		require.NotNil(t, r, "a validation error is kept")
		require.Equal(t, http.StatusUnprocessableEntity, r.Status)
		require.Equal(t, "POST", r.Method)
		require.Equal(t, "/api/v1/notifications", r.Path)
		require.NotEmpty(t, r.Code)
		require.NotEmpty(t, r.Message)
		require.NotNil(t, r.Field)
		require.Equal(t, "trigger_event", *r.Field)
		require.Equal(t, "rej-invalid", *r.EventID)
		require.Equal(t, c.Key[:11], *r.KeyPrefix)
		// Redacted: structure and identifiers kept, the person masked.
		require.Contains(t, r.Body, `"event_id": "rej-invalid"`)
		require.Contains(t, r.Body, `"trigger_event": "BOOKING_EXPLODED"`)
		require.Contains(t, r.Body, `"passenger_name": "••• (12 characters)"`)
		require.Contains(t, r.Body, `"email": "a•••@example.com"`)
		require.Contains(t, r.Body, `"phone": "+49 ••• ••• 6789"`)
		for _, secret := range []string{"Anna", "Schmidt", "anna@example.com", "23456789", "Gardasee"} {
			require.NotContains(t, r.Body, secret)
		}
		require.Equal(t, len(jsonOf(t, body)), r.BodySize)
		// Nothing of the event is stored.
		requireNothingStoredIn(t, c.Herald, "rej-invalid")
	})

	t.Run("MalformedJSON", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, http.StatusBadRequest, sendAs(t, c.Herald, c.Key, http.MethodPost, "/api/v1/notifications", `{"event_id": "rej-bad", "name": "Anna`, "rid-malformed", true))
		r := rejectionOf(t, c.Herald, acme, "rid-malformed")
		require.NotNil(t, r)
		require.Equal(t, http.StatusBadRequest, r.Status)
		require.NotContains(t, r.Body, "Anna", "a body that is not JSON is described, not kept")
		require.Contains(t, r.Body, "not valid JSON")
	})

	t.Run("DuplicateAndConflict", func(t *testing.T) {
		t.Parallel()
		body := webtest.Notification("rej-dup", "BK-RJ2")
		require.Equal(t, http.StatusAccepted, sendAs(t, c.Herald, c.Key, http.MethodPost, "/api/v1/notifications", jsonOf(t, body), "rid-first", false))
		require.Nil(t, rejectionOf(t, c.Herald, acme, "rid-first"), "an accepted request is not kept")

		require.Equal(t, http.StatusOK, sendAs(t, c.Herald, c.Key, http.MethodPost, "/api/v1/notifications", jsonOf(t, body), "rid-dup", false))
		dup := rejectionOf(t, c.Herald, acme, "rid-dup")
		require.NotNil(t, dup, "a repeated event id is kept: nothing new was sent")
		require.Equal(t, http.StatusOK, dup.Status)
		require.Equal(t, "duplicate_event_id", dup.Code)

		body["context"].(map[string]any)["tour_name"] = "Dolomiten"
		require.Equal(t, http.StatusConflict, sendAs(t, c.Herald, c.Key, http.MethodPost, "/api/v1/notifications", jsonOf(t, body), "rid-conflict", false))
		conflict := rejectionOf(t, c.Herald, acme, "rid-conflict")
		require.NotNil(t, conflict)
		require.Equal(t, http.StatusConflict, conflict.Status)
		require.Equal(t, "idempotency_conflict", conflict.Code)

		byEvent := rejections(t, c.Herald, acme, console.RejectionFilter{EventID: "rej-dup"})
		require.Len(t, byEvent, 2, "filtered by event id: the duplicate and the conflict")
		require.Equal(t, "rid-conflict", byEvent[0].RequestID, "newest first")
	})

	t.Run("UnknownSecretOfAKnownKey", func(t *testing.T) {
		t.Parallel()
		wrong := c.Key[:11] + strings.Repeat("Z", len(c.Key)-11)
		require.Equal(t, http.StatusUnauthorized, sendAs(t, c.Herald, wrong, http.MethodGet, "/api/v1/tenant", "", "rid-wrong-key", false))
		r := rejectionOf(t, c.Herald, acme, "rid-wrong-key")
		require.NotNil(t, r, "the key's prefix names the tenant")
		require.Equal(t, http.StatusUnauthorized, r.Status)
		require.Equal(t, app.EUNAUTHORIZED, r.Code)
		require.Equal(t, c.Key[:11], *r.KeyPrefix)
	})

	t.Run("RevokedKey", func(t *testing.T) {
		t.Parallel()
		k, secret, err := c.Services.APIKeys.Create(c.Ctx, app.CLIActor, acme, "old system")
		require.NoError(t, err)
		_, err = c.Services.APIKeys.Revoke(c.Ctx, app.CLIActor, acme, k.ID)
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, sendAs(t, c.Herald, secret, http.MethodGet, "/api/v1/tenant", "", "rid-revoked", false))
		r := rejectionOf(t, c.Herald, acme, "rid-revoked")
		require.NotNil(t, r)
		require.Equal(t, k.Prefix, *r.KeyPrefix)
	})

	t.Run("SuspendedTenant", func(t *testing.T) {
		t.Parallel()
		tn, err := c.Services.Tenants.Create(c.Ctx, app.CLIActor, app.TenantInput{Slug: "initech", Name: "Initech"})
		require.NoError(t, err)
		_, key, err := c.Services.APIKeys.Create(c.Ctx, app.CLIActor, tn.ID, "initech system")
		require.NoError(t, err)
		_, err = c.Services.Console.Tenants.Suspend(c.Ctx, c.users[asOperator], tn.ID, "unpaid invoices")
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, sendAs(t, c.Herald, key, http.MethodGet, "/api/v1/tenant", "", "rid-suspended", false))
		r := rejectionOf(t, c.Herald, tn.ID, "rid-suspended")
		require.NotNil(t, r, "the suspended tenant sees why its requests are refused")
		require.Equal(t, "tenant_suspended", r.Code)
		require.Nil(t, rejectionOf(t, c.Herald, acme, "rid-suspended"))
	})

	t.Run("ScopeRefused", func(t *testing.T) {
		t.Parallel()
		_, reader, err := c.Services.APIKeys.Create(c.Ctx, app.CLIActor, acme, "reader", app.ScopeRead)
		require.NoError(t, err)
		body := jsonOf(t, webtest.Notification("rej-scope", "BK-RJ3"))
		require.Equal(t, http.StatusForbidden, sendAs(t, c.Herald, reader, http.MethodPost, "/api/v1/notifications", body, "rid-scope", false))
		r := rejectionOf(t, c.Herald, acme, "rid-scope")
		require.NotNil(t, r)
		require.Equal(t, "insufficient_scope", r.Code)
		require.Equal(t, "rej-scope", *r.EventID)
		requireNothingStoredIn(t, c.Herald, "rej-scope")
	})

	t.Run("UnknownRouteAndNotFound", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, http.StatusNotFound, sendAs(t, c.Herald, c.Key, http.MethodGet, "/api/v1/notifications/"+uuid.NewString(), "", "rid-404", false))
		r := rejectionOf(t, c.Herald, acme, "rid-404")
		require.NotNil(t, r)
		require.Equal(t, app.ENOTFOUND, r.Code)
	})

	t.Run("QueryAddressesMasked", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, http.StatusUnprocessableEntity, sendAs(t, c.Herald, c.Key, http.MethodGet, "/api/v1/messages?limit=0&to=%2B4915123456789", "", "rid-query", true))
		r := rejectionOf(t, c.Herald, acme, "rid-query")
		require.NotNil(t, r)
		require.NotContains(t, r.Path, "4915123456789")
	})

	t.Run("NoTenantNoRecord", func(t *testing.T) {
		t.Parallel()
		before := c.Count(`SELECT count(*) FROM api_rejections WHERE request_id = 'rid-nobody'`)
		require.Equal(t, http.StatusUnauthorized, sendAs(t, c.Herald, "hk_"+strings.Repeat("Q", 26), http.MethodGet, "/api/v1/tenant", "", "rid-nobody", false))
		require.Equal(t, http.StatusUnauthorized, sendAs(t, c.Herald, "", http.MethodGet, "/api/v1/tenant", "", "rid-nobody", false))
		require.Equal(t, before, c.Count(`SELECT count(*) FROM api_rejections WHERE request_id = 'rid-nobody'`),
			"a key no tenant has is kept nowhere")
	})

	t.Run("SuccessNotRecorded", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, http.StatusAccepted, sendAs(t, c.Herald, c.Key, http.MethodPost, "/api/v1/notifications",
			jsonOf(t, webtest.Notification("rej-ok", "BK-RJ4")), "rid-ok", false))
		require.Equal(t, http.StatusOK, sendAs(t, c.Herald, c.Key, http.MethodGet, "/api/v1/tenant", "", "rid-ok-get", false))
		require.Equal(t, 0, c.Count(`SELECT count(*) FROM api_rejections WHERE request_id IN ('rid-ok', 'rid-ok-get')`))
	})
}

// requireNothingStoredIn checks that no event with the source id exists.
func requireNothingStoredIn(t *testing.T, h *webtest.Herald, eventID string) {
	t.Helper()
	require.Zero(t, h.Count(`SELECT count(*) FROM events WHERE source_event_id = $1`, eventID), "nothing is stored for %s", eventID)
}

func TestRejections_TenantIsolation(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	body := webtest.Notification("rej-iso", "BK-ISO")
	body["recipients"] = []map[string]any{}
	require.Equal(t, http.StatusUnprocessableEntity, sendAs(t, c.Herald, c.Key, http.MethodPost, "/api/v1/notifications", jsonOf(t, body), "rid-iso", false))
	r := rejectionOf(t, c.Herald, c.Tenant.ID, "rid-iso")
	require.NotNil(t, r)

	require.Empty(t, rejections(t, c.Herald, c.other.ID, console.RejectionFilter{}), "globex keeps none of acme's")
	_, err := c.Services.Console.Rejections.Get(c.Ctx, c.other.ID, r.ID)
	require.Equal(t, app.ENOTFOUND, app.ErrorCode(err))

	other := c.signIn(asOtherManager)
	doc := other.page("/t/globex/requests")
	require.NotContains(t, doc.Text(), "rej-iso")
	_, resp := other.get("/t/globex/requests/" + r.ID.String())
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	_, resp = other.get("/t/acme/requests")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	for _, who := range []string{asManager, asSupport, asOperator} {
		s := c.signIn(who)
		doc := s.page("/t/acme/requests")
		require.Contains(t, doc.Text(), "rej-iso", who)
		detail := s.page("/t/acme/requests/" + r.ID.String())
		require.Contains(t, detail.Find("pre.req-body").Text(), `"event_id": "rej-iso"`, who)
		require.NotContains(t, detail.Text(), "Anna Schmidt", who)
	}
}

func TestRejections_CapUnderConcurrency(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	const capacity, n = 5, 40
	h.Services.Rejections.Cap = capacity
	h.Services.Rejections.Burst, h.Services.Rejections.Rate = 1000, 1000

	var wg sync.WaitGroup
	statuses := make(chan int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := httptest.NewRequest(http.MethodPost, "/api/v1/notifications", strings.NewReader(`{"event_id": "cap-`+fmt.Sprint(i)+`"}`))
			req.Header.Set("Authorization", "Bearer "+h.Key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := h.App.Test(req, -1)
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		require.Equal(t, http.StatusUnprocessableEntity, s)
	}
	require.Equal(t, capacity, h.Count(`SELECT count(*) FROM api_rejections WHERE tenant_id = $1`, h.Tenant.ID), "the ring holds exactly its capacity")
	require.Equal(t, n, h.Count(`SELECT seq::int FROM api_rejection_counters WHERE tenant_id = $1`, h.Tenant.ID), "every rejection took a number")
	require.Equal(t, capacity, h.Count(`SELECT count(*) FROM api_rejections WHERE tenant_id = $1 AND seq > $2`, h.Tenant.ID, n-capacity),
		"the newest are kept")
}

func TestRejections_Throttled(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	rj := h.Services.Rejections
	rj.Burst, rj.Rate = 3, 1e-9
	for i := range 10 {
		require.Equal(t, http.StatusNotFound, sendAs(t, h, h.Key, http.MethodGet, "/api/v1/nothing-here", "", fmt.Sprint("flood-", i), false))
	}
	require.Equal(t, 3, h.Count(`SELECT count(*) FROM api_rejections WHERE tenant_id = $1`, h.Tenant.ID),
		"a flood costs the burst, the rest is counted")
	rj.Rate = 1e9
	require.Equal(t, http.StatusNotFound, sendAs(t, h, h.Key, http.MethodGet, "/api/v1/nothing-here", "", "after-flood", false))
	r := rejectionOf(t, h, h.Tenant.ID, "after-flood")
	require.NotNil(t, r)
	require.Equal(t, 7, r.Suppressed, "the next one kept says how many were not")
}

func TestRejections_Pruned(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	for _, rid := range []string{"old-1", "old-2", "new-1"} {
		require.Equal(t, http.StatusNotFound, sendAs(t, h, h.Key, http.MethodGet, "/api/v1/nothing-here", "", rid, false))
	}
	days := h.Tenant.Retention()
	h.Exec(`UPDATE api_rejections SET at = $2 WHERE request_id IN ('old-1', 'old-2') AND tenant_id = $1`,
		h.Tenant.ID, time.Now().AddDate(0, 0, -days-1))
	res, err := h.Services.Maintenance.Prune(h.Ctx)
	require.NoError(t, err)
	require.Equal(t, 2, res.Rejections)
	rs := rejections(t, h, h.Tenant.ID, console.RejectionFilter{})
	require.Len(t, rs, 1)
	require.Equal(t, "new-1", rs[0].RequestID)
}
