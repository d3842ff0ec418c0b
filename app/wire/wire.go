// Package wire builds Herald from its parts: one database pool, the job
// queue, the pipeline's and the console's services, the providers, the web
// server and the workers. Every command of the herald binary and every test
// harness builds Herald through Connect, so tests run the wiring production
// runs.
//
// wire is the composition root: it imports every layer (db, jobs, web, the
// providers) so that they need not know one another. It sits under app's
// folder, not beside main, because package main and the test harnesses
// (web/webtest, app's own tests, the bench and chaos commands) all build
// Herald through it, and Go lets them import it only from a package
// directory. Nothing in app imports wire: the arrows point from wire into
// app, never back.
package wire

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/riverqueue/river"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/console"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/awsclient"
	"github.com/heraldhq/herald/app/provider/awsnotify"
	"github.com/heraldhq/herald/app/provider/meta"
	"github.com/heraldhq/herald/app/provider/sandbox"
	"github.com/heraldhq/herald/app/provider/ses"
	"github.com/heraldhq/herald/app/provider/sns"
	"github.com/heraldhq/herald/app/provider/webhook"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/jobs"
	"github.com/heraldhq/herald/web"
)

// Services is every service of Herald, wired to one database.
type Services struct {
	Config   app.Config
	Log      *slog.Logger
	DB       *db.DB
	Store    *db.Store
	Queue    *jobs.Queue
	Registry *prometheus.Registry

	// The pipeline.
	Tenants   *app.Tenants
	Users     *app.Users
	APIKeys   *app.APIKeys
	Accounts  *app.Accounts
	Templates *app.Templates
	Intake    *app.Intake
	// Events is the event registry: built-in events and tenants' own.
	Events *app.Registry
	// Uploads stores passenger lists and turns their rows into events;
	// UploadReader shows them.
	Uploads      *app.Uploads
	UploadReader *app.UploadReader
	Router       *app.Router
	Dispatcher   *app.Dispatcher
	// Providers are the dispatcher's providers by name (tests replace one
	// with a fake).
	Providers provider.Set
	// Limiter is the dispatcher's rate limiter.
	Limiter     *app.RateLimiter
	Receipts    *app.Receipts
	Messages    *app.Messages
	Contacts    *app.Contacts
	Maintenance *app.Maintenance
	Rollups     *app.Rollups
	Deadlines   *app.Deadlines
	Audit       *app.Audit
	Health      *app.Health
	Breakers    *app.Breakers
	// Credentials watches the server's own AWS credentials for the
	// dispatcher, /readyz and the console.
	Credentials *app.ServerCredentials
	Inbound     *app.Inbound
	// Inbox lists, answers, snoozes, resolves and assigns conversations.
	Inbox *app.Inbox
	// Preferences serves the unsubscribe links of optional e-mails.
	Preferences *app.Preferences
	// Acks records passengers' acknowledgements: quick-reply buttons and
	// signed links.
	Acks *app.Acknowledgements
	// Files serves the short links of messages' files.
	Files *app.FileServer
	// PublicLimits throttles the public links per client and per file.
	PublicLimits *app.PublicLimits
	Hooks        *app.Hooks
	// Callbacks manages tenants' callback endpoints and posts their
	// status callbacks.
	Callbacks *app.Callbacks
	// MetaTemplates syncs WhatsApp accounts' Meta templates and submits
	// Herald's for review.
	MetaTemplates *app.MetaTemplates
	// NumberHealths keeps Meta's news about WhatsApp numbers and
	// registers Herald's app on their WABAs.
	NumberHealths *app.NumberHealths
	// Rejections keeps the tenants' rejected API requests.
	Rejections *app.Rejections
	// Limits are each API key's token bucket and the tenants' limits as
	// the console and the API show and operators set them.
	Limits *app.IntakeLimits
	// Prices are the installation's price table, which operators edit.
	Prices *app.Prices
	// ConfirmWindows manages tenants' confirmation windows; the
	// dispatcher reads them in its own transaction.
	ConfirmWindows *app.ConfirmWindows
	// Brandings manages tenants' e-mail branding.
	Brandings *app.Brandings
	// Alerts tells tenants' staff what needs them: settings, checks,
	// delivery.
	Alerts *app.Alerts
	// SMSLogs reads SNS accounts' SMS delivery logs into the receipt
	// inbox (tests point its Log at a fake or an emulator).
	SMSLogs *app.SMSLogs

	// The console.
	Console Console
	// OpenAPI is the API's merged OpenAPI document.
	OpenAPI *web.OpenAPI

	// backoff is the dispatch jobs' retry schedule (Options.Backoff).
	backoff func(attempt int) time.Duration
}

