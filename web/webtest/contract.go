package webtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/router"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/heraldhq/herald/web"
)

// Contract checks API traffic against the OpenAPI document Herald serves
// at /api/openapi.json, so that the document cannot drift from the code:
// every request a test sends to /api/ through the harness (Request,
// RequestWithKey, Do, Client) and its answer pass through Check.
//
// The rules:
//   - the route and method must be documented; an undocumented one may only
//     be refused with 404 (unknown path), 405 (other method) or 401 (no
//     key), with the Error body;
//   - every response must be documented for its operation and status, with
//     its content type and a body that matches the schema, and no property
//     the schema does not declare (except inside free-form maps, objects
//     that declare no properties, such as a notification's context);
//   - a request the server accepted (2xx) must be valid per the document;
//   - a request refused with 400 or 422 whose error lists a problem the
//     document can express (ExpressibleCodes) must be invalid per the
//     document, so that the document states the rule the server enforces.
type Contract struct {
	model  *v3.Document
	router router.Router

	mu sync.Mutex
	// validators holds a validator per set of free-form maps to ignore:
	// the strict validator's ignore patterns apply to every operation, so
	// operations whose maps lie at different places get their own.
	validators map[string]validator.Validator
}

// ExpressibleCodes are the error codes (or code@field, for general codes)
// of 400 and 422 answers whose rule the document's schemas express: a
// request the server refuses with one of them must be invalid per the
// document. Rules that depend on data or on Herald's registry (an unknown
// trigger event, a missing template variable, an idempotency conflict, a
// phone number's validity) are not expressible and are not listed.
var ExpressibleCodes = map[string]bool{
	"malformed_json": true, "unknown_field": true,
	"missing_event_id": true, "invalid_event_id": true,
	"no_recipient": true, "too_many_recipients": true, "invalid_recipient": true, "no_address": true,
	"invalid_send_at": true, "missing_send_at": true, "missing_reason": true,
	"invalid_conversation_context": true,
	"invalid@minutes":              true,
	"invalid@seconds":              true,
	// The management API's paging.
	"invalid_limit": true, "invalid_offset": true,
}

var (
	contractOnce sync.Once
	contract     *Contract
	contractErr  error
)

// APIContract returns the contract of the document embedded in Herald,
// built once per test binary.
func APIContract() (*Contract, error) {
	contractOnce.Do(func() {
		doc, err := web.LoadOpenAPI(web.OpenAPIFiles, "http://localhost:8080")
		if err != nil {
			contractErr = err
			return
		}
		contract, contractErr = NewContract(doc.JSON)
	})
	return contract, contractErr
}

// NewContract builds a contract from an OpenAPI 3.1 document in JSON or YAML.
func NewContract(spec []byte) (*Contract, error) {
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, err
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, err
	}
	return &Contract{model: &m.Model, router: router.NewRouter(&m.Model, router.WithPathOnlyMatching()),
		validators: map[string]validator.Validator{}}, nil
}

// validatorFor returns the validator of an operation: format assertions on,
// strict about properties the schemas do not declare except inside the
// operation's free-form maps, and about headers not at all (HTTP has many
// that no API documents).
func (c *Contract) validatorFor(op *v3.Operation) validator.Validator {
	ignore := append([]string{"$.headers.*"}, freeFormPaths(op)...)
	key := strings.Join(ignore, "\n")
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.validators[key]; ok {
		return v
	}
	v := validator.NewValidatorFromV3Model(c.model,
		config.WithFormatAssertions(),
		config.WithStrictMode(),
		config.WithStrictIgnorePaths(ignore...),
		config.WithRejectUndeclaredRequestBody(),
	)
	c.validators[key] = v
	return v
}

// Exchange is one API request and its answer, with both bodies read.
type Exchange struct {
	Request      *http.Request
	RequestBody  []byte
	Response     *http.Response
	ResponseBody []byte
	// Garbage marks a request a test sends deliberately broken (NUL bytes,
	// malformed JSON): the request is not compared with the document. The
	// response still is.
	Garbage bool
}

