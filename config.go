package main

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/app"
)

// envVar is one environment variable Herald reads. The loader and
// `herald help env` walk the same table, so what the help says is what the
// loader does.
type envVar struct {
	Name string
	// Default is the text used when the variable is unset or empty; it goes
	// through ParseFunc like a value that was set. Empty means no default:
	// the field keeps its zero value and the checks after the table may fill
	// it in or require it, as Usage says.
	Default string
	// Usage is the one-line description `herald help env` prints.
	Usage string
	// ParseFunc parses raw into cfg and checks it. Its error names the
	// variable, because the message is all an operator sees at start-up.
	ParseFunc func(cfg *app.Config, raw string) error
}

// defaultDataDir keeps the dev keys and credentials when HERALD_DATA_DIR is unset.
const defaultDataDir = ".data"

// envVars is the configuration table: every variable Herald reads, in the
// order the loader checks them and the help lists them.
func envVars() []envVar {
	vars := []envVar{
		{"HERALD_ENV", app.EnvDev, "dev or prod; prod requires the keys and HERALD_BASE_URL, and serves Secure cookies and HSTS", parseEnv},
		{"HERALD_ADDR", ":8080", "host:port the web server listens on", parseAddr},
		{"HERALD_BASE_URL", "", "public URL (webhook URLs shown to tenants, links); required and https in prod; dev: http://localhost:<port of HERALD_ADDR>", parseBaseURL},
		{"DATABASE_URL", app.DefaultDatabaseURL, "Postgres URL (any Postgres 15 or newer) of the runtime role web, worker and serve connect as; required in prod; the default is the project's local cluster", parseDatabaseURL},
		{"MIGRATE_DATABASE_URL", app.DefaultOwnerDatabaseURL, "Postgres URL of the role that owns Herald's schema, for herald migrate only, which grants DATABASE_URL's role what it needs; unset while DATABASE_URL is set: DATABASE_URL", parseMigrateDatabaseURL},
		{"HERALD_SECRET_KEY", "", "base64 of 32 random bytes (openssl rand -base64 32); encrypts channel secrets; required in prod; dev: generated once under HERALD_DATA_DIR", parseSecretKey},
		{"HERALD_SECRET_KEY_ID", "k1", "name of HERALD_SECRET_KEY, stored with each secret so that keys can rotate", parseSecretKeyID},
		{"HERALD_SESSION_KEY", "", "at least 32 bytes; signs console sessions; required in prod; dev: generated once under HERALD_DATA_DIR", parseSessionKey},
		{"HERALD_CLIENT_IP_HEADER", "", "header a trusted proxy sets to the client address (Fly-Client-IP on Fly.io), which sign-in throttling counts by; set it only when Herald is reachable solely through a proxy that overwrites it; unset: the peer address", parseClientIPHeader},
		{"HERALD_ADMIN_EMAIL", "", "operator admin created on start; set together with HERALD_ADMIN_PASSWORD", parseAdminEmail},
		{"HERALD_ADMIN_PASSWORD", "", "password of the operator admin in HERALD_ADMIN_EMAIL, taken as given", parseAdminPassword},
		{"HERALD_LOG_LEVEL", "info", "debug, info, warn or error", parseLogLevel},
		{"HERALD_LOG_FORMAT", "", "text or json; unset: text in dev, json in prod", parseLogFormat},
	}
	vars = append(vars, workerVars()...)
	vars = append(vars,
		envVar{"HERALD_SECRET_KEYS_OLD", "", "id:base64,...: earlier keys that still open the secrets they sealed", parseOldSecretKeys},
		envVar{"HERALD_DB_MAX_CONNS", "40", "connection pool size of one process (2 to 1000)", parseDBMaxConns},
	)
	vars = append(vars, quotaVars()...)
	return append(vars,
		envVar{"HERALD_SANDBOX_DELAY", "2s", "the sandbox provider's wait before each receipt", parseSandboxDelay},
		envVar{"HERALD_QUIET_HOURS", app.QuietHours{Start: app.DefaultQuietStart, End: app.DefaultQuietEnd}.String(), "the quiet hours new tenants start with, in each recipient's zone (HH:MM-HH:MM, or off); each tenant changes its own", parseQuietHours},
		envVar{"HERALD_API_KEY_CACHE_TTL", "5s", "how long a process trusts an API key it authenticated, so how long other processes may accept a revoked key (0s, no cache, to 1m)", parseAPIKeyCacheTTL},
		envVar{"HERALD_BREAKER_THRESHOLD", "10", "transient failures within HERALD_BREAKER_WINDOW that open a channel account's breaker", parseBreakerThreshold},
		envVar{"HERALD_BREAKER_WINDOW", "5m", "how far back the breaker counts transient failures", breakerDuration("HERALD_BREAKER_WINDOW", func(c *app.Config) *time.Duration { return &c.BreakerWindow })},
		envVar{"HERALD_BREAKER_OPEN_FOR", "1m", "how long an open breaker refuses sends", breakerDuration("HERALD_BREAKER_OPEN_FOR", func(c *app.Config) *time.Duration { return &c.BreakerOpenFor })},
		envVar{"HERALD_SNS_TOPIC_ARNS", "", "comma-separated SNS topics whose messages /webhooks/ses and /webhooks/sns-sms accept; unset: all refused", parseSNSTopicARNs},
		envVar{"HERALD_SMS_STATUS_SECRET", "", "secret (24+ characters) for SMS status records posted without an SNS envelope (header X-Herald-Webhook-Secret); unset: refused", parseSMSStatusSecret},
		envVar{"HERALD_PENDING_RECEIPT_HORIZON", "24h", "how long a receipt that arrives before its send is recorded waits for it (1m to 720h); maintenance then deletes and counts it", parsePendingReceiptHorizon},
		envVar{"HERALD_META_BASE_URL", "", "Meta Graph API URL the WhatsApp adapter calls (or a stand-in); unset: https://graph.facebook.com", parseMetaBaseURL},
		envVar{"HERALD_CURRENCY", "EUR", "ISO 4217 code of the currency prices and budgets are in (one for the installation)", parseCurrency},
		envVar{"HERALD_PPROF_ADDR", "", "private host:port to serve Go's profiler on; unset: off", parsePprofAddr},
		envVar{"HERALD_METRICS_ADDR", "", "private host:port to serve /metrics on, in every role (workers too); set: /metrics leaves the public port", parseMetricsAddr},
		envVar{"HERALD_METRICS_TOKEN", "", "bearer token (24+ characters) a scraper sends for /metrics on the public port; unset: /metrics is public in dev only", parseMetricsToken},
		envVar{"HERALD_SHUTDOWN_TIMEOUT", "25s", "how long running requests and jobs may finish after SIGTERM; no new job starts meanwhile, and jobs still running then are cancelled", parseShutdownTimeout},
		envVar{"HERALD_JOB_TIMEOUT", app.DefaultJobTimeout.String(), "how long one run of a job (a send included) may take before it is cancelled and retried (1s to 10m)",
			jobDuration("HERALD_JOB_TIMEOUT", 10*time.Minute, func(c *app.Config) *time.Duration { return &c.JobTimeout })},
		envVar{"HERALD_SEND_TIMEOUT", app.DefaultSendTimeout.String(), "how long one provider call may take, whatever its job spent before it; a call cut then has an unknown outcome and is not repeated at once (1s to 5m)",
			jobDuration("HERALD_SEND_TIMEOUT", 5*time.Minute, func(c *app.Config) *time.Duration { return &c.SendTimeout })},
		envVar{"HERALD_RESCUE_STUCK_AFTER", app.DefaultRescueStuckAfter.String(), "how long a job may stay running before it is taken for a crashed worker's and run again; at least HERALD_JOB_TIMEOUT + 2 x HERALD_SEND_TIMEOUT + " + app.RecordSentRetryFor.String() + " (a send's claim, two provider calls and the recording of its result); at most 24h",
			jobDuration("HERALD_RESCUE_STUCK_AFTER", 24*time.Hour, func(c *app.Config) *time.Duration { return &c.RescueStuckAfter })},
		envVar{"HERALD_WEBHOOK_ALLOW_PRIVATE", "false", "true lets webhook channel accounts and status callback endpoints call loopback receivers (127.0.0.0/8, ::1, internal host names) on any port, to try one on this machine; dev only (refused with HERALD_ENV=prod)", parseWebhookAllowPrivate},
		// The data directory is main's own business, not app.Config's: dataDir
		// reads it where it is needed. The row is here so that help lists it.
		envVar{"HERALD_DATA_DIR", defaultDataDir, "directory for the dev keys and the dev admin and demo credentials", func(*app.Config, string) error { return nil }},
	)
}

