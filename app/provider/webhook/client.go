package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// The SSRF guard is code.dny.dev/ssrf: its deny lists are generated from
// the IANA special-purpose registries (loopback, RFC 1918, link-local with
// the metadata address, CGNAT, multicast, reserved, documentation, 6to4 and
// every IPv6 range outside global unicast, which covers ::1, fc00::/7,
// fe80::/10 and IPv4-mapped forms), so new special ranges arrive with a
// version bump instead of a hand-kept list. It plugs into net.Dialer.Control,
// which runs after DNS resolution and before connect(2): a name that
// resolves (or rebinds) to a forbidden address is refused before any packet
// is sent to it.

// DefaultTimeout bounds a whole delivery: dial, TLS, request and the capped
// read of the answer. A slow receiver must not hold a dispatch worker.
const DefaultTimeout = 10 * time.Second

// ErrBlocked is wrapped by every error of a delivery that the SSRF guard
// refused: the URL names, or resolves to, a destination Herald must not
// reach (a non-public address, a forbidden port or an internal host name).
var ErrBlocked = errors.New("webhook destination not permitted")

// Options configure NewClient. The zero value is the production setting.
type Options struct {
	// AllowPrivate permits loopback destinations (127.0.0.0/8, ::1) and
	// internal host names, for tests and local development. Production
	// never sets it: every other non-public range stays refused.
	AllowPrivate bool
	// Ports are the permitted destination ports; empty means 443 and 80,
	// so that a tenant cannot aim Herald at arbitrary services (SMTP, SSH,
	// databases) on public hosts.
	Ports []uint16
	// AnyPort permits every destination port, for tests whose servers
	// listen on ephemeral ports.
	AnyPort bool
	// Timeout overrides DefaultTimeout.
	Timeout time.Duration
	// RootCAs, when set, replaces the system roots, for tests against
	// httptest TLS servers and deployments behind a private CA.
	RootCAs *x509.CertPool
	// Resolver, when set, resolves host names instead of the default
	// resolver; the guard checks whatever it answers.
	Resolver *net.Resolver

	// connectHook runs after the guard passed, immediately before
	// connect(2); tests use it to prove which dials got that far.
	connectHook func(network, address string) error
}

// NewClient returns the HTTP client for tenant webhooks: every dial is
// checked by the SSRF guard on the resolved address, redirects are not
// followed (a redirect could point anywhere, and the receiver should be
// configured with its final URL), proxies from the environment are ignored
// (a proxy would dial on our behalf and bypass the guard), and dial, TLS,
// response header and overall time are bounded.
func NewClient(opts Options) *http.Client {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	g := newGuard(opts)
	dialer := &net.Dialer{
		Timeout:   min(5*time.Second, timeout),
		KeepAlive: 30 * time.Second,
		Resolver:  opts.Resolver,
		Control:   g.control,
	}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            g.dialContext(dialer),
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    min(5*time.Second, timeout),
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// guard decides which destinations a webhook client may reach.
type guard struct {
	allowPrivate bool
	ssrf         *ssrf.Guardian
	connectHook  func(network, address string) error
}

func newGuard(opts Options) *guard {
	var so []ssrf.Option
	switch {
	case opts.AnyPort:
		so = append(so, ssrf.WithAnyPort())
	case len(opts.Ports) > 0:
		so = append(so, ssrf.WithPorts(opts.Ports...))
	default:
		so = append(so, ssrf.WithPorts(443, 80))
	}
	if opts.AllowPrivate {
		so = append(so,
			ssrf.WithAllowedV4Prefixes(netip.MustParsePrefix("127.0.0.0/8")),
			ssrf.WithAllowedV6Prefixes(netip.MustParsePrefix("::1/128")))
	}
	return &guard{allowPrivate: opts.AllowPrivate, ssrf: ssrf.New(so...), connectHook: opts.connectHook}
}

// control is the net.Dialer's Control: it sees the resolved address of
// every connection attempt, including each address of a multi-address name.
func (g *guard) control(network, address string, c syscall.RawConn) error {
	if err := g.ssrf.Safe(network, address, c); err != nil {
		b := &blockedError{target: address, err: err}
		if ap, perr := netip.ParseAddrPort(address); perr == nil {
			b.addr = ap.Addr().Unmap()
			b.port = ap.Port()
		}
		return b
	}
	if g.connectHook != nil {
		return g.connectHook(network, address)
	}
	return nil
}

// dialContext refuses internal host names before they are resolved: a
// split-horizon resolver may answer them with addresses that look public.
func (g *guard) dialContext(d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		if err := g.checkName(host); err != nil {
			return nil, err
		}
		return d.DialContext(ctx, network, address)
	}
}

