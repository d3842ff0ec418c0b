package meta_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/meta"
)

const (
	phoneNumberID = "106540352242922"
	accessToken   = "EAAGm0PX4ZCpsBAKZAtest"
	wamid         = "wamid.HBgNNDkxNTExMjM0NTY3OBUCABEYEjQ2QjM1RjQ2RUVGQTc2QzIzMwA="
)

// captured is what the fake Graph API saw of one request.
type captured struct {
	Method, Path, Auth, ContentType string
	// Query is the raw query; FileOffset the Resumable Upload API's
	// file_offset header.
	Query, FileOffset string
	Body              []byte
}

type testBundle struct {
	prov *meta.Provider
	srv  *httptest.Server
	logs *bytes.Buffer

	mu       sync.Mutex
	requests []captured
}

// setup starts a fake Graph API that records each request and answers
// with handler.
func setup(t *testing.T, handler http.HandlerFunc) *testBundle {
	t.Helper()
	b := &testBundle{logs: &bytes.Buffer{}}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.requests = append(b.requests, captured{Method: r.Method, Path: r.URL.Path,
			Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"),
			Query: r.URL.RawQuery, FileOffset: r.Header.Get("file_offset"), Body: body})
		b.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(b.srv.Close)
	b.prov = &meta.Provider{
		HTTPClient: b.srv.Client(),
		BaseURL:    b.srv.URL,
		Version:    "v21.0",
		Log:        slog.New(slog.NewTextHandler(b.logs, nil)),
	}
	return b
}

func (b *testBundle) only(t *testing.T) captured {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Len(t, b.requests, 1)
	return b.requests[0]
}

func (b *testBundle) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.requests)
}

