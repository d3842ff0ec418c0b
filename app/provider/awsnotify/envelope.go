// Package awsnotify reads what Amazon sends Herald over HTTPS: SNS envelopes
// (with their signatures checked against Amazon's certificate), the SES
// events inside them, and SNS SMS delivery-status records. The AWS SDK has
// no verifier, so the signature check is written here, after the SNS docs.
package awsnotify

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha1" //nolint:gosec // SignatureVersion 1 is SHA1withRSA by definition.
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Envelope types, from the x-amz-sns-message-type header and the Type field.
const (
	TypeNotification             = "Notification"
	TypeSubscriptionConfirmation = "SubscriptionConfirmation"
	TypeUnsubscribeConfirmation  = "UnsubscribeConfirmation"
)

// Envelope is an SNS HTTPS message.
type Envelope struct {
	Type             string `json:"Type"`
	MessageID        string `json:"MessageId"`
	Token            string `json:"Token,omitempty"`
	TopicArn         string `json:"TopicArn"`
	Subject          string `json:"Subject,omitempty"`
	Message          string `json:"Message"`
	SubscribeURL     string `json:"SubscribeURL,omitempty"`
	Timestamp        string `json:"Timestamp"`
	SignatureVersion string `json:"SignatureVersion"`
	Signature        string `json:"Signature"`
	SigningCertURL   string `json:"SigningCertURL"`
	UnsubscribeURL   string `json:"UnsubscribeURL,omitempty"`
}

// ParseEnvelope decodes an SNS message body.
func ParseEnvelope(body []byte) (*Envelope, error) {
	var e Envelope
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, fmt.Errorf("not an SNS message: %w", err)
	}
	if e.Type == "" || e.MessageID == "" || e.TopicArn == "" {
		return nil, errors.New("not an SNS message: Type, MessageId and TopicArn are required")
	}
	return &e, nil
}

// StringToSign builds the canonical text SNS signs: key and value lines in
// the documented order, with Subject only when present.
func (e *Envelope) StringToSign() string {
	var b strings.Builder
	add := func(k, v string) { b.WriteString(k + "\n" + v + "\n") }
	add("Message", e.Message)
	add("MessageId", e.MessageID)
	if e.Type == TypeNotification {
		if e.Subject != "" {
			add("Subject", e.Subject)
		}
		add("Timestamp", e.Timestamp)
		add("TopicArn", e.TopicArn)
		add("Type", e.Type)
		return b.String()
	}
	add("SubscribeURL", e.SubscribeURL)
	add("Timestamp", e.Timestamp)
	add("Token", e.Token)
	add("TopicArn", e.TopicArn)
	add("Type", e.Type)
	return b.String()
}

// AmazonHost is the pattern SNS certificate and subscription URLs must match.
var AmazonHost = regexp.MustCompile(`^sns\.[a-zA-Z0-9-]{3,}\.amazonaws\.com(\.cn)?$`)

// Verifier checks SNS signatures.
type Verifier struct {
	// HostPattern overrides AmazonHost (tests point it at their own server).
	HostPattern *regexp.Regexp
	// Client fetches certificates; nil uses a client with a short timeout.
	Client *http.Client
	// Loopback also accepts certificate and subscription URLs on
	// 127.0.0.1, over http as well as https, so that a local stand-in for
	// SNS (the chaos suite's SES fake) can sign what it posts with a key
	// of its own. Development only: in production anyone could name a
	// certificate served by some other program on Herald's own host.
	Loopback bool

	mu    sync.Mutex
	certs map[string]*x509.Certificate
}

func (v *Verifier) hostOK(raw string, wantPath string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("bad URL %q", raw)
	}
	pattern := v.HostPattern
	if pattern == nil {
		pattern = AmazonHost
	}
	loopback := v.Loopback && u.Hostname() == "127.0.0.1" && (u.Scheme == "http" || u.Scheme == "https")
	switch {
	case loopback:
		// A development stand-in: no TLS to check on loopback.
	case u.Scheme != "https":
		return fmt.Errorf("URL %q is not https", raw)
	case !pattern.MatchString(u.Hostname()):
		return fmt.Errorf("host %q is not an SNS host", u.Hostname())
	}
	if wantPath != "" && !strings.HasSuffix(u.Path, wantPath) {
		return fmt.Errorf("URL %q does not end in %s", raw, wantPath)
	}
	return nil
}

func (v *Verifier) client() *http.Client {
	if v.Client != nil {
		return v.Client
	}
	return &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// certificate returns the certificate at url, fetched once and cached.
func (v *Verifier) certificate(ctx context.Context, certURL string) (*x509.Certificate, error) {
	v.mu.Lock()
	c, ok := v.certs[certURL]
	v.mu.Unlock()
	if ok {
		return c, nil
	}
	if err := v.hostOK(certURL, ".pem"); err != nil {
		return nil, fmt.Errorf("signing certificate: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, certURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := v.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch signing certificate: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch signing certificate: status %d", resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, errors.New("signing certificate is not PEM")
	}
	c, err = x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("signing certificate: %w", err)
	}
	v.mu.Lock()
	if v.certs == nil {
		v.certs = map[string]*x509.Certificate{}
	}
	v.certs[certURL] = c
	v.mu.Unlock()
	return c, nil
}

// Verify checks the envelope's signature with the certificate it names.
func (v *Verifier) Verify(ctx context.Context, e *Envelope) error {
	var hash crypto.Hash
	switch e.SignatureVersion {
	case "1":
		hash = crypto.SHA1
	case "2":
		hash = crypto.SHA256
	default:
		return fmt.Errorf("unsupported SignatureVersion %q", e.SignatureVersion)
	}
	sig, err := base64.StdEncoding.DecodeString(e.Signature)
	if err != nil || len(sig) == 0 {
		return errors.New("signature is not base64")
	}
	cert, err := v.certificate(ctx, e.SigningCertURL)
	if err != nil {
		return err
	}
	key, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return errors.New("signing certificate has no RSA key")
	}
	var digest []byte
	if hash == crypto.SHA1 {
		sum := sha1.Sum([]byte(e.StringToSign())) //nolint:gosec // required by SignatureVersion 1
		digest = sum[:]
	} else {
		sum := sha256.Sum256([]byte(e.StringToSign()))
		digest = sum[:]
	}
	if err := rsa.VerifyPKCS1v15(key, hash, digest, sig); err != nil {
		return errors.New("signature does not verify")
	}
	return nil
}

// Confirm confirms a subscription by fetching its SubscribeURL, after
// checking that the URL is Amazon's.
func (v *Verifier) Confirm(ctx context.Context, e *Envelope) error {
	if e.Type != TypeSubscriptionConfirmation {
		return fmt.Errorf("not a subscription confirmation")
	}
	if err := v.hostOK(e.SubscribeURL, ""); err != nil {
		return fmt.Errorf("SubscribeURL: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.SubscribeURL, nil)
	if err != nil {
		return err
	}
	resp, err := v.client().Do(req)
	if err != nil {
		return fmt.Errorf("confirm subscription: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("confirm subscription: status %d", resp.StatusCode)
	}
	return nil
}
