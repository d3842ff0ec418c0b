// Package webtest runs Herald for tests the way the herald binary runs it:
// wired by wire.Connect on a real Postgres database of the test's own
// (db/dbtest), served by the real web server from Services.Web, and worked by
// River workers from Services.StartWorkers. Because it builds Herald only
// through those calls, a test harness cannot drift from production wiring.
//
// New also creates the tenant "acme" with an API key, and Herald offers the
// calls tests make through the JSON API: Submit, WaitMessages, Timeline, and
// Count and Exec for what only SQL can check or set up.
package webtest

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsnotify/awsnotifytest"
	"github.com/heraldhq/herald/app/provider/meta"
	"github.com/heraldhq/herald/app/wire"
	"github.com/heraldhq/herald/db/dbtest"
	"github.com/heraldhq/herald/jobs"
	"github.com/heraldhq/herald/web"
)

// Version is the version the tests' Herald reports (/healthz, the console).
const Version = "test"

// Options change how New builds Herald.
type Options struct {
	// Config adjusts the configuration before Herald is built, as a
	// deployment's environment would (quotas, breaker, base URL, ...).
	Config func(*app.Config)
	// NoWorkers leaves jobs in the queue, for tests of what intake stores
	// and tests that run the jobs' work themselves.
	NoWorkers bool
	// Providers replace the wired providers by name before workers start.
	Providers provider.Set
	// SNS, when set, stands in for Amazon SNS: the web server trusts its
	// certificate.
	SNS *awsnotifytest.SNS
	// Dispatcher adjusts the dispatcher's options before it is built (a
	// test's clock, say).
	Dispatcher func(*app.DispatcherOptions)
	// Now is every service's clock; nil: time.Now.
	Now app.Clock
	// Logs, when set, records what the services log (warnings and
	// errors), besides showing it with go test -v.
	Logs *Logs
	// DefaultLimits leaves Tenant at Herald's default limits at intake;
	// otherwise it gets TestLimits.
	DefaultLimits bool
}

// TestLimits are the limits at intake of the tests' tenant: the defaults
// but for the SMS caps per number and abroad, which tests that text one
// passenger many times would meet. Tests of the limits set their own.
var TestLimits = app.LimitInput{SMSRecipientDaily: "100000", SMSInternationalDaily: "100000000"}

// Herald is Herald wired as the herald binary wires it, on its own
// database, with the HTTP app in front and, unless Options.NoWorkers, a River
// worker client working every queue.
type Herald struct {
	// T is the test Herald belongs to; the helpers fail it.
	T *testing.T
	// Ctx is the context the helpers pass to services.
	Ctx context.Context
	// Config is the configuration Herald was built with.
	Config app.Config
	// Log is the logger of every service: warnings and errors, shown only
	// with go test -v.
	Log *slog.Logger
	// Services are the services wire.Connect built.
	Services *wire.Services
	// Graph is the Graph API fake that WABA subscriptions go to, when the
	// test set no MetaBaseURL of its own.
	Graph *Graph
	// Server is the web server Services.Web returned; tests may adjust its
	// fields (sign-in limits, say) before they send requests.
	Server *web.Server
	// App is Server's HTTP app, for App.Test and for serving on a listener.
	App *fiber.App
	// Worker is the worker client New started, nil with Options.NoWorkers.
	Worker *river.Client[pgx.Tx]
	// Tenant is the tenant "acme" (Acme Tours, plan PRO).
	Tenant *app.Tenant
	// Key is the secret of Tenant's API key.
	Key string
}

