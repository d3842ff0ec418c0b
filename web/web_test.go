package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/web"
	"github.com/heraldhq/herald/web/webtest"
)

// testBundle is Herald as webtest builds it (wired as the herald binary
// wires it, with the tenant acme), without workers: these tests are about
// the HTTP shell around the services.
type testBundle struct {
	*webtest.Herald
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{Herald: webtest.New(t, webtest.Options{NoWorkers: true})}
}

// do sends a request through the harness, which checks API requests and
// answers against the OpenAPI document.
func (b *testBundle) do(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
	return b.Do(t, req)
}

func decodeError(t *testing.T, resp *http.Response) (code, message, field string) {
	t.Helper()
	require.Equal(t, "application/json", strings.Split(resp.Header.Get("Content-Type"), ";")[0])
	var body struct {
		Error struct{ Code, Message, Field string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.NotEmpty(t, body.Error.Message)
	return body.Error.Code, body.Error.Message, body.Error.Field
}

func TestAPIKeyAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tn := b.Tenant // acme, on the PRO plan
	key, secret, err := b.Services.APIKeys.Create(b.Ctx, app.CLIActor, tn.ID, "key under test")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(secret, key.Prefix), "the visible prefix is the start of the secret")

	get := func(auth string) *http.Response {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/tenant", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		return b.do(t, req)
	}

	for name, auth := range map[string]string{
		"Missing":      "",
		"NotBearer":    "Basic " + secret,
		"EmptyBearer":  "Bearer ",
		"Wrong":        "Bearer hk_" + strings.Repeat("A", 26),
		"Malformed":    "Bearer not-a-key",
		"WrongTenant?": "Bearer " + secret + "x",
	} {
		t.Run(name, func(t *testing.T) {
			resp := get(auth)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
			code, _, _ := decodeError(t, resp)
			require.Equal(t, app.EUNAUTHORIZED, code)
		})
	}

	t.Run("ValidResolvesTenant", func(t *testing.T) {
		resp := get("Bearer " + secret)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var body struct{ ID, Slug, Plan string }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		require.Equal(t, tn.ID.String(), body.ID)
		require.Equal(t, "acme", body.Slug)
		require.Equal(t, "PRO", body.Plan)
	})

	t.Run("RevokedIsRefused", func(t *testing.T) {
		_, err := b.Services.APIKeys.Revoke(b.Ctx, app.CLIActor, tn.ID, key.ID)
		require.NoError(t, err)
		resp := get("Bearer " + secret)
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		code, _, _ := decodeError(t, resp)
		require.Equal(t, app.EUNAUTHORIZED, code)
	})
}

