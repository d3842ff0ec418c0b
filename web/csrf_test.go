package web_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/web/webtest"
)

// TestConsole_CSRFOnlyInBody: the form token counts only in the body (or
// the X-CSRF-Token header), never in the query string, where it would leak
// through logs, history and Referer headers.
func TestConsole_CSRFOnlyInBody(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})

	t.Run("SignedIn", func(t *testing.T) {
		t.Parallel()
		s := c.signIn(asManager)
		s.page("/t/acme/")
		token := s.csrf
		require.NotEmpty(t, token)

		resp := s.post("/logout?csrf="+url.QueryEscape(token), url.Values{"csrf": {}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "a token in the URL does not count")
		s.page("/t/acme/") // still signed in

		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		require.NoError(t, mw.WriteField("csrf", token))
		require.NoError(t, mw.Close())
		req := httptest.NewRequest(http.MethodPost, "/logout", &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		require.Equal(t, http.StatusSeeOther, s.do(req).StatusCode, "a multipart form's token counts")
		_, resp = s.get("/t/acme/")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "signed out")
	})

	t.Run("SignIn", func(t *testing.T) {
		t.Parallel()
		s := c.anonymous()
		doc := s.page("/login")
		token := doc.Find(`form[action="/login"] input[name=csrf]`).AttrOr("value", "")
		require.NotEmpty(t, token)
		resp := s.post("/login?csrf="+url.QueryEscape(token), url.Values{"csrf": {}, "email": {c.users[asManager].Email}, "password": {consolePassword}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		resp = s.post("/login", url.Values{"csrf": {token}, "email": {c.users[asManager].Email}, "password": {consolePassword}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	})
}
