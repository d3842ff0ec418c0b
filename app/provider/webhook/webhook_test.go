package webhook_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/webhook"
)

const testSecret = "whsec_test_secret"

var (
	testNow       = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	testMessageID = uuid.MustParse("0195f3a4-7b1c-7c3e-9a51-2f6d8e4b1c01")
	testTenantID  = uuid.MustParse("0195f3a4-7b1c-7c3e-9a51-2f6d8e4b1c02")
)

// received is one request as the receiver saw it.
type received struct {
	header http.Header
	body   []byte
}

type testBundle struct {
	srv      *httptest.Server
	provider *webhook.Provider
	received chan received
}

// setup starts a TLS receiver running h and a provider whose client trusts
// it; loopback is allowed, as only tests do.
func setup(t *testing.T, h http.HandlerFunc) *testBundle {
	t.Helper()
	return setupWith(t, webhook.Options{}, h)
}

func setupWith(t *testing.T, opts webhook.Options, h http.HandlerFunc) *testBundle {
	t.Helper()
	b := &testBundle{received: make(chan received, 10)}
	b.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.received <- received{header: r.Header.Clone(), body: body}
		h(w, r)
	}))
	t.Cleanup(b.srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(b.srv.Certificate())
	opts.AllowPrivate, opts.AnyPort, opts.RootCAs = true, true, pool
	b.provider = &webhook.Provider{Client: webhook.NewClient(opts), AllowPrivate: true, Now: func() time.Time { return testNow }}
	return b
}

// outbound is the message the tests send, to url.
func outbound(url string) provider.Outbound {
	return provider.Outbound{
		MessageID: testMessageID, TenantID: testTenantID, Channel: "WEBHOOK", To: "ops-team",
		Subject: "Booking confirmed", Body: "Ada <ada@example.com> booked car 7 & paid.\nSee you at 09:00.", Attempt: 1,
		Account: provider.Account{
			ID: uuid.New(), TenantID: testTenantID, Provider: webhook.Name,
			Config:  map[string]string{"url": url},
			Secrets: map[string]string{"signing_secret": testSecret},
		},
	}
}

// requireProviderError asserts err is a *provider.Error and returns it.
func requireProviderError(t *testing.T, err error) *provider.Error {
	t.Helper()
	require.Error(t, err)
	pe, ok := err.(*provider.Error)
	require.True(t, ok, "want *provider.Error, got %T: %v", err, err)
	return pe
}

