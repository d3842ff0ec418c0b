// Package webhook is the WEBHOOK channel: it posts each message as a signed
// JSON document to a URL the tenant configured. Because the URL comes from
// a tenant, every connection goes through an SSRF guard (see NewClient),
// and because the receiver is not ours, every answer is classified from its
// status code alone.
package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// Name is the provider name of tenant webhooks.
const Name = "webhook"

// Channel is the channel name put in every payload.
const Channel = "WEBHOOK"

// Request headers. Receivers verify HeaderSignature with Verify and should
// deduplicate on HeaderMessageID: a retry carries the same message id.
// Every request also carries the Standard Webhooks headers
// (HeaderWebhookID, the same for every send of a message, and its
// timestamp and signature, SignStandard), so that receivers built on a
// Standard Webhooks library verify and deduplicate with it.
const (
	HeaderMessageID  = "Herald-Message-Id"
	HeaderDeliveryID = "Herald-Delivery-Id"
	HeaderTimestamp  = "Herald-Timestamp"
	HeaderSignature  = "Herald-Signature"
	UserAgent        = "Herald-Webhooks/1"

	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// WebhookID is the Standard Webhooks id of a message's sends: the same for
// every attempt, so that a receiver recognises a send again (after a call
// whose answer Herald never read) as the one it has.
func WebhookID(messageID uuid.UUID) string { return "msg_" + messageID.String() }

// Account settings read from provider.Account.
const (
	// ConfigURL is the Config key of the receiver's URL.
	ConfigURL = "url"
	// SecretSigningSecret is the Secrets key of the HMAC signing secret.
	SecretSigningSecret = "signing_secret"
)

// maxResponseRead caps how much of an answer is read: receivers only have to
// return a status, and a huge body must not hold memory or a worker.
const maxResponseRead = 64 << 10

// maxRetryAfter caps a receiver's Retry-After hint, so that a receiver cannot
// park messages for days; the dispatcher asks again after at most this.
const maxRetryAfter = time.Hour

// Payload is the JSON document posted to the receiver. Its fields are the
// public contract of the WEBHOOK channel; add, never rename.
type Payload struct {
	ID       uuid.UUID `json:"id"`
	TenantID uuid.UUID `json:"tenant_id"`
	Channel  string    `json:"channel"`
	To       string    `json:"to"`
	Subject  string    `json:"subject"`
	Body     string    `json:"body"`
	// Attempt counts deliveries of this message from 1, so a receiver can
	// tell a retry from a first delivery without keeping state.
	Attempt int    `json:"attempt"`
	SentAt  string `json:"sent_at"`
}

// Provider delivers messages to tenant webhooks. Its zero value is ready to
// use in production; it must not be copied after first use.
type Provider struct {
	// Client makes the requests. Leave it nil to get NewClient's guarded
	// client; a client set here must come from NewClient too, or
	// destinations are only checked on the URL, not on the resolved address.
	Client *http.Client
	// AllowHTTP accepts plain http URLs, for development only: the payload
	// and its signature would otherwise cross the internet unencrypted.
	AllowHTTP bool
	// AllowPrivate lets the default client reach loopback receivers on any
	// port, for tests and local development. Production never sets it.
	AllowPrivate bool
	// Now is the clock for timestamps and HTTP-date Retry-After hints.
	Now func() time.Time

	once   sync.Once
	client *http.Client
	guard  *guard
}

// ready builds the client and the URL guard once, on first use, so the zero
// value works and concurrent sends share one connection pool.
func (p *Provider) ready() {
	p.once.Do(func() {
		opts := Options{AllowPrivate: p.AllowPrivate, AnyPort: p.AllowPrivate}
		p.guard = newGuard(opts)
		p.client = p.Client
		if p.client == nil {
			p.client = NewClient(opts)
		}
	})
}

func (p *Provider) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Send implements provider.Provider: it posts the message to the account's
// URL and returns an external id of the form whk_<uuid>, extended with the
// receiver's own request id when it returns one.
func (p *Provider) Send(ctx context.Context, m provider.Outbound) (string, error) {
	p.ready()
	target, perr := p.target(m.Account)
	if perr != nil {
		return "", perr
	}
	secret := m.Account.Secrets[SecretSigningSecret]
	if secret == "" {
		return "", accountError("missing_signing_secret", "The webhook account has no signing secret.")
	}

	now := p.now()
	body, err := encode(Payload{
		ID: m.MessageID, TenantID: m.TenantID, Channel: Channel, To: m.To,
		Subject: m.Subject, Body: m.Body, Attempt: m.Attempt,
		SentAt: now.UTC().Format(time.RFC3339),
	})
	if err != nil {
		return "", fmt.Errorf("encode webhook payload %s: %w", m.MessageID, err)
	}
	deliveryID := "whk_" + uuid.NewString()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(body))
	if err != nil {
		return "", accountError("invalid_url", "The webhook URL is not valid: "+causeOf(err).Error())
	}
	ts := now.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(HeaderMessageID, m.MessageID.String())
	req.Header.Set(HeaderDeliveryID, deliveryID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(secret, ts, body))
	webhookID := WebhookID(m.MessageID)
	req.Header.Set(HeaderWebhookID, webhookID)
	req.Header.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderWebhookSignature, SignStandard(secret, webhookID, ts, body))

	resp, err := p.client.Do(req)
	if err != nil {
		return "", classifyTransport(ctx, err)
	}
	// Read a bounded prefix, for the error reason and so the connection can
	// be reused; whatever lies beyond the cap is dropped with the connection.
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseRead))
	resp.Body.Close()

	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return externalID(deliveryID, resp.Header), nil
	}
	return "", p.classifyStatus(resp, excerpt)
}

