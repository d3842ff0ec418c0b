package main

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider/awsnotify"
)

// snsSigner signs SNS envelopes as Amazon does (SignatureVersion 2,
// SHA256withRSA over the canonical string), with a key of its own whose
// self-signed certificate the SES fake serves on loopback. A herald
// process in dev takes certificates served on 127.0.0.1
// (awsnotify.Verifier.Loopback); in prod it would refuse every post.
// awsnotifytest does the same for tests, but takes a testing.TB.
type snsSigner struct {
	key     *rsa.PrivateKey
	certPEM []byte
	certURL string // set once the fake's server listens
}

// snsCertPath is where the SES fake serves the certificate; Herald only
// fetches URLs ending in .pem.
const snsCertPath = "/SimpleNotificationService-chaos.pem"

func newSNSSigner() (*snsSigner, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sns.chaos.amazonaws.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &snsSigner{key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// serveCert answers the certificate fetch.
func (s *snsSigner) serveCert(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/x-x509-ca-cert")
	_, _ = w.Write(s.certPEM)
}

// notification is a signed SNS Notification carrying message, as SNS
// posts it to an HTTP subscription.
func (s *snsSigner) notification(topic, message string) ([]byte, error) {
	e := &awsnotify.Envelope{
		Type: awsnotify.TypeNotification, MessageID: uuid.NewString(), TopicArn: topic, Message: message,
		Timestamp:        time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		SignatureVersion: "2", SigningCertURL: s.certURL,
		UnsubscribeURL: s.certURL[:len(s.certURL)-len(snsCertPath)] + "/?Action=Unsubscribe&SubscriptionArn=" + topic + ":chaos",
	}
	sum := sha256.Sum256([]byte(e.StringToSign()))
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA256, sum[:])
	if err != nil {
		return nil, err
	}
	e.Signature = base64.StdEncoding.EncodeToString(sig)
	return json.Marshal(e)
}
