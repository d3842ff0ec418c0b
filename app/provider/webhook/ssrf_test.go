package webhook_test

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"code.dny.dev/ssrf"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/webhook"
)

var netipLoopback = netip.MustParseAddr("127.0.0.1")

// ssrfTarget is a destination the guard must refuse. Loopback targets get a
// real listener (trap) so the test can show it accepted nothing; the others
// are never dialled, which the connect hook proves.
type ssrfTarget struct {
	name   string
	listen string // address to trap, for loopback targets
	host   string // URL host; "PORT" is replaced by the trap's port
	reason string
}

var ssrfTargets = []ssrfTarget{
	{name: "Loopback4", listen: "127.0.0.1:0", host: "127.0.0.1:PORT", reason: "127.0.0.1, a loopback address"},
	{name: "Loopback4Other", listen: "127.0.0.2:0", host: "127.0.0.2:PORT", reason: "127.0.0.2, a loopback address"},
	{name: "Loopback6", listen: "[::1]:0", host: "[::1]:PORT", reason: "::1, a loopback address"},
	{name: "Loopback4MappedIn6", listen: "127.0.0.1:0", host: "[::ffff:127.0.0.1]:PORT", reason: "127.0.0.1, a loopback address"},
	{name: "Localhost", listen: "127.0.0.1:0", host: "localhost:PORT", reason: "internal name"},
	{name: "Private10", host: "10.0.0.1", reason: "10.0.0.1, a private network address"},
	{name: "Private172", host: "172.16.0.1", reason: "172.16.0.1, a private network address"},
	{name: "Private172Top", host: "172.31.255.254", reason: "a private network address"},
	{name: "Private192", host: "192.168.0.1", reason: "192.168.0.1, a private network address"},
	{name: "Metadata", host: "169.254.169.254", reason: "169.254.169.254, the cloud metadata address"},
	{name: "MetadataMappedIn6", host: "[::ffff:169.254.169.254]", reason: "the cloud metadata address"},
	{name: "LinkLocal", host: "169.254.1.1", reason: "a link-local address"},
	{name: "CGNAT", host: "100.64.0.1", reason: "100.64.0.1, a carrier-grade NAT address"},
	{name: "Unspecified4", host: "0.0.0.0", reason: "0.0.0.0, the unspecified address"},
	{name: "Unspecified6", host: "[::]", reason: "the unspecified address"},
	{name: "Broadcast", host: "255.255.255.255", reason: "the broadcast address"},
	{name: "Multicast", host: "224.0.0.1", reason: "a multicast address"},
	{name: "ULA", host: "[fc00::1]", reason: "a private network address"},
	{name: "LinkLocal6", host: "[fe80::1]", reason: "a link-local address"},
	{name: "Documentation", host: "192.0.2.10", reason: "a reserved, non-public address"},
	{name: "NAT64Loopback", host: "[64:ff9b::7f00:1]", reason: "a reserved, non-public address"},
	{name: "MetadataName", host: "metadata.google.internal", reason: "internal name"},
	{name: "MDNSName", host: "printer.local", reason: "internal name"},
	{name: "SingleLabel", host: "metadata", reason: "internal name"},
}

// arm starts the trap for a loopback target and returns the URL to use
// and the trap's counter (nil for targets that need no listener).
func (tt ssrfTarget) arm(t *testing.T) (string, *trapped) {
	t.Helper()
	host := tt.host
	var accepted *trapped
	if tt.listen != "" {
		var l net.Listener
		l, accepted = trap(t, tt.listen)
		_, port, err := net.SplitHostPort(l.Addr().String())
		require.NoError(t, err)
		host = strings.Replace(host, "PORT", port, 1)
	}
	return "https://" + host + "/hooks", accepted
}

// requireUntouched asserts that nothing reached the network: no connect(2)
// got past the guard, and the trap (if any) accepted nothing.
func requireUntouched(t *testing.T, rec *connectRecorder, accepted *trapped) {
	t.Helper()
	require.Empty(t, rec.seen(), "the guard let a dial through")
	if accepted != nil {
		accepted.requireNone(t)
	}
}

// TestProvider_Send_SSRF sends through a production Provider (loopback not
// allowed): every target is a permanent account error, and nothing is sent.
func TestProvider_Send_SSRF(t *testing.T) {
	t.Parallel()
	for _, tt := range ssrfTargets {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &connectRecorder{}
			p := &webhook.Provider{Client: webhook.NewClient(webhook.WithConnectHook(webhook.Options{AnyPort: true}, rec.hook))}
			url, accepted := tt.arm(t)

			_, err := p.Send(context.Background(), outbound(url))
			pe := requireProviderError(t, err)
			require.Equal(t, provider.Permanent, pe.Class)
			require.True(t, pe.Account)
			require.Equal(t, "destination_blocked", pe.Code)
			require.Contains(t, pe.Reason, tt.reason)
			requireUntouched(t, rec, accepted)
		})
	}
}

