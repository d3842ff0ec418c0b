package ses_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsclient/awsclienttest"
	"github.com/heraldhq/herald/app/provider/ses"
)

// Fake credentials: the fake checks the signature's scope, never its value.
const (
	testKeyID  = "AKIAHERALDTEST000001"
	testSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYHERALDTEST"
	testRegion = "eu-central-1"
	messageID  = "0107019a3e1c2f4d-8b6e2a17-5c3d-4f8e-a1b2-c3d4e5f60718-000000"
)

// request is what the fake received.
type request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// fakeSES speaks SES v2's REST-JSON protocol: it records every request and
// answers with a raw HTTP response from testdata.
type fakeSES struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []request
	respond  func(w http.ResponseWriter, r *http.Request)
}

func (f *fakeSES) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	respond := f.respond
	f.mu.Unlock()
	respond(w, r)
}

// Requests returns the requests received so far.
func (f *fakeSES) Requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.requests...)
}

// replay answers with the raw HTTP response stored in a testdata file.
func replay(t *testing.T, file string) func(w http.ResponseWriter, r *http.Request) {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(body)
	}
}

type testBundle struct {
	fake     *fakeSES
	provider *ses.Provider
	account  provider.Account
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	fake := &fakeSES{}
	fake.respond = replay(t, "testdata/send_email.http")
	fake.srv = httptest.NewServer(fake)
	t.Cleanup(fake.srv.Close)
	return &testBundle{
		fake:     fake,
		provider: &ses.Provider{Endpoint: fake.srv.URL},
		account: provider.Account{
			ID:       uuid.New(),
			TenantID: uuid.MustParse("3b7c9e2a-51d4-4f0b-9a63-8e2d1c4b7f90"),
			Provider: ses.Name,
			Config: map[string]string{
				"region":       testRegion,
				"sender_email": "buchungen@reisen.example.de",
			},
			Secrets: map[string]string{"access_key_id": testKeyID, "secret_access_key": testSecret},
		},
	}
}

// outbound is a booking confirmation to Ada through the bundle's account.
func (b *testBundle) outbound(t *testing.T) provider.Outbound {
	t.Helper()
	html, err := os.ReadFile("testdata/booking_confirmed.html")
	require.NoError(t, err)
	return provider.Outbound{
		MessageID: uuid.MustParse("0f8fad5b-d9cb-469f-a165-70867728950e"),
		TenantID:  b.account.TenantID,
		Channel:   "EMAIL",
		To:        "ada@example.net",
		Subject:   "Buchungsbestätigung: Gardasee & Verona – 5 Tage (BF-2026-04711)",
		Body:      string(html),
		Attempt:   1,
		Account:   b.account,
	}
}

// sendEmailRequest is the JSON body of SendEmail, as far as Herald fills it.
type sendEmailRequest struct {
	FromEmailAddress string
	Destination      struct{ ToAddresses []string }
	Content          struct {
		Simple struct {
			Subject struct{ Data, Charset string }
			Body    struct {
				Html *struct{ Data, Charset string }
				Text *struct{ Data, Charset string }
			}
		}
	}
	ConfigurationSetName *string
	ReplyToAddresses     []string
	EmailTags            []struct{ Name, Value string }
}

func decodeRequest(t *testing.T, r request) sendEmailRequest {
	t.Helper()
	var in sendEmailRequest
	require.NoError(t, json.Unmarshal(r.Body, &in), string(r.Body))
	return in
}

// requireProviderError asserts err is a *provider.Error and returns it.
func requireProviderError(t *testing.T, err error) *provider.Error {
	t.Helper()
	require.Error(t, err)
	var pe *provider.Error
	require.ErrorAs(t, err, &pe)
	return pe
}

