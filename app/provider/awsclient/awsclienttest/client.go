// Package awsclienttest gives the AWS adapters' tests HTTP clients that
// reach a fake wherever the SDK points them, so endpoint rules are tested
// with the real SDK and no network.
package awsclienttest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// DialTo returns an HTTP client that connects every request to the fake's
// TLS server, whatever host the URL names, and a func that returns the
// addresses asked for: a VPC endpoint's name resolves only inside its VPC.
func DialTo(t *testing.T, srv *httptest.Server) (*http.Client, func() []string) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	asked := &addresses{}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			asked.add(addr)
			return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
		},
		// httptest's certificate names example.com; the dial above is
		// what leads to the fake.
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "example.com"},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}, asked.list
}

// RefusingClient returns an HTTP client that records the address of every
// connection and makes none, so that a test can see where a request would
// have gone, and a func that returns those addresses.
func RefusingClient(t *testing.T) (*http.Client, func() []string) {
	t.Helper()
	asked := &addresses{}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		asked.add(addr)
		return nil, errors.New("no network in tests")
	}}
	return &http.Client{Transport: tr}, asked.list
}

// addresses are the addresses a client was asked to dial.
type addresses struct {
	mu    sync.Mutex
	asked []string
}

func (a *addresses) add(addr string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, addr)
}

func (a *addresses) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// SendPastDeadline runs send with a context whose deadline passes in 100
// ms, for an adapter whose own bound is far off, and returns its error.
// How soon the send ends is the machine's business: the test fails only
// when it outlives a hang guard of five minutes.
func SendPastDeadline(t *testing.T, send func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	sent := make(chan error, 1)
	go func() { sent <- send(ctx) }()
	select {
	case err := <-sent:
		return err
	case <-time.After(5 * time.Minute):
		t.Fatal("the send outlived the caller's deadline")
		return nil
	}
}