// target validates the account's URL. Every problem is the tenant's to fix,
// so each is a permanent account error.
func (p *Provider) target(acct provider.Account) (*url.URL, error) {
	raw := strings.TrimSpace(acct.Config[ConfigURL])
	if raw == "" {
		return nil, accountError("missing_url", "The webhook account has no URL.")
	}
	if len(raw) > 2048 {
		return nil, accountError("invalid_url", "The webhook URL is longer than 2048 characters.")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, accountError("invalid_url", "The webhook URL is not valid: "+causeOf(err).Error())
	}
	switch {
	case u.Scheme == "http" && !p.AllowHTTP, u.Scheme != "https" && u.Scheme != "http":
		return nil, accountError("insecure_url", "The webhook URL must start with https://.")
	case u.Host == "" || u.Hostname() == "":
		return nil, accountError("invalid_url", "The webhook URL has no host.")
	case u.User != nil:
		// Credentials in the URL would be logged and shown wherever the URL
		// is; receivers authenticate Herald by the signature instead.
		return nil, accountError("invalid_url", "The webhook URL must not contain a user name or password.")
	}
	if err := p.guard.checkHost(u.Hostname()); err != nil {
		var b *blockedError
		errors.As(err, &b)
		return nil, accountError("destination_blocked", b.reason())
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// encode marshals the payload without HTML escaping, so that the signed
// bytes read the same as the message text.
func encode(v Payload) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// externalID is the delivery id, plus the receiver's own id if it returned
// one. The delivery id stays in front because external ids are unique per
// provider across all tenants: a receiver's id alone could repeat, or be
// chosen to collide with another tenant's message.
func externalID(deliveryID string, h http.Header) string {
	for _, k := range []string{HeaderDeliveryID, "X-Request-Id"} {
		v := strings.TrimSpace(h.Get(k))
		if v == "" || v == deliveryID || !printable(v, 128) {
			continue
		}
		return deliveryID + ":" + v
	}
	return deliveryID
}

// printable reports whether s is short visible ASCII, i.e. safe to store
// and show as an id.
func printable(s string, max int) bool {
	if len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// classifyStatus turns a non-2xx answer into a provider error.
func (p *Provider) classifyStatus(resp *http.Response, excerpt []byte) *provider.Error {
	code := resp.StatusCode
	e := &provider.Error{Code: "http_" + strconv.Itoa(code), Reason: statusReason(code, excerpt)}
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests:
		e.Class = provider.RateLimited
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), p.now())
	case code >= 300 && code < 400:
		e.Class = provider.Permanent
		e.Reason = fmt.Sprintf("The webhook answered %d %s; redirects are not followed, configure the final URL.", code, http.StatusText(code))
	case code >= 400 && code < 500:
		e.Class = provider.Permanent
	default:
		// 5xx, and anything outside the HTTP classes, may well pass later.
		e.Class = provider.Transient
	}
	return e
}

