package web_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web"
	"github.com/heraldhq/herald/web/webtest"
)

// TestInputBounds_BodyLimitsPerRoute: uploads may send 16 MiB, and every
// other route still reads at most BodyLimit. A body announced larger is
// refused before a byte of it is sent; a chunked body (no length
// announced) is refused at the chunk that would pass the limit, while the
// client is still sending: the server never holds more than the limit.
func TestInputBounds_BodyLimitsPerRoute(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true, Config: func(cfg *app.Config) {
		cfg.Quotas[app.PlanPro][app.WhatsApp] = app.Unlimited
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = h.App.Listener(ln) }()
	t.Cleanup(func() { _ = h.App.Shutdown() })

	// answer reads the response to what was written on conn: its status,
	// and the error's code when the answer is JSON.
	answer := func(t *testing.T, conn net.Conn) (int, string) {
		t.Helper()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body struct{ Error struct{ Code string } }
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		}
		return resp.StatusCode, body.Error.Code
	}
	dial := func(t *testing.T) net.Conn {
		t.Helper()
		conn, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	const twoMiB = 2 << 20
	for _, path := range []string{"/api/v1/notifications", "/webhooks/ses", "/webhooks/meta/acme"} {
		t.Run("AnnouncedTwoMiB"+path, func(t *testing.T) {
			conn := dial(t)
			_, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n{",
				path, h.Key, twoMiB)
			require.NoError(t, err)
			status, code := answer(t, conn)
			require.Equal(t, 413, status)
			require.Equal(t, app.ETOOLARGE, code)
		})
		t.Run("ChunkedTwoMiB"+path, func(t *testing.T) {
			conn := dial(t)
			_, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\n",
				path, h.Key)
			require.NoError(t, err)
			// The limit's worth of chunks, then a chunk that would pass it,
			// and the body does not end: the answer comes anyway, so
			// nothing waited for the rest of the 2 MiB or read past the limit.
			chunk := strings.Repeat(" ", 64<<10)
			for sent := 0; sent < web.BodyLimit; sent += len(chunk) {
				_, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk)
				require.NoError(t, err)
			}
			_, err = io.WriteString(conn, "1\r\n")
			require.NoError(t, err)
			// fasthttp forgets a request whose chunked body it refuses, so
			// the answer is the plain 413 page, whatever the path.
			status, _ := answer(t, conn)
			require.Equal(t, 413, status)
		})
	}

	t.Run("UploadOverItsLimit", func(t *testing.T) {
		conn := dial(t)
		_, err := fmt.Fprintf(conn, "POST /api/v1/uploads?trigger_event=BOOKING_CONFIRMED HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n",
			h.Key, web.UploadBodyLimit+1)
		require.NoError(t, err)
		status, code := answer(t, conn)
		require.Equal(t, 413, status)
		require.Equal(t, app.ETOOLARGE, code)
	})

	t.Run("TenMiBUpload", func(t *testing.T) {
		// 5,000 passengers with a long note each (left out by the mapping).
		var b strings.Builder
		b.WriteString(confirmedHeader + ";note\n")
		note := strings.Repeat("x", 2000)
		for i := 1; b.Len() < 10<<20; i++ {
			fmt.Fprintf(&b, "Passenger %d;+49151%08d;;Gardasee;2027-04-12;B-%d;150,00 €;%s\n", i, 10000000+i, i, note)
		}
		req := httptest.NewRequest(http.MethodPost, "/api/v1/uploads?trigger_event=BOOKING_CONFIRMED&map=note=-", strings.NewReader(b.String()))
		req.Header.Set("Authorization", "Bearer "+h.Key)
		req.Header.Set("Content-Type", "text/csv")
		resp, err := h.App.Test(req, -1)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, 201, resp.StatusCode, string(body))
		var out struct {
			TotalRows int `json:"total_rows"`
		}
		require.NoError(t, json.Unmarshal(body, &out))
		require.Equal(t, strings.Count(b.String(), "\n")-1, out.TotalRows)
	})
}
