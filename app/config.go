package app

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Environments Herald runs in. Production refuses to start without explicit
// keys and marks cookies Secure.
const (
	EnvDev  = "dev"
	EnvProd = "prod"
)

// DefaultDatabaseURL is the project's own local cluster, started by
// `go tool task db` when DATABASE_URL is unset.
const DefaultDatabaseURL = "postgres://herald:herald@127.0.0.1:54320/herald?sslmode=disable"

// Queue names. Each channel dispatches on its own queue so that a slow
// provider cannot starve the others.
const (
	QueueRoute            = "route"
	QueueDispatchWhatsApp = "dispatch_whatsapp"
	QueueDispatchEmail    = "dispatch_email"
	QueueDispatchSMS      = "dispatch_sms"
	QueueDispatchWebhook  = "dispatch_webhook"
	QueueMaintenance      = "maintenance"
)

// DefaultWorkers is the number of concurrent workers per queue when
// HERALD_WORKERS_<QUEUE> is not set. Dispatch queues wait on provider I/O, so
// they get more workers than the CPU-bound routing queue.
var DefaultWorkers = map[string]int{
	QueueRoute:            50,
	QueueDispatchWhatsApp: 100,
	QueueDispatchEmail:    100,
	QueueDispatchSMS:      100,
	QueueDispatchWebhook:  50,
	QueueMaintenance:      2,
}

// Config is Herald's configuration, read from the environment at start.
type Config struct {
	Env         string
	Addr        string
	BaseURL     *url.URL
	DatabaseURL string
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
	// MetaBaseURL points the WhatsApp adapter at Meta's Graph API (or a
	// stand-in); empty means https://graph.facebook.com.
	MetaBaseURL string
	// PprofAddr, when set, serves Go's profiler there (keep it private).
	PprofAddr string
	// ClientIPHeader names the header a trusted proxy in front of Herald
	// sets to the client's address (Fly-Client-IP on Fly.io); empty means
	// the peer address. Sign-in throttling counts per client address, so
	// behind a proxy this must be set.
	ClientIPHeader string
	// ShutdownTimeout bounds how long running jobs and requests may take to
	// finish after SIGTERM.
	ShutdownTimeout time.Duration
}

// Dev reports whether Herald runs in development mode.
func (c Config) Dev() bool { return c.Env == EnvDev }