func TestProvider_Send(t *testing.T) {
	t.Parallel()

	t.Run("Success", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })

		id, err := b.provider.Send(context.Background(), outbound(b.srv.URL+"/hooks/herald?team=ops"))
		require.NoError(t, err)
		require.Regexp(t, `^whk_[0-9a-f-]{36}$`, id)

		got := <-b.received
		require.Equal(t, "application/json", got.header.Get("Content-Type"))
		require.Equal(t, "Herald-Webhooks/1", got.header.Get("User-Agent"))
		require.Equal(t, testMessageID.String(), got.header.Get("Herald-Message-Id"))
		require.Equal(t, id, got.header.Get("Herald-Delivery-Id"))
		require.Equal(t, "1767225600", got.header.Get("Herald-Timestamp"))

		// The body is exactly the documented sample, and its signature is
		// the one computed independently with openssl (see sign_test.go).
		golden, err := os.ReadFile("testdata/payload.json")
		require.NoError(t, err)
		require.JSONEq(t, string(golden), string(got.body))
		require.Equal(t, string(golden), string(got.body))
		sig, err := os.ReadFile("testdata/signature.txt")
		require.NoError(t, err)
		require.Equal(t, strings.TrimSpace(string(sig)), got.header.Get("Herald-Signature"))
		// The Standard Webhooks headers beside Herald's own.
		require.Equal(t, "msg_"+testMessageID.String(), got.header.Get("webhook-id"))
		require.Equal(t, "1767225600", got.header.Get("webhook-timestamp"))
		std, err := os.ReadFile("testdata/standard_signature.txt")
		require.NoError(t, err)
		require.Equal(t, strings.TrimSpace(string(std)), got.header.Get("webhook-signature"))
		require.True(t, webhook.Verify(testSecret, got.header.Get("Herald-Signature"), got.header.Get("Herald-Timestamp"), got.body, testNow.Add(time.Minute), 0))

		var p webhook.Payload
		require.NoError(t, json.Unmarshal(got.body, &p))
		require.Equal(t, webhook.Payload{
			ID: testMessageID, TenantID: testTenantID, Channel: "WEBHOOK", To: "ops-team", Subject: "Booking confirmed",
			Body: "Ada <ada@example.com> booked car 7 & paid.\nSee you at 09:00.", Attempt: 1, SentAt: "2026-01-01T00:00:00Z",
		}, p)
	})

	t.Run("ASendAgainCarriesTheSameWebhookID", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
		// The second attempt, as after a first call whose answer Herald
		// never read: the receiver recognises it by either id.
		first, again := outbound(b.srv.URL), outbound(b.srv.URL)
		again.Attempt = 2
		_, err := b.provider.Send(context.Background(), first)
		require.NoError(t, err)
		_, err = b.provider.Send(context.Background(), again)
		require.NoError(t, err)
		one, two := <-b.received, <-b.received
		require.Equal(t, one.header.Get("webhook-id"), two.header.Get("webhook-id"))
		require.Equal(t, one.header.Get("Herald-Message-Id"), two.header.Get("Herald-Message-Id"))
		require.NotEqual(t, one.header.Get("Herald-Delivery-Id"), two.header.Get("Herald-Delivery-Id"), "each delivery has its own id")
		require.NotEqual(t, one.header.Get("webhook-signature"), two.header.Get("webhook-signature"), "the body says which attempt it is")
	})

	t.Run("ReceiverRequestID", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Request-Id", "req_8f2a")
			w.WriteHeader(http.StatusAccepted)
		})
		id, err := b.provider.Send(context.Background(), outbound(b.srv.URL))
		require.NoError(t, err)
		got := <-b.received
		require.Equal(t, got.header.Get("Herald-Delivery-Id")+":req_8f2a", id)
	})

	t.Run("EchoedDeliveryID", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Herald-Delivery-Id", r.Header.Get("Herald-Delivery-Id"))
		})
		id, err := b.provider.Send(context.Background(), outbound(b.srv.URL))
		require.NoError(t, err)
		require.Equal(t, (<-b.received).header.Get("Herald-Delivery-Id"), id)
	})

	t.Run("UnprintableReceiverIDIgnored", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Request-Id", strings.Repeat("x", 500))
		})
		id, err := b.provider.Send(context.Background(), outbound(b.srv.URL))
		require.NoError(t, err)
		require.Regexp(t, `^whk_[0-9a-f-]{36}$`, id)
	})

	t.Run("LargeResponseIgnored", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(strings.Repeat("a", 4<<20)))
		})
		_, err := b.provider.Send(context.Background(), outbound(b.srv.URL))
		require.NoError(t, err)
	})

	t.Run("PlainHTTPWithAllowHTTP", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		t.Cleanup(srv.Close)
		p := &webhook.Provider{AllowHTTP: true, AllowPrivate: true}
		_, err := p.Send(context.Background(), outbound(srv.URL))
		require.NoError(t, err)
	})

	t.Run("ResolverIsUsed", func(t *testing.T) {
		t.Parallel()
		// httptest's certificate is valid for example.com; the fake resolver
		// sends that name to the loopback receiver, which tests allow.
		resolver, queries := fakeDNS(t, netipLoopback)
		b := setupWith(t, webhook.Options{Resolver: resolver}, func(w http.ResponseWriter, r *http.Request) {})
		_, port, err := net.SplitHostPort(b.srv.Listener.Addr().String())
		require.NoError(t, err)
		_, err = b.provider.Send(context.Background(), outbound("https://example.com:"+port+"/"))
		require.NoError(t, err)
		require.Positive(t, queries.Load())
	})
}