// workerVars has a row per queue, HERALD_WORKERS_<QUEUE>, in name order.
func workerVars() []envVar {
	queues := make([]string, 0, len(app.DefaultWorkers))
	for q := range app.DefaultWorkers {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	vars := make([]envVar, 0, len(queues))
	for _, q := range queues {
		name := "HERALD_WORKERS_" + strings.ToUpper(q)
		vars = append(vars, envVar{name, strconv.Itoa(app.DefaultWorkers[q]), "concurrent workers on the " + q + " queue (1 to 1000)", func(c *app.Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000 {
				return fmt.Errorf("%s must be a whole number from 1 to 1000, got %q", name, v)
			}
			c.Workers[q] = n
			return nil
		}})
	}
	return vars
}

// quotaVars has a row per plan and channel, HERALD_QUOTA_<PLAN>_<CHANNEL>.
func quotaVars() []envVar {
	plans := make([]string, 0, len(app.DefaultQuotas))
	for p := range app.DefaultQuotas {
		plans = append(plans, p)
	}
	sort.Strings(plans)
	var vars []envVar
	for _, plan := range plans {
		for _, ch := range app.Channels {
			n, ok := app.DefaultQuotas[plan][ch]
			if !ok {
				continue
			}
			name := "HERALD_QUOTA_" + plan + "_" + string(ch)
			def := strconv.Itoa(n)
			if n == app.Unlimited {
				def = "unlimited"
			}
			vars = append(vars, envVar{name, def, fmt.Sprintf("monthly %s messages on the %s plan: a whole number or unlimited", ch, plan), func(c *app.Config, v string) error {
				if v = strings.ToLower(v); v == "unlimited" {
					c.Quotas[plan][ch] = app.Unlimited
					return nil
				}
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return fmt.Errorf("%s must be a whole number or \"unlimited\", got %q", name, v)
				}
				c.Quotas[plan][ch] = n
				return nil
			}})
		}
	}
	return vars
}