// Check returns how the exchange departs from the document, or nil.
func (c *Contract) Check(x Exchange) error {
	p := x.Request.URL.Path
	if p != "/api" && !strings.HasPrefix(p, "/api/") {
		return nil
	}
	status := x.Response.StatusCode
	what := fmt.Sprintf("%s %s answered %d", x.Request.Method, p, status)
	route, err := c.router.FindRoute(c.request(x))
	if err != nil {
		// The API key is checked before routing, so a request without one
		// is refused with 401 wherever it goes.
		refused := status == http.StatusUnauthorized ||
			(errors.Is(err, router.ErrPathNotFound) && status == http.StatusNotFound) ||
			(errors.Is(err, router.ErrMethodNotAllowed) && status == http.StatusMethodNotAllowed)
		if refused && isErrorBody(x.ResponseBody) {
			return nil
		}
		return fmt.Errorf("%s, but the OpenAPI document has no operation %s %s (%v): document the route in web/openapi/", what, x.Request.Method, p, err)
	}
	op := route.Operation.OperationId
	v := c.validatorFor(route.Operation)
	var problems []string

	resp := *x.Response
	resp.Body = io.NopCloser(bytes.NewReader(x.ResponseBody))
	if ok, errs := v.GetResponseBodyValidator().ValidateResponseBodyWithPathItem(c.request(x), &resp, route.PathItem, route.Path); !ok {
		problems = append(problems, describe("response", errs)...)
	}

	if !x.Garbage {
		valid, errs := v.ValidateHttpRequestSyncWithPathItem(c.request(x), route.PathItem, route.Path)
		switch {
		case status >= 200 && status < 300 && !valid:
			problems = append(problems, "the server accepted a request the document refuses:")
			problems = append(problems, describe("request", errs)...)
		case (status == http.StatusBadRequest || status == http.StatusUnprocessableEntity) && valid:
			if codes := expressibleCodes(x.ResponseBody); len(codes) > 0 {
				problems = append(problems, fmt.Sprintf("the server refused the request (%s), but the document accepts it: "+
					"express the rule in the request's schema or parameters", strings.Join(codes, ", ")))
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s (operation %s, %s) departs from the OpenAPI document:\n  %s\nresponse body: %s",
		what, op, route.Path, strings.Join(problems, "\n  "), truncate(x.ResponseBody))
}

// request returns a copy of the exchange's request with a fresh body, as
// each validation reads it.
func (c *Contract) request(x Exchange) *http.Request {
	r := x.Request.Clone(x.Request.Context())
	r.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
	r.ContentLength = int64(len(x.RequestBody))
	return r
}

// describe renders validation errors with the JSON path of each failure.
func describe(side string, errs []*verrors.ValidationError) []string {
	var out []string
	for _, e := range errs {
		if len(e.SchemaValidationErrors) == 0 {
			out = append(out, fmt.Sprintf("%s: %s: %s", side, e.Message, e.Reason))
			continue
		}
		for _, f := range e.SchemaValidationErrors {
			at := f.FieldPath
			if at == "" {
				at = "$"
			}
			out = append(out, fmt.Sprintf("%s: %s: %s (%s)", side, at, f.Reason, e.Message))
		}
	}
	return out
}

// isErrorBody reports whether a body is the API's Error answer.
func isErrorBody(body []byte) bool {
	var e struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	return json.Unmarshal(body, &e) == nil && e.Error != nil && e.Error.Code != "" && e.Error.Message != ""
}

// expressibleCodes returns the problems of an error answer that the
// document can express.
func expressibleCodes(body []byte) []string {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Field   string `json:"field"`
			Details []struct {
				Code  string `json:"code"`
				Field string `json:"field"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return nil
	}
	type problem struct{ code, field string }
	all := []problem{{e.Error.Code, e.Error.Field}}
	for _, d := range e.Error.Details {
		all = append(all, problem{d.Code, d.Field})
	}
	var out []string
	for _, p := range all {
		key := p.code
		if !ExpressibleCodes[key] {
			key = p.code + "@" + p.field
		}
		if ExpressibleCodes[key] && !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	return out
}

func truncate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// freeFormPaths lists, as the strict validator's ignore patterns, the
// places in an operation's request and response bodies where the document
// has a free-form map (an object declaring no properties of its own): their
// keys are data, not undeclared fields.
func freeFormPaths(op *v3.Operation) []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if op.RequestBody != nil {
		for _, mt := range op.RequestBody.Content.FromOldest() {
			walkFreeForm(mt.Schema, "$.body", 0, add)
		}
	}
	if op.Responses != nil {
		for _, r := range op.Responses.Codes.FromOldest() {
			for _, mt := range r.Content.FromOldest() {
				walkFreeForm(mt.Schema, "$.body", 0, add)
			}
		}
	}
	slices.Sort(out)
	return out
}

func walkFreeForm(proxy *base.SchemaProxy, path string, depth int, add func(string)) {
	if proxy == nil || depth > 12 {
		return
	}
	s := proxy.Schema()
	if s == nil {
		return
	}
	for _, group := range [][]*base.SchemaProxy{s.AllOf, s.AnyOf, s.OneOf} {
		for _, sub := range group {
			walkFreeForm(sub, path, depth+1, add)
		}
	}
	if s.Items != nil && s.Items.IsA() {
		walkFreeForm(s.Items.A, path+"[*]", depth+1, add)
	}
	if s.Properties != nil && s.Properties.Len() > 0 {
		for name, prop := range s.Properties.FromOldest() {
			walkFreeForm(prop, path+"."+name, depth+1, add)
		}
		return
	}
	if s.AdditionalProperties != nil && (s.AdditionalProperties.IsA() || s.AdditionalProperties.B) {
		add(path + ".**")
	}
}
