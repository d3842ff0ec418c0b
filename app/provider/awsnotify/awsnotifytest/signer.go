// Package awsnotifytest stands in for Amazon SNS in tests: it signs
// envelopes with its own key, serves the matching certificate over TLS, and
// records subscription confirmations, so the real verifier runs unchanged.
package awsnotifytest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1" //nolint:gosec // SignatureVersion 1 is SHA1withRSA.
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider/awsnotify"
)

// SNS is a fake SNS endpoint for one test.
type SNS struct {
	Server *httptest.Server
	// Verifier trusts this fake's host and certificate.
	Verifier *awsnotify.Verifier
	// Confirmations counts GETs of SubscribeURL.
	Confirmations atomic.Int64
	// CertFetches counts certificate downloads.
	CertFetches atomic.Int64
	key         *rsa.PrivateKey
}

// New starts the fake; it stops when t ends.
func New(t testing.TB) *SNS {
	t.Helper()
	s := start(t, httptest.NewTLSServer)
	s.Verifier = &awsnotify.Verifier{HostPattern: regexp.MustCompile(`^127\.0\.0\.1$`), Client: s.Server.Client()}
	return s
}

// NewLoopback starts the fake serving plain http on 127.0.0.1, as a
// development stand-in for SNS does (see Verifier.Loopback); its Verifier
// is the development one, which trusts Amazon's hosts and loopback.
func NewLoopback(t testing.TB) *SNS {
	t.Helper()
	s := start(t, httptest.NewServer)
	s.Verifier = &awsnotify.Verifier{Loopback: true}
	return s
}

func start(t testing.TB, serve func(http.Handler) *httptest.Server) *SNS {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sns.test.amazonaws.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	s := &SNS{key: key}
	s.Server = serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/SimpleNotificationService-test.pem":
			s.CertFetches.Add(1)
			_, _ = w.Write(certPEM)
		case "/confirm":
			s.Confirmations.Add(1)
			_, _ = w.Write([]byte("<ConfirmSubscriptionResponse/>"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Server.Close)
	return s
}

// CertURL is where the fake serves its certificate.
func (s *SNS) CertURL() string { return s.Server.URL + "/SimpleNotificationService-test.pem" }

// Sign fills the envelope's signature fields (version "1" or "2").
func (s *SNS) Sign(e *awsnotify.Envelope, version string) {
	e.SignatureVersion, e.SigningCertURL = version, s.CertURL()
	var sig []byte
	var err error
	if version == "1" {
		sum := sha1.Sum([]byte(e.StringToSign())) //nolint:gosec // SignatureVersion 1
		sig, err = rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA1, sum[:])
	} else {
		sum := sha256.Sum256([]byte(e.StringToSign()))
		sig, err = rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA256, sum[:])
	}
	if err != nil {
		panic(err)
	}
	e.Signature = base64.StdEncoding.EncodeToString(sig)
}

// Notification returns a signed notification carrying message.
func (s *SNS) Notification(topic, message string) *awsnotify.Envelope {
	e := &awsnotify.Envelope{
		Type: awsnotify.TypeNotification, MessageID: uuid.NewString(), TopicArn: topic, Message: message,
		Timestamp: time.Now().UTC().Format(time.RFC3339Nano), UnsubscribeURL: s.Server.URL + "/unsubscribe",
	}
	s.Sign(e, "2")
	return e
}

// Confirmation returns a signed subscription confirmation whose
// SubscribeURL points at the fake.
func (s *SNS) Confirmation(topic string) *awsnotify.Envelope {
	e := &awsnotify.Envelope{
		Type: awsnotify.TypeSubscriptionConfirmation, MessageID: uuid.NewString(), TopicArn: topic, Token: "tok-" + uuid.NewString(),
		Message: "You have chosen to subscribe to the topic " + topic, SubscribeURL: s.Server.URL + "/confirm",
		Timestamp: time.Now().UTC().Format(time.RFC3339Nano),
	}
	s.Sign(e, "1")
	return e
}
