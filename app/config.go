package app

import (
	"cmp"
	"log/slog"
	"net/url"
	"time"
)

// Environments Herald runs in. Production refuses to start without explicit
// keys and marks cookies Secure.
const (
	EnvDev  = "dev"
	EnvProd = "prod"
)

// DefaultDatabaseURL is the project's own local cluster, started by
// `go tool task db` when DATABASE_URL is unset, as the runtime role
// herald_app that web, worker and serve connect as (db/roles.go).
const DefaultDatabaseURL = "postgres://herald_app:herald_app@127.0.0.1:54320/herald?sslmode=disable"

// DefaultOwnerDatabaseURL is the same database as the role herald, which
// owns Herald's schema: `herald migrate` connects as it when
// MIGRATE_DATABASE_URL and DATABASE_URL are unset.
const DefaultOwnerDatabaseURL = "postgres://herald:herald@127.0.0.1:54320/herald?sslmode=disable"

// Queue names. Each channel dispatches on its own queue so that a slow
// provider cannot starve the others.
const (
	QueueRoute            = "route"
	QueueDispatchWhatsApp = "dispatch_whatsapp"
	QueueDispatchEmail    = "dispatch_email"
	QueueDispatchSMS      = "dispatch_sms"
	QueueDispatchWebhook  = "dispatch_webhook"
	QueueMaintenance      = "maintenance"
	// QueueCallback posts status callbacks to tenants' endpoints.
	QueueCallback = "callback"
)

// DefaultWorkers is the number of concurrent workers per queue when
// HERALD_WORKERS_<QUEUE> is not set. Dispatch queues wait on provider I/O;
// the routing queue waits on the database only (its jobs send nothing), so
// it gets about as many workers as the pool has connections for it: more
// would only queue for a connection, where River's priorities no longer
// order them, and an urgent event's route job would wait behind a burst's
// (the benchmark's noisy-neighbour phase, a 1,000-event burst: the quiet
// tenant's p50 fell from 1.46 s to 0.30 s with 8 route and 16 e-mail
// workers instead of 100 and 100; end to end, 16 route workers sent 111
// and 120 messages/s where 100 sent 90).
var DefaultWorkers = map[string]int{
	QueueRoute:            16,
	QueueDispatchWhatsApp: 100,
	QueueDispatchEmail:    100,
	QueueDispatchSMS:      100,
	QueueDispatchWebhook:  50,
	QueueMaintenance:      2,
	QueueCallback:         20,
}