// Config returns the configuration of the tests' Herald: what the herald
// binary makes of an empty environment (dev, the default address and base
// URL, workers, quotas, breaker and timeouts), with freshly generated keys,
// the database at databaseURL, a pool of 12 connections per Herald (tests
// run many side by side) and a sandbox that reports after 20 ms instead of
// 2 s.
func Config(databaseURL string) app.Config {
	quotas := make(map[string]map[app.Channel]int, len(app.DefaultQuotas))
	for plan, limits := range app.DefaultQuotas {
		quotas[plan] = maps.Clone(limits)
	}
	return app.Config{
		Env:         app.EnvDev,
		Addr:        ":8080",
		BaseURL:     &url.URL{Scheme: "http", Host: "localhost:8080"},
		DatabaseURL: databaseURL,
		// As the binary reads it with DATABASE_URL set and
		// MIGRATE_DATABASE_URL unset.
		MigrateDatabaseURL: databaseURL,
		SecretKey:          randomKey(32),
		SecretKeyID:        "k1",
		SessionKey:         randomKey(48),
		LogLevel:           slog.LevelInfo,
		LogFormat:          "text",
		Workers:            maps.Clone(app.DefaultWorkers),
		DBMaxConns:         12,
		Quotas:             quotas,
		SandboxDelay:       20 * time.Millisecond,
		APIKeyCacheTTL:     5 * time.Second,
		BreakerThreshold:   10,
		BreakerWindow:      5 * time.Minute,
		BreakerOpenFor:     time.Minute,
		ShutdownTimeout:    25 * time.Second,
		JobTimeout:         app.DefaultJobTimeout,
		SendTimeout:        app.DefaultSendTimeout,
		RescueStuckAfter:   app.DefaultRescueStuckAfter,

		PendingReceiptHorizon: 24 * time.Hour,
		Currency:              "EUR",
	}
}

// randomKey returns n random bytes, as the dev keys the binary generates.
func randomKey(n int) []byte {
	key := make([]byte, n)
	_, _ = rand.Read(key)
	return key
}

// New builds Herald for t on a database of its own and creates the tenant
// "acme" with an API key. Everything stops when t ends.
func New(t *testing.T, opts Options) *Herald {
	t.Helper()
	cfg := Config(dbtest.URL(dbtest.CreateDatabase(t)))
	if opts.Config != nil {
		opts.Config(&cfg)
	}
	var logOut io.Writer = io.Discard
	if testing.Verbose() {
		logOut = os.Stderr
	}
	var handler slog.Handler = slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelWarn})
	if opts.Logs != nil {
		handler = opts.Logs.Handler(handler)
	}
	log := slog.New(handler)
	ctx := context.Background()
	svc, err := wire.ConnectWith(ctx, cfg, log, "test", wire.Options{Backoff: retryQuickly, Dispatcher: opts.Dispatcher, Now: opts.Now})
	require.NoError(t, err)
	t.Cleanup(svc.Close)

	h := &Herald{T: t, Ctx: ctx, Config: cfg, Log: log, Services: svc}
	if cfg.MetaBaseURL == "" {
		// Activating a WhatsApp account registers Herald's app on its WABA:
		// without a Graph API of the test's own, that call goes to a fake
		// on Meta's wire format (the sends keep their providers).
		h.Graph = NewGraph(t)
		svc.NumberHealths.Subscriber = &meta.Provider{BaseURL: h.Graph.URL}
	}
	// Console users sign in in many tests; bcrypt's lowest cost keeps that fast.
	svc.Users.PasswordCost = 4
	h.Server = svc.Web(Version)
	if opts.SNS != nil {
		h.Server.SNSVerifier = opts.SNS.Verifier
	}
	h.App = h.Server.App()
	h.Tenant, err = svc.Tenants.Create(ctx, app.CLIActor, app.TenantInput{Slug: "acme", Name: "Acme Tours", Plan: app.PlanPro})
	require.NoError(t, err)
	_, h.Key, err = svc.APIKeys.Create(ctx, app.CLIActor, h.Tenant.ID, "booking system", app.Scopes...)
	require.NoError(t, err)
	if !opts.DefaultLimits {
		require.NoError(t, svc.Limits.Set(ctx, app.CLIActor, h.Tenant.ID, TestLimits))
	}

	for name, prov := range opts.Providers {
		svc.Providers[name] = prov
	}
	if !opts.NoWorkers {
		h.Worker = h.StartWorkers()
	}
	return h
}

// retryQuickly is the tests' retry schedule: a retry comes at once.
func retryQuickly(int) time.Duration { return 20 * time.Millisecond }

// StartWorkers starts one more River client working every queue and stops
// it when the test ends; tests of state shared between processes run two.
// Jobs are polled for and retried quickly, so tests do not wait on River's
// production timings.
func (h *Herald) StartWorkers() *river.Client[pgx.Tx] {
	h.T.Helper()
	worker, err := h.Services.StartWorkers(h.Ctx, jobs.Config{
		Workers: h.Config.Workers, Logger: h.Log, FetchPollInterval: 100 * time.Millisecond,
		BackoffFunc: retryQuickly,
	})
	require.NoError(h.T, err)
	h.T.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		jobs.Stop(stopCtx, worker, h.Log)
	})
	return worker
}