// Console is the console's services.
type Console struct {
	Deadlines  *console.Deadlines
	Tenants    *console.Tenants
	Users      *console.Users
	APIKeys    *console.APIKeys
	Templates  *console.Templates
	Sessions   *console.Sessions
	Dashboards *console.Dashboards
	// TwoFactor enrols console users in a second factor and resets it.
	TwoFactor *console.TwoFactor
	// Trends reads the dashboard's month and the template figures.
	Trends *console.TrendReader
	// Promise reads the delivery promise's tables.
	Promise        *console.PromiseReader
	Queues         *console.Queues
	Accounts       *console.Accounts
	MessageConsole *console.MessageConsole
	Trips          *console.Trips
	ContactConsole *console.ContactConsole
	Schedules      *console.Schedules
	AuditLog       *console.AuditLog
	MetaTemplates  *console.MetaTemplates
	Callbacks      *console.Callbacks
	Rejections     *console.Rejections
	ConfirmWindows *console.ConfirmWindows
	Brandings      *console.Brandings
}

// Options adjust what Connect builds, for tests; the zero value is what
// production runs.
type Options struct {
	// Now is every service's clock; nil: time.Now.
	Now app.Clock
	// Backoff is the dispatch jobs' retry schedule, which the dispatcher
	// also reads to expire a message whose next retry comes too late; nil:
	// jobs.Backoff.
	Backoff func(attempt int) time.Duration
	// Dispatcher adjusts the dispatcher's options before it is built.
	Dispatcher func(*app.DispatcherOptions)
}

// Connect opens the database pool (named role in pg_stat_activity) and
// builds every service on it. Close releases the pool.
func Connect(ctx context.Context, cfg app.Config, log *slog.Logger, role string) (*Services, error) {
	return ConnectWith(ctx, cfg, log, role, Options{})
}

// ConnectWith is Connect with opts.
func ConnectWith(ctx context.Context, cfg app.Config, log *slog.Logger, role string, opts Options) (*Services, error) {
	d, err := db.Open(ctx, cfg.DatabaseURL, db.Options{ApplicationName: role, MaxConns: cfg.DBMaxConns})
	if err != nil {
		if cfg.DatabaseURL == app.DefaultDatabaseURL {
			err = fmt.Errorf("%w\n(DATABASE_URL is unset, so Herald uses the project's own cluster: start it with `go tool task db`)", err)
		}
		return nil, err
	}
	s, err := build(cfg, log, d, opts)
	if err != nil {
		d.Close()
		return nil, err
	}
	role, bypass, err := d.RowSecurityBypass(ctx)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("read the database role's attributes: %w", err)
	}
	warning, err := app.CheckRowSecurity(cfg.Dev(), role, bypass)
	if err != nil {
		d.Close()
		return nil, err
	}
	if warning != "" {
		log.Error(warning)
		s.Health.Warnings = append(s.Health.Warnings, warning)
	}
	role, owns, err := d.OwnsSchema(ctx)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("read who owns Herald's tables: %w", err)
	}
	if warning, err = app.CheckSchemaOwner(cfg.Dev(), role, owns); err != nil {
		d.Close()
		return nil, err
	}
	if warning != "" {
		log.Error(warning)
		s.Health.Warnings = append(s.Health.Warnings, warning)
	}
	return s, nil
}

