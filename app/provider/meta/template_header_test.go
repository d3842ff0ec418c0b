package meta_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
)

const (
	appID = "1234567890123456"
	// uploadSession is a session id as Meta writes it: with a signature
	// in a query string of its own.
	uploadSession = "upload:MTphdHRhY2htZW50OjZiZDMyNmUxLTg0ZjQtNDJmZS1hNzc0LTc2YjkzNTU0NmQ3Mg==?sig=ARZXB4sKCrBsWaSWGlY"
	fileHandle    = "4::YXBwbGljYXRpb24vcGRm:ARZ7Zk2bA0b0V1YyCQ6nPNR8Xg8i9Bf8d5vvbRAj:e:1764516000:1234567890123456:100087654321098:ARb3"
)

// uploadingGraph answers the Resumable Upload API (a session, then the
// bytes) and the template creation, as Meta does.
func uploadingGraph(t *testing.T) http.HandlerFunc {
	t.Helper()
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v21.0/"+appID+"/uploads":
			_, _ = w.Write([]byte(`{"id":"` + uploadSession + `"}`))
		case strings.HasPrefix(r.URL.Path, "/v21.0/upload:"):
			_, _ = w.Write([]byte(`{"h":"` + fileHandle + `"}`))
		case strings.HasSuffix(r.URL.Path, "/message_templates"):
			_, _ = w.Write([]byte(`{"id":"594425479261597","status":"PENDING","category":"UTILITY"}`))
		default:
			_, _ = w.Write([]byte(`{"success":true}`))
		}
	}
}

func documentDraft() provider.TemplateDraft {
	return provider.TemplateDraft{Name: "herald_invoice_issued", Language: "de", Category: "UTILITY",
		Body: "Hallo {{1}}, anbei Ihre Rechnung.", Examples: []string{"Anna Schmidt"},
		Header: "DOCUMENT", HeaderSample: &provider.File{Filename: "sample.pdf", ContentType: "application/pdf", Content: []byte("%PDF-1.4 sample")}}
}

func appAccount() provider.Account {
	a := wabaAccount()
	a.Config["app_id"] = appID
	return a
}