// respond answers with a testdata file.
func respond(t *testing.T, status int, file string, header map[string]string) http.HandlerFunc {
	t.Helper()
	body := readFile(t, file)
	return func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func outbound() provider.Outbound {
	return provider.Outbound{
		MessageID: uuid.New(), TenantID: uuid.New(), Channel: "WHATSAPP",
		To: "+4915112345678", Body: "Ihre Buchung ist bestätigt.", Attempt: 1,
		Account: provider.Account{
			ID: uuid.New(), Provider: meta.Name,
			Config:  map[string]string{"phone_number_id": phoneNumberID},
			Secrets: map[string]string{"access_token": accessToken},
		},
	}
}

func requireProviderError(t *testing.T, err error) *provider.Error {
	t.Helper()
	require.Error(t, err)
	var pe *provider.Error
	require.True(t, errors.As(err, &pe), "want *provider.Error, got %T: %v", err, err)
	return pe
}

func TestProvider_Send(t *testing.T) {
	t.Parallel()

	t.Run("Text", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))

		m := outbound()
		id, err := b.prov.Send(context.Background(), m)
		require.NoError(t, err)
		require.Equal(t, wamid, id)

		req := b.only(t)
		require.Equal(t, http.MethodPost, req.Method)
		require.Equal(t, "/v21.0/"+phoneNumberID+"/messages", req.Path)
		require.Equal(t, "Bearer "+accessToken, req.Auth)
		require.Equal(t, "application/json", req.ContentType)
		// Meta echoes biz_opaque_callback_data in the message's statuses.
		require.JSONEq(t, `{
			"messaging_product": "whatsapp",
			"recipient_type": "individual",
			"to": "+4915112345678",
			"type": "text",
			"text": {"preview_url": false, "body": "Ihre Buchung ist bestätigt."},
			"biz_opaque_callback_data": "herald:`+m.MessageID.String()+`"
		}`, string(req.Body))
	})

	t.Run("Template", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
		m := outbound()
		m.Template = &provider.WhatsAppTemplate{Name: "booking_confirmed", Language: "de", Parameters: []string{"Ada", "Freitag, 14:00"}}

		id, err := b.prov.Send(context.Background(), m)
		require.NoError(t, err)
		require.Equal(t, wamid, id)

		req := b.only(t)
		require.Equal(t, http.MethodPost, req.Method)
		require.Equal(t, "/v21.0/"+phoneNumberID+"/messages", req.Path)
		require.Equal(t, "Bearer "+accessToken, req.Auth)
		require.JSONEq(t, `{
			"messaging_product": "whatsapp",
			"recipient_type": "individual",
			"to": "+4915112345678",
			"type": "template",
			"template": {
				"name": "booking_confirmed",
				"language": {"policy": "deterministic", "code": "de"},
				"components": [{"type": "body", "parameters": [
					{"type": "text", "text": "Ada"},
					{"type": "text", "text": "Freitag, 14:00"}
				]}]
			},
			"biz_opaque_callback_data": "herald:`+m.MessageID.String()+`"
		}`, string(req.Body))
	})

	t.Run("TemplateParametersOnOneLine", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
		m := outbound()
		m.Template = &provider.WhatsAppTemplate{Name: "incident", Language: "de",
			Parameters: []string{"Bus verspätet.\r\nNeue Abfahrt:\t18:30", "a     b", ""}}

		_, err := b.prov.Send(context.Background(), m)
		require.NoError(t, err)
		var body struct {
			Template struct {
				Components []struct {
					Parameters []map[string]string `json:"parameters"`
				} `json:"components"`
			} `json:"template"`
		}
		require.NoError(t, json.Unmarshal(b.only(t).Body, &body))
		require.Equal(t, []map[string]string{
			{"type": "text", "text": "Bus verspätet. / Neue Abfahrt: 18:30"},
			{"type": "text", "text": "a b"},
			{"type": "text", "text": "-"},
		}, body.Template.Components[0].Parameters, "Meta refuses new lines, tabs, long runs of spaces and empty parameters")
	})

	t.Run("TemplateWithoutParameters", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
		m := outbound()
		m.Template = &provider.WhatsAppTemplate{Name: "hello_world", Language: "en_US"}

		_, err := b.prov.Send(context.Background(), m)
		require.NoError(t, err)

		var body map[string]any
		require.NoError(t, json.Unmarshal(b.only(t).Body, &body))
		require.Equal(t, map[string]any{"name": "hello_world", "language": map[string]any{"policy": "deterministic", "code": "en_US"}}, body["template"])
	})

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
		b.prov.Version = ""
		b.prov.BaseURL = b.srv.URL + "/"

		_, err := b.prov.Send(context.Background(), outbound())
		require.NoError(t, err)
		require.Equal(t, "/"+meta.DefaultVersion+"/"+phoneNumberID+"/messages", b.only(t).Path)
	})

	t.Run("VersionWithoutV", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
		b.prov.Version = "22.0"

		_, err := b.prov.Send(context.Background(), outbound())
		require.NoError(t, err)
		require.Equal(t, "/v22.0/"+phoneNumberID+"/messages", b.only(t).Path)
	})

	t.Run("MissingMessageID", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_no_id.json", nil))

		_, err := b.prov.Send(context.Background(), outbound())
		pe := requireProviderError(t, err)
		require.Equal(t, provider.Transient, pe.Class)
		require.Equal(t, "missing_message_id", pe.Code)
		require.False(t, pe.Account)
	})

	t.Run("AccountMisconfigured", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			name   string
			change func(*provider.Outbound)
			code   string
		}{
			{"MissingPhoneNumberID", func(m *provider.Outbound) { delete(m.Account.Config, "phone_number_id") }, "missing_phone_number_id"},
			{"BlankPhoneNumberID", func(m *provider.Outbound) { m.Account.Config["phone_number_id"] = " " }, "missing_phone_number_id"},
			{"NilConfig", func(m *provider.Outbound) { m.Account.Config = nil }, "missing_phone_number_id"},
			{"MissingAccessToken", func(m *provider.Outbound) { delete(m.Account.Secrets, "access_token") }, "missing_access_token"},
			{"NilSecrets", func(m *provider.Outbound) { m.Account.Secrets = nil }, "missing_access_token"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
				m := outbound()
				tt.change(&m)

				_, err := b.prov.Send(context.Background(), m)
				pe := requireProviderError(t, err)
				require.Equal(t, provider.Permanent, pe.Class)
				require.True(t, pe.Account)
				require.Equal(t, tt.code, pe.Code)
				require.NotEmpty(t, pe.Reason)
				require.Zero(t, b.count(), "nothing is sent without credentials")
			})
		}
	})

	t.Run("RejectedLocally", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			name   string
			change func(*provider.Outbound)
			code   string
		}{
			{"TextTooLong", func(m *provider.Outbound) { m.Body = strings.Repeat("ä", 4097) }, "text_too_long"},
			{"NoRecipient", func(m *provider.Outbound) { m.To = "" }, "missing_recipient"},
			{"TemplateWithoutLanguage", func(m *provider.Outbound) { m.Template = &provider.WhatsAppTemplate{Name: "booking_confirmed"} }, "invalid_template"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
				m := outbound()
				tt.change(&m)

				_, err := b.prov.Send(context.Background(), m)
				pe := requireProviderError(t, err)
				require.Equal(t, provider.Permanent, pe.Class)
				require.False(t, pe.Account)
				require.Equal(t, tt.code, pe.Code)
				require.Zero(t, b.count())
			})
		}
	})

	t.Run("TextAtLimit", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
		m := outbound()
		m.Body = strings.Repeat("ä", 4096)

		_, err := b.prov.Send(context.Background(), m)
		require.NoError(t, err)
	})
}