// Close closes the database pool.
func (s *Services) Close() { s.DB.Close() }

func build(cfg app.Config, log *slog.Logger, d *db.DB, opts Options) (*Services, error) {
	inserter, err := jobs.NewInserter(d.Pool)
	if err != nil {
		return nil, err
	}
	sealer, err := app.NewSealer(cfg.SecretKeyID, cfg.SecretKey, cfg.OldSecretKeys)
	if err != nil {
		return nil, fmt.Errorf("HERALD_SECRET_KEY: %w", err)
	}
	store, queue, now := d.Store(), jobs.NewQueue(inserter), opts.Now
	if now == nil {
		now = time.Now
	}
	if opts.Backoff == nil {
		opts.Backoff = jobs.Backoff
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), db.NewPoolCollector(d))
	metrics := jobs.NewMetrics(reg)

	s := &Services{Config: cfg, Log: log, DB: d, Store: store, Queue: queue, Registry: reg, backoff: opts.Backoff}
	if s.OpenAPI, err = web.LoadOpenAPI(web.OpenAPIFiles, baseURL(cfg)); err != nil {
		return nil, err
	}
	s.Accounts = &app.Accounts{Store: db.Scope[app.AccountTx](store), Sealer: sealer, Now: now}
	unsubscribe := app.NewUnsubscribeLinks(baseURL(cfg), cfg.SecretKey)
	// Routing writes an SMS's file links, dispatch gives WhatsApp its
	// document's, and /f/ serves them: one signer for all three.
	fileLinks := app.NewFileLinks(baseURL(cfg), cfg.SecretKey)
	// Dispatch writes the acknowledgement links that /ack/ checks.
	ackLinks := app.NewAckLinks(baseURL(cfg), cfg.SecretKey)
	provisioner := &app.Provisioner{Accounts: s.Accounts, Now: now}
	s.Tenants = &app.Tenants{Store: db.Scope[app.TenantTx](store), Now: now, Provision: provisioner.Provision, QuietHours: cfg.QuietHours}
	s.Users = &app.Users{Store: db.Scope[app.UserTx](store), Now: now}
	s.APIKeys = &app.APIKeys{Store: db.Scope[app.APIKeyTx](store), Lookup: store, Now: now, CacheTTL: cfg.APIKeyCacheTTL}
	s.Events = &app.Registry{Store: db.Scope[app.RegistryTx](store), Now: now}
	s.Templates = &app.Templates{Store: db.Scope[app.TemplateTx](store), Now: now, Registry: s.Events}
	s.Intake = &app.Intake{Store: db.Scope[app.IntakeTx](store), Registry: s.Events, Queue: queue, Now: now}
	s.Uploads = &app.Uploads{Store: db.Scope[app.UploadTx](store), Intake: s.Intake, Queue: queue, Quotas: cfg.Quotas, Now: now}
	s.UploadReader = &app.UploadReader{Store: db.Scope[app.UploadReadTx](store)}
	s.Router = &app.Router{Store: db.Scope[app.RouteTx](store), Queue: queue, Now: now, Log: log, Files: fileLinks, Acks: ackLinks, Registry: s.Events}
	// Private receivers only where the configuration allows them (dev;
	// refused in prod at start), for the webhook channel and status
	// callbacks alike: the console's checks and the posts.
	allowPrivate := cfg.Dev() && cfg.WebhookAllowPrivate
	callbackCheck := &webhook.Provider{AllowHTTP: cfg.Dev(), AllowPrivate: allowPrivate}
	s.Callbacks = &app.Callbacks{
		Store: db.Scope[app.CallbackTx](store), Queue: queue, Sealer: sealer, Now: now, Log: log,
		// The webhook channel's guarded client: tenants' URLs never reach
		// private, loopback or metadata addresses.
		Client:       webhook.NewClient(webhook.Options{Timeout: app.CallbackTimeout, AllowPrivate: allowPrivate, AnyPort: allowPrivate}),
		CheckURLFunc: callbackCheck.CheckURL,
	}
	s.Receipts = &app.Receipts{Callbacks: s.Callbacks, Store: db.Scope[app.ReceiptTx](store), InboxStore: db.Scope[app.ReceiptInboxTx](store),
		Inbox: store, Router: s.Router, Queue: queue, Metrics: metrics, Now: now, Log: log}
	s.Breakers = &app.Breakers{
		Threshold: cfg.BreakerThreshold, Window: cfg.BreakerWindow, OpenFor: cfg.BreakerOpenFor,
		Store: db.Scope[app.BreakerTx](store), Metrics: metrics, Log: log, Now: now,
	}
	// One Meta client sends messages and manages templates.
	metaProvider := &meta.Provider{BaseURL: cfg.MetaBaseURL, Log: log}
	webhookProvider := &webhook.Provider{AllowHTTP: cfg.Dev(), AllowPrivate: allowPrivate}
	s.Providers = provider.Set{
		"meta":    metaProvider,
		"webhook": webhookProvider,
		"ses":     &ses.Provider{Log: log, AnyEndpoint: cfg.Dev()},
		"sns":     &sns.Provider{Log: log, AnyEndpoint: cfg.Dev()},
		// The sandbox's receipts go to the inbox as a provider's webhook
		// posts would, each due when the sandbox says.
		sandbox.Name: &sandbox.Provider{Delay: cfg.SandboxDelay, Report: func(ctx context.Context, rs []sandbox.Receipt) error {
			in := make([]app.InboxReceipt, len(rs))
			for i, r := range rs {
				due := now().Add(r.After)
				r.Receipt.At = due
				in[i] = app.InboxReceipt{Via: app.Internal, Receipt: r.Receipt, AvailableAt: due}
			}
			return s.Receipts.Accept(ctx, in...)
		}},
	}
	s.Limiter = &app.RateLimiter{Store: store}
	s.Credentials = &app.ServerCredentials{Store: db.Scope[app.CredentialTx](store), Metrics: metrics, Log: log, Now: now}
	dispatchOpts := app.DispatcherOptions{
		Quotas: cfg.Quotas, Limiter: s.Limiter, Breakers: s.Breakers, Callbacks: s.Callbacks, Unsubscribe: unsubscribe,
		Backoff: opts.Backoff, Metrics: metrics, Credentials: s.Credentials, Now: now, Log: log, SendTimeout: cfg.SendTimeout,
		// Files by URL come through the webhook channel's guarded client.
		Fetcher: webhook.NewFetcher(webhook.Options{Timeout: app.DefaultFetchTimeout, AllowPrivate: allowPrivate}, cfg.Dev()),
		Files:   fileLinks,
		Acks:    ackLinks,
	}
	if opts.Dispatcher != nil {
		opts.Dispatcher(&dispatchOpts)
	}
	s.Dispatcher = app.NewDispatcher(app.DispatchStores{
		Send: db.Scope[app.SendTx](store), Settle: db.Scope[app.SettleTx](store),
	}, queue, s.Router, s.Accounts, s.Providers, dispatchOpts)
	s.Messages = &app.Messages{Store: db.Scope[app.MessagesTx](store), Queue: queue, Router: s.Router, Now: now}
	s.Contacts = &app.Contacts{Store: db.Scope[app.ContactsTx](store), Now: now}
	s.Maintenance = &app.Maintenance{Store: db.Scope[app.MaintenanceTx](store), Overdue: db.Scope[app.OverdueTx](store), Queue: queue, Now: now, Log: log,
		PendingHorizon: cfg.PendingReceiptHorizon, Metrics: metrics, Router: s.Router, Callbacks: s.Callbacks}
	s.Rollups = &app.Rollups{Store: db.Scope[app.RollupTx](store), Now: now}
	s.Deadlines = &app.Deadlines{Store: db.Scope[app.DeadlineTx](store), Now: now}
	s.ConfirmWindows = &app.ConfirmWindows{Store: db.Scope[app.ConfirmWindowTx](store), Now: now}
	s.Brandings = &app.Brandings{Store: db.Scope[app.BrandingTx](store), Now: now}
	s.Audit = &app.Audit{Store: db.Scope[app.AuditTx](store), Log: log, Now: now}
	s.Health = &app.Health{Probe: d, Now: now, Credentials: s.Credentials}
	s.Inbound = &app.Inbound{Store: db.Scope[app.InboundTx](store), Queue: queue, Now: now, Log: log, Callbacks: s.Callbacks}
	s.Inbox = &app.Inbox{Store: db.Scope[app.InboxTx](store), Router: s.Router, Queue: queue, Now: now}
	s.Preferences = &app.Preferences{Store: db.Scope[app.PreferenceTx](store), Links: unsubscribe, Now: now}
	s.Acks = &app.Acknowledgements{Store: db.Scope[app.AckTx](store), Links: ackLinks, Callbacks: s.Callbacks, Now: now}
	// Public links' buckets, like API keys', read the database's clock
	// unless a test injects one.
	s.PublicLimits = &app.PublicLimits{Rates: store, BucketNow: opts.Now}
	// A file link fetches a file given by URL as a send would.
	s.Files = &app.FileServer{Store: db.Scope[app.FileServeTx](store), Links: fileLinks, Fetcher: dispatchOpts.Fetcher, Now: now, Limits: s.PublicLimits}
	s.Hooks = &app.Hooks{Store: db.Scope[app.HookTx](store), Accounts: s.Accounts, Rates: store}
	// Buckets read the database's clock (as the dispatcher's do) unless a
	// test injects one.
	s.Limits = &app.IntakeLimits{Store: db.Scope[app.LimitAdminTx](store), Rates: store, BucketNow: opts.Now, Now: now, CacheTTL: cfg.APIKeyCacheTTL,
		Currency: cfg.Currency}
	s.Prices = &app.Prices{Store: db.Scope[app.PriceTx](store), Now: now, Currency: cfg.Currency}
	s.Rejections = &app.Rejections{Store: db.Scope[app.RejectionTx](store), Lookup: store, Now: now, Log: log}
	s.Alerts = &app.Alerts{Store: db.Scope[app.AlertTx](store), CheckStore: db.Scope[app.AlertCheckTx](store), Queue: queue,
		Sealer: sealer, Accounts: s.Accounts, Providers: s.Providers, Quotas: cfg.Quotas, Now: now, Log: log,
		// Slack and Teams are reached as status callbacks are: through the
		// guarded client, after the same URL check.
		Client:       webhook.NewClient(webhook.Options{Timeout: app.AlertTimeout, AllowPrivate: allowPrivate, AnyPort: allowPrivate}),
		CheckURLFunc: callbackCheck.CheckURL,
	}
	s.MetaTemplates = &app.MetaTemplates{Store: db.Scope[app.MetaTemplateTx](store), Accounts: s.Accounts, Catalog: metaProvider, Now: now, Log: log}
	// Pace buckets read the database's clock unless a test injects one.
	s.SMSLogs = &app.SMSLogs{Store: db.Scope[app.SMSLogTx](store), Accounts: s.Accounts, Receipts: s.Receipts, Queue: queue,
		Log: &sns.DeliveryLogs{AnyEndpoint: cfg.Dev()}, Rates: store, BucketNow: opts.Now, Now: now, Logger: log}
	s.NumberHealths = &app.NumberHealths{Store: db.Scope[app.NumberHealthTx](store), Accounts: s.Accounts, Subscriber: metaProvider, Now: now}

	// Security keys answer to the console's public address; one that is
	// not a host name (an IP address) leaves them off, not the console.
	relyingParty, err := console.NewRelyingParty(cfg.BaseURL, "Herald")
	if err != nil {
		log.Warn("security keys are unavailable", "err", err)
	}
	twoFactor := &console.TwoFactor{Store: db.Scope[console.TwoFactorTx](store), Sealer: sealer, Now: now,
		Keys: db.Scope[console.SecurityKeyTx](store), WebAuthn: relyingParty}
	s.Console = Console{
		TwoFactor:  twoFactor,
		Deadlines:  &console.Deadlines{Deadlines: s.Deadlines},
		Tenants:    &console.Tenants{Tenants: s.Tenants, Store: db.Scope[console.TenantTx](store), APIKeys: s.APIKeys},
		Users:      &console.Users{Users: s.Users, Store: db.Scope[console.UserTx](store)},
		APIKeys:    &console.APIKeys{APIKeys: s.APIKeys, Store: db.Scope[console.APIKeyTx](store)},
		Templates:  &console.Templates{Templates: s.Templates, Store: db.Scope[console.TemplateTx](store)},
		Sessions:   &console.Sessions{Store: db.Scope[console.SessionTx](store), Users: s.Users, Now: now, TwoFactor: twoFactor},
		Dashboards: &console.Dashboards{Store: db.Scope[console.DashboardTx](store), Quotas: cfg.Quotas, Credentials: s.Credentials, Now: now},
		Trends:     &console.TrendReader{Store: db.Scope[console.TrendTx](store), Now: now},
		Promise:    &console.PromiseReader{Store: db.Scope[console.PromiseTx](store), Now: now},
		Queues:     &console.Queues{Store: db.Scope[console.QueueTx](store), Admin: queue.Admin(), Now: now},
		Accounts: &console.Accounts{
			Store: db.Scope[console.AccountTx](store), Accounts: s.Accounts, Queue: queue, TemplateSync: queue, Now: now, Registry: s.Events,
			SMSLogs:             s.SMSLogs,
			NumberHealths:       s.NumberHealths,
			CheckWebhookURLFunc: webhookProvider.CheckURL,
			CheckEndpointURLFunc: func(raw string) error {
				_, err := awsclient.CheckEndpoint(raw, cfg.Dev())
				return err
			},
		},
		MessageConsole: &console.MessageConsole{Store: db.Scope[console.MessageTx](store), Queue: queue, Router: s.Router, Messages: s.Messages, Now: now},
		Trips:          &console.Trips{Store: db.Scope[console.TripTx](store)},
		Schedules: &console.Schedules{Store: db.Scope[console.ScheduleTx](store), Intake: s.Intake, Router: s.Router,
			Prices: s.Prices, Now: now},
		ContactConsole: &console.ContactConsole{Contacts: s.Contacts, Searcher: &app.ContactSearcher{Store: db.Scope[app.ContactSearchTx](store)}},
		AuditLog:       &console.AuditLog{Store: db.Scope[console.AuditLogTx](store), Audit: s.Audit, Now: now},
		MetaTemplates:  &console.MetaTemplates{Store: db.Scope[console.MetaTemplateTx](store), MetaTemplates: s.MetaTemplates},
		Callbacks:      &console.Callbacks{Callbacks: s.Callbacks},
		Rejections:     &console.Rejections{Store: db.Scope[console.RejectionTx](store)},
		ConfirmWindows: &console.ConfirmWindows{ConfirmWindows: s.ConfirmWindows},
		Brandings:      &console.Brandings{Brandings: s.Brandings},
	}
	return s, nil
}