func TestProvider_SubmitTemplateWithHeader(t *testing.T) {
	t.Parallel()

	t.Run("UploadsTheExampleThenCreates", func(t *testing.T) {
		t.Parallel()
		b := setup(t, uploadingGraph(t))
		got, err := b.prov.SubmitTemplate(context.Background(), appAccount(), documentDraft())
		require.NoError(t, err)
		require.Equal(t, "DOCUMENT", got.HeaderFormat)
		require.Equal(t, "594425479261597", got.ID)

		b.mu.Lock()
		reqs := append([]captured(nil), b.requests...)
		b.mu.Unlock()
		require.Len(t, reqs, 3)

		session := reqs[0]
		require.Equal(t, http.MethodPost, session.Method)
		require.Equal(t, "/v21.0/"+appID+"/uploads", session.Path)
		q, err := url.ParseQuery(session.Query)
		require.NoError(t, err)
		require.Equal(t, url.Values{"file_name": {"sample.pdf"}, "file_length": {"15"}, "file_type": {"application/pdf"}}, q)
		require.Equal(t, "Bearer "+accessToken, session.Auth)

		bytesReq := reqs[1]
		require.Equal(t, http.MethodPost, bytesReq.Method)
		path, query, _ := strings.Cut(uploadSession, "?")
		require.Equal(t, "/v21.0/"+path, bytesReq.Path, "the session id is posted to as Meta wrote it")
		require.Equal(t, query, bytesReq.Query, "with its signature")
		require.Equal(t, "OAuth "+accessToken, bytesReq.Auth, "the upload step authorises with OAuth, as Meta documents")
		require.Equal(t, "0", bytesReq.FileOffset)
		require.Equal(t, "%PDF-1.4 sample", string(bytesReq.Body))

		create := reqs[2]
		require.Equal(t, "/v21.0/"+wabaID+"/message_templates", create.Path)
		require.JSONEq(t, `{
			"name": "herald_invoice_issued", "language": "de", "category": "UTILITY", "parameter_format": "positional",
			"components": [
				{"type": "HEADER", "format": "DOCUMENT", "example": {"header_handle": ["`+fileHandle+`"]}},
				{"type": "BODY", "text": "Hallo {{1}}, anbei Ihre Rechnung.", "example": {"body_text": [["Anna Schmidt"]]}}
			]
		}`, string(create.Body))
	})

	t.Run("EditKeepsTheHeader", func(t *testing.T) {
		t.Parallel()
		b := setup(t, uploadingGraph(t))
		d := documentDraft()
		d.ID, d.Header = "594425479261596", "IMAGE"
		d.HeaderSample = &provider.File{Filename: "sample.png", ContentType: "image/png", Content: []byte("\x89PNG")}
		got, err := b.prov.SubmitTemplate(context.Background(), appAccount(), d)
		require.NoError(t, err)
		require.Equal(t, "IMAGE", got.HeaderFormat)
		b.mu.Lock()
		defer b.mu.Unlock()
		require.Len(t, b.requests, 3)
		require.Equal(t, "/v21.0/594425479261596", b.requests[2].Path)
		require.JSONEq(t, `{"category":"UTILITY","components":[
			{"type":"HEADER","format":"IMAGE","example":{"header_handle":["`+fileHandle+`"]}},
			{"type":"BODY","text":"Hallo {{1}}, anbei Ihre Rechnung.","example":{"body_text":[["Anna Schmidt"]]}}]}`, string(b.requests[2].Body))
	})

	t.Run("WithoutAppIDAsksNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, uploadingGraph(t))
		_, err := b.prov.SubmitTemplate(context.Background(), wabaAccount(), documentDraft())
		pe := requireProviderError(t, err)
		require.Equal(t, "missing_app_id", pe.Code)
		require.True(t, pe.Account)
		require.Contains(t, pe.Reason, "app_id")
		require.Zero(t, b.count(), "no template is created without its example")
	})

	t.Run("UploadRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"message":"(#100) The app user must have an administrator or developer role on this app","type":"OAuthException","code":100,"fbtrace_id":"A1"}}`))
		})
		_, err := b.prov.SubmitTemplate(context.Background(), appAccount(), documentDraft())
		pe := requireProviderError(t, err)
		require.Equal(t, "100", pe.Code)
		require.Equal(t, provider.Permanent, pe.Class)
		require.Contains(t, pe.Reason, "administrator or developer role")
		require.Equal(t, 1, b.count(), "the session was refused: nothing follows it")
	})

	t.Run("HostileAnswers", func(t *testing.T) {
		t.Parallel()
		for name, tc := range map[string]struct{ session, upload, code string }{
			"SessionWithoutID":    {`{}`, `{"h":"x"}`, "bad_response"},
			"SessionIDWithAPath":  {`{"id":"upload:abc/../../` + wabaID + `/message_templates"}`, `{"h":"x"}`, "bad_response"},
			"SessionNotUpload":    {`{"id":"123"}`, `{"h":"x"}`, "bad_response"},
			"UploadWithoutHandle": {`{"id":"upload:abc"}`, `{"file_offset":0}`, "bad_response"},
			"UploadNotJSON":       {`{"id":"upload:abc"}`, `<html>gateway</html>`, "bad_response"},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := setup(t, func(w http.ResponseWriter, r *http.Request) {
					switch {
					case strings.HasSuffix(r.URL.Path, "/uploads"):
						_, _ = w.Write([]byte(tc.session))
					case strings.HasPrefix(r.URL.Path, "/v21.0/upload:"):
						_, _ = w.Write([]byte(tc.upload))
					default:
						t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
					}
				})
				_, err := b.prov.SubmitTemplate(context.Background(), appAccount(), documentDraft())
				pe := requireProviderError(t, err)
				require.Equal(t, tc.code, pe.Code)
				b.mu.Lock()
				defer b.mu.Unlock()
				for _, r := range b.requests {
					require.NotContains(t, r.Path, "message_templates", "no template without a handle")
				}
			})
		}
	})

	t.Run("BadExampleType", func(t *testing.T) {
		t.Parallel()
		b := setup(t, uploadingGraph(t))
		d := documentDraft()
		d.HeaderSample.ContentType = "text/calendar"
		_, err := b.prov.SubmitTemplate(context.Background(), appAccount(), d)
		require.Equal(t, "bad_header_example", requireProviderError(t, err).Code)
		require.Zero(t, b.count())
	})

	t.Run("MissingExample", func(t *testing.T) {
		t.Parallel()
		b := setup(t, uploadingGraph(t))
		d := documentDraft()
		d.HeaderSample = nil
		_, err := b.prov.SubmitTemplate(context.Background(), appAccount(), d)
		require.Equal(t, "missing_header_example", requireProviderError(t, err).Code)
		require.Zero(t, b.count())
	})
}
