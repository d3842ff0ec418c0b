package sns_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/smithy-go"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsclient/awsclienttest"
	"github.com/heraldhq/herald/app/provider/sns"
)

// Fake credentials: the fake checks the signature's scope, never its value.
const (
	testKeyID  = "AKIAHERALDTEST000001"
	testSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYHERALDTEST"
	messageID  = "8d2c1f7e-5a3b-5c9d-b0e4-71f6a2d8c3b5"
)

// request is what the fake received.
type request struct {
	Method, Path string
	Header       http.Header
	Form         url.Values
}

// fakeSNS speaks SNS's query protocol: it records every request and answers
// with a raw HTTP response from testdata.
type fakeSNS struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []request
	respond  func(w http.ResponseWriter, r *http.Request)
}

func (f *fakeSNS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	f.mu.Lock()
	f.requests = append(f.requests, request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Form: form})
	respond := f.respond
	f.mu.Unlock()
	respond(w, r)
}

// Requests returns the requests received so far.
func (f *fakeSNS) Requests() []request {
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

// attributes collects the MessageAttributes.entry.N.* fields of a Publish
// form into name -> "DataType:StringValue".
func attributes(form url.Values) map[string]string {
	out := map[string]string{}
	for k := range form {
		if !strings.HasPrefix(k, "MessageAttributes.entry.") || !strings.HasSuffix(k, ".Name") {
			continue
		}
		prefix := strings.TrimSuffix(k, ".Name")
		out[form.Get(k)] = form.Get(prefix+".Value.DataType") + ":" + form.Get(prefix+".Value.StringValue")
	}
	return out
}

type testBundle struct {
	fake     *fakeSNS
	provider *sns.Provider
	account  provider.Account
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	fake := &fakeSNS{}
	fake.respond = replay(t, "testdata/publish.http")
	fake.srv = httptest.NewServer(fake)
	t.Cleanup(fake.srv.Close)
	return &testBundle{
		fake:     fake,
		provider: &sns.Provider{Endpoint: fake.srv.URL},
		account: provider.Account{
			ID:       uuid.New(),
			TenantID: uuid.MustParse("3b7c9e2a-51d4-4f0b-9a63-8e2d1c4b7f90"),
			Provider: sns.Name,
			Config:   map[string]string{"region": "eu-central-1"},
			Secrets:  map[string]string{"access_key_id": testKeyID, "secret_access_key": testSecret},
		},
	}
}

// outbound is a departure reminder to Ada through the bundle's account.
func (b *testBundle) outbound() provider.Outbound {
	return provider.Outbound{
		MessageID: uuid.MustParse("0f8fad5b-d9cb-469f-a165-70867728950e"),
		TenantID:  b.account.TenantID,
		Channel:   "SMS",
		To:        "+4915123456789",
		Body:      "Gardasee & Verona: Abfahrt morgen 07:30 Uhr, ZOB Bussteig 4. Buchung BF-2026-04711. Gute Reise!",
		Attempt:   1,
		Account:   b.account,
	}
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
		m := b.outbound()

		id, err := b.provider.Send(context.Background(), m)
		require.NoError(t, err)
		require.Equal(t, messageID, id)

		reqs := b.fake.Requests()
		require.Len(t, reqs, 1)
		r := reqs[0]
		require.Equal(t, http.MethodPost, r.Method)
		require.Equal(t, "/", r.Path)
		require.Contains(t, r.Header.Get("Content-Type"), "application/x-www-form-urlencoded")
		require.Regexp(t, regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=`+testKeyID+`/\d{8}/eu-central-1/sns/aws4_request,`), r.Header.Get("Authorization"))
		require.Equal(t, "Publish", r.Form.Get("Action"))
		require.Equal(t, "2010-03-31", r.Form.Get("Version"))
		require.Equal(t, "+4915123456789", r.Form.Get("PhoneNumber"))
		require.Equal(t, m.Body, r.Form.Get("Message"))
		require.Empty(t, r.Form.Get("TopicArn"))
		require.Equal(t, map[string]string{"AWS.SNS.SMS.SMSType": "String:Transactional"}, attributes(r.Form))
	})

	t.Run("SenderIDAndOriginationNumber", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.account.Config["sender_id"] = "Sonnensch1"
		b.account.Config["origination_number"] = "+4930901820"
		_, err := b.provider.Send(context.Background(), b.outbound())
		require.NoError(t, err)
		require.Equal(t, map[string]string{
			"AWS.SNS.SMS.SMSType":          "String:Transactional",
			"AWS.SNS.SMS.SenderID":         "String:Sonnensch1",
			"AWS.MM.SMS.OriginationNumber": "String:+4930901820",
		}, attributes(b.fake.Requests()[0].Form))
	})

	t.Run("Promotional", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.account.Config["sms_type"] = "Promotional"
		_, err := b.provider.Send(context.Background(), b.outbound())
		require.NoError(t, err)
		require.Equal(t, map[string]string{"AWS.SNS.SMS.SMSType": "String:Promotional"}, attributes(b.fake.Requests()[0].Form))
	})

	t.Run("MissingMessageID", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.fake.respond = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/xml")
			_, _ = io.WriteString(w, `<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult></PublishResult></PublishResponse>`)
		}
		_, err := b.provider.Send(context.Background(), b.outbound())
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
		// About the number: the same code as a number refused before sending.
		{"invalid_parameter", "invalid_recipient", provider.Permanent, false, 0},
		{"parameter_value_invalid", "ParameterValueInvalid", provider.Permanent, false, 0},
		{"validation", "ValidationException", provider.Permanent, false, 0},
		{"opted_out", "OptedOut", provider.Permanent, false, 0},
		{"endpoint_disabled", "EndpointDisabled", provider.Permanent, false, 0},
		{"authorization_error", "AuthorizationError", provider.Permanent, true, 0},
		{"invalid_client_token", "InvalidClientTokenId", provider.Permanent, true, 0},
		{"signature_mismatch", "SignatureDoesNotMatch", provider.Permanent, true, 0},
		{"throttling", "Throttling", provider.RateLimited, false, time.Second},
		{"throttled", "Throttled", provider.RateLimited, false, time.Second},
		{"kms_throttling", "KMSThrottling", provider.RateLimited, false, time.Second},
		{"kms_disabled", "KMSDisabled", provider.Transient, false, 0},
		{"kms_access_denied", "KMSAccessDenied", provider.Transient, false, 0},
		{"internal_error", "InternalError", provider.Transient, false, 0},
		{"user_error_spending_limit", "UserError", provider.Transient, false, 0},
		{"user_error_other", "UserError", provider.Permanent, false, 0},
		{"unknown_code", "ConcurrentAccess", provider.Transient, false, 0},
		{"bad_gateway_empty", "http_502", provider.Transient, false, 0},
		{"service_unavailable_html", "http_503", provider.Transient, false, 0},
		// Error documents the SDK's query parser reads no code from (it
		// reports UnknownError): the code is read from the body, or from
		// X-Amzn-ErrorType, which emulators send.
		{"moto_invalid_client_token", "InvalidClientTokenId", provider.Permanent, true, 0},
		{"bare_signature_mismatch", "SignatureDoesNotMatch", provider.Permanent, true, 0},
		{"ec2_style_invalid_client_token", "InvalidClientTokenId", provider.Permanent, true, 0},
		{"header_only_code", "InvalidParameter", provider.Permanent, false, 0},
		// No code anywhere: classified by status.
		{"plain_text_400", "http_400", provider.Permanent, false, 0},
		{"proxy_403_html", "http_403", provider.Permanent, false, 0},
		{"proxy_429_plain", "http_429", provider.RateLimited, false, time.Second},
		{"proxy_502_html", "http_502", provider.Transient, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.fake.respond = replay(t, "testdata/errors/"+tt.file+".http")

			_, err := b.provider.Send(context.Background(), b.outbound())
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

// TestProvider_SendUnreadableCredentialError pins down why the body is
// read: the SDK itself reports moto's 403 as UnknownError, which would be
// retried as http_403 forever.
func TestProvider_SendUnreadableCredentialError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.fake.respond = replay(t, "testdata/errors/moto_invalid_client_token.http")

	c, err := b.provider.ClientFor(context.Background(), b.account)
	require.NoError(t, err)
	_, err = c.Publish(context.Background(), &awssns.PublishInput{PhoneNumber: aws.String("+4915123456789"), Message: aws.String("Hallo")})
	var apiErr smithy.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, "UnknownError", apiErr.ErrorCode(), "the SDK cannot read this document")

	_, err = b.provider.Send(context.Background(), b.outbound())
	pe := requireProviderError(t, err)
	require.Equal(t, "InvalidClientTokenId", pe.Code)
	require.True(t, pe.Account, "the account's keys are refused: the tenant must fix them")
	require.Equal(t, provider.Permanent, pe.Class)
	require.Equal(t, "The security token included in the request is invalid.", pe.Reason)
}

func TestProvider_SendNoRetry(t *testing.T) {
	t.Parallel()

	t.Run("ServerError", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.fake.respond = replay(t, "testdata/errors/internal_error.http")
		_, err := b.provider.Send(context.Background(), b.outbound())
		require.Equal(t, provider.Transient, requireProviderError(t, err).Class)
		require.Len(t, b.fake.Requests(), 1, "a 500 must reach SNS exactly once")
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
		_, err := b.provider.Send(context.Background(), b.outbound())
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
		m := b.outbound()
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
		_, err := b.provider.Send(context.Background(), b.outbound())
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
	_, err := b.provider.Send(context.Background(), b.outbound())
	require.Equal(t, provider.Transient, requireProviderError(t, err).Class)
	require.Contains(t, logs.String(), "unclassified")
	require.Contains(t, logs.String(), "code=")

	logs.Reset()
	b.fake.respond = replay(t, "testdata/errors/internal_error.http")
	_, err = b.provider.Send(context.Background(), b.outbound())
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
		{"InvalidRegion", map[string]string{"region": "169.254.169.254"}, nil, "config_invalid_region"},
		{"SenderIDTooLong", map[string]string{"sender_id": "Sonnenschein"}, nil, "config_invalid_sender_id"},
		{"SenderIDDigitsOnly", map[string]string{"sender_id": "12345"}, nil, "config_invalid_sender_id"},
		{"SenderIDWithSpace", map[string]string{"sender_id": "Sonne Reise"}, nil, "config_invalid_sender_id"},
		{"InvalidOriginationNumber", map[string]string{"origination_number": "030 901820"}, nil, "config_invalid_origination_number"},
		{"OnlyAccessKey", nil, map[string]string{"secret_access_key": ""}, "config_incomplete_credentials"},
		{"SessionTokenWithoutKeys", nil, map[string]string{"access_key_id": "", "secret_access_key": "", "session_token": "FwoGZXIvYXdzEHERALD"}, "config_incomplete_credentials"},
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
			_, err := b.provider.Send(context.Background(), b.outbound())
			pe := requireProviderError(t, err)
			require.Equal(t, tt.code, pe.Code)
			require.Equal(t, provider.Permanent, pe.Class)
			require.True(t, pe.Account, "the tenant must fix the account")
			require.Empty(t, b.fake.Requests())
		})
	}
}

func TestProvider_SendInvalidMessage(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, to, body, code string
	}{
		{"NotE164", "015123456789", "Hallo", "invalid_recipient"},
		{"Spaces", "+49 151 23456789", "Hallo", "invalid_recipient"},
		{"Email", "ada@example.net", "Hallo", "invalid_recipient"},
		{"Empty", "+4915123456789", "  ", "empty_message"},
		{"TooLong", "+4915123456789", strings.Repeat("a", 1601), "message_too_long"},
		{"TooLongUmlauts", "+4915123456789", strings.Repeat("ä", 1601), "message_too_long"},
		// An emoji is two UTF-16 units, and takes two places in SNS's UCS-2 parts.
		{"TooLongEmoji", "+4915123456789", strings.Repeat("🚌", 801), "message_too_long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			m := b.outbound()
			m.To, m.Body = tt.to, tt.body
			_, err := b.provider.Send(context.Background(), m)
			pe := requireProviderError(t, err)
			require.Equal(t, tt.code, pe.Code)
			require.Equal(t, provider.Permanent, pe.Class)
			require.False(t, pe.Account, "one bad message must not flag the account")
			require.Empty(t, b.fake.Requests())
		})
	}

	// SNS's limit is 1,600 characters per publish, not bytes.
	sent := []struct {
		name, body string
	}{
		{"Longest", strings.Repeat("a", 1600)},
		{"LongestUmlauts", strings.Repeat("ä", 1600)}, // 3,200 bytes
		{"LongestEmoji", strings.Repeat("🚌", 800)},
		{"GermanText1028", germanText(t)},
	}
	for _, tt := range sent {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			m := b.outbound()
			m.Body = tt.body
			_, err := b.provider.Send(context.Background(), m)
			require.NoError(t, err)
			reqs := b.fake.Requests()
			require.Len(t, reqs, 1)
			require.Equal(t, tt.body, reqs[0].Form.Get("Message"), "the text reaches SNS whole")
		})
	}

	t.Run("TooLongReason", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		m := b.outbound()
		m.Body = strings.Repeat("ü", 1601)
		_, err := b.provider.Send(context.Background(), m)
		require.Equal(t, "The SMS text has 1601 characters; SNS takes at most 1600 in one message.", requireProviderError(t, err).Reason)
	})
}

// germanText is a booking confirmation of exactly 1,028 characters with
// umlauts, ß, dashes and guillemets: more bytes than characters.
func germanText(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("testdata/sms_1028_de.txt")
	require.NoError(t, err)
	s := string(raw)
	require.Equal(t, 1028, utf8.RuneCountInString(s))
	require.Greater(t, len(s), 1028)
	return s
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

	// Sender settings are read per send: changing them keeps the client.
	tuned := rotated
	tuned.Config = map[string]string{"region": "eu-central-1", "sender_id": "Reisen"}
	c4, err := b.provider.ClientFor(ctx, tuned)
	require.NoError(t, err)
	require.Same(t, c3, c4)

	other := b.account
	other.ID = uuid.New()
	_, err = b.provider.ClientFor(ctx, other)
	require.NoError(t, err)
	require.Equal(t, 2, b.provider.CachedClients())
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
	t.Setenv("AWS_ENDPOINT_URL_SNS", "")
	t.Setenv("AWS_MAX_ATTEMPTS", "5")

	b := setup(t)
	b.account.Secrets = nil
	_, err := b.provider.Send(context.Background(), b.outbound())
	require.NoError(t, err)
	reqs := b.fake.Requests()
	require.Len(t, reqs, 1)
	require.Contains(t, reqs[0].Header.Get("Authorization"), "Credential=AKIAHERALDENV0000001/")

	// Refused server credentials are the operator's problem: retried,
	// never flagged on the tenant's account. AWS_MAX_ATTEMPTS does not
	// bring SDK retries back.
	b.fake.respond = replay(t, "testdata/errors/authorization_error.http")
	_, err = b.provider.Send(context.Background(), b.outbound())
	pe := requireProviderError(t, err)
	require.Equal(t, "AuthorizationError", pe.Code)
	require.Equal(t, provider.Transient, pe.Class)
	require.False(t, pe.Account)
	require.True(t, pe.ServerCredentials, "the dispatcher tells the operator")

	b.fake.respond = replay(t, "testdata/errors/internal_error.http")
	_, err = b.provider.Send(context.Background(), b.outbound())
	require.Equal(t, provider.Transient, requireProviderError(t, err).Class)
	require.Len(t, b.fake.Requests(), 3)
}