// configFromEnv reads and checks the configuration through getenv: first
// every row of the table, then the checks that involve several variables.
// Every error names the variable at fault. In dev, SecretKey and SessionKey
// may stay empty for loadConfig to fill with development keys; in prod they
// are required.
func configFromEnv(getenv func(string) string) (app.Config, error) {
	c := newConfig()
	given := map[string]string{}
	for _, v := range envVars() {
		raw := getenv(v.Name)
		given[v.Name] = raw
		if raw == "" {
			raw = v.Default
		}
		if raw == "" {
			continue
		}
		if err := v.ParseFunc(&c, raw); err != nil {
			return c, err
		}
	}
	return c, checkConfig(&c, given)
}

// newConfig is an empty configuration with the maps the rows fill.
func newConfig() app.Config {
	c := app.Config{
		Workers: make(map[string]int, len(app.DefaultWorkers)),
		Quotas:  make(map[string]map[app.Channel]int, len(app.DefaultQuotas)),
	}
	for plan := range app.DefaultQuotas {
		c.Quotas[plan] = map[app.Channel]int{}
	}
	return c
}

// checkConfig applies the defaults and rules that depend on more than one
// variable; given holds the raw values, empty for those unset.
func checkConfig(c *app.Config, given map[string]string) error {
	prod := c.Env == app.EnvProd
	if c.BaseURL == nil {
		if prod {
			return fmt.Errorf("HERALD_BASE_URL is required when HERALD_ENV=prod (the public URL providers call back)")
		}
		if err := parseBaseURL(c, "http://localhost"+portSuffix(c.Addr)); err != nil {
			return err
		}
	}
	if prod && c.BaseURL.Scheme != "https" {
		return fmt.Errorf("HERALD_BASE_URL must use https when HERALD_ENV=prod, got %q", given["HERALD_BASE_URL"])
	}
	if prod && given["DATABASE_URL"] == "" {
		return fmt.Errorf("DATABASE_URL is required when HERALD_ENV=prod")
	}
	if given["MIGRATE_DATABASE_URL"] == "" && given["DATABASE_URL"] != "" {
		// The local cluster's owner is not the owner of a database
		// named elsewhere.
		c.MigrateDatabaseURL = c.DatabaseURL
	}
	if prod && c.SecretKey == nil {
		return fmt.Errorf("HERALD_SECRET_KEY is required when HERALD_ENV=prod (base64 of 32 random bytes)")
	}
	if prod && c.SessionKey == nil {
		return fmt.Errorf("HERALD_SESSION_KEY is required when HERALD_ENV=prod (at least 32 bytes)")
	}
	if (c.AdminEmail == "") != (c.AdminPassword == "") {
		return fmt.Errorf("HERALD_ADMIN_EMAIL and HERALD_ADMIN_PASSWORD must be set together")
	}
	if c.RescueStuckAfter < app.DispatchTimeout(c.JobTimeout, c.SendTimeout)+app.RecordSentRetryFor {
		// A job still running (or still recording an accepted send) would be
		// rescued and run a second time beside itself.
		return fmt.Errorf("HERALD_RESCUE_STUCK_AFTER (%s) must be at least HERALD_JOB_TIMEOUT (%s) + 2 x HERALD_SEND_TIMEOUT (%s) + %s, so that a running send is never rescued",
			c.RescueStuckAfter, c.JobTimeout, cmp.Or(c.SendTimeout, app.DefaultSendTimeout), app.RecordSentRetryFor)
	}
	if prod && c.WebhookAllowPrivate {
		return fmt.Errorf("HERALD_WEBHOOK_ALLOW_PRIVATE must not be set when HERALD_ENV=prod: tenants could make Herald call its own network")
	}
	if c.LogFormat == "" {
		c.LogFormat = "text"
		if prod {
			c.LogFormat = "json"
		}
	}
	return nil
}

