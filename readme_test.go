package main

import (
	"net/http"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/web/webtest"
)

// TestREADME_CurlExample sends the README's curl example as it is written
// (its body, method, path and headers) and checks that Herald accepts it
// and that the exchange matches the OpenAPI document.
func TestREADME_CurlExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)curl -s localhost:8080(/api/v1/notifications) -H "Authorization: Bearer \$KEY" \\\s+-H "Content-Type: application/json" -d '(\{.*?\})'\n`).FindSubmatch(readme)
	require.NotNil(t, m, "the README's curl example posts JSON to /api/v1/notifications with the key")

	h := webtest.New(t, webtest.Options{NoWorkers: true})
	var res struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	require.Equal(t, http.StatusAccepted, h.Request(http.MethodPost, string(m[1]), string(m[2]), &res))
	require.NotEmpty(t, res.ID)
	require.Equal(t, "RECEIVED", res.Status)
}
