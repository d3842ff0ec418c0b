package web_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// logBuffer collects what a logger writes; requests log from the server's
// goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the JSON records logged so far.
func (b *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		out = append(out, rec)
	}
	return out
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRequestLog_MasksPathTokens: the request log keeps only the first
// four characters of an unsubscribe link's token and of a Meta account's
// webhook path token, whatever the answer; prod logs every request, so the
// full token would let anyone who reads logs unsubscribe people or post to
// the account's webhook.
func TestRequestLog_MasksPathTokens(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	logs := &logBuffer{}
	h.Server.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	acct, err := h.Services.Accounts.Create(h.Ctx, app.CLIActor, h.Tenant.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "Acme WhatsApp (logs)",
		Config:  app.Attrs{"phone_number_id": "555000111", "waba_id": "WABA-LOG"},
		Secrets: map[string]string{"access_token": "EAAG-log-token", "app_secret": "log-secret"},
	})
	require.NoError(t, err)
	unsubscribe := h.Services.Preferences.Links.Token(app.UnsubscribeTarget{TenantID: h.Tenant.ID, ContactID: uuid.New(), MessageID: uuid.New()})
	file := h.Services.Files.Links.Token(&app.Attachment{TenantID: h.Tenant.ID, ID: uuid.New(), TokenNonce: make([]byte, 16)}, time.Now().Add(time.Hour))

	send := func(method, path string) int {
		t.Helper()
		resp, err := h.App.Test(httptest.NewRequest(method, path, strings.NewReader(`{}`)), -1)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		method, prefix, token string
		status                int
	}{
		{http.MethodGet, "/unsubscribe/", unsubscribe, http.StatusNotFound},
		{http.MethodPost, "/unsubscribe/", unsubscribe, http.StatusNotFound},
		{http.MethodGet, "/unsubscribe/", "not-a-token-but-still-long", http.StatusUnauthorized},
		{http.MethodGet, "/f/", file, http.StatusNotFound},
		{http.MethodPost, "/webhooks/meta/a/", acct.WebhookToken, http.StatusUnauthorized},
		{http.MethodGet, "/webhooks/meta/a/", acct.WebhookToken + "?hub.mode=subscribe&hub.challenge=1&hub.verify_token=x", http.StatusForbidden},
	} {
		require.Equal(t, tc.status, send(tc.method, tc.prefix+tc.token), "%s %s", tc.method, tc.prefix)
	}

	var paths []string
	for _, rec := range logs.lines(t) {
		if rec["msg"] == "request" {
			paths = append(paths, rec["path"].(string))
		}
	}
	require.Equal(t, []string{
		"/unsubscribe/" + unsubscribe[:4] + "…",
		"/unsubscribe/" + unsubscribe[:4] + "…",
		"/unsubscribe/not-…",
		"/f/" + file[:4] + "…",
		"/webhooks/meta/a/" + acct.WebhookToken[:4] + "…",
		"/webhooks/meta/a/" + acct.WebhookToken[:4] + "…",
	}, paths)
	for _, secret := range []string{unsubscribe[:12], file[:12], acct.WebhookToken[:12], "not-a-token"} {
		require.NotContains(t, logs.String(), secret, "no line of the log holds the token")
	}

	t.Run("OtherPathsAsTheyAre", func(t *testing.T) {
		require.Equal(t, http.StatusUnauthorized, send(http.MethodPost, "/webhooks/meta/acme"))
		var last map[string]any
		for _, rec := range logs.lines(t) {
			if rec["msg"] == "request" {
				last = rec
			}
		}
		require.Equal(t, "/webhooks/meta/acme", last["path"], "a tenant's slug is no secret")
	})
}