func parseEnv(c *app.Config, v string) error {
	c.Env = strings.ToLower(v)
	if c.Env != app.EnvDev && c.Env != app.EnvProd {
		return fmt.Errorf("HERALD_ENV must be %q or %q, got %q", app.EnvDev, app.EnvProd, c.Env)
	}
	return nil
}

func parseAddr(c *app.Config, v string) error {
	if _, port, err := net.SplitHostPort(v); err != nil {
		return fmt.Errorf("HERALD_ADDR must be host:port (e.g. :8080), got %q", v)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("HERALD_ADDR has an invalid port %q", port)
	}
	c.Addr = v
	return nil
}

func parseBaseURL(c *app.Config, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("HERALD_BASE_URL must be an absolute http(s) URL, got %q", v)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	c.BaseURL = u
	return nil
}

func parseDatabaseURL(c *app.Config, v string) error {
	if u, err := url.Parse(v); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// Without the value: it may hold a password.
		return fmt.Errorf("DATABASE_URL must be a postgres:// URL")
	}
	c.DatabaseURL = v
	return nil
}

func parseMigrateDatabaseURL(c *app.Config, v string) error {
	if u, err := url.Parse(v); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return fmt.Errorf("MIGRATE_DATABASE_URL must be a postgres:// URL")
	}
	c.MigrateDatabaseURL = v
	return nil
}

func parseSecretKey(c *app.Config, v string) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil || len(key) != 32 {
		return fmt.Errorf("HERALD_SECRET_KEY must be base64 of exactly 32 random bytes (try: openssl rand -base64 32)")
	}
	c.SecretKey = key
	return nil
}

func parseSecretKeyID(c *app.Config, v string) error {
	if len(v) > 32 || strings.ContainsAny(v, " :\t\n") {
		return fmt.Errorf("HERALD_SECRET_KEY_ID must be a short name without spaces or colons, got %q", v)
	}
	c.SecretKeyID = v
	return nil
}

func parseSessionKey(c *app.Config, v string) error {
	if len(v) < 32 {
		return fmt.Errorf("HERALD_SESSION_KEY must be at least 32 bytes long, got %d", len(v))
	}
	c.SessionKey = []byte(v)
	return nil
}

func parseClientIPHeader(c *app.Config, v string) error {
	c.ClientIPHeader = strings.TrimSpace(v)
	if strings.ContainsAny(c.ClientIPHeader, " :\t\r\n") {
		return fmt.Errorf("HERALD_CLIENT_IP_HEADER must be a header name such as Fly-Client-IP, got %q", c.ClientIPHeader)
	}
	return nil
}