// Config is Herald's configuration. Package main reads it from the
// environment at start (config.go there has the variables and their checks).
type Config struct {
	Env     string
	Addr    string
	BaseURL *url.URL
	// DatabaseURL is where web, worker and serve connect, as the runtime
	// role; MigrateDatabaseURL is where `herald migrate` connects, as the
	// role that owns the schema.
	DatabaseURL        string
	MigrateDatabaseURL string
	// SecretKey encrypts channel secrets (AES-256); SecretKeyID names it so
	// that stored secrets say which key sealed them.
	SecretKey   []byte
	SecretKeyID string
	// SessionKey signs console sessions.
	SessionKey    []byte
	AdminEmail    string
	AdminPassword string
	LogLevel      slog.Level
	LogFormat     string
	Workers       map[string]int
	// OldSecretKeys open secrets sealed before a key rotation (id -> key).
	OldSecretKeys map[string][]byte
	// DBMaxConns caps the connection pool of one process.
	DBMaxConns int32
	// Quotas are the monthly messages per plan and channel.
	Quotas map[string]map[Channel]int
	// QuietHours are the quiet hours new tenants start with
	// (HERALD_QUIET_HOURS; a tenant changes its own); the zero value is
	// none.
	QuietHours QuietHours
	// SandboxDelay is how long the sandbox waits before each receipt.
	SandboxDelay time.Duration
	// APIKeyCacheTTL is how long a process trusts an API key it has
	// authenticated before reading it again (APIKeys.CacheTTL); it bounds
	// how long another process may still accept a revoked key.
	APIKeyCacheTTL time.Duration
	// BreakerThreshold transient failures within BreakerWindow open a
	// channel account's breaker for BreakerOpenFor.
	BreakerThreshold int
	BreakerWindow    time.Duration
	BreakerOpenFor   time.Duration
	// SNSTopicARNs are the SNS topics whose messages /webhooks/ses and
	// /webhooks/sns-sms accept (and whose subscriptions they confirm).
	SNSTopicARNs []string
	// SMSStatusSecret authenticates SMS delivery-status records posted
	// without an SNS envelope (header X-Herald-Webhook-Secret).
	SMSStatusSecret string
	// PendingReceiptHorizon is how long a receipt that overtook its send
	// is kept waiting for the send to be recorded.
	PendingReceiptHorizon time.Duration
	// MetaBaseURL points the WhatsApp adapter at Meta's Graph API (or a
	// stand-in); empty means https://graph.facebook.com.
	MetaBaseURL string
	// Currency is the ISO 4217 code of the installation's prices and
	// budgets (HERALD_CURRENCY).
	Currency string
	// PprofAddr, when set, serves Go's profiler there (keep it private).
	PprofAddr string
	// MetricsAddr, when set, serves /metrics on its own listener (a private
	// port a scraper reaches, in every role, workers included) and not on
	// the public one.
	MetricsAddr string
	// MetricsToken, when set, lets a scraper read /metrics on the public
	// listener with "Authorization: Bearer <token>". With neither it nor
	// MetricsAddr, /metrics is public in dev only.
	MetricsToken string
	// ClientIPHeader names the header a trusted proxy in front of Herald
	// sets to the client's address (Fly-Client-IP on Fly.io); empty means
	// the peer address. Sign-in throttling counts per client address, so
	// behind a proxy this must be set.
	ClientIPHeader string
	// ShutdownTimeout bounds how long running jobs and requests may take to
	// finish after SIGTERM.
	ShutdownTimeout time.Duration
	// JobTimeout bounds one run of any job; its context is cancelled
	// after that long. A send's provider calls are not part of it: each
	// has SendTimeout of its own.
	JobTimeout time.Duration
	// SendTimeout bounds one provider call, whatever the job spent before
	// it (claim, locks, database waits); zero: DefaultSendTimeout.
	SendTimeout time.Duration
	// RescueStuckAfter is how long a job may stay running before River
	// takes it for a crashed worker's and runs it again. It must exceed a
	// send's whole run (DispatchTimeout) plus RecordSentRetryFor, so that
	// a send still running (or still recording its result) is never
	// rescued.
	RescueStuckAfter time.Duration
	// WebhookAllowPrivate lets the webhook channel call loopback
	// receivers on any port; dev only, so that a receiver on the
	// developer's machine can be tried.
	WebhookAllowPrivate bool
}

// Default job run bounds (HERALD_JOB_TIMEOUT, HERALD_SEND_TIMEOUT,
// HERALD_RESCUE_STUCK_AFTER): a job's own work is cut after 15 s, a
// provider call after 15 s of its own, and a crashed worker's job is
// running again about 65 s later plus River's rescue interval (30 s).
const (
	DefaultJobTimeout       = 15 * time.Second
	DefaultSendTimeout      = 15 * time.Second
	DefaultRescueStuckAfter = 65 * time.Second
)

// DispatchTimeout bounds one run of a dispatch job: its own work (the
// claim and the recording, job) and up to two provider calls (send) of
// their own time each, the second when Meta asks for the message's
// template instead of its text (131047).
func DispatchTimeout(job, send time.Duration) time.Duration {
	return cmp.Or(job, DefaultJobTimeout) + 2*cmp.Or(send, DefaultSendTimeout)
}

// Dev reports whether Herald runs in development mode.
func (c Config) Dev() bool { return c.Env == EnvDev }

// RuntimeRole is the role DatabaseURL connects as: `herald migrate` grants
// it what Herald's processes need (db.GrantRuntime).
func (c Config) RuntimeRole() string {
	u, err := url.Parse(c.DatabaseURL)
	if err != nil || u.User == nil {
		return ""
	}
	return u.User.Username()
}
