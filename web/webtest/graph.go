package webtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/wire"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
)

// Meta account settings of the accounts CreateMetaAccount makes.
const (
	GraphPhoneNumberID = "106540352242922"
	GraphAccessToken   = "EAAG-test-token"
)

// Graph stands in for the send endpoint of Meta's Graph API, on its wire
// format: it counts the sends, answers each with a fresh message id (or
// with what Reply says), and can hold them until released, so that a test
// decides when the provider answers. Point Config.MetaBaseURL at URL.
type Graph struct {
	// URL is the fake's base URL.
	URL string

	mu      sync.Mutex
	calls   int
	hold    chan struct{}
	arrived chan int
	// reply, when set, answers the nth send (1-based) instead of success:
	// status, Retry-After (empty for none) and body.
	reply func(n int) (status int, retryAfter string, body string)
	// subscribed are the WABAs of the subscribed_apps posts answered with
	// success, in order; refuse, when set, answers them with a Graph error.
	subscribed []string
	refuse     string
}

// Subscribed returns the WABA ids Herald registered its app on
// (POST /{version}/{waba}/subscribed_apps with the account's token).
func (g *Graph) Subscribed() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.subscribed...)
}

// RefuseSubscriptions makes every subscribed_apps post fail with Meta's
// permission error carrying message (empty: succeed again).
func (g *Graph) RefuseSubscriptions(message string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refuse = message
}

// serveSubscribe answers POST /{version}/{waba}/subscribed_apps as Meta
// does: {"success": true}, or a Graph error.
func (g *Graph) serveSubscribe(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodPost || len(parts) != 3 || len(r.Header.Get("Authorization")) <= len("Bearer ") {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"(#100) Invalid parameter","type":"OAuthException","code":100}}`))
		return
	}
	g.mu.Lock()
	refuse := g.refuse
	if refuse == "" {
		g.subscribed = append(g.subscribed, parts[1])
	}
	g.mu.Unlock()
	if refuse != "" {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"OAuthException","code":200,"fbtrace_id":"AbCdEf"}}`, refuse)
		return
	}
	_, _ = w.Write([]byte(`{"success":true}`))
}

// NewGraph starts the fake; it stops when t ends.
func NewGraph(t testing.TB) *Graph {
	t.Helper()
	g := &Graph{arrived: make(chan int, 4096)}
	srv := httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(srv.Close)
	t.Cleanup(g.Release)
	g.URL = srv.URL
	return g
}

func (g *Graph) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/subscribed_apps") {
		g.serveSubscribe(w, r)
		return
	}
	var body map[string]any
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, `{"error":{"message":"bad request","code":100}}`, http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	g.calls++
	n, hold, reply := g.calls, g.hold, g.reply
	g.mu.Unlock()
	g.arrived <- n
	if hold != nil {
		<-hold
	}
	w.Header().Set("Content-Type", "application/json")
	if reply != nil {
		if status, retryAfter, b := reply(n); status != 0 {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(b))
			return
		}
	}
	to, _ := body["to"].(string)
	fmt.Fprintf(w, `{"messaging_product":"whatsapp","contacts":[{"input":%q,"wa_id":%q}],"messages":[{"id":"wamid.graph-%06d","message_status":"accepted"}]}`, to, to, n)
}

// Hold makes every send from now on wait until Release.
func (g *Graph) Hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.hold == nil {
		g.hold = make(chan struct{})
	}
}

// Release answers the sends held and stops holding.
func (g *Graph) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.hold != nil {
		close(g.hold)
		g.hold = nil
	}
}

// Reply makes f answer the sends (f returns status 0 for success).
func (g *Graph) Reply(f func(n int) (status int, retryAfter string, body string)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reply = f
}

// Calls is the number of sends received so far.
func (g *Graph) Calls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

// WaitArrived waits until n more sends have arrived (held ones included),
// for up to dbtest.HangGuard.
func (g *Graph) WaitArrived(t testing.TB, n int) {
	t.Helper()
	timeout := time.After(dbtest.HangGuard)
	for range n {
		select {
		case <-g.arrived:
		case <-timeout:
			t.Fatalf("the fake Graph API did not receive %d sends; %d calls so far", n, g.Calls())
		}
	}
}

// CreateMetaAccount gives the tenant an ACTIVE Meta WhatsApp account (in
// place of its sandbox one) whose default templates Meta approved, as a
// tenant has before going live; config adds to its settings.
func CreateMetaAccount(t testing.TB, ctx context.Context, svc *wire.Services, tenant *app.Tenant, config app.Attrs) *app.ChannelAccount {
	t.Helper()
	var sb *app.ChannelAccount
	require.NoError(t, svc.Store.InTenant(ctx, tenant.ID, func(tx *db.Tx) (err error) {
		sb, err = tx.ActiveAccount(ctx, tenant.ID, app.WhatsApp)
		return err
	}))
	require.NoError(t, svc.Accounts.SetStatus(ctx, app.CLIActor, tenant.ID, sb.ID, app.AccountDisabled, ""))
	cfg := app.Attrs{"phone_number_id": GraphPhoneNumberID, "waba_id": "102290129340398"}
	for k, v := range config {
		cfg[k] = v
	}
	a, err := svc.Accounts.Create(ctx, app.CLIActor, tenant.ID, app.AccountInput{
		Channel: app.WhatsApp, Provider: "meta", Name: "WhatsApp " + tenant.Slug, Activate: true, Config: cfg,
		Secrets: map[string]string{"access_token": GraphAccessToken, "app_secret": "app-secret-" + tenant.Slug},
	})
	require.NoError(t, err)
	approveMetaDefaults(t, ctx, svc, a)
	return a
}