func parseAdminEmail(c *app.Config, v string) error {
	c.AdminEmail = strings.TrimSpace(v)
	return nil
}

func parseAdminPassword(c *app.Config, v string) error {
	// Taken as given: spaces may be part of the password.
	c.AdminPassword = v
	return nil
}

func parseLogLevel(c *app.Config, v string) error {
	if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
		return fmt.Errorf("HERALD_LOG_LEVEL must be debug, info, warn or error, got %q", v)
	}
	return nil
}

func parseLogFormat(c *app.Config, v string) error {
	c.LogFormat = strings.ToLower(v)
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("HERALD_LOG_FORMAT must be text or json, got %q", c.LogFormat)
	}
	return nil
}

func parseOldSecretKeys(c *app.Config, v string) error {
	c.OldSecretKeys = map[string][]byte{}
	for _, part := range strings.Split(v, ",") {
		id, b64, ok := strings.Cut(strings.TrimSpace(part), ":")
		key, err := base64.StdEncoding.DecodeString(b64)
		if !ok || id == "" || err != nil || len(key) != 32 {
			return fmt.Errorf("HERALD_SECRET_KEYS_OLD must be a comma-separated list of id:base64-key (32 bytes each)")
		}
		c.OldSecretKeys[id] = key
	}
	return nil
}

func parseDBMaxConns(c *app.Config, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 2 || n > 1000 {
		return fmt.Errorf("HERALD_DB_MAX_CONNS must be a whole number from 2 to 1000, got %q", v)
	}
	c.DBMaxConns = int32(n)
	return nil
}

func parseQuietHours(c *app.Config, v string) error {
	if strings.TrimSpace(v) == "off" {
		c.QuietHours = app.QuietHours{}
		return nil
	}
	start, end, ok := strings.Cut(v, "-")
	s, err1 := app.ParseClock(start)
	e, err2 := app.ParseClock(end)
	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("HERALD_QUIET_HOURS must be a window such as 21:00-08:00, or off, got %q", v)
	}
	c.QuietHours = app.QuietHours{Start: s, End: e}
	return nil
}

func parseSandboxDelay(c *app.Config, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("HERALD_SANDBOX_DELAY must be a duration such as 2s or 0s, got %q", v)
	}
	c.SandboxDelay = d
	return nil
}

func parseAPIKeyCacheTTL(c *app.Config, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > time.Minute {
		return fmt.Errorf("HERALD_API_KEY_CACHE_TTL must be a duration from 0s (no cache) to 1m, got %q", v)
	}
	c.APIKeyCacheTTL = d
	return nil
}

func parseBreakerThreshold(c *app.Config, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("HERALD_BREAKER_THRESHOLD must be a whole number of at least 1, got %q", v)
	}
	c.BreakerThreshold = n
	return nil
}

// breakerDuration parses a positive duration into the field field returns.
func breakerDuration(name string, field func(*app.Config) *time.Duration) func(*app.Config, string) error {
	return func(c *app.Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s must be a positive duration such as 1m, got %q", name, v)
		}
		*field(c) = d
		return nil
	}
}

func parsePendingReceiptHorizon(c *app.Config, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Minute || d > 720*time.Hour {
		return fmt.Errorf("HERALD_PENDING_RECEIPT_HORIZON must be a duration from 1m to 720h, such as 24h, got %q", v)
	}
	c.PendingReceiptHorizon = d
	return nil
}

func parseSNSTopicARNs(c *app.Config, v string) error {
	for _, arn := range strings.Split(v, ",") {
		if arn = strings.TrimSpace(arn); arn == "" {
			continue
		}
		if !strings.HasPrefix(arn, "arn:aws") || strings.Count(arn, ":") != 5 {
			return fmt.Errorf("HERALD_SNS_TOPIC_ARNS must list topic ARNs such as arn:aws:sns:eu-central-1:123456789012:ses-events, got %q", arn)
		}
		c.SNSTopicARNs = append(c.SNSTopicARNs, arn)
	}
	return nil
}

func parseSMSStatusSecret(c *app.Config, v string) error {
	if len(v) < 24 {
		// Without the value: it is a secret.
		return fmt.Errorf("HERALD_SMS_STATUS_SECRET must be at least 24 characters long")
	}
	c.SMSStatusSecret = v
	return nil
}