// graphErrorBody builds a Graph error for codes without their own sample.
func graphErrorBody(code int, message string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message, "type": "OAuthException", "code": code,
		"error_data": map[string]any{"messaging_product": "whatsapp", "details": message},
		"fbtrace_id": "AyQ2nL8sK4xV1mR7tZ3wPbC",
	}})
	return b
}

func TestProvider_SendErrors(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name   string
		status int
		file   string // a testdata sample, or
		body   []byte // a generated body
		header map[string]string

		code       string
		class      provider.Class
		account    bool
		retryAfter time.Duration
		reason     string // when set, the exact reason
	}{
		// Permanent: the recipient or the request.
		{name: "NotOnWhatsApp", status: 400, file: "error_131026.json", code: "131026", class: provider.Permanent,
			reason: "(#131026) Message Undeliverable."},
		{name: "OutsideWindow", status: 400, file: "error_131047.json", code: "131047", class: provider.Permanent,
			reason: "(#131047) Re-engagement message: Message failed to send because more than 24 hours have passed since the customer last replied to this number."},
		{name: "InvalidParameter", status: 400, file: "error_100.json", code: "100", class: provider.Permanent,
			reason: "(#100) Invalid parameter: Parameter value is not valid"},

		// Permanent, account flagged.
		{name: "TokenExpired", status: 401, file: "error_190.json", code: "190", class: provider.Permanent, account: true},
		{name: "AuthException", status: 401, file: "error_0.json", code: "0", class: provider.Permanent, account: true,
			reason: "(#0) AuthException: We were unable to authenticate the app user."},
		{name: "NoPermission", status: 403, file: "error_10.json", code: "10", class: provider.Permanent, account: true},
		{name: "Permission200", status: 403, file: "error_200.json", code: "200", class: provider.Permanent, account: true},
		{name: "Permission299", status: 403, body: graphErrorBody(299, "(#299) Permission error"), code: "299", class: provider.Permanent, account: true},
		{name: "AccountRestricted", status: 400, file: "error_368.json", code: "368", class: provider.Permanent, account: true},
		{name: "AccountLocked", status: 400, file: "error_131031.json", code: "131031", class: provider.Permanent, account: true},

		// Transient.
		{name: "SomethingWentWrong", status: 500, file: "error_131000.json", code: "131000", class: provider.Transient},
		{name: "ServiceUnavailable", status: 503, file: "error_131016.json", code: "131016", class: provider.Transient},
		{name: "ServerTemporarilyUnavailable", status: 503, file: "error_133004.json", code: "133004", class: provider.Transient},
		{name: "UnknownGraphError", status: 500, file: "error_1.json", code: "1", class: provider.Transient,
			reason: "An unknown error occurred"},
		{name: "UnexpectedGraphError", status: 503, file: "error_2.json", code: "2", class: provider.Transient},
		{name: "NotDeliveredForEngagement", status: 400, file: "error_131049.json", code: "131049", class: provider.Transient,
			retryAfter: 15 * time.Minute},

		// Rate limited, with default waits and with Meta's hint.
		{name: "Throughput", status: 400, file: "error_130429.json", code: "130429", class: provider.RateLimited,
			retryAfter: 5 * time.Second},
		{name: "ThroughputWith429AndRetryAfter", status: 429, file: "error_130429.json", header: map[string]string{"Retry-After": "30"},
			code: "130429", class: provider.RateLimited, retryAfter: 30 * time.Second},
		{name: "AppCallLimit", status: 400, file: "error_4.json", code: "4", class: provider.RateLimited, retryAfter: time.Minute},
		{name: "WABACallLimit", status: 400, file: "error_80007.json", code: "80007", class: provider.RateLimited, retryAfter: time.Minute},
		{name: "NumberUpgrading", status: 400, file: "error_131057.json", code: "131057", class: provider.RateLimited, retryAfter: 5 * time.Minute},
		{name: "PairRateLimit", status: 400, file: "error_131056.json", code: "131056", class: provider.RateLimited, retryAfter: 6 * time.Second},
		{name: "SpamRateLimit", status: 400, file: "error_131048.json", code: "131048", class: provider.RateLimited, retryAfter: time.Hour},
		{name: "SpamRateLimitWithRetryAfter", status: 429, file: "error_131048.json", header: map[string]string{"Retry-After": "120"},
			code: "131048", class: provider.RateLimited, retryAfter: 2 * time.Minute},
		{name: "RetryAfterIgnoredWhenNotRateLimited", status: 503, file: "error_131016.json", header: map[string]string{"Retry-After": "120"},
			code: "131016", class: provider.Transient},

		// Template sends Meta cannot carry out: permanent, no retry.
		{name: "TemplateMissing", status: 404, file: "error_132001.json", code: "132001", class: provider.Permanent},
		{name: "TemplateParameterCount", status: 400, file: "error_132000.json", code: "132000", class: provider.Permanent},
		{name: "TemplatePaused", status: 400, body: graphErrorBody(132015, "(#132015) Template is Paused"), code: "132015", class: provider.Permanent},

		// Codes outside the table: transient, and rate limited on a 429.
		{name: "UnknownCode", status: 400, file: "error_135000.json", code: "135000", class: provider.Transient},
		{name: "UnknownCodeJustPastPermissionRange", status: 403, body: graphErrorBody(300, "(#300) Edit failure"), code: "300", class: provider.Transient},
		{name: "UnknownCodeWith429", status: 429, body: graphErrorBody(3, "(#3) Capability"), code: "3", class: provider.RateLimited, retryAfter: 5 * time.Second},

		// No Graph error in the body: a proxy answered.
		{name: "BadGatewayHTML", status: 502, body: []byte("<html><body>502 Bad Gateway</body></html>"), code: "http_502", class: provider.Transient},
		{name: "EmptyTooManyRequests", status: 429, body: []byte{}, header: map[string]string{"Retry-After": "7"},
			code: "http_429", class: provider.RateLimited, retryAfter: 7 * time.Second},
		{name: "ErrorWithoutCode", status: 400, body: []byte(`{"error":{"message":"Bad request"}}`), code: "http_400", class: provider.Transient},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := tt.body
			if tt.file != "" {
				body = readFile(t, tt.file)
			}
			b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write(body)
			})

			id, err := b.prov.Send(context.Background(), outbound())
			require.Empty(t, id)
			pe := requireProviderError(t, err)
			require.Equal(t, tt.code, pe.Code)
			require.Equal(t, tt.class, pe.Class)
			require.Equal(t, tt.account, pe.Account)
			require.Equal(t, tt.retryAfter, pe.RetryAfter)
			require.NotEmpty(t, pe.Reason)
			if tt.reason != "" {
				require.Equal(t, tt.reason, pe.Reason)
			}
		})
	}
}