// Web returns the HTTP server over the services; version is what /healthz
// and the console report.
func (s *Services) Web(version string) *web.Server {
	return &web.Server{
		Config: s.Config, Log: s.Log, Health: s.Health, Credentials: s.Credentials,
		Intake: s.Intake, Events: s.Events, Uploads: s.Uploads, UploadReader: s.UploadReader, Messages: s.Messages, Receipts: s.Receipts, Inbound: s.Inbound, Inbox: s.Inbox, Preferences: s.Preferences, Acks: s.Acks, Files: s.Files, PublicLimits: s.PublicLimits, Hooks: s.Hooks,
		Deadlines: s.Console.Deadlines, ConfirmWindows: s.Console.ConfirmWindows,
		Brandings: s.Brandings, BrandingConsole: s.Console.Brandings,
		Alerts: s.Alerts, AlertConsole: &console.Alerts{Alerts: s.Alerts},
		Callbacks: s.Callbacks, CallbackConsole: s.Console.Callbacks,
		MetaTemplates: s.MetaTemplates, MetaTemplateConsole: s.Console.MetaTemplates, NumberHealths: s.NumberHealths,
		SNSVerifier: snsVerifier(s.Config),
		APIKeys:     s.Console.APIKeys, Tenants: s.Console.Tenants, Users: s.Console.Users, Templates: s.Console.Templates,
		Sessions: s.Console.Sessions, TwoFactor: s.Console.TwoFactor, Dashboards: s.Console.Dashboards, Queues: s.Console.Queues,
		Trends: s.Console.Trends, Promise: s.Console.Promise,
		Accounts: s.Console.Accounts, MessageConsole: s.Console.MessageConsole, Trips: s.Console.Trips,
		Schedules: s.Console.Schedules, AuditLog: s.Console.AuditLog,
		Contacts: s.Contacts, ContactConsole: s.Console.ContactConsole,
		Rejections: s.Rejections, RejectionConsole: s.Console.Rejections, Limits: s.Limits, Prices: s.Prices,
		Registry: s.Registry, Version: version, OpenAPI: s.OpenAPI,
	}
}