func TestProvider_Send(t *testing.T) {
	t.Parallel()

	t.Run("Success", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.account.Config["sender_name"] = "Reisebüro Sonnenschein"
		b.account.Config["configuration_set"] = "herald-events"
		b.account.Config["reply_to"] = "Team Sonnenschein <team@reisen.example.de>, info@reisen.example.de"
		m := b.outbound(t)

		id, err := b.provider.Send(context.Background(), m)
		require.NoError(t, err)
		require.Equal(t, messageID, id)

		reqs := b.fake.Requests()
		require.Len(t, reqs, 1)
		r := reqs[0]
		require.Equal(t, http.MethodPost, r.Method)
		require.Equal(t, "/v2/email/outbound-emails", r.Path)
		require.Contains(t, r.Header.Get("Content-Type"), "application/json")
		require.Regexp(t, regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=`+testKeyID+`/\d{8}/eu-central-1/ses/aws4_request,`), r.Header.Get("Authorization"))

		in := decodeRequest(t, r)
		require.Equal(t, "=?utf-8?q?Reiseb=C3=BCro_Sonnenschein?= <buchungen@reisen.example.de>", in.FromEmailAddress)
		require.Equal(t, []string{"ada@example.net"}, in.Destination.ToAddresses)
		require.Equal(t, m.Subject, in.Content.Simple.Subject.Data)
		require.Equal(t, "UTF-8", in.Content.Simple.Subject.Charset)
		require.NotNil(t, in.Content.Simple.Body.Html)
		require.Equal(t, m.Body, in.Content.Simple.Body.Html.Data)
		require.Equal(t, "UTF-8", in.Content.Simple.Body.Html.Charset)
		require.NotNil(t, in.Content.Simple.Body.Text)
		wantText, err := os.ReadFile("testdata/booking_confirmed.txt")
		require.NoError(t, err)
		require.Equal(t, strings.TrimRight(string(wantText), "\n"), in.Content.Simple.Body.Text.Data)
		require.Equal(t, "UTF-8", in.Content.Simple.Body.Text.Charset)
		require.NotNil(t, in.ConfigurationSetName)
		require.Equal(t, "herald-events", *in.ConfigurationSetName)
		require.Equal(t, []string{`"Team Sonnenschein" <team@reisen.example.de>`, "info@reisen.example.de"}, in.ReplyToAddresses)
		require.Equal(t, []struct{ Name, Value string }{
			{"tenant_id", "3b7c9e2a-51d4-4f0b-9a63-8e2d1c4b7f90"},
			{"message_id", "0f8fad5b-d9cb-469f-a165-70867728950e"},
		}, in.EmailTags)
	})

	t.Run("MinimalAccount", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.provider.Send(context.Background(), b.outbound(t))
		require.NoError(t, err)

		in := decodeRequest(t, b.fake.Requests()[0])
		require.Equal(t, "buchungen@reisen.example.de", in.FromEmailAddress)
		require.Nil(t, in.ConfigurationSetName)
		require.Empty(t, in.ReplyToAddresses)
	})

	t.Run("InternationalDomainInPunycode", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		m := b.outbound(t)
		m.To = "anna@müller-reisen.de"
		_, err := b.provider.Send(context.Background(), m)
		require.NoError(t, err)
		require.Equal(t, []string{"anna@xn--mller-reisen-dlb.de"}, decodeRequest(t, b.fake.Requests()[0]).Destination.ToAddresses)
	})

	t.Run("TagsMatchSESCharset", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.provider.Send(context.Background(), b.outbound(t))
		require.NoError(t, err)
		for _, tag := range decodeRequest(t, b.fake.Requests()[0]).EmailTags {
			require.Regexp(t, `^[A-Za-z0-9_-]{1,256}$`, tag.Name)
			require.Regexp(t, `^[A-Za-z0-9_-]{1,256}$`, tag.Value)
		}
	})

	t.Run("MissingMessageID", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.fake.respond = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{}`)
		}
		_, err := b.provider.Send(context.Background(), b.outbound(t))
		pe := requireProviderError(t, err)
		require.Equal(t, "missing_message_id", pe.Code)
		require.Equal(t, provider.Transient, pe.Class)
	})
}