func TestProvider_Send_Errors(t *testing.T) {
	t.Parallel()

	status := func(code int, header ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i+1 < len(header); i += 2 {
				w.Header().Set(header[i], header[i+1])
			}
			w.WriteHeader(code)
			_, _ = w.Write([]byte(`{"error":"receiver says no"}`))
		}
	}

	tests := []struct {
		name       string
		handler    http.HandlerFunc
		url        func(t *testing.T, b *testBundle) string // default: the receiver
		opts       webhook.Options
		class      provider.Class
		code       string
		retryAfter time.Duration
		reason     string
	}{
		{name: "500", handler: status(500), class: provider.Transient, code: "http_500", reason: "500 Internal Server Error. {\"error\":\"receiver says no\"}"},
		{name: "503", handler: status(503), class: provider.Transient, code: "http_503"},
		{name: "429RetryAfterSeconds", handler: status(429, "Retry-After", "7"), class: provider.RateLimited, code: "http_429", retryAfter: 7 * time.Second},
		{name: "429RetryAfterDate", handler: status(429, "Retry-After", "Thu, 01 Jan 2026 00:01:30 GMT"), class: provider.RateLimited, code: "http_429", retryAfter: 90 * time.Second},
		{name: "429RetryAfterHuge", handler: status(429, "Retry-After", "864000"), class: provider.RateLimited, code: "http_429", retryAfter: time.Hour},
		{name: "429NoRetryAfter", handler: status(429), class: provider.RateLimited, code: "http_429"},
		{name: "408", handler: status(408, "Retry-After", "3"), class: provider.RateLimited, code: "http_408", retryAfter: 3 * time.Second},
		{name: "425", handler: status(425), class: provider.RateLimited, code: "http_425"},
		{name: "400", handler: status(400), class: provider.Permanent, code: "http_400", reason: "400 Bad Request"},
		{name: "401", handler: status(401), class: provider.Permanent, code: "http_401"},
		{name: "404", handler: status(404), class: provider.Permanent, code: "http_404"},
		{name: "410", handler: status(410), class: provider.Permanent, code: "http_410"},
		{name: "500LargeBody", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			_, _ = w.Write([]byte(strings.Repeat("é", 1<<20)))
		}, class: provider.Transient, code: "http_500", reason: strings.Repeat("é", 200) + "…"},
		{
			name: "301NotFollowed",
			url: func(t *testing.T, b *testBundle) string {
				// The redirect points at a second receiver, which must see nothing.
				_, accepted := trap(t, "127.0.0.1:0")
				t.Cleanup(func() { accepted.requireNone(t) })
				return b.srv.URL
			},
			handler: status(301, "Location", "https://127.0.0.1:1/elsewhere"),
			class:   provider.Permanent, code: "http_301", reason: "redirects are not followed",
		},
		{name: "307NotFollowed", handler: status(307, "Location", "/elsewhere"), class: provider.Permanent, code: "http_307", reason: "redirects are not followed"},
		{
			name: "Timeout",
			handler: func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(time.Minute):
				}
			},
			opts:  webhook.Options{Timeout: 200 * time.Millisecond},
			class: provider.Transient, code: "timeout",
		},
		{
			name: "ConnectionRefused",
			url: func(t *testing.T, b *testBundle) string {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				addr := l.Addr().String()
				require.NoError(t, l.Close())
				return "https://" + addr + "/"
			},
			class: provider.Transient, code: "connection_refused",
		},
		{
			name: "ConnectionReset",
			url: func(t *testing.T, b *testBundle) string {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				t.Cleanup(func() { l.Close() })
				go func() {
					for {
						c, err := l.Accept()
						if err != nil {
							return
						}
						_ = c.(*net.TCPConn).SetLinger(0) // close with RST
						c.Close()
					}
				}()
				return "https://" + l.Addr().String() + "/"
			},
			class: provider.Transient, code: "connection_reset",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := tt.handler
			if h == nil {
				h = func(w http.ResponseWriter, r *http.Request) {}
			}
			b := setupWith(t, tt.opts, h)
			url := b.srv.URL
			if tt.url != nil {
				url = tt.url(t, b)
			}
			// The token stands for a secret some receivers keep in the URL.
			id, err := b.provider.Send(context.Background(), outbound(url+"?token=s3cr3t"))
			require.Empty(t, id)
			pe := requireProviderError(t, err)
			require.Equal(t, tt.class, pe.Class, pe.Reason)
			require.Equal(t, tt.code, pe.Code, pe.Reason)
			require.Equal(t, tt.retryAfter, pe.RetryAfter)
			require.False(t, pe.Account)
			require.Contains(t, pe.Reason, tt.reason)
			require.NotContains(t, pe.Reason, "s3cr3t")
		})
	}
}

func TestProvider_Send_Canceled(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.provider.Send(ctx, outbound(b.srv.URL))
	pe := requireProviderError(t, err)
	require.Equal(t, provider.Transient, pe.Class)
	require.Equal(t, "canceled", pe.Code)
}