func TestProvider_SendUnknownCodeIsLogged(t *testing.T) {
	t.Parallel()
	b := setup(t, respond(t, http.StatusBadRequest, "error_135000.json", nil))

	_, err := b.prov.Send(context.Background(), outbound())
	require.Equal(t, provider.Transient, requireProviderError(t, err).Class)
	require.Contains(t, b.logs.String(), "unclassified Meta error code")
	require.Contains(t, b.logs.String(), "code=135000")
}

func TestProvider_SendRetryAfterDate(t *testing.T) {
	t.Parallel()
	before := time.Now()
	header := before.Add(90 * time.Second).UTC().Format(http.TimeFormat)
	at, err := http.ParseTime(header) // to the second
	require.NoError(t, err)
	b := setup(t, respond(t, http.StatusTooManyRequests, "error_80007.json", map[string]string{"Retry-After": header}))

	_, err = b.prov.Send(context.Background(), outbound())
	after := time.Now()
	pe := requireProviderError(t, err)
	require.Equal(t, provider.RateLimited, pe.Class)
	// The wait runs to the date from when the answer was read, some time
	// between these two readings of the clock, however long that took.
	require.GreaterOrEqual(t, pe.RetryAfter, at.Sub(after))
	require.LessOrEqual(t, pe.RetryAfter, at.Sub(before))
}