// checkHost checks a URL's host without resolving it: IP literals against
// the address deny list, names against the internal-name list. It lets Send
// refuse obvious targets before any network activity, even with a Client
// that was not built by NewClient.
func (g *guard) checkHost(host string) error {
	if addr, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if err := g.ssrf.SafeAddr(addr); err != nil {
			return &blockedError{target: host, addr: addr.Unmap(), err: err}
		}
		return nil
	}
	return g.checkName(host)
}

// internalSuffixes are DNS names that only mean something inside a network:
// RFC 6761 localhost, mDNS .local, ICANN's private .internal (cloud
// metadata lives at metadata.google.internal), RFC 8375 home.arpa, and the
// common .localdomain.
var internalSuffixes = []string{".localhost", ".local", ".internal", ".home.arpa", ".localdomain"}

// checkName refuses internal and single-label host names; single labels
// only resolve through the server's search domains, i.e. inside our network.
func (g *guard) checkName(host string) error {
	if g.allowPrivate {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil // IP literals are checked at dial time
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	refuse := name == "" || name == "localhost" || !strings.Contains(name, ".")
	for _, s := range internalSuffixes {
		refuse = refuse || strings.HasSuffix(name, s)
	}
	if refuse {
		return &blockedError{target: host, name: true, err: fmt.Errorf("%q is an internal host name", host)}
	}
	return nil
}

// blockedError is a destination refused by the guard.
type blockedError struct {
	target string     // what was refused, as given
	addr   netip.Addr // the refused address, when an address was refused
	port   uint16
	name   bool // the host name itself was refused
	err    error
}

func (e *blockedError) Error() string {
	return "webhook destination " + e.target + " refused: " + e.err.Error()
}

// Unwrap exposes ErrBlocked and the guard's own error (ssrf.ErrProhibitedIP, ...).
func (e *blockedError) Unwrap() []error { return []error{ErrBlocked, e.err} }

// reason explains the refusal to the tenant, who has to change the URL.
func (e *blockedError) reason() string {
	switch {
	case e.name:
		return fmt.Sprintf("The webhook host %s is an internal name; Herald only delivers to public internet hosts.", e.target)
	case errors.Is(e.err, ssrf.ErrProhibitedPort):
		return fmt.Sprintf("The webhook port %d is not permitted; use port 443.", e.port)
	case e.addr.IsValid():
		return fmt.Sprintf("The webhook URL resolves to %s, %s; Herald only delivers to public internet addresses.", e.addr, describe(e.addr))
	}
	return "The webhook destination " + e.target + " is not permitted."
}

var (
	metadataAddr = netip.MustParseAddr("169.254.169.254")
	broadcast    = netip.MustParseAddr("255.255.255.255")
	sharedSpace  = netip.MustParsePrefix("100.64.0.0/10")
)

// describe names the kind of a refused address so the tenant sees why.
func describe(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified():
		return "the unspecified address"
	case a == metadataAddr:
		return "the cloud metadata address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsPrivate():
		return "a private network address"
	case sharedSpace.Contains(a):
		return "a carrier-grade NAT address"
	case a.IsMulticast():
		return "a multicast address"
	case a == broadcast:
		return "the broadcast address"
	}
	return "a reserved, non-public address"
}
