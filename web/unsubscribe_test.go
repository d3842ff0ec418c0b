package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestUnsubscribe_NilTenant: a well-signed link that names the nil tenant
// (no tenant has it) answers 404 as a link whose tenant is gone, not 500,
// and changes nothing.
func TestUnsubscribe_NilTenant(t *testing.T) {
	t.Parallel()
	h := webtest.New(t, webtest.Options{NoWorkers: true})
	links := h.Services.Preferences.Links
	audit := func() int { return h.Count(`SELECT count(*) FROM audit_log`) }
	before := audit()

	for name, target := range map[string]app.UnsubscribeTarget{
		"NilTenant":     {TenantID: uuid.Nil, ContactID: uuid.New(), MessageID: uuid.New()},
		"EveryIDNil":    {},
		"UnknownTenant": {TenantID: uuid.New(), ContactID: uuid.New(), MessageID: uuid.New()},
	} {
		t.Run(name, func(t *testing.T) {
			path := "/unsubscribe/" + links.Token(target)
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				req := httptest.NewRequest(method, path, strings.NewReader("List-Unsubscribe=One-Click"))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				resp, err := h.App.Test(req, -1)
				require.NoError(t, err)
				doc, err := goquery.NewDocumentFromReader(resp.Body)
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, http.StatusNotFound, resp.StatusCode, "%s %s", method, name)
				require.Contains(t, text(doc.Find(".error-card h1")), "not found")
			}
		})
	}
	require.Equal(t, before, audit(), "nothing changed")
	require.Zero(t, h.Count(`SELECT count(*) FROM contact_changes`))
}
