package web_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

var filePDF = []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")

// TestFileLink_Serve follows an SMS's file link through the HTTP server:
// the file's bytes with its type, name and nosniff; 404 for a link that
// was changed, for a made-up one, and for one on another path.
func TestFileLink_Serve(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{})
	req := webtest.Notification("files-1", "BK-F1")
	req["channels"] = []string{"SMS"}
	req["attachments"] = []map[string]any{{"filename": "Rechnung März.pdf", "content_type": "application/pdf",
		"content": base64.StdEncoding.EncodeToString(filePDF)}}
	m := webtest.OnlyMessage(t, p.WaitMessages(p.Submit(req), "sent", sentOrLater))

	i := strings.Index(m.Body, "/f/")
	require.Positive(t, i, m.Body)
	path := strings.Fields(m.Body[i:])[0]

	get := func(path string) *http.Response {
		t.Helper()
		resp, err := p.App.Test(httptest.NewRequest(http.MethodGet, path, nil), -1)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := get(path)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, filePDF, body)
	require.Equal(t, "application/pdf", resp.Header.Get("Content-Type"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	disposition, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
	require.NoError(t, err)
	require.Equal(t, "inline", disposition)
	require.Equal(t, "Rechnung März.pdf", params["filename"])
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "sandbox")

	token := strings.TrimPrefix(path, "/f/")
	flipped := []byte(token)
	flipped[10] ^= 1
	for _, bad := range []string{"/f/" + string(flipped), "/f/" + strings.Repeat("A", 70), "/f/nope"} {
		resp := get(bad)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, bad)
		raw, _ := io.ReadAll(resp.Body)
		require.NotContains(t, string(raw), "%PDF")
	}
}

// TestFileLink_RateLimited spends the link's buckets with the clock held
// still: a client's 21st request answers 429 with Retry-After while
// another client is served; past the file's own burst, a new client waits
// too; the unsubscribe links share the client's bucket.
func TestFileLink_RateLimited(t *testing.T) {
	t.Parallel()
	p := webtest.New(t, webtest.Options{Config: func(cfg *app.Config) { cfg.ClientIPHeader = "X-Client-IP" }})
	req := webtest.Notification("files-limit", "BK-FL")
	req["channels"] = []string{"SMS"}
	req["attachments"] = []map[string]any{{"filename": "ticket.pdf", "content_type": "application/pdf",
		"content": base64.StdEncoding.EncodeToString(filePDF)}}
	m := webtest.OnlyMessage(t, p.WaitMessages(p.Submit(req), "sent", sentOrLater))
	i := strings.Index(m.Body, "/f/")
	require.Positive(t, i, m.Body)
	path := strings.Fields(m.Body[i:])[0]

	frozen := time.Now()
	limits := p.Services.PublicLimits
	limits.BucketNow = func() time.Time { return frozen }
	// Small buckets keep the test short; the defaults are larger (Meta
	// fetches documents for a whole broadcast from a few addresses).
	limits.ClientBurst, limits.ClientRate, limits.FileBurst, limits.FileRate = 20, 5, 30, 1
	get := func(path, client string) *http.Response {
		t.Helper()
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("X-Client-IP", client)
		resp, err := p.App.Test(r, -1)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for n := range int(limits.ClientBurst) {
		require.Equal(t, http.StatusOK, get(path, "203.0.113.7").StatusCode, "request %d", n+1)
	}
	resp := get(path, "203.0.113.7")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	raw, _ := io.ReadAll(resp.Body)
	require.NotContains(t, string(raw), "%PDF")
	// Other clients, IPv6 or IPv4, are served.
	require.Equal(t, http.StatusOK, get(path, "2001:db8::1").StatusCode)
	require.Equal(t, http.StatusOK, get(path, "198.51.100.1").StatusCode)

	// The file has served 22 of its 30; each further client gets one
	// until the file's bucket is empty.
	for n := range int(limits.FileBurst) - 22 {
		require.Equal(t, http.StatusOK, get(path, fmt.Sprintf("198.51.100.%d", n+10)).StatusCode)
	}
	resp = get(path, "198.51.100.200")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))

	// The throttled client waits on the unsubscribe links as well; a
	// fresh one gets the link's own answer.
	require.Equal(t, http.StatusTooManyRequests, get("/unsubscribe/nope", "203.0.113.7").StatusCode)
	require.Equal(t, http.StatusUnauthorized, get("/unsubscribe/nope", "192.0.2.50").StatusCode)
}
