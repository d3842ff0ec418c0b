// Package awsclient holds what Herald's AWS adapters (ses, sns) share: the
// account's region and credentials, one SDK client per account with the
// SDK's retries off, and the classification of failures every AWS API
// returns the same way. Each adapter keeps its own request and error-code
// table.
package awsclient

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// Account settings and secrets every AWS adapter reads.
const (
	ConfigRegion = "region"

	SecretAccessKeyID     = "access_key_id"
	SecretSecretAccessKey = "secret_access_key"
	// SecretSessionToken is optional, for temporary credentials.
	SecretSessionToken = "session_token"
)

// regionPattern accepts AWS region names (eu-central-1, us-gov-west-1).
// The region becomes part of the endpoint host, so a tenant must not be
// able to put anything else there.
var regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)

// settings is what a client depends on.
type settings struct {
	region                             string
	accessKey, secretKey, sessionToken string
	static                             bool
	// endpoint is the account's own endpoint URL, or empty.
	endpoint string
}

// fingerprint hashes the settings so that the cache never holds secrets in
// its keys.
func (s settings) fingerprint() string {
	h := sha256.New()
	for _, v := range []string{s.region, s.accessKey, s.secretKey, s.sessionToken, fmt.Sprint(s.static), s.endpoint} {
		fmt.Fprintf(h, "%d:%s;", len(v), v)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// readSettings reads the account's region, credentials and endpoint;
// service names the AWS service in the reasons, which the tenant reads.
func readSettings(a provider.Account, service string, ep Endpoints) (settings, error) {
	s := settings{
		region:       strings.TrimSpace(a.Config[ConfigRegion]),
		accessKey:    strings.TrimSpace(a.Secrets[SecretAccessKeyID]),
		secretKey:    strings.TrimSpace(a.Secrets[SecretSecretAccessKey]),
		sessionToken: strings.TrimSpace(a.Secrets[SecretSessionToken]),
	}
	switch {
	case s.region == "":
		return s, ConfigError("config_missing_region", fmt.Sprintf("The %s account has no region.", service))
	case !regionPattern.MatchString(s.region):
		return s, ConfigError("config_invalid_region", fmt.Sprintf("%q is not an AWS region.", s.region))
	case (s.accessKey == "") != (s.secretKey == ""):
		return s, ConfigError("config_incomplete_credentials", fmt.Sprintf("The %s account needs both access_key_id and secret_access_key, or neither for the default credential chain.", service))
	case s.accessKey == "" && s.sessionToken != "":
		return s, ConfigError("config_incomplete_credentials", fmt.Sprintf("The %s account has a session_token without access keys.", service))
	}
	s.static = s.accessKey != ""
	if raw := strings.TrimSpace(a.Config[ConfigEndpoint]); raw != "" {
		if !s.static {
			// Requests signed with the server's own credentials go to
			// AWS's endpoints only, never to one an account names.
			return s, ConfigError("config_endpoint_needs_keys", fmt.Sprintf("The %s account names an endpoint URL: that needs the account's own access keys.", service))
		}
		endpoint, err := CheckEndpoint(raw, ep.AnyHost)
		if err != nil {
			return s, ConfigError("config_invalid_endpoint", fmt.Sprintf("The %s account's endpoint URL: %v.", service, err))
		}
		s.endpoint = endpoint
	}
	return s, nil
}

// ConfigError is a problem with the account's settings, which only the
// tenant can fix.
func ConfigError(code, reason string) *provider.Error {
	return &provider.Error{Code: code, Class: provider.Permanent, Reason: reason, Account: true}
}

// cached is the client of one account, with the fingerprint of the
// settings it was built from.
type cached[C any] struct {
	fingerprint string
	client      C
}

// Cache keeps one client of type C per account. An account whose region
// or credentials changed gets a new client that replaces the old one, so
// the cache holds at most one entry per account. The zero value is ready
// to use.
type Cache[C any] struct {
	mu      sync.Mutex
	clients map[uuid.UUID]cached[C]

	httpOnce sync.Once
	http     *awshttp.BuildableClient
}

// Client returns the account's client, building it on first use, and
// whether the account brings its own keys, which decides who must fix
// rejected credentials (see Classify). service names the AWS service in
// the reasons of configuration errors; ep says which endpoints accounts
// may use. build makes the client from the account's aws.Config, whose
// BaseEndpoint and ConfigSources carry the endpoint; it is where the
// adapter sets its service's options, which must leave BaseEndpoint
// alone.
func (c *Cache[C]) Client(ctx context.Context, a provider.Account, service string, ep Endpoints, build func(aws.Config) C) (C, bool, error) {
	var zero C
	s, err := readSettings(a, service, ep)
	if err != nil {
		return zero, false, err
	}
	fp := s.fingerprint()
	if cl, ok := c.get(a.ID, fp); ok {
		return cl, s.static, nil
	}
	cfg, err := awsConfig(ctx, s)
	if err != nil {
		return zero, false, err
	}
	if endpoint := cmp.Or(ep.Override, s.endpoint); endpoint != "" {
		// An explicit endpoint wins over the environment's: without
		// sources the SDK finds no AWS_ENDPOINT_URL_<SERVICE> to replace
		// it with.
		cfg.BaseEndpoint, cfg.ConfigSources = aws.String(endpoint), nil
	}
	cl := build(cfg)
	c.put(a.ID, fp, cl)
	return cl, s.static, nil
}

// awsConfig returns the configuration a client of the account starts from.
// Its clients never retry a call themselves (noRetries).
func awsConfig(ctx context.Context, s settings) (aws.Config, error) {
	cfg, err := baseConfig(ctx, s)
	cfg.Retryer = noRetries
	return cfg, err
}

// noRetries is the retryer of every client: one request per call. The
// SDK's standard retryer would send SendEmail or Publish again after a
// connection broke once the request was written, and the provider may
// have taken the first (a message twice). Herald's dispatcher retries
// itself, knowing what it does not know (see app.OutcomeUnknown).
func noRetries() aws.Retryer { return aws.NopRetryer{} }

// baseConfig is the account's configuration before Herald's own settings.
func baseConfig(ctx context.Context, s settings) (aws.Config, error) {
	if s.static {
		// Static keys need nothing else from the environment than where
		// the service is: not loading the shared config keeps the
		// server's credentials, profile and settings out of tenants'
		// clients, while the standard endpoint variables
		// (AWS_ENDPOINT_URL_SESV2, AWS_ENDPOINT_URL_SNS, AWS_ENDPOINT_URL)
		// apply as in any SDK client.
		env, err := config.NewEnvConfig()
		if err != nil {
			return aws.Config{}, &provider.Error{Code: "aws_config", Class: provider.Transient, Reason: err.Error()}
		}
		src := endpointSource{env: env}
		cfg := aws.Config{
			Region:        s.region,
			Credentials:   aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(s.accessKey, s.secretKey, s.sessionToken)),
			ConfigSources: []any{src},
		}
		if env.BaseEndpoint != "" && !src.ignored() {
			cfg.BaseEndpoint = aws.String(env.BaseEndpoint)
		}
		return cfg, nil
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(s.region))
	if err != nil {
		// The server's own AWS configuration is broken, not the account.
		return aws.Config{}, &provider.Error{Code: "aws_config", Class: provider.Transient, Reason: err.Error()}
	}
	return cfg, nil
}

// HTTPClient returns override, or when it is nil the SDK's default HTTP
// client, one for all accounts of the cache, so that they share
// connections to the regional endpoints.
func (c *Cache[C]) HTTPClient(override *http.Client) aws.HTTPClient {
	if override != nil {
		return override
	}
	c.httpOnce.Do(func() { c.http = awshttp.NewBuildableClient() })
	return c.http
}

// Len counts the cached clients; tests use it to check that a changed
// account replaces its client instead of adding one.
func (c *Cache[C]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.clients)
}

func (c *Cache[C]) get(id uuid.UUID, fingerprint string) (C, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.clients[id]; ok && cc.fingerprint == fingerprint {
		return cc.client, true
	}
	var zero C
	return zero, false
}

func (c *Cache[C]) put(id uuid.UUID, fingerprint string, client C) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients == nil {
		c.clients = make(map[uuid.UUID]cached[C])
	}
	c.clients[id] = cached[C]{fingerprint: fingerprint, client: client}
}