// LoadConfig reads and validates the configuration through getenv. Every
// error names the variable at fault. In dev, SecretKey and SessionKey may be
// left empty for the caller to fill with generated development keys; in prod
// they are required.
func LoadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		Env:         strings.ToLower(getenv("HERALD_ENV")),
		Addr:        getenv("HERALD_ADDR"),
		DatabaseURL: getenv("DATABASE_URL"),
		AdminEmail:  strings.TrimSpace(getenv("HERALD_ADMIN_EMAIL")),
		// The password is taken as given: spaces may be part of it.
		AdminPassword: getenv("HERALD_ADMIN_PASSWORD"),
		Workers:       make(map[string]int, len(DefaultWorkers)),
	}
	if c.Env == "" {
		c.Env = EnvDev
	}
	if c.Env != EnvDev && c.Env != EnvProd {
		return c, fmt.Errorf("HERALD_ENV must be %q or %q, got %q", EnvDev, EnvProd, c.Env)
	}

	if c.Addr == "" {
		c.Addr = ":8080"
	}
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		return c, fmt.Errorf("HERALD_ADDR must be host:port (e.g. :8080), got %q", c.Addr)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return c, fmt.Errorf("HERALD_ADDR has an invalid port %q", port)
	}

	base := getenv("HERALD_BASE_URL")
	if base == "" {
		if c.Env == EnvProd {
			return c, fmt.Errorf("HERALD_BASE_URL is required when HERALD_ENV=prod (the public URL providers call back)")
		}
		base = "http://localhost" + portSuffix(c.Addr)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("HERALD_BASE_URL must be an absolute http(s) URL, got %q", base)
	}
	if c.Env == EnvProd && u.Scheme != "https" {
		return c, fmt.Errorf("HERALD_BASE_URL must use https when HERALD_ENV=prod, got %q", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	c.BaseURL = u

	if c.DatabaseURL == "" {
		if c.Env == EnvProd {
			return c, fmt.Errorf("DATABASE_URL is required when HERALD_ENV=prod")
		}
		c.DatabaseURL = DefaultDatabaseURL
	}
	if du, err := url.Parse(c.DatabaseURL); err != nil || (du.Scheme != "postgres" && du.Scheme != "postgresql") {
		return c, fmt.Errorf("DATABASE_URL must be a postgres:// URL")
	}

	if v := getenv("HERALD_SECRET_KEY"); v != "" {
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil || len(key) != 32 {
			return c, fmt.Errorf("HERALD_SECRET_KEY must be base64 of exactly 32 random bytes (try: openssl rand -base64 32)")
		}
		c.SecretKey = key
	} else if c.Env == EnvProd {
		return c, fmt.Errorf("HERALD_SECRET_KEY is required when HERALD_ENV=prod (base64 of 32 random bytes)")
	}
	c.SecretKeyID = getenv("HERALD_SECRET_KEY_ID")
	if c.SecretKeyID == "" {
		c.SecretKeyID = "k1"
	}
	if len(c.SecretKeyID) > 32 || strings.ContainsAny(c.SecretKeyID, " :\t\n") {
		return c, fmt.Errorf("HERALD_SECRET_KEY_ID must be a short name without spaces or colons, got %q", c.SecretKeyID)
	}

	if v := getenv("HERALD_SESSION_KEY"); v != "" {
		if len(v) < 32 {
			return c, fmt.Errorf("HERALD_SESSION_KEY must be at least 32 bytes long, got %d", len(v))
		}
		c.SessionKey = []byte(v)
	} else if c.Env == EnvProd {
		return c, fmt.Errorf("HERALD_SESSION_KEY is required when HERALD_ENV=prod (at least 32 bytes)")
	}

	c.ClientIPHeader = strings.TrimSpace(getenv("HERALD_CLIENT_IP_HEADER"))
	if strings.ContainsAny(c.ClientIPHeader, " :\t\r\n") {
		return c, fmt.Errorf("HERALD_CLIENT_IP_HEADER must be a header name such as Fly-Client-IP, got %q", c.ClientIPHeader)
	}

	if (c.AdminEmail == "") != (c.AdminPassword == "") {
		return c, fmt.Errorf("HERALD_ADMIN_EMAIL and HERALD_ADMIN_PASSWORD must be set together")
	}

	c.LogLevel = slog.LevelInfo
	if v := getenv("HERALD_LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return c, fmt.Errorf("HERALD_LOG_LEVEL must be debug, info, warn or error, got %q", v)
		}
	}
	c.LogFormat = strings.ToLower(getenv("HERALD_LOG_FORMAT"))
	switch c.LogFormat {
	case "":
		c.LogFormat = "text"
		if c.Env == EnvProd {
			c.LogFormat = "json"
		}
	case "text", "json":
	default:
		return c, fmt.Errorf("HERALD_LOG_FORMAT must be text or json, got %q", c.LogFormat)
	}

	queues := make([]string, 0, len(DefaultWorkers))
	for q := range DefaultWorkers {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	for _, q := range queues {
		name := "HERALD_WORKERS_" + strings.ToUpper(q)
		c.Workers[q] = DefaultWorkers[q]
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000 {
				return c, fmt.Errorf("%s must be a whole number from 1 to 1000, got %q", name, v)
			}
			c.Workers[q] = n
		}
	}

	if v := getenv("HERALD_SECRET_KEYS_OLD"); v != "" {
		c.OldSecretKeys = map[string][]byte{}
		for _, part := range strings.Split(v, ",") {
			id, b64, ok := strings.Cut(strings.TrimSpace(part), ":")
			key, err := base64.StdEncoding.DecodeString(b64)
			if !ok || id == "" || err != nil || len(key) != 32 {
				return c, fmt.Errorf("HERALD_SECRET_KEYS_OLD must be a comma-separated list of id:base64-key (32 bytes each)")
			}
			c.OldSecretKeys[id] = key
		}
	}

	c.DBMaxConns = 40
	if v := getenv("HERALD_DB_MAX_CONNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 || n > 1000 {
			return c, fmt.Errorf("HERALD_DB_MAX_CONNS must be a whole number from 2 to 1000, got %q", v)
		}
		c.DBMaxConns = int32(n)
	}

	c.Quotas = map[string]map[Channel]int{}
	for plan, limits := range DefaultQuotas {
		c.Quotas[plan] = map[Channel]int{}
		for ch, n := range limits {
			name := "HERALD_QUOTA_" + plan + "_" + string(ch)
			c.Quotas[plan][ch] = n
			if v := strings.ToLower(getenv(name)); v == "unlimited" {
				c.Quotas[plan][ch] = Unlimited
			} else if v != "" {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return c, fmt.Errorf("%s must be a whole number or \"unlimited\", got %q", name, v)
				}
				c.Quotas[plan][ch] = n
			}
		}
	}

	c.SandboxDelay = 2 * time.Second
	if v := getenv("HERALD_SANDBOX_DELAY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return c, fmt.Errorf("HERALD_SANDBOX_DELAY must be a duration such as 2s or 0s, got %q", v)
		}
		c.SandboxDelay = d
	}

	c.APIKeyCacheTTL = 5 * time.Second
	if v := getenv("HERALD_API_KEY_CACHE_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > time.Minute {
			return c, fmt.Errorf("HERALD_API_KEY_CACHE_TTL must be a duration from 0s (no cache) to 1m, got %q", v)
		}
		c.APIKeyCacheTTL = d
	}

	c.BreakerThreshold, c.BreakerWindow, c.BreakerOpenFor = 10, 5*time.Minute, time.Minute
	if v := getenv("HERALD_BREAKER_THRESHOLD"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return c, fmt.Errorf("HERALD_BREAKER_THRESHOLD must be a whole number of at least 1, got %q", v)
		}
		c.BreakerThreshold = n
	}
	for name, d := range map[string]*time.Duration{"HERALD_BREAKER_WINDOW": &c.BreakerWindow, "HERALD_BREAKER_OPEN_FOR": &c.BreakerOpenFor} {
		if v := getenv(name); v != "" {
			parsed, err := time.ParseDuration(v)
			if err != nil || parsed <= 0 {
				return c, fmt.Errorf("%s must be a positive duration such as 1m, got %q", name, v)
			}
			*d = parsed
		}
	}

	for _, arn := range strings.Split(getenv("HERALD_SNS_TOPIC_ARNS"), ",") {
		if arn = strings.TrimSpace(arn); arn == "" {
			continue
		}
		if !strings.HasPrefix(arn, "arn:aws") || strings.Count(arn, ":") != 5 {
			return c, fmt.Errorf("HERALD_SNS_TOPIC_ARNS must list topic ARNs such as arn:aws:sns:eu-central-1:123456789012:ses-events, got %q", arn)
		}
		c.SNSTopicARNs = append(c.SNSTopicARNs, arn)
	}
	c.SMSStatusSecret = getenv("HERALD_SMS_STATUS_SECRET")
	if c.SMSStatusSecret != "" && len(c.SMSStatusSecret) < 24 {
		return c, fmt.Errorf("HERALD_SMS_STATUS_SECRET must be at least 24 characters long")
	}

	c.MetaBaseURL = getenv("HERALD_META_BASE_URL")
	if c.MetaBaseURL != "" {
		if u, err := url.Parse(c.MetaBaseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return c, fmt.Errorf("HERALD_META_BASE_URL must be an absolute URL such as https://graph.facebook.com, got %q", c.MetaBaseURL)
		}
	}

	c.PprofAddr = getenv("HERALD_PPROF_ADDR")
	if c.PprofAddr != "" {
		if _, _, err := net.SplitHostPort(c.PprofAddr); err != nil {
			return c, fmt.Errorf("HERALD_PPROF_ADDR must be host:port such as 127.0.0.1:6060, got %q", c.PprofAddr)
		}
	}

	c.ShutdownTimeout = 25 * time.Second
	if v := getenv("HERALD_SHUTDOWN_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("HERALD_SHUTDOWN_TIMEOUT must be a positive duration such as 25s, got %q", v)
		}
		c.ShutdownTimeout = d
	}
	return c, nil
}

func portSuffix(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	if port == "" || port == "80" {
		return ""
	}
	return ":" + port
}
