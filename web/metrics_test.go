package web_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestMetrics_KeepAliveLabels sends requests of every method over one
// keep-alive connection, as a client or proxy does, then scrapes: a
// request's values must not change after its handler returns (fiber reuses
// the buffers they point into), or labels read "GETT" or "POS" and the
// registry refuses to serve.
func TestMetrics_KeepAliveLabels(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = h.App.Listener(ln) }()
	t.Cleanup(func() { _ = h.App.Shutdown() })

	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	roundTrip := func(method, path, auth string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+ln.Addr().String()+path, nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		require.NoError(t, req.Write(conn))
		resp, err := http.ReadResponse(r, req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	methods := []string{"GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"}
	for range 3 {
		for _, m := range methods {
			roundTrip(m, "/healthz", "")
			roundTrip(m, "/api/v1/tenant", "Bearer "+h.Key)
			roundTrip(m, "/no/such/page", "")
		}
	}
	label := regexp.MustCompile(`herald_http_requests_total\{method="([^"]*)"`)
	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		resp, err := h.App.Test(req, -1)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "the registry serves: %s", body)
		seen := label.FindAllStringSubmatch(string(body), -1)
		require.NotEmpty(t, seen)
		for _, m := range seen {
			require.Contains(t, methods, m[1], "every method label is a method")
		}
		// The keep-alive connection is still used between scrapes.
		require.Equal(t, http.StatusOK, roundTrip("GET", "/healthz", "").StatusCode)
	}
}

// TestMetrics_Exposure: /metrics on the public port is for whom it is
// meant: anyone in dev, a bearer of HERALD_METRICS_TOKEN, or nobody when
// HERALD_METRICS_ADDR serves it elsewhere or in prod without a token.
func TestMetrics_Exposure(t *testing.T) {
	t.Parallel()
	const token = "metrics-token-0123456789abcdef"
	get := func(t *testing.T, h *webtest.Herald, auth string) *http.Response {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := h.App.Test(req, -1)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	t.Run("DevIsOpen", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{NoWorkers: true})
		require.Equal(t, http.StatusOK, get(t, h, "").StatusCode)
	})
	t.Run("ProdWithoutTokenIsHidden", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{NoWorkers: true, Config: func(c *app.Config) { c.Env = app.EnvProd }})
		require.Equal(t, http.StatusNotFound, get(t, h, "").StatusCode)
	})
	t.Run("TokenRequired", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{NoWorkers: true, Config: func(c *app.Config) { c.Env, c.MetricsToken = app.EnvProd, token }})
		for _, auth := range []string{"", "Bearer wrong", token, "Bearer " + token + "x", "Basic " + token} {
			resp := get(t, h, auth)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "auth %q", auth)
			require.Equal(t, `Bearer realm="metrics"`, resp.Header.Get("WWW-Authenticate"))
		}
		resp := get(t, h, "Bearer "+token)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		body, _ := io.ReadAll(resp.Body)
		require.True(t, strings.Contains(string(body), "herald_http_requests_total"))
	})
	t.Run("OwnListenerLeavesThePublicPort", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{NoWorkers: true, Config: func(c *app.Config) { c.MetricsAddr, c.MetricsToken = "127.0.0.1:0", token }})
		require.Equal(t, http.StatusNotFound, get(t, h, "Bearer "+token).StatusCode)
	})
}