func TestProvider_SendErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		file       string
		code       string
		class      provider.Class
		account    bool
		retryAfter time.Duration
	}{
		{"message_rejected", "MessageRejected", provider.Permanent, false, 0},
		{"mail_from_not_verified", "MailFromDomainNotVerifiedException", provider.Permanent, true, 0},
		{"configuration_set_not_found", "NotFoundException", provider.Permanent, true, 0},
		// One recipient's address: that message fails, the account stays.
		{"bad_request", "invalid_recipient", provider.Permanent, false, 0},
		{"bad_request_domain", "invalid_recipient", provider.Permanent, false, 0},
		{"bad_request_other", "BadRequestException", provider.Permanent, false, 0},
		{"account_suspended", "AccountSuspendedException", provider.Permanent, true, 0},
		{"sending_paused", "SendingPausedException", provider.Permanent, true, 0},
		{"too_many_requests", "TooManyRequestsException", provider.RateLimited, false, time.Second},
		{"too_many_requests_retry_after", "TooManyRequestsException", provider.RateLimited, false, 7 * time.Second},
		{"limit_exceeded", "LimitExceededException", provider.RateLimited, false, time.Minute},
		{"throttling", "ThrottlingException", provider.RateLimited, false, time.Second},
		{"internal_error", "InternalServiceErrorException", provider.Transient, false, 0},
		{"unrecognized_client", "UnrecognizedClientException", provider.Permanent, true, 0},
		{"signature_mismatch", "SignatureDoesNotMatch", provider.Permanent, true, 0},
		{"access_denied", "AccessDeniedException", provider.Permanent, true, 0},
		{"unknown_code", "ConflictException", provider.Transient, false, 0},
		{"bad_gateway_empty", "http_502", provider.Transient, false, 0},
		{"service_unavailable_html", "http_503", provider.Transient, false, 0},
		// Answers without X-Amzn-ErrorType, as proxies and emulators send
		// them, are classified by their status.
		{"plain_text_400", "http_400", provider.Permanent, false, 0},
		{"emulator_json_400", "http_400", provider.Permanent, false, 0},
		{"proxy_403_plain", "http_403", provider.Permanent, false, 0},
		{"proxy_404_empty", "http_404", provider.Permanent, false, 0},
		{"proxy_429_plain", "http_429", provider.RateLimited, false, 3 * time.Second},
		{"proxy_502_html", "http_502", provider.Transient, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.fake.respond = replay(t, "testdata/errors/"+tt.file+".http")

			_, err := b.provider.Send(context.Background(), b.outbound(t))
			pe := requireProviderError(t, err)
			require.Equal(t, tt.code, pe.Code)
			require.Equal(t, tt.class, pe.Class)
			require.Equal(t, tt.account, pe.Account)
			require.False(t, pe.ServerCredentials, "the account brings its own keys")
			require.Equal(t, tt.retryAfter, pe.RetryAfter)
			require.NotEmpty(t, pe.Reason)
			// Retries belong to the queue: the SDK must not repeat the call.
			require.Len(t, b.fake.Requests(), 1)
		})
	}
}

// TestProvider_SendErrorReasons checks what the timeline will say: SES's
// own text for a refused address, the body of a plain-text answer, and no
// markup from a proxy's page.
func TestProvider_SendErrorReasons(t *testing.T) {
	t.Parallel()

	tests := []struct {
		file, contains, excludes string
	}{
		{"bad_request", "Illegal address", ""},
		{"plain_text_400", "HTTP 400 without an AWS error code: Bad Request: the request body could not be parsed", ""},
		{"emulator_json_400", "HTTP 400", ""},
		{"proxy_502_html", "HTTP 502 without an AWS error code", "<"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.fake.respond = replay(t, "testdata/errors/"+tt.file+".http")
			_, err := b.provider.Send(context.Background(), b.outbound(t))
			pe := requireProviderError(t, err)
			require.Contains(t, pe.Reason, tt.contains)
			if tt.excludes != "" {
				require.NotContains(t, pe.Reason, tt.excludes)
			}
			require.NotContains(t, pe.Reason, "ada@example.net", "support sees addresses masked; reasons do not repeat them")
		})
	}
}