// snsVerifier checks the signatures of SNS posts against Amazon's
// certificates; in development it also takes certificates served on
// loopback, so that a local stand-in for SNS (the chaos suite's SES fake)
// can sign what it posts. Production never does: anyone could name a
// certificate some other program serves on Herald's own host.
func snsVerifier(cfg app.Config) *awsnotify.Verifier {
	return &awsnotify.Verifier{Loopback: cfg.Dev()}
}

// baseURL is the deployment's public URL, the server of the OpenAPI document.
func baseURL(cfg app.Config) string {
	if cfg.BaseURL == nil {
		return ""
	}
	return cfg.BaseURL.String()
}

// StartWorkers starts a River client working every Herald queue. Stop it
// with jobs.Stop: ctx only bounds the start. Job contexts must not end with
// it: River derives them from the context Start gets, and a signal
// context there would cut every send in flight at SIGTERM instead of
// letting it finish (the provider may have the message, and the send would
// run again after the restart).
func (s *Services) StartWorkers(ctx context.Context, jc jobs.Config) (*river.Client[pgx.Tx], error) {
	if jc.JobTimeout == 0 {
		jc.JobTimeout = s.Config.JobTimeout
	}
	if jc.RescueStuckAfter == 0 {
		jc.RescueStuckAfter = s.Config.RescueStuckAfter
	}
	if jc.SoftStopTimeout == 0 {
		jc.SoftStopTimeout = s.Config.ShutdownTimeout
	}
	if jc.BackoffFunc == nil {
		jc.BackoffFunc = s.backoff
	}
	workers := jobs.Workers(jobs.Deps{
		Audit: s.Audit, Router: s.Router, Dispatcher: s.Dispatcher, Maintenance: s.Maintenance,
		MetaTemplates: s.MetaTemplates, Callbacks: s.Callbacks, Rollups: s.Rollups, Limits: s.Limits, Uploads: s.Uploads,
		Alerts: s.Alerts, SMSLogs: s.SMSLogs,
		DispatchTimeout: app.DispatchTimeout(jc.JobTimeout, s.Config.SendTimeout),
	})
	client, err := jobs.NewWorkerClient(s.DB.Pool, workers, jc)
	if err != nil {
		return nil, err
	}
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("start workers: %w", err)
	}
	// The receipt applier works beside River's workers and stops with
	// them; a batch cut short rolls back and stays in the inbox.
	applyCtx, stopApplier := context.WithCancel(context.WithoutCancel(ctx))
	applier := &app.ReceiptApplier{Receipts: s.Receipts, Log: s.Log,
		Wake: s.DB.Listen(applyCtx, app.ReceiptInboxChannel, s.Log)}
	go applier.Run(applyCtx)
	go func() {
		<-client.Stopped()
		stopApplier()
	}()
	return client, nil
}
