package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/web/webtest"
)

// verify and receiver are the README's code as it is printed there
// (TestREADME_CallbackReceiver compares them), so the receiver a reader
// copies is the one these tests run against Herald's own posts.

func verify(secret string, h http.Header, body []byte) bool {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil || math.Abs(time.Since(time.Unix(ts, 0)).Seconds()) > 300 {
		return false // refuse replays of old posts
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "."))
	mac.Write(body) // the raw body, before any JSON parsing
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if v, b64, ok := strings.Cut(sig, ","); ok && v == "v1" {
			got, err := base64.StdEncoding.DecodeString(b64)
			if err == nil && hmac.Equal(got, want) {
				return true
			}
		}
	}
	return false
}

func receiver(secret string, handle func(id string, body []byte)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || !verify(secret, r.Header, body) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		handle(r.Header.Get("webhook-id"), body) // deduplicate on webhook-id
	})
}

// TestREADME_CallbackReceiver checks the README's status callback receiver:
// its code is this file's, and on a dev machine with
// HERALD_WEBHOOK_ALLOW_PRIVATE a loopback receiver is accepted as an
// endpoint, gets Herald's test event and verifies it, while a forged post
// is refused; without the setting the endpoint is refused when entered.
func TestREADME_CallbackReceiver(t *testing.T) {
	t.Parallel()
	t.Run("SameCode", func(t *testing.T) {
		t.Parallel()
		readme, err := os.ReadFile("README.md")
		require.NoError(t, err)
		_, section, ok := bytes.Cut(readme, []byte("\n## Status callbacks\n"))
		require.True(t, ok)
		section, _, _ = bytes.Cut(section, []byte("\n## "))
		var blocks []string
		for _, m := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(section, -1) {
			blocks = append(blocks, strings.TrimSpace(string(m[1])))
		}
		src, err := os.ReadFile("readme_receiver_test.go")
		require.NoError(t, err)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "readme_receiver_test.go", src, 0)
		require.NoError(t, err)
		var funcs []string
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && (fd.Name.Name == "verify" || fd.Name.Name == "receiver") {
				funcs = append(funcs, string(src[fset.Position(fd.Pos()).Offset:fset.Position(fd.End()).Offset]))
			}
		}
		require.Equal(t, funcs, blocks, "the README's status callback code is verify and receiver of this file")
	})

	t.Run("LoopbackInDev", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{Config: func(c *app.Config) { c.WebhookAllowPrivate = true }})
		type post struct {
			id   string
			body []byte
		}
		got := make(chan post, 4)
		// The secret is Herald's answer to the endpoint, which needs the
		// server's URL first.
		var secret atomic.Value
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			receiver(secret.Load().(string), func(id string, body []byte) { got <- post{id, body} }).ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)

		e, secret0, err := h.Services.Callbacks.Create(h.Ctx, app.CLIActor, h.Tenant.ID,
			app.CallbackEndpointInput{URL: srv.URL + "/herald", EventTypes: []string{"message.delivered"}})
		require.NoError(t, err, "a loopback receiver is accepted in dev with HERALD_WEBHOOK_ALLOW_PRIVATE")
		secret.Store(secret0)

		// A post the receiver cannot verify is refused before Herald's.
		forged, err := http.Post(srv.URL+"/herald", "application/json", strings.NewReader(`{"type":"message.delivered"}`))
		require.NoError(t, err)
		require.NoError(t, forged.Body.Close())
		require.Equal(t, http.StatusUnauthorized, forged.StatusCode)

		d, err := h.Services.Callbacks.SendTest(h.Ctx, app.CLIActor, h.Tenant.ID, e.ID)
		require.NoError(t, err)
		select {
		case p := <-got:
			require.NotEmpty(t, p.id)
			require.Contains(t, string(p.body), `"type":"callback.test"`)
		case <-time.After(dbtest.HangGuard):
			t.Fatal("the receiver verified no post")
		}
		h.WaitUntil("the test delivery succeeded", func() bool {
			return h.Count(`SELECT count(*) FROM callback_deliveries WHERE id = $1 AND status = 'succeeded'`, d.ID) == 1
		})
	})

	t.Run("RefusedByDefault", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{NoWorkers: true})
		_, _, err := h.Services.Callbacks.Create(h.Ctx, app.CLIActor, h.Tenant.ID,
			app.CallbackEndpointInput{URL: "http://127.0.0.1:9000/herald", EventTypes: []string{"message.delivered"}})
		var ae *app.Error
		require.ErrorAs(t, err, &ae)
		require.Equal(t, "url", ae.Field)
		require.Zero(t, h.Count(`SELECT count(*) FROM callback_endpoints`), "nothing is stored")
	})
}
