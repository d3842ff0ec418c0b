package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"

	"code.dny.dev/ssrf"

	"github.com/heraldhq/herald/app/provider"
)

// Fetcher fetches the files tenants give by URL (attachments), through the
// same SSRF guard as webhook deliveries: a tenant's URL never reaches a
// private, loopback or metadata address, whatever its name resolves to.
// It implements app.FileFetcher.
type Fetcher struct {
	// Client makes the requests; nil: NewClient with Options.
	Client *http.Client
	// Options build the default Client and its pre-dial checks.
	Options Options
	// AllowHTTP permits plain http URLs (development and tests).
	AllowHTTP bool

	guard *guard
}

// NewFetcher returns a fetcher with the guard of opts.
func NewFetcher(opts Options, allowHTTP bool) *Fetcher {
	return &Fetcher{Client: NewClient(opts), Options: opts, AllowHTTP: allowHTTP, guard: newGuard(opts)}
}

// Fetch implements app.FileFetcher: one GET, no redirects, at most limit
// bytes read. A URL that gives no file and never will (refused by the
// guard, not http(s), unreachable, a 4xx, too large) is a permanent
// error; a timeout, a broken connection or a 5xx a transient one.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string, limit int64) ([]byte, error) {
	if f.guard == nil {
		f.guard = newGuard(f.Options)
	}
	client := f.Client
	if client == nil {
		client = NewClient(f.Options)
	}
	u, err := url.Parse(rawURL)
	switch {
	case err != nil || u.Host == "":
		return nil, fetchFailed("The file URL is not a URL.")
	case u.Scheme != "https" && !(f.AllowHTTP && u.Scheme == "http"):
		return nil, fetchFailed("The file URL must be https.")
	case u.User != nil:
		return nil, fetchFailed("The file URL must not carry credentials.")
	}
	if err := f.guard.checkHost(u.Hostname()); err != nil {
		return nil, fetchFailed(fileRefusal(err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fetchFailed("The file URL is not a URL.")
	}
	req.Header.Set("User-Agent", "Herald-Files/1")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fetchError(ctx, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout:
		return nil, &provider.Error{Code: fmt.Sprintf("http_%d", resp.StatusCode), Class: provider.Transient,
			Reason: fmt.Sprintf("The file URL answered %s.", resp.Status)}
	case resp.StatusCode != http.StatusOK:
		// A redirect is not followed: it could lead anywhere.
		return nil, fetchFailed(fmt.Sprintf("The file URL answered %s.", resp.Status))
	case resp.ContentLength > limit:
		return nil, fetchFailed(fmt.Sprintf("The file is too large: %d bytes; a file may have %d.", resp.ContentLength, limit))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fetchError(ctx, err)
	}
	if int64(len(data)) > limit {
		return nil, fetchFailed(fmt.Sprintf("The file is too large: more than %d bytes, the most a file may have.", limit))
	}
	return data, nil
}

// fetchFailed is a permanent failure to fetch a file.
func fetchFailed(reason string) error {
	return &provider.Error{Code: "attachment_unavailable", Class: provider.Permanent, Reason: reason}
}

// fetchError classifies a failed request: the guard's refusals and
// unreachable hosts are permanent, timeouts and broken connections
// transient.
func fetchError(ctx context.Context, err error) error {
	var b *blockedError
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(err, &b):
		return fetchFailed(fileRefusal(b))
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return &provider.Error{Code: "timeout", Class: provider.Transient, Reason: "The file URL did not answer in time."}
	case errors.As(err, &dns) && dns.IsNotFound:
		return fetchFailed("The file URL's host does not exist.")
	case errors.As(err, &op) && op.Op == "dial":
		return fetchFailed("The file URL's host is unreachable (the connection was refused).")
	}
	return &provider.Error{Code: "connection_error", Class: provider.Transient, Reason: "The connection to the file URL broke."}
}

// fileRefusal explains a guard refusal of a file URL.
func fileRefusal(err error) string {
	var b *blockedError
	if !errors.As(err, &b) {
		return "The file URL is not permitted."
	}
	switch {
	case b.name:
		return fmt.Sprintf("The file URL's host %s is an internal name; Herald only fetches files from public internet hosts.", b.target)
	case b.addr.IsValid() && b.port == 0:
		return fmt.Sprintf("The file URL names %s, %s; Herald only fetches files from public internet addresses.", b.addr, describe(b.addr))
	case b.addr.IsValid() && !errors.Is(b.err, ssrf.ErrProhibitedPort):
		return fmt.Sprintf("The file URL resolves to %s, %s; Herald only fetches files from public internet addresses.", b.addr, describe(b.addr))
	}
	return "The file URL's port is not permitted; use 443."
}