func parseMetaBaseURL(c *app.Config, v string) error {
	if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("HERALD_META_BASE_URL must be an absolute URL such as https://graph.facebook.com, got %q", v)
	}
	c.MetaBaseURL = v
	return nil
}

func parseCurrency(c *app.Config, v string) error {
	if !regexp.MustCompile(`^[A-Z]{3}$`).MatchString(v) {
		return fmt.Errorf("HERALD_CURRENCY must be an ISO 4217 code of three capital letters such as EUR, got %q", v)
	}
	c.Currency = v
	return nil
}

func parsePprofAddr(c *app.Config, v string) error {
	if _, _, err := net.SplitHostPort(v); err != nil {
		return fmt.Errorf("HERALD_PPROF_ADDR must be host:port such as 127.0.0.1:6060, got %q", v)
	}
	c.PprofAddr = v
	return nil
}

// jobDuration parses a duration from 1s to most into the field field
// returns.
func jobDuration(name string, most time.Duration, field func(*app.Config) *time.Duration) func(*app.Config, string) error {
	return func(c *app.Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > most {
			return fmt.Errorf("%s must be a duration from 1s to %s such as 30s, got %q", name, most, v)
		}
		*field(c) = d
		return nil
	}
}

func parseWebhookAllowPrivate(c *app.Config, v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("HERALD_WEBHOOK_ALLOW_PRIVATE must be true or false, got %q", v)
	}
	c.WebhookAllowPrivate = b
	return nil
}

func parseMetricsAddr(c *app.Config, v string) error {
	if _, _, err := net.SplitHostPort(v); err != nil {
		return fmt.Errorf("HERALD_METRICS_ADDR must be host:port such as :9091, got %q", v)
	}
	c.MetricsAddr = v
	return nil
}

func parseMetricsToken(c *app.Config, v string) error {
	if len(v) < 24 {
		return fmt.Errorf("HERALD_METRICS_TOKEN must be at least 24 characters (it guards /metrics on the public port), got %d", len(v))
	}
	c.MetricsToken = v
	return nil
}

func parseShutdownTimeout(c *app.Config, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return fmt.Errorf("HERALD_SHUTDOWN_TIMEOUT must be a positive duration such as 25s, got %q", v)
	}
	c.ShutdownTimeout = d
	return nil
}

// portSuffix is ":port" for a base URL on addr's port, empty for port 80.
func portSuffix(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	if port == "" || port == "80" {
		return ""
	}
	return ":" + port
}

// printEnvHelp writes the configuration table for `herald help env`.
func printEnvHelp(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tDEFAULT\tDESCRIPTION")
	for _, v := range envVars() {
		def := v.Default
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.Name, def, v.Usage)
	}
	return tw.Flush()
}

// loadConfig reads the environment and, in dev, fills unset keys with ones
// generated once and kept under the data directory, so that restarts keep
// sessions and stored secrets readable.
func loadConfig(getenv func(string) string) (app.Config, error) {
	cfg, err := configFromEnv(getenv)
	if err != nil {
		return cfg, err
	}
	if !cfg.Dev() {
		return cfg, nil
	}
	dir := dataDir(getenv)
	if cfg.SecretKey == nil {
		if cfg.SecretKey, err = devKey(dir, "secret.key", 32); err != nil {
			return cfg, fmt.Errorf("HERALD_SECRET_KEY is unset and the dev key could not be kept: %w", err)
		}
	}
	if cfg.SessionKey == nil {
		if cfg.SessionKey, err = devKey(dir, "session.key", 48); err != nil {
			return cfg, fmt.Errorf("HERALD_SESSION_KEY is unset and the dev key could not be kept: %w", err)
		}
	}
	return cfg, nil
}

func dataDir(getenv func(string) string) string {
	if d := getenv("HERALD_DATA_DIR"); d != "" {
		return d
	}
	return defaultDataDir
}

// devKey returns n random bytes kept in dir/name, creating the file on first use.
func devKey(dir, name string, n int) ([]byte, error) {
	path := filepath.Join(dir, name)
	if b, err := os.ReadFile(path); err == nil {
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(key) != n {
			return nil, fmt.Errorf("%s is damaged; delete it to generate a new one", path)
		}
		return key, nil
	}
	key := make([]byte, n)
	_, _ = rand.Read(key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, err
	}
	return key, nil
}