func TestReadyz(t *testing.T) {
	t.Parallel()

	t.Run("Healthy", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		resp := b.do(t, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var r app.HealthReport
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		require.Equal(t, app.Healthy, r.Status)
		require.Equal(t, "connected", r.Database)
		require.Equal(t, "available", r.River)

		// The tests' role is one row security applies to.
		role, bypass, err := b.Services.DB.RowSecurityBypass(b.Ctx)
		require.NoError(t, err)
		require.NotEmpty(t, role)
		require.Empty(t, bypass, "the tests connect as a role without SUPERUSER and BYPASSRLS")
		require.Empty(t, b.Services.Health.Warnings)
	})

	t.Run("DegradedWithDeploymentWarning", func(t *testing.T) {
		t.Parallel()
		c := setupConsole(t, webtest.Options{NoWorkers: true})
		warning, err := app.CheckRowSecurity(true, "postgres", "superuser")
		require.NoError(t, err, "dev warns")
		c.Services.Health.Warnings = []string{warning}

		resp, err := c.App.Test(httptest.NewRequest(http.MethodGet, "/readyz", nil), -1)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "degraded still serves traffic")
		var r app.HealthReport
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		require.Equal(t, app.Degraded, r.Status)
		require.Equal(t, []any{warning}, r.Details["warnings"])
		require.Contains(t, r.Error, "row-level security does not apply")

		ops := c.signIn(asOperator)
		require.Contains(t, text(ops.page("/tenants").Find(".flash-error")), `"postgres", a superuser role`, "operators see it on every page")
		mgr := c.signIn(asManager)
		require.NotContains(t, text(mgr.page("/t/acme/").Selection), "row-level security", "tenants' users do not")
	})

	t.Run("DegradedWhenJobsWait", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.Services.DB.SQL.ExecContext(b.Ctx, `
			INSERT INTO river_job (kind, args, queue, state, scheduled_at, max_attempts, priority)
			VALUES ('stuck', '{}', 'route', 'available', now() - interval '10 minutes', 5, 1)`)
		require.NoError(t, err)
		resp := b.do(t, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		require.Equal(t, http.StatusOK, resp.StatusCode, "degraded still serves traffic")
		var r app.HealthReport
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		require.Equal(t, app.Degraded, r.Status)
		require.Contains(t, r.Error, "waited")
	})

	t.Run("UnhealthyWhenDatabaseUnreachable", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		pool, err := pgxpool.New(context.Background(), "postgres://herald:herald@127.0.0.1:1/herald?connect_timeout=1")
		require.NoError(t, err)
		d := db.New(pool)
		t.Cleanup(d.Close)
		// Everything else stays wired as in production; only the health
		// check's probe now reads a database that does not answer.
		b.Services.Health.Probe = d
		a := b.App
		resp, err := a.Test(httptest.NewRequest(http.MethodGet, "/readyz", nil), -1)
		require.NoError(t, err)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		var r app.HealthReport
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		require.Equal(t, app.Unhealthy, r.Status)
		require.True(t, strings.HasPrefix(r.Database, "error:"), r.Database)

		// Liveness does not depend on the database.
		resp, err = a.Test(httptest.NewRequest(http.MethodGet, "/healthz", nil), -1)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

func TestErrorHandler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Extra routes that fail with each code; registered after the real ones.
	fail := func(c *fiber.Ctx) error {
		if c.Params("code") == "boom" {
			return io.ErrUnexpectedEOF // an internal error with details that must not leak
		}
		return &app.Error{Code: c.Params("code"), Message: "Failure " + c.Params("code") + ".", Field: "thing"}
	}
	b.App.Get("/webhooks/fail/:code", fail)
	b.App.Get("/console/fail/:code", fail)

	cases := map[string]int{
		app.EINVALID:      422,
		app.ENOTFOUND:     404,
		app.ECONFLICT:     409,
		app.EUNAUTHORIZED: 401,
		app.EFORBIDDEN:    403,
		app.ETOOLARGE:     413,
		app.EINTERNAL:     500,
	}
	for code, status := range cases {
		t.Run("JSON/"+code, func(t *testing.T) {
			resp := b.do(t, httptest.NewRequest(http.MethodGet, "/webhooks/fail/"+code, nil))
			require.Equal(t, status, resp.StatusCode)
			gotCode, msg, field := decodeError(t, resp)
			require.Equal(t, code, gotCode)
			if status == 500 {
				require.Equal(t, "Internal error.", msg)
			} else {
				require.Equal(t, "Failure "+code+".", msg)
				require.Equal(t, "thing", field)
			}
		})
		t.Run("HTML/"+code, func(t *testing.T) {
			resp := b.do(t, httptest.NewRequest(http.MethodGet, "/console/fail/"+code, nil))
			require.Equal(t, status, resp.StatusCode)
			require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
			doc, err := goquery.NewDocumentFromReader(resp.Body)
			require.NoError(t, err)
			require.Equal(t, resp.Header.Get("X-Request-Id"), doc.Find(".error-card code").Text())
			if status == 500 {
				require.Equal(t, "Internal error.", doc.Find(".error-card h1").Text())
			} else {
				require.Equal(t, "Failure "+code+".", doc.Find(".error-card h1").Text())
			}
		})
	}

	t.Run("InternalDetailsDoNotLeak", func(t *testing.T) {
		resp := b.do(t, httptest.NewRequest(http.MethodGet, "/webhooks/fail/boom", nil))
		require.Equal(t, 500, resp.StatusCode)
		body, _ := io.ReadAll(resp.Body)
		require.NotContains(t, string(body), "unexpected EOF")
	})

	t.Run("UnknownAPIRouteIsJSON404", func(t *testing.T) {
		resp := b.do(t, httptest.NewRequest(http.MethodGet, "/api/nothing-here", nil))
		require.Equal(t, 404, resp.StatusCode)
		code, _, _ := decodeError(t, resp)
		require.Equal(t, app.ENOTFOUND, code)
	})

	t.Run("UnknownConsolePageIsHTML404", func(t *testing.T) {
		resp := b.do(t, httptest.NewRequest(http.MethodGet, "/no/such/page", nil))
		require.Equal(t, 404, resp.StatusCode)
		require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	})

	t.Run("OversizedBodyIs413JSON", func(t *testing.T) {
		// fasthttp rejects the body before routing, so this needs a real listener.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		go func() { _ = b.App.Listener(ln) }()
		t.Cleanup(func() { _ = b.App.Shutdown() })
		// The announced length alone is refused, before any body is sent.
		conn, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		_, err = fmt.Fprintf(conn, "POST /api/v1/notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", web.BodyLimit+1)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, 413, resp.StatusCode)
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		// The body was announced, never sent: only the answer is compared
		// with the OpenAPI document.
		webtest.CheckContract(t, webtest.Exchange{
			Request: httptest.NewRequest(http.MethodPost, "/api/v1/notifications", nil), Response: resp, ResponseBody: raw, Garbage: true,
		})
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		code, _, _ := decodeError(t, resp)
		require.Equal(t, app.ETOOLARGE, code)
	})
}