func TestProvider_SendTransport(t *testing.T) {
	t.Parallel()

	// slow answers only after the client has given up (or the test ends).
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Minute):
		}
	}

	t.Run("ClientTimeout", func(t *testing.T) {
		t.Parallel()
		b := setup(t, slow)
		b.prov.HTTPClient = &http.Client{Timeout: 50 * time.Millisecond}

		_, err := b.prov.Send(context.Background(), outbound())
		pe := requireProviderError(t, err)
		require.Equal(t, provider.Transient, pe.Class)
		require.Equal(t, "timeout", pe.Code)
		require.False(t, pe.Account)
	})

	t.Run("ContextDeadline", func(t *testing.T) {
		t.Parallel()
		b := setup(t, slow)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()

		_, err := b.prov.Send(ctx, outbound())
		pe := requireProviderError(t, err)
		require.Equal(t, provider.Transient, pe.Class)
		require.Equal(t, "timeout", pe.Code)
	})

	t.Run("Canceled", func(t *testing.T) {
		t.Parallel()
		b := setup(t, slow)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)

		_, err := b.prov.Send(ctx, outbound())
		pe := requireProviderError(t, err)
		require.Equal(t, provider.Transient, pe.Class)
		require.Equal(t, "canceled", pe.Code)
	})

	t.Run("ConnectionRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
		b.srv.Close()

		_, err := b.prov.Send(context.Background(), outbound())
		pe := requireProviderError(t, err)
		require.Equal(t, provider.Transient, pe.Class)
		require.Equal(t, "network", pe.Code)
	})

	t.Run("ConnectionDropped", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, _ *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		})

		_, err := b.prov.Send(context.Background(), outbound())
		pe := requireProviderError(t, err)
		require.Equal(t, provider.Transient, pe.Class)
		require.Equal(t, "network", pe.Code)
	})
}

func TestProvider_ErrorStrings(t *testing.T) {
	t.Parallel()
	// The reason must never carry the access token, even when the request
	// fails in transport and the error quotes the URL.
	b := setup(t, respond(t, http.StatusOK, "send_success.json", nil))
	b.srv.Close()

	_, err := b.prov.Send(context.Background(), outbound())
	require.NotContains(t, err.Error(), accessToken)
	require.Contains(t, err.Error(), "network")
}