func TestProvider_SendNoRetry(t *testing.T) {
	t.Parallel()

	t.Run("ServerError", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.fake.respond = replay(t, "testdata/errors/internal_error.http")
		_, err := b.provider.Send(context.Background(), b.outbound(t))
		require.Equal(t, provider.Transient, requireProviderError(t, err).Class)
		require.Len(t, b.fake.Requests(), 1, "a 500 must reach SES exactly once")
	})

	t.Run("ConnectionDropped", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.fake.respond = func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}
		_, err := b.provider.Send(context.Background(), b.outbound(t))
		pe := requireProviderError(t, err)
		require.Equal(t, "connection_error", pe.Code)
		require.Equal(t, provider.Transient, pe.Class)
		require.Len(t, b.fake.Requests(), 1)
	})
}

func TestProvider_SendTimeout(t *testing.T) {
	t.Parallel()

	// hang makes the fake never answer.
	hang := func(t *testing.T, b *testBundle) {
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		b.fake.respond = func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}

	t.Run("CallerDeadline", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		hang(t, b)
		// The adapter's own bound is an hour off, so only the caller's
		// deadline can end this send soon; how soon is the machine's
		// business, hence no bound on the time it took.
		b.provider.Timeout = time.Hour
		m := b.outbound(t)
		err := awsclienttest.SendPastDeadline(t, func(ctx context.Context) error {
			_, err := b.provider.Send(ctx, m)
			return err
		})
		pe := requireProviderError(t, err)
		require.Equal(t, "timeout", pe.Code)
		require.Equal(t, provider.Transient, pe.Class)
		require.False(t, pe.Account)
		require.Len(t, b.fake.Requests(), 1)
	})

	t.Run("ProviderTimeout", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		hang(t, b)
		b.provider.Timeout = 100 * time.Millisecond
		_, err := b.provider.Send(context.Background(), b.outbound(t))
		pe := requireProviderError(t, err)
		require.Equal(t, "timeout", pe.Code)
		require.Equal(t, provider.Transient, pe.Class)
	})
}

func TestProvider_SendUnknownErrorLogged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var logs bytes.Buffer
	b.provider.Log = slog.New(slog.NewTextHandler(&logs, nil))

	b.fake.respond = replay(t, "testdata/errors/unknown_code.http")
	_, err := b.provider.Send(context.Background(), b.outbound(t))
	require.Equal(t, provider.Transient, requireProviderError(t, err).Class)
	require.Contains(t, logs.String(), "unclassified")
	require.Contains(t, logs.String(), "code=")

	logs.Reset()
	b.fake.respond = replay(t, "testdata/errors/internal_error.http")
	_, err = b.provider.Send(context.Background(), b.outbound(t))
	require.Error(t, err)
	require.Empty(t, logs.String(), "known codes are not logged")
}

func TestProvider_SendAccountConfig(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		config  map[string]string
		secrets map[string]string
		code    string
	}{
		{"MissingRegion", map[string]string{"region": ""}, nil, "config_missing_region"},
		{"InvalidRegion", map[string]string{"region": "evil.example.com/x"}, nil, "config_invalid_region"},
		{"MissingSender", map[string]string{"sender_email": ""}, nil, "config_missing_sender"},
		{"InvalidSender", map[string]string{"sender_email": "buchungen at reisen"}, nil, "config_invalid_sender"},
		{"InvalidReplyTo", map[string]string{"reply_to": "team@"}, nil, "config_invalid_reply_to"},
		{"OnlyAccessKey", nil, map[string]string{"secret_access_key": ""}, "config_incomplete_credentials"},
		{"OnlySecretKey", nil, map[string]string{"access_key_id": ""}, "config_incomplete_credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for k, v := range tt.config {
				b.account.Config[k] = v
			}
			for k, v := range tt.secrets {
				b.account.Secrets[k] = v
			}
			_, err := b.provider.Send(context.Background(), b.outbound(t))
			pe := requireProviderError(t, err)
			require.Equal(t, tt.code, pe.Code)
			require.Equal(t, provider.Permanent, pe.Class)
			require.True(t, pe.Account, "the tenant must fix the account")
			require.Empty(t, b.fake.Requests())
		})
	}
}