// statusReason describes an answer with a short, printable excerpt of its
// body, which is usually the receiver's own explanation.
func statusReason(code int, body []byte) string {
	r := fmt.Sprintf("The webhook answered %d %s.", code, http.StatusText(code))
	if s := excerptOf(body, 200); s != "" {
		r += " " + s
	}
	return r
}

// excerptOf returns the first max runes of body as one line of printable
// text, or "" for binary content.
func excerptOf(body []byte, max int) string {
	// The read cap may have cut the last rune; anything else invalid is
	// binary content, which says nothing to a person.
	body = trimPartialRune(body)
	if !utf8.Valid(body) {
		return ""
	}
	var b strings.Builder
	n := 0
	space := false
	for _, r := range string(body) {
		if n >= max {
			b.WriteString("…")
			break
		}
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}

// retryAfter parses a Retry-After value, delay-seconds or an HTTP date,
// relative to now. Missing, malformed or past values give 0, which leaves
// the wait to the dispatcher's default.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0
		}
		if secs > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		d = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = at.Sub(now)
	}
	return max(0, min(d, maxRetryAfter))
}

// classifyTransport classifies a failure to get an answer at all.
func classifyTransport(ctx context.Context, err error) *provider.Error {
	cause := causeOf(err)
	var (
		blocked *blockedError
		dnsErr  *net.DNSError
		uaErr   x509.UnknownAuthorityError
		hostErr x509.HostnameError
		certErr x509.CertificateInvalidError
		tlsErr  *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &blocked):
		return accountError("destination_blocked", blocked.reason())
	case ctx.Err() != nil:
		// Our caller gave up (shutdown, job timeout): not the receiver's fault.
		return &provider.Error{Code: "canceled", Class: provider.Transient, Reason: "The delivery was interrupted: " + ctx.Err().Error()}
	case errors.As(err, &uaErr), errors.As(err, &hostErr), errors.As(err, &certErr), errors.As(err, &tlsErr):
		// Retried, not permanent: certificates lapse and get renewed, and
		// the tenant sees this reason on every attempt until they fix it.
		return &provider.Error{Code: "tls_certificate", Class: provider.Transient,
			Reason: "The webhook's TLS certificate is not valid: " + cause.Error()}
	case errors.As(err, &dnsErr):
		// Even "no such host" is retried: the tenant may just have created
		// the record, and resolvers fail in ways that look final.
		// The reason leaves out dnsErr.Server: our resolver's address is
		// none of the tenant's business.
		return &provider.Error{Code: "dns_error", Class: provider.Transient,
			Reason: fmt.Sprintf("The webhook host %s could not be resolved: %s.", dnsErr.Name, dnsErr.Err)}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &provider.Error{Code: "connection_refused", Class: provider.Transient, Reason: "The webhook refused the connection."}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &provider.Error{Code: "connection_reset", Class: provider.Transient, Reason: "The webhook closed the connection without answering."}
	case isTimeout(err):
		return &provider.Error{Code: "timeout", Class: provider.Transient, Reason: "The webhook did not answer in time."}
	}
	return &provider.Error{Code: "network_error", Class: provider.Transient, Reason: "The webhook could not be reached: " + cause.Error()}
}

// causeOf strips a *url.Error from err, so that reasons, which tenants see
// and logs keep, do not repeat the URL: its path or query may hold a token.
// A *net.OpError goes too: it names our own, internal, local address.
func causeOf(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	return err
}

// isTimeout reports whether err is a timeout of any layer.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// accountError is a permanent problem of the account's configuration,
// which the tenant must fix before anything can be delivered.
func accountError(code, reason string) *provider.Error {
	return &provider.Error{Code: code, Class: provider.Permanent, Reason: reason, Account: true}
}
