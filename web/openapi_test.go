package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/web"
)

func TestOpenAPI_DocumentIsValid31(t *testing.T) {
	t.Parallel()
	doc, err := web.LoadOpenAPI(web.OpenAPIFiles, "https://herald.example.com")
	require.NoError(t, err)

	lib, err := libopenapi.NewDocument(doc.JSON)
	require.NoError(t, err)
	require.Equal(t, "3.1.0", lib.GetVersion())
	v, errs := validator.NewValidator(lib)
	require.Empty(t, errs)
	ok, verrs := v.ValidateDocument()
	for _, e := range verrs {
		t.Errorf("%s: %s", e.Message, e.Reason)
		for _, f := range e.SchemaValidationErrors {
			t.Errorf("  %s: %s", f.KeywordLocation, f.Reason)
		}
	}
	require.True(t, ok, "the document is valid OpenAPI 3.1")

	m, err := doc.Model()
	require.NoError(t, err, "every reference resolves")
	require.Equal(t, "https://herald.example.com", m.Servers[0].URL, "the server is the deployment's base URL")
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			require.NotEmpty(t, op.OperationId, "%s %s has an operationId", method, path)
			require.NotEmpty(t, op.Summary, "%s %s has a summary", method, path)
			require.NotEmpty(t, op.Tags, "%s %s has a tag", method, path)
			_, has401 := op.Responses.Codes.Get("401")
			public := op.Security != nil && len(op.Security) == 0
			require.True(t, public || has401, "%s %s documents the 401 of a missing key", method, path)
		}
	}
}

// TestOpenAPI_EveryRouteIsDocumented compares the routes the server
// registers under /api with the document's operations, both ways.
func TestOpenAPI_EveryRouteIsDocumented(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m, err := b.Server.OpenAPI.Model()
	require.NoError(t, err)

	param := regexp.MustCompile(`\{([^}]+)\}`)
	var documented []string
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			documented = append(documented, strings.ToUpper(method)+" "+param.ReplaceAllString(path, ":$1"))
		}
	}
	var served []string
	for _, r := range b.App.GetRoutes(true) {
		if !strings.HasPrefix(r.Path, "/api/") || r.Method == http.MethodHead {
			continue
		}
		served = append(served, r.Method+" "+r.Path)
	}
	slices.Sort(documented)
	slices.Sort(served)
	require.Equal(t, served, documented, "the OpenAPI document has one operation per API route (web/routes.go)")
}

func TestOpenAPI_Served(t *testing.T) {
	t.Parallel()
	b := setup(t)

	resp := b.do(t, httptest.NewRequest(http.MethodGet, "/api/openapi.json", nil))
	require.Equal(t, http.StatusOK, resp.StatusCode, "no API key is needed")
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	require.Contains(t, resp.Header.Get("Cache-Control"), "max-age=")
	etag := resp.Header.Get("ETag")
	require.NotEmpty(t, etag)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Servers []struct{ URL string }    `json:"servers"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.Equal(t, b.Config.BaseURL.String(), doc.Servers[0].URL)
	require.Contains(t, doc.Paths, "/api/v1/notifications")
	require.Contains(t, doc.Paths["/api/v1/notifications"], "post")

	t.Run("RevalidatesByETag", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodGet, "/api/openapi.json", nil)
		req.Header.Set("If-None-Match", etag)
		resp := b.do(t, req)
		require.Equal(t, http.StatusNotModified, resp.StatusCode)
		body, _ := io.ReadAll(resp.Body)
		require.Empty(t, body)

		req = httptest.NewRequest(http.MethodGet, "/api/openapi.json", nil)
		req.Header.Set("If-None-Match", `"an-older-one"`)
		require.Equal(t, http.StatusOK, b.do(t, req).StatusCode)
	})
}

func TestLoadOpenAPI_Merge(t *testing.T) {
	t.Parallel()
	root := `openapi: 3.1.0
info: {title: T, version: "1"}
servers:
  - url: http://localhost:8080
paths:
  /api/openapi.json:
    get:
      responses: {"200": {description: ok}}
components:
  schemas:
    Error: {type: object}
`
	part := func(path, schema string) string {
		return "paths:\n  " + path + ":\n    get:\n      responses: {\"200\": {description: ok}}\ncomponents:\n  schemas:\n    " + schema + ": {type: string}\n"
	}

	t.Run("PartialsAreMergedInOrder", func(t *testing.T) {
		doc, err := web.LoadOpenAPI(fstest.MapFS{
			"openapi/openapi.yaml": {Data: []byte(root)},
			"openapi/b.yaml":       {Data: []byte(part("/api/v1/b", "B"))},
			"openapi/a.yaml":       {Data: []byte(part("/api/v1/a", "A"))},
		}, "https://h.example")
		require.NoError(t, err)
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, doc.JSON))
		s := compact.String()
		require.Contains(t, s, `"servers":[{"url":"https://h.example"}]`)
		require.Less(t, strings.Index(s, `"/api/openapi.json"`), strings.Index(s, `"/api/v1/a"`))
		require.Less(t, strings.Index(s, `"/api/v1/a"`), strings.Index(s, `"/api/v1/b"`))
		require.Contains(t, s, `"schemas":{"Error":{"type":"object"},"A":{"type":"string"},"B":{"type":"string"}}`)
		require.Contains(t, s, `"responses":{"200":{"description":"ok"}}`, "YAML numbers as keys stay strings")
	})

	for name, tc := range map[string]struct {
		files map[string]string
		err   string
	}{
		"DuplicatePath": {
			files: map[string]string{"a.yaml": part("/api/v1/x", "A"), "b.yaml": part("/api/v1/x", "B")},
			err:   `path "/api/v1/x" is defined in both a.yaml and b.yaml`,
		},
		"PathOfTheRoot": {
			files: map[string]string{"a.yaml": part("/api/openapi.json", "A")},
			err:   `path "/api/openapi.json" is defined in both openapi.yaml and a.yaml`,
		},
		"DuplicateComponent": {
			files: map[string]string{"a.yaml": part("/api/v1/a", "Error")},
			err:   `component "schemas.Error" is defined in both openapi.yaml and a.yaml`,
		},
		"PartialWithInfo": {
			files: map[string]string{"a.yaml": "info: {title: X}\n"},
			err:   `a.yaml may hold only paths, webhooks and components, not "info"`,
		},
		"NotYAML": {
			files: map[string]string{"a.yaml": "paths: [unclosed\n"},
			err:   "a.yaml",
		},
	} {
		t.Run(name, func(t *testing.T) {
			fsys := fstest.MapFS{"openapi/openapi.yaml": {Data: []byte(root)}}
			for n, data := range tc.files {
				fsys["openapi/"+n] = &fstest.MapFile{Data: []byte(data)}
			}
			_, err := web.LoadOpenAPI(fsys, "")
			require.ErrorContains(t, err, tc.err)
		})
	}

	t.Run("NoRoot", func(t *testing.T) {
		_, err := web.LoadOpenAPI(fstest.MapFS{"openapi/a.yaml": {Data: []byte(part("/a", "A"))}}, "")
		require.ErrorContains(t, err, "no root document")
	})
}
