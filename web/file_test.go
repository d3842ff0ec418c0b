package web_test

import (
	"encoding/base64"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
	m := webtest.OnlyMessage(t, p.WaitMessages(p.Submit(req), "sent", webtest.AllStatus(app.MessageSent)))

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