func TestShell(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("SecurityHeadersAndRequestID", func(t *testing.T) {
		resp := b.do(t, httptest.NewRequest(http.MethodGet, "/login", nil))
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
		require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'")
		require.NotEmpty(t, resp.Header.Get("X-Request-Id"))
	})

	t.Run("IncomingRequestIDIsKept", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		req.Header.Set("X-Request-Id", "abc-123")
		require.Equal(t, "abc-123", b.do(t, req).Header.Get("X-Request-Id"))
	})

	t.Run("LoginPageShell", func(t *testing.T) {
		resp := b.do(t, httptest.NewRequest(http.MethodGet, "/login", nil))
		doc, err := goquery.NewDocumentFromReader(resp.Body)
		require.NoError(t, err)
		require.Equal(t, "Sign in to Herald", doc.Find("h1").Text())
		require.Equal(t, 1, doc.Find(`form[action="/login"] input[name="email"]`).Length())
		require.Equal(t, 1, doc.Find(`input[type="password"]`).Length())
		require.Equal(t, "/static/herald.css", doc.Find(`link[rel="stylesheet"]`).AttrOr("href", ""))
	})

	t.Run("StaticWithCacheHeaders", func(t *testing.T) {
		resp := b.do(t, httptest.NewRequest(http.MethodGet, "/static/herald.css", nil))
		require.Equal(t, 200, resp.StatusCode)
		require.Contains(t, resp.Header.Get("Content-Type"), "text/css")
		require.Contains(t, resp.Header.Get("Cache-Control"), "max-age=")
		etag := resp.Header.Get("ETag")
		require.NotEmpty(t, etag)

		req := httptest.NewRequest(http.MethodGet, "/static/herald.css", nil)
		req.Header.Set("If-None-Match", etag)
		require.Equal(t, http.StatusNotModified, b.do(t, req).StatusCode)

		require.Equal(t, 404, b.do(t, httptest.NewRequest(http.MethodGet, "/static/static.go", nil)).StatusCode)
		require.Equal(t, 404, b.do(t, httptest.NewRequest(http.MethodGet, "/static/../main.go", nil)).StatusCode)
	})

	t.Run("Metrics", func(t *testing.T) {
		b.do(t, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		resp := b.do(t, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		require.Equal(t, 200, resp.StatusCode)
		body, _ := io.ReadAll(resp.Body)
		require.Contains(t, string(body), `herald_http_requests_total{method="GET",route="/healthz",status="200"}`)
		require.Contains(t, string(body), `herald_http_request_duration_seconds_bucket{method="GET",route="/healthz"`)
	})
}
