package ses

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// Account settings and secrets the adapter reads.
const (
	ConfigRegion           = "region"
	ConfigSenderEmail      = "sender_email"
	ConfigSenderName       = "sender_name"
	ConfigReplyTo          = "reply_to"
	ConfigConfigurationSet = "configuration_set"

	SecretAccessKeyID     = "access_key_id"
	SecretSecretAccessKey = "secret_access_key"
	// SecretSessionToken is optional, for temporary credentials.
	SecretSessionToken = "session_token"
)

// regionPattern accepts AWS region names (eu-central-1, us-gov-west-1).
// The region becomes part of the endpoint host, so a tenant must not be
// able to put anything else there.
var regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)

// cachedClient is the client of one account, with the fingerprint of the
// settings it was built from.
type cachedClient struct {
	fingerprint string
	client      *sesv2.Client
}

// clientCache keeps one client per account. An account whose region or
// credentials changed gets a new client that replaces the old one, so the
// cache holds at most one entry per account.
type clientCache struct {
	mu      sync.Mutex
	clients map[uuid.UUID]cachedClient

	httpOnce sync.Once
	http     *awshttp.BuildableClient
}

// sharedHTTP returns the SDK's default HTTP client, one for all accounts,
// so that they share connections to the regional endpoints.
func (c *clientCache) sharedHTTP() *awshttp.BuildableClient {
	c.httpOnce.Do(func() { c.http = awshttp.NewBuildableClient() })
	return c.http
}

func (c *clientCache) get(id uuid.UUID, fingerprint string) *sesv2.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.clients[id]; ok && cc.fingerprint == fingerprint {
		return cc.client
	}
	return nil
}

func (c *clientCache) put(id uuid.UUID, fingerprint string, client *sesv2.Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients == nil {
		c.clients = make(map[uuid.UUID]cachedClient)
	}
	c.clients[id] = cachedClient{fingerprint: fingerprint, client: client}
}

// clientSettings is what a client depends on.
type clientSettings struct {
	region                             string
	accessKey, secretKey, sessionToken string
	static                             bool
}

// fingerprint hashes the settings so that the cache never holds secrets in
// its keys.
func (s clientSettings) fingerprint() string {
	h := sha256.New()
	for _, v := range []string{s.region, s.accessKey, s.secretKey, s.sessionToken, fmt.Sprint(s.static)} {
		fmt.Fprintf(h, "%d:%s;", len(v), v)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// settings reads the account's region and credentials.
func settings(a provider.Account) (clientSettings, error) {
	s := clientSettings{
		region:       strings.TrimSpace(a.Config[ConfigRegion]),
		accessKey:    strings.TrimSpace(a.Secrets[SecretAccessKeyID]),
		secretKey:    strings.TrimSpace(a.Secrets[SecretSecretAccessKey]),
		sessionToken: strings.TrimSpace(a.Secrets[SecretSessionToken]),
	}
	switch {
	case s.region == "":
		return s, configError("config_missing_region", "The SES account has no region.")
	case !regionPattern.MatchString(s.region):
		return s, configError("config_invalid_region", fmt.Sprintf("%q is not an AWS region.", s.region))
	case (s.accessKey == "") != (s.secretKey == ""):
		return s, configError("config_incomplete_credentials", "The SES account needs both access_key_id and secret_access_key, or neither for the default credential chain.")
	case s.accessKey == "" && s.sessionToken != "":
		return s, configError("config_incomplete_credentials", "The SES account has a session_token without access keys.")
	}
	s.static = s.accessKey != ""
	return s, nil
}

// client returns the account's SES client, building it on first use, and
// whether the account brings its own keys.
func (p *Provider) client(ctx context.Context, a provider.Account) (*sesv2.Client, bool, error) {
	s, err := settings(a)
	if err != nil {
		return nil, false, err
	}
	fp := s.fingerprint()
	if c := p.clients.get(a.ID, fp); c != nil {
		return c, s.static, nil
	}
	c, err := p.newClient(ctx, s)
	if err != nil {
		return nil, false, err
	}
	p.clients.put(a.ID, fp, c)
	return c, s.static, nil
}

// newClient builds a client with the SDK's retries off: the dispatcher's
// queue owns retries, and an SDK retry inside a send would hide attempts
// from it and multiply them.
func (p *Provider) newClient(ctx context.Context, s clientSettings) (*sesv2.Client, error) {
	final := func(o *sesv2.Options) {
		o.Retryer = aws.NopRetryer{}
		o.RetryMaxAttempts = 1
		if p.Endpoint != "" {
			o.BaseEndpoint = aws.String(p.Endpoint)
		}
		if p.HTTPClient != nil {
			o.HTTPClient = p.HTTPClient
		} else {
			o.HTTPClient = p.clients.sharedHTTP()
		}
	}
	if s.static {
		// Static keys need nothing from the environment; not loading the
		// shared config keeps the server's AWS settings out of tenants'
		// clients.
		o := sesv2.Options{
			Region:      s.region,
			Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(s.accessKey, s.secretKey, s.sessionToken)),
		}
		final(&o)
		return sesv2.New(o), nil
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(s.region))
	if err != nil {
		// The server's own AWS configuration is broken, not the account.
		return nil, &provider.Error{Code: "aws_config", Class: provider.Transient, Reason: err.Error()}
	}
	return sesv2.NewFromConfig(cfg, final), nil
}

// configError is a problem with the account's settings, which only the
// tenant can fix.
func configError(code, reason string) *provider.Error {
	return &provider.Error{Code: code, Class: provider.Permanent, Reason: reason, Account: true}
}