func TestProvider_SendInvalidRecipient(t *testing.T) {
	t.Parallel()

	for _, to := range []string{"", "ada", "ada@", "Ada <ada@example.net>", "ädä@example.net", "ada@example.net\r\nBcc: eve@example.net"} {
		t.Run(to, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			m := b.outbound(t)
			m.To = to
			_, err := b.provider.Send(context.Background(), m)
			pe := requireProviderError(t, err)
			require.Equal(t, "invalid_recipient", pe.Code)
			require.Equal(t, provider.Permanent, pe.Class)
			require.False(t, pe.Account, "one bad address must not flag the account")
			require.Empty(t, b.fake.Requests())
		})
	}
}

func TestProvider_ClientCache(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	c1, err := b.provider.ClientFor(ctx, b.account)
	require.NoError(t, err)
	c2, err := b.provider.ClientFor(ctx, b.account)
	require.NoError(t, err)
	require.Same(t, c1, c2, "an unchanged account reuses its client")

	rotated := b.account
	rotated.Secrets = map[string]string{"access_key_id": "AKIAHERALDTEST000002", "secret_access_key": testSecret}
	c3, err := b.provider.ClientFor(ctx, rotated)
	require.NoError(t, err)
	require.NotSame(t, c1, c3, "rotated keys build a new client")
	require.Equal(t, 1, b.provider.CachedClients(), "the new client replaces the old one")

	moved := rotated
	moved.Config = map[string]string{"region": "eu-west-1", "sender_email": "buchungen@reisen.example.de"}
	c4, err := b.provider.ClientFor(ctx, moved)
	require.NoError(t, err)
	require.NotSame(t, c3, c4, "a new region builds a new client")

	other := b.account
	other.ID = uuid.New()
	_, err = b.provider.ClientFor(ctx, other)
	require.NoError(t, err)
	require.Equal(t, 2, b.provider.CachedClients())

	// The cached client still sends with the rotated keys.
	m := b.outbound(t)
	m.Account = rotated
	_, err = b.provider.Send(ctx, m)
	require.NoError(t, err)
	require.Contains(t, b.fake.Requests()[0].Header.Get("Authorization"), "Credential=AKIAHERALDTEST000002/")
}

// TestProvider_SendDefaultCredentials cannot run in parallel: it sets the
// environment the default credential chain reads.
func TestProvider_SendDefaultCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAHERALDENV0000001")
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecret)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_SESV2", "")
	t.Setenv("AWS_MAX_ATTEMPTS", "5")

	b := setup(t)
	b.account.Secrets = nil
	_, err := b.provider.Send(context.Background(), b.outbound(t))
	require.NoError(t, err)
	reqs := b.fake.Requests()
	require.Len(t, reqs, 1)
	require.Contains(t, reqs[0].Header.Get("Authorization"), "Credential=AKIAHERALDENV0000001/")

	// Rejected server credentials are the operator's problem: retried,
	// never flagged on the tenant's account. AWS_MAX_ATTEMPTS does not
	// bring SDK retries back.
	b.fake.respond = replay(t, "testdata/errors/unrecognized_client.http")
	_, err = b.provider.Send(context.Background(), b.outbound(t))
	pe := requireProviderError(t, err)
	require.Equal(t, "UnrecognizedClientException", pe.Code)
	require.Equal(t, provider.Transient, pe.Class)
	require.False(t, pe.Account)
	require.True(t, pe.ServerCredentials, "the dispatcher tells the operator")

	b.fake.respond = replay(t, "testdata/errors/internal_error.http")
	_, err = b.provider.Send(context.Background(), b.outbound(t))
	require.Equal(t, provider.Transient, requireProviderError(t, err).Class)
	require.Len(t, b.fake.Requests(), 3)
}