// TestProvider_Send_SSRFDefault shows the guard is on in the zero Provider.
func TestProvider_Send_SSRFDefault(t *testing.T) {
	t.Parallel()
	l, accepted := trap(t, "127.0.0.1:0")
	var p webhook.Provider
	_, err := p.Send(context.Background(), outbound("https://"+l.Addr().String()+"/"))
	pe := requireProviderError(t, err)
	require.Equal(t, "destination_blocked", pe.Code)
	require.True(t, pe.Account)
	accepted.requireNone(t)
}

// TestNewClient_Guard checks the dial-time guard on its own, without the
// URL check Send does first: refusals must come from the resolved address.
func TestNewClient_Guard(t *testing.T) {
	t.Parallel()
	for _, tt := range ssrfTargets {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &connectRecorder{}
			client := webhook.NewClient(webhook.WithConnectHook(webhook.Options{AnyPort: true}, rec.hook))
			url, accepted := tt.arm(t)

			resp, err := client.Post(url, "application/json", strings.NewReader("{}"))
			if resp != nil {
				resp.Body.Close()
			}
			require.ErrorIs(t, err, webhook.ErrBlocked)
			require.NotErrorIs(t, err, errConnectSuppressed)
			if !strings.Contains(tt.reason, "internal name") {
				require.ErrorIs(t, err, ssrf.ErrProhibitedIP)
			}
			requireUntouched(t, rec, accepted)
		})
	}

	t.Run("DefaultPortsOnly", func(t *testing.T) {
		t.Parallel()
		rec := &connectRecorder{}
		client := webhook.NewClient(webhook.WithConnectHook(webhook.Options{AllowPrivate: true}, rec.hook))
		_, err := client.Get("https://127.0.0.1:8443/")
		require.ErrorIs(t, err, webhook.ErrBlocked)
		require.ErrorIs(t, err, ssrf.ErrProhibitedPort)
		require.Empty(t, rec.seen())
	})

	t.Run("HookSeesAllowedDials", func(t *testing.T) {
		t.Parallel()
		// The control case: with loopback allowed, the dial does reach the
		// hook, so an empty hook record above really means "never dialled".
		rec := &connectRecorder{}
		client := webhook.NewClient(webhook.WithConnectHook(webhook.Options{AllowPrivate: true, AnyPort: true}, rec.hook))
		_, err := client.Get("https://127.0.0.1:9/")
		require.ErrorIs(t, err, errConnectSuppressed)
		require.NotErrorIs(t, err, webhook.ErrBlocked)
		require.Equal(t, []string{"tcp4 127.0.0.1:9"}, rec.seen())
	})

	t.Run("NoRedirects", func(t *testing.T) {
		t.Parallel()
		client := webhook.NewClient(webhook.Options{})
		require.NotNil(t, client.CheckRedirect)
		require.ErrorIs(t, client.CheckRedirect(nil, nil), http.ErrUseLastResponse)
		tr, ok := client.Transport.(*http.Transport)
		require.True(t, ok)
		require.Nil(t, tr.Proxy, "proxies from the environment would dial around the guard")
		require.Equal(t, webhook.DefaultTimeout, client.Timeout)
		require.NotZero(t, tr.TLSHandshakeTimeout)
		require.NotZero(t, tr.ResponseHeaderTimeout)
	})
}

// TestDNSRebinding resolves an innocent-looking public name to loopback
// with a hostile name server: the name passes every URL check, so only the
// dial-time check of the resolved address can refuse it.
func TestDNSRebinding(t *testing.T) {
	t.Parallel()
	for _, answer := range []string{"127.0.0.1", "::1", "169.254.169.254", "10.1.2.3"} {
		t.Run(answer, func(t *testing.T) {
			t.Parallel()
			addr := netip.MustParseAddr(answer)
			resolver, queries := fakeDNS(t, addr)
			rec := &connectRecorder{}
			client := webhook.NewClient(webhook.WithConnectHook(webhook.Options{AnyPort: true, Resolver: resolver}, rec.hook))
			p := &webhook.Provider{Client: client}

			port := "8443"
			var accepted *trapped
			if addr.IsLoopback() {
				var l net.Listener
				l, accepted = trap(t, net.JoinHostPort(answer, "0"))
				_, port, _ = net.SplitHostPort(l.Addr().String())
			}
			_, err := p.Send(context.Background(), outbound("https://hooks.tenant.example:"+port+"/herald"))
			pe := requireProviderError(t, err)
			require.Equal(t, provider.Permanent, pe.Class)
			require.True(t, pe.Account)
			require.Equal(t, "destination_blocked", pe.Code)
			require.Contains(t, pe.Reason, "resolves to "+answer)
			require.Positive(t, queries.Load(), "the name must have been resolved")
			requireUntouched(t, rec, accepted)
		})
	}
}
