package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/web/webtest"
)

// TestConsoleAPIReference checks the reference page against the document
// it is made from: every operation, parameter, request field and response
// status of the document is on the page.
func TestConsoleAPIReference(t *testing.T) {
	t.Parallel()
	c := setupConsole(t, webtest.Options{NoWorkers: true})
	m, err := c.Server.OpenAPI.Model()
	require.NoError(t, err)
	manager := c.signIn(asManager)
	doc := manager.page("/t/acme/api-reference")

	require.Equal(t, "API reference", text(doc.Find("h1")))
	require.Equal(t, "/t/acme/api-reference", doc.Find(`.mainnav a[aria-current="page"]`).AttrOr("href", ""))
	require.Equal(t, 1, doc.Find(`.api-toc a[href="/api/openapi.json"]`).Length(), "the page links the machine-readable document")

	ops := 0
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			ops++
			name := strings.ToUpper(method) + " " + path
			t.Run(name, func(t *testing.T) {
				card := doc.Find(`article.api-op[data-operation="` + name + `"]`)
				require.Equal(t, 1, card.Length(), "the page documents %s", name)
				require.Equal(t, strings.ToUpper(method), text(card.Find("h3 .method")))
				require.Equal(t, path, text(card.Find("h3 .api-path")))
				require.Contains(t, text(card.Find(".api-summary")), op.Summary)
				require.Equal(t, 1, doc.Find(`.api-toc a[href="#`+card.AttrOr("id", "")+`"]`).Length(), "the contents link to it")
				for _, req := range op.Security {
					for _, scopes := range req.Requirements.FromOldest() {
						for _, sc := range scopes {
							require.Contains(t, text(card.Find(".api-summary")), "scope: "+sc, "the scope the key needs")
						}
					}
				}

				var names []string
				card.Find(".api-field-name code").Each(func(_ int, s *goquery.Selection) { names = append(names, s.Text()) })
				for _, p := range append(item.Parameters, op.Parameters...) {
					require.Contains(t, names, p.Name, "parameter %s", p.Name)
				}
				if op.RequestBody != nil {
					// A JSON body's fields are listed; a file's body (an
					// upload's CSV) has none.
					if mt, ok := op.RequestBody.Content.Get("application/json"); ok {
						for prop := range mt.Schema.Schema().Properties.FromOldest() {
							require.Contains(t, names, prop, "request field %s", prop)
						}
					} else {
						_, csv := op.RequestBody.Content.Get("text/csv")
						require.True(t, csv, "a body that is not JSON is an upload's CSV")
					}
				}
				var statuses []string
				card.Find(".api-response .status-code").Each(func(_ int, s *goquery.Selection) { statuses = append(statuses, s.Text()) })
				var documented []string
				for status := range op.Responses.Codes.FromOldest() {
					documented = append(documented, status)
				}
				require.Equal(t, documented, statuses)
			})
		}
	}
	require.Equal(t, ops, doc.Find("article.api-op[data-operation]").Length(), "no operation the document lacks")

	t.Run("FieldsExamplesAndRules", func(t *testing.T) {
		create := doc.Find(`article.api-op[data-operation="POST /api/v1/notifications"]`)
		row := create.Find(".api-field-name").FilterFunction(func(_ int, s *goquery.Selection) bool {
			return s.Find("code").Text() == "recipients"
		}).Parent()
		// Recipients are required unless an audience is given, which the
		// description says.
		require.Contains(t, text(row), "Required unless audience is given")
		require.Contains(t, text(row), "array of Recipient")
		eventID := create.Find(".api-field-name").FilterFunction(func(_ int, s *goquery.Selection) bool {
			return s.Find("code").Text() == "event_id"
		}).Parent()
		require.Contains(t, text(eventID), "required")
		require.Contains(t, text(row), "Items: 1 to 500")
		require.Contains(t, names(create.Find(".api-field-name code")), "recipients[].phone", "nested fields by path")
		require.Contains(t, names(create.Find(".api-field-name code")), "conversation_context.type")
		require.Contains(t, text(create.Find(".api-example pre").First()), `"event_id": "booking-4711-confirmed"`)
		require.Contains(t, text(doc.Find("#errors")), "details[].code")
	})

	t.Run("NoOutsideResources", func(t *testing.T) {
		doc.Find("script[src], link[href], img[src]").Each(func(_ int, s *goquery.Selection) {
			src := s.AttrOr("src", s.AttrOr("href", ""))
			require.True(t, strings.HasPrefix(src, "/"), "served by Herald itself: %s", src)
		})
	})

	t.Run("LinkedFromAPIKeys", func(t *testing.T) {
		keys := manager.page("/t/acme/api-keys")
		require.Equal(t, 1, keys.Find(`.content a[href="/t/acme/api-reference"]`).Length())
	})

	t.Run("OnlyForThoseWhoManageKeys", func(t *testing.T) {
		support := c.signIn(asSupport)
		home := support.page("/t/acme/")
		require.Zero(t, home.Find(`.mainnav a[href="/t/acme/api-reference"]`).Length())
		_, resp := support.get("/t/acme/api-reference")
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		_, resp = c.signIn(asOtherManager).get("/t/acme/api-reference")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

func names(sel *goquery.Selection) []string {
	var out []string
	sel.Each(func(_ int, s *goquery.Selection) { out = append(out, s.Text()) })
	return out
}