func TestProvider_Send_AccountErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		edit   func(m *provider.Outbound, srvURL string)
		code   string
		reason string
	}{
		{name: "MissingURL", edit: func(m *provider.Outbound, _ string) { delete(m.Account.Config, "url") }, code: "missing_url", reason: "no URL"},
		{name: "NilConfig", edit: func(m *provider.Outbound, _ string) { m.Account.Config = nil }, code: "missing_url"},
		{name: "BlankURL", edit: func(m *provider.Outbound, _ string) { m.Account.Config["url"] = "  " }, code: "missing_url"},
		{name: "MissingSecret", edit: func(m *provider.Outbound, _ string) { delete(m.Account.Secrets, "signing_secret") }, code: "missing_signing_secret", reason: "signing secret"},
		{name: "NilSecrets", edit: func(m *provider.Outbound, _ string) { m.Account.Secrets = nil }, code: "missing_signing_secret"},
		{name: "Unparseable", edit: func(m *provider.Outbound, _ string) { m.Account.Config["url"] = "https://exa mple.com/" }, code: "invalid_url", reason: "not valid"},
		{name: "ControlCharacter", edit: func(m *provider.Outbound, _ string) { m.Account.Config["url"] = "https://example.com/\x7f" }, code: "invalid_url"},
		{name: "NoHost", edit: func(m *provider.Outbound, _ string) { m.Account.Config["url"] = "https:///hooks" }, code: "invalid_url", reason: "no host"},
		{name: "Relative", edit: func(m *provider.Outbound, _ string) { m.Account.Config["url"] = "/hooks" }, code: "insecure_url"},
		{name: "FTP", edit: func(m *provider.Outbound, _ string) { m.Account.Config["url"] = "ftp://example.com/" }, code: "insecure_url"},
		{name: "HTTPWithoutAllowHTTP", edit: func(m *provider.Outbound, srvURL string) {
			m.Account.Config["url"] = strings.Replace(srvURL, "https://", "http://", 1)
		}, code: "insecure_url", reason: "https://"},
		{name: "UserInfo", edit: func(m *provider.Outbound, srvURL string) {
			m.Account.Config["url"] = strings.Replace(srvURL, "https://", "https://herald:hunter2@", 1)
		}, code: "invalid_url", reason: "user name or password"},
		{name: "TooLong", edit: func(m *provider.Outbound, _ string) {
			m.Account.Config["url"] = "https://example.com/" + strings.Repeat("a", 2100)
		}, code: "invalid_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(w http.ResponseWriter, r *http.Request) {})
			m := outbound(b.srv.URL)
			tt.edit(&m, b.srv.URL)
			_, err := b.provider.Send(context.Background(), m)
			pe := requireProviderError(t, err)
			require.Equal(t, provider.Permanent, pe.Class)
			require.True(t, pe.Account)
			require.Equal(t, tt.code, pe.Code, pe.Reason)
			require.Contains(t, pe.Reason, tt.reason)
			require.Empty(t, b.received, "nothing may be sent for a broken account")
		})
	}
}

func TestProvider_Send_UntrustedCertificate(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {})
	// A client with the system roots only does not trust httptest's CA. The
	// generous timeout keeps a busy machine (the whole suite runs beside
	// Chromium and Postgres) from turning the refused certificate into a
	// handshake timeout.
	client := webhook.NewClient(webhook.Options{AllowPrivate: true, AnyPort: true, Timeout: time.Minute})
	client.Transport.(*http.Transport).TLSHandshakeTimeout = time.Minute
	p := &webhook.Provider{Client: client, AllowPrivate: true}
	_, err := p.Send(context.Background(), outbound(b.srv.URL))
	pe := requireProviderError(t, err)
	require.Equal(t, provider.Transient, pe.Class)
	require.Equal(t, "tls_certificate", pe.Code)
	require.False(t, pe.Account)
	require.Empty(t, b.received)
}

func TestProvider_Send_DNSFailure(t *testing.T) {
	t.Parallel()
	resolver, queries := fakeDNS(t, netip.Addr{})
	p := &webhook.Provider{Client: webhook.NewClient(webhook.Options{Resolver: resolver})}
	_, err := p.Send(context.Background(), outbound("https://hooks.tenant.example/herald"))
	pe := requireProviderError(t, err)
	require.Equal(t, provider.Transient, pe.Class)
	require.Equal(t, "dns_error", pe.Code)
	require.Contains(t, pe.Reason, "hooks.tenant.example")
	require.NotContains(t, pe.Reason, "127.0.0.1", "the resolver's address is internal")
	require.Positive(t, queries.Load())
}
