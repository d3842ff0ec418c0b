package meta

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/app/provider"
)

// ConfigAppID is the Config key of the Meta app's id. Meta's review of a
// template with a document or image header needs an example file, which
// is uploaded through the app (the Resumable Upload API, POST
// /{app-id}/uploads): an account without it submits text-only templates.
const ConfigAppID = "app_id"

// uploadTypes are the file types the Resumable Upload API accepts.
var uploadTypes = map[string]bool{"application/pdf": true, "image/jpeg": true, "image/jpg": true, "image/png": true, "video/mp4": true}

// headerComponent is the HEADER component of a submitted template whose
// header is a file: its format and the handle of the uploaded example
// (message_templates components: {"type": "HEADER", "format": "DOCUMENT",
// "example": {"header_handle": ["4::aW..."]}}).
func (p *Provider) headerComponent(ctx context.Context, a provider.Account, token string, d provider.TemplateDraft) (*createComponent, error) {
	format := strings.ToUpper(d.Header)
	if format != "DOCUMENT" && format != "IMAGE" {
		return nil, &provider.Error{Code: "bad_header", Class: provider.Permanent,
			Reason: "A template's header is a DOCUMENT or an IMAGE, not " + strconv.Quote(d.Header) + "."}
	}
	if d.HeaderSample == nil || len(d.HeaderSample.Content) == 0 {
		return nil, &provider.Error{Code: "missing_header_example", Class: provider.Permanent,
			Reason: "Meta reviews a " + strings.ToLower(format) + " header with an example file, and there is none."}
	}
	handle, err := p.uploadHandle(ctx, a, token, *d.HeaderSample)
	if err != nil {
		return nil, err
	}
	return &createComponent{Type: "HEADER", Format: format, Example: &createExamples{HeaderHandle: []string{handle}}}, nil
}

// uploadHandle uploads a file with the Resumable Upload API and returns
// its handle: a session is opened on the app (POST /{app-id}/uploads with
// the file's name, length and type), then the bytes are posted to the
// session from offset 0 (header file_offset, "Authorization: OAuth"), and
// Meta answers {"h": handle}. A failed upload is repeated whole by the
// next submission; nothing is sent to a passenger by it.
func (p *Provider) uploadHandle(ctx context.Context, a provider.Account, token string, f provider.File) (string, error) {
	app := strings.TrimSpace(a.Config[ConfigAppID])
	if app == "" {
		return "", &provider.Error{Code: "missing_app_id", Class: provider.Permanent, Account: true,
			Reason: "The WhatsApp account has no app_id configured; Meta takes a header's example file only through the app."}
	}
	if !uploadTypes[f.ContentType] {
		return "", &provider.Error{Code: "bad_header_example", Class: provider.Permanent,
			Reason: "Meta's upload takes PDF, JPEG, PNG or MP4 files, not " + f.ContentType + "."}
	}
	q := url.Values{"file_name": {f.Filename}, "file_length": {strconv.Itoa(len(f.Content))}, "file_type": {f.ContentType}}
	raw, err := p.graph(ctx, http.MethodPost, "/"+url.PathEscape(app)+"/uploads?"+q.Encode(), token, nil)
	if err != nil {
		return "", err
	}
	var session struct {
		ID string `json:"id"`
	}
	// The session id reads "upload:<id>", often followed by "?sig=...":
	// it is posted to as it is, so it must stay within that shape.
	if err := json.Unmarshal(raw, &session); err != nil || !strings.HasPrefix(session.ID, "upload:") ||
		strings.ContainsAny(session.ID, "/# \t\r\n") {
		return "", &provider.Error{Code: "bad_response", Class: provider.Transient,
			Reason: "Meta answered the upload without a session id: " + excerpt(raw)}
	}
	h := http.Header{"Authorization": {"OAuth " + token}, "File_offset": {"0"}}
	raw, err = p.graphRaw(ctx, http.MethodPost, "/"+session.ID, h, f.Content)
	if err != nil {
		return "", err
	}
	var uploaded struct {
		H string `json:"h"`
	}
	if err := json.Unmarshal(raw, &uploaded); err != nil || uploaded.H == "" {
		return "", &provider.Error{Code: "bad_response", Class: provider.Transient,
			Reason: "Meta answered the upload without a file handle: " + excerpt(raw)}
	}
	return uploaded.H, nil
}

// graph calls a Graph API path (after the version) with the account's
// token and a JSON body, and returns the body of a 2xx answer; anything
// else is a classified *provider.Error.
func (p *Provider) graph(ctx context.Context, method, path, token string, body []byte) ([]byte, error) {
	h := http.Header{"Authorization": {"Bearer " + token}}
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	return p.graphRaw(ctx, method, path, h, body)
}

// graphRaw is graph with the request's headers given.
func (p *Provider) graphRaw(ctx context.Context, method, path string, h http.Header, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, p.baseURL()+"/"+p.version()+path, rd)
	if err != nil {
		return nil, &provider.Error{Code: "bad_endpoint", Class: provider.Permanent, Reason: err.Error()}
	}
	for k, vs := range h {
		hr.Header[k] = vs
	}
	hr.Header.Set("Accept", "application/json")
	resp, err := p.client().Do(hr)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, transportError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, p.responseError(resp, raw)
	}
	return raw, nil
}
