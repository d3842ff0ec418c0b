package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app"
)

// AccountTx serves the console's channel-account pages.
type AccountTx interface {
	app.Tx
	Timeline(ctx context.Context, tenantID, messageID uuid.UUID) ([]*app.MessageEvent, error)
	InsertMessages(ctx context.Context, ms []*app.Message, firsts []*app.MessageEvent) ([]bool, error)
	MessageByID(ctx context.Context, tenantID, id uuid.UUID, forUpdate bool) (*app.Message, error)
	SetAccountStatus(ctx context.Context, tenantID, id uuid.UUID, status, reason string, at time.Time) error
	InsertAudit(ctx context.Context, e *app.AuditEntry) error
	CreateAccount(ctx context.Context, a *app.ChannelAccount) error
	AccountByID(ctx context.Context, tenantID, id uuid.UUID) (*app.ChannelAccount, error)
	ActiveAccount(ctx context.Context, tenantID uuid.UUID, ch app.Channel) (*app.ChannelAccount, error)
	// ListAccounts returns the tenant's accounts, newest first.
	ListAccounts(ctx context.Context, tenantID uuid.UUID, f AccountFilter, page PageRequest) ([]*app.ChannelAccount, error)
	// AccountForUpdate returns an account and locks it until the
	// transaction ends, so that two edits of its secrets cannot interleave.
	AccountForUpdate(ctx context.Context, tenantID, id uuid.UUID) (*app.ChannelAccount, error)
	// UpdateAccount stores an account's name, settings and sealed secrets.
	UpdateAccount(ctx context.Context, a *app.ChannelAccount) error
	// RateBuckets returns the stored token buckets of the keys that have one.
	RateBuckets(ctx context.Context, keys []string) (map[string]RateBucket, error)
	// BreakerStates returns the newest recorded breaker transition of each
	// of the tenant's accounts that has one, by account id.
	BreakerStates(ctx context.Context, tenantID uuid.UUID, accountIDs []uuid.UUID) (map[uuid.UUID]BreakerTransition, error)
	// AccountAudit returns the newest audit entries about one account.
	AccountAudit(ctx context.Context, tenantID, accountID uuid.UUID, limit int) ([]*app.AuditEntry, error)
	// AstrayReceipts counts, up to limit, the foreign receipts kept as
	// the account's (see app.InboxReceipt.Astray), with the newest one's
	// time and the configuration set it named.
	AstrayReceipts(ctx context.Context, tenantID, accountID uuid.UUID, limit int) (AstrayReceipts, error)
	// MessagesByAccount returns the newest messages sent through an account.
	MessagesByAccount(ctx context.Context, tenantID, accountID uuid.UUID, limit int) ([]*app.Message, error)
	// TestSendsSince counts the tenant's test messages created since a
	// time, after taking a lock on the tenant's tests that is held until
	// the transaction ends.
	TestSendsSince(ctx context.Context, tenantID uuid.UUID, since time.Time) (int, error)
}

// AccountFilter narrows the list of channel accounts; empty fields match all.
type AccountFilter struct {
	Channel app.Channel
	Status  string
}

// RateBucket is a stored token bucket: its tokens when it was last refilled.
type RateBucket struct {
	Tokens     float64   `db:"tokens"`
	RefilledAt time.Time `db:"refilled_at"`
}

// AstrayLimit is how many astray receipts the account page counts; past
// it, the page says "more than".
const AstrayLimit = 10000

// AstrayReceipts are the SES events kept as foreign, as the account's,
// because they name its messages but another configuration set than its
// own: none of them was applied.
type AstrayReceipts struct {
	// Count is how many, at most AstrayLimit+1.
	Count int `db:"count"`
	// LastAt is when the newest one arrived; ConfigurationSet is what it
	// named.
	LastAt           *time.Time `db:"last_at"`
	ConfigurationSet string     `db:"configuration_set"`
}

// BreakerTransition is one recorded change of an account's circuit breaker.
type BreakerTransition struct {
	From string
	To   string
	At   time.Time
}

// FieldOption is one choice of a select field.
type FieldOption struct {
	Value string
	Label string
}

// ProviderField is one setting of a provider's channel accounts, as the
// console form shows it.
type ProviderField struct {
	// Key is the Config key, or the Secrets key of a secret field.
	Key   string
	Label string
	Hint  string
	// Example is a sample value, shown greyed in the empty input.
	Example string
	// Secret fields are write-only: stored sealed, never shown again.
	Secret   bool
	Required bool
	// Options make the field a select.
	Options []FieldOption
	// AWSKey marks the access keys, which the default credential chain
	// replaces.
	AWSKey bool
}

// ProviderSpec describes what a provider's channel accounts need.
type ProviderSpec struct {
	Name        string
	Label       string
	Description string
	Channels    []app.Channel
	Fields      []ProviderField
	// AWS providers may use the default AWS credential chain instead of
	// keys (operators only).
	AWS bool
	// SigningSecret: Herald generates the account's signing secret and
	// shows it once.
	SigningSecret bool
}

// Account setting and secret keys, as the provider adapters read them
// (the console tests check they agree with the adapters' constants).
const (
	KeyMetaPhoneNumberID = "phone_number_id"
	KeyMetaWABAID        = "waba_id"
	KeyMetaAppID         = "app_id"
	KeyMetaTier          = "messaging_tier"
	KeyMetaThroughput    = "throughput"
	KeyMetaAccessToken   = "access_token"
	KeyMetaAppSecret     = "app_secret"

	KeyAWSRegion          = "region"
	KeyAWSAccessKeyID     = "access_key_id"
	KeyAWSSecretAccessKey = "secret_access_key"
	KeyAWSSessionToken    = "session_token"
	KeyAWSEndpoint        = "endpoint_url"

	KeySESSenderEmail      = "sender_email"
	KeySESSenderName       = "sender_name"
	KeySESReplyTo          = "reply_to"
	KeySESConfigurationSet = "configuration_set"

	KeySNSSenderID          = "sender_id"
	KeySNSOriginationNumber = "origination_number"
	KeySNSSMSType           = "sms_type"
	// KeySNSLogRegion and KeySNSLogEndpoint say where the account's SMS
	// delivery-status logs are read (CloudWatch Logs), when not in the
	// account's region or at the region's endpoint.
	KeySNSLogRegion   = "delivery_log_region"
	KeySNSLogEndpoint = "delivery_log_endpoint_url"

	// KeyAWSStatusTopic is the SNS topic an SES or SNS account's delivery
	// events come through (app.AccountStatusTopic).
	KeyAWSStatusTopic = app.AccountStatusTopic

	KeyWebhookURL           = "url"
	KeyWebhookSigningSecret = "signing_secret"
)

var awsRegionField = ProviderField{Key: KeyAWSRegion, Label: "AWS region", Required: true, Example: "eu-central-1",
	Hint: "The region the account's identities live in, such as eu-central-1."}

// awsEndpointField replaces the region's endpoint, for VPC endpoints (and
// emulators where the deployment allows them); the adapters check the host.
var awsEndpointField = ProviderField{Key: KeyAWSEndpoint, Label: "Endpoint URL",
	Example: "https://vpce-0a1b2c3d4e5f67890-k2l3m4n5.email.eu-central-1.vpce.amazonaws.com",
	Hint:    "Only for a VPC endpoint; leave empty to use the region's endpoint. Needs the account's own access keys."}
var awsStatusTopicField = ProviderField{Key: KeyAWSStatusTopic, Label: "Status topic ARN", Example: "arn:aws:sns:eu-central-1:123456789012:herald-events",
	Hint: "The SNS topic of your own AWS account that delivery events come through; receipts through it touch only this account's messages. Leave empty when Herald's operator provides the topic."}

var awsKeyFields = []ProviderField{
	{Key: KeyAWSAccessKeyID, Label: "Access key ID", Secret: true, AWSKey: true, Example: "AKIA…",
		Hint: "An IAM user's access key, allowed to send and nothing else."},
	{Key: KeyAWSSecretAccessKey, Label: "Secret access key", Secret: true, AWSKey: true},
	{Key: KeyAWSSessionToken, Label: "Session token", Secret: true, AWSKey: true,
		Hint: "Only for temporary credentials; usually left empty."},
}

// ProviderSpecs lists the providers a tenant can add accounts with.
var ProviderSpecs = []ProviderSpec{
	{
		Name: "meta", Label: "WhatsApp (Meta Cloud API)", Channels: []app.Channel{app.WhatsApp},
		Description: "Send WhatsApp messages from your business number through Meta's WhatsApp Cloud API.",
		Fields: []ProviderField{
			{Key: KeyMetaPhoneNumberID, Label: "Phone number ID", Required: true, Example: "106540352242922",
				Hint: "The number's ID in WhatsApp Manager (API Setup), not the phone number itself."},
			{Key: KeyMetaWABAID, Label: "WhatsApp Business Account ID", Required: true, Example: "102290129340398"},
			{Key: KeyMetaAppID, Label: "App ID", Example: "1234567890123456",
				Hint: "The Meta app's ID (App Dashboard). Needed to submit templates with a document or image header: Meta takes their example file through the app."},
			{Key: KeyMetaTier, Label: "Messaging limit",
				Hint: "Unique users Meta lets the number reach with templates (outside a customer service window) in 24 hours. Herald holds sends to it; Meta's own updates of the limit take over.",
				Options: []FieldOption{{"", "Not set: not enforced"}, {"TIER_250", "250"}, {"TIER_1K", "1,000"}, {"TIER_2K", "2,000"},
					{"TIER_10K", "10,000"}, {"TIER_100K", "100,000"}, {"TIER_UNLIMITED", "Unlimited"},
					// The numbered tiers the form offered first stay valid.
					{"TIER_1", "Tier 1: 250"}, {"TIER_2", "Tier 2: 2,000"}, {"TIER_3", "Tier 3: 10,000"},
					{"TIER_4", "Tier 4: 100,000"}, {"UNLIMITED", "Unlimited (old name)"}}},
			{Key: KeyMetaThroughput, Label: "Throughput", Hint: "Meta sends 80 messages a second per number, 1,000 once it upgraded the number.",
				Options: []FieldOption{{"", "Standard: 80 a second"}, {"high", "High: 1,000 a second"}}},
			{Key: KeyMetaAccessToken, Label: "Access token", Secret: true, Required: true,
				Hint: "A system user's permanent token with whatsapp_business_messaging."},
			{Key: KeyMetaAppSecret, Label: "App secret", Secret: true, Required: true,
				Hint: "From the Meta app's basic settings; Herald checks the signature of Meta's webhooks with it."},
		},
	},
	{
		Name: "ses", Label: "E-mail (Amazon SES)", Channels: []app.Channel{app.Email}, AWS: true,
		Description: "Send e-mail through your Amazon SES account.",
		Fields: append([]ProviderField{
			awsRegionField,
			{Key: KeySESSenderEmail, Label: "From address", Required: true, Example: "bookings@example.com",
				Hint: "A verified identity (address or domain) of the SES account."},
			{Key: KeySESSenderName, Label: "From name", Example: "Acme Tours"},
			{Key: KeySESConfigurationSet, Label: "Configuration set",
				Hint: "Needed for delivery, bounce and complaint events; see the account page for the SNS steps."},
			{Key: KeySESReplyTo, Label: "Reply-to", Example: "service@example.com",
				Hint: "One or more addresses, separated by commas."},
			awsEndpointField,
			awsStatusTopicField,
		}, awsKeyFields...),
	},
	{
		Name: "sns", Label: "SMS (Amazon SNS)", Channels: []app.Channel{app.SMS}, AWS: true,
		Description: "Send SMS through your Amazon SNS account.",
		Fields: append([]ProviderField{
			awsRegionField,
			{Key: KeySNSSenderID, Label: "Sender ID", Example: "ACMETOURS",
				Hint: "1 to 11 letters and digits, at least one letter; where countries allow alphanumeric senders."},
			{Key: KeySNSOriginationNumber, Label: "Origination number", Example: "+4915112345678",
				Hint: "A number (E.164) or short code of the account, where countries require one."},
			{Key: KeySNSSMSType, Label: "SMS type", Required: true,
				Hint:    "Transactional messages are routed for reliability; promotional ones for cost.",
				Options: []FieldOption{{"Transactional", "Transactional"}, {"Promotional", "Promotional"}}},
			awsEndpointField,
			awsStatusTopicField,
			{Key: KeySNSLogRegion, Label: "Delivery log region", Example: "eu-central-1",
				Hint: "Where SNS writes the SMS delivery status (CloudWatch Logs); leave empty for the account's region."},
			{Key: KeySNSLogEndpoint, Label: "Delivery log endpoint URL",
				Example: "https://vpce-0a1b2c3d4e5f67890-k2l3m4n5.logs.eu-central-1.vpce.amazonaws.com",
				Hint:    "Only for a CloudWatch Logs VPC endpoint; leave empty to use the region's endpoint. Needs the account's own access keys."},
		}, awsKeyFields...),
	},
	{
		Name: "webhook", Label: "Webhook (your own system)", Channels: []app.Channel{app.Webhook}, SigningSecret: true,
		Description: "Post every message as signed JSON to an HTTPS endpoint of your own.",
		Fields: []ProviderField{
			{Key: KeyWebhookURL, Label: "Endpoint URL", Required: true, Example: "https://hooks.example.com/herald",
				Hint: "A public HTTPS URL on port 443. Herald generates the signing secret and shows it once."},
		},
	},
	{
		Name: "sandbox", Label: "Sandbox", Channels: []app.Channel{app.WhatsApp, app.Email, app.SMS, app.Webhook},
		Description: "Sends nothing: accepts every message and reports it delivered and read, or fails on the special addresses. For trying Herald out.",
	},
}

// ProviderSpecOf returns the spec of a provider.
func ProviderSpecOf(name string) (*ProviderSpec, bool) {
	for i := range ProviderSpecs {
		if ProviderSpecs[i].Name == name {
			return &ProviderSpecs[i], true
		}
	}
	return nil, false
}

// Field returns the spec's field with the key.
func (p *ProviderSpec) Field(key string) (ProviderField, bool) {
	for _, f := range p.Fields {
		if f.Key == key {
			return f, true
		}
	}
	return ProviderField{}, false
}

// Credential modes of AWS accounts.
const (
	CredentialsKeys    = "keys"
	CredentialsDefault = "default"
)

// AccountForm is what the console's create and edit forms submit.
type AccountForm struct {
	Provider string
	// Channel is chosen for sandbox accounts; other providers serve one.
	Channel string
	Name    string
	// Config holds the submitted settings.
	Config map[string]string
	// Secrets holds the submitted secrets; a blank one keeps the stored value.
	Secrets map[string]string
	// Clear names optional secrets to remove.
	Clear map[string]bool
	// Credentials is CredentialsKeys or CredentialsDefault (AWS only).
	Credentials string
}

// RateState is an account's rate limit and its bucket now.
type RateState struct {
	Limited   bool
	PerSecond float64
	Capacity  float64
	// Tokens available now; Used is false while the bucket was never taken
	// from (it is full).
	Tokens float64
	Used   bool
	Err    string
}

// AccountRow is a channel account with its live state, for lists.
type AccountRow struct {
	*app.ChannelAccount
	Rate    RateState
	Breaker *BreakerTransition
}

// AccountDetail is everything the account page shows.
type AccountDetail struct {
	AccountRow
	Spec *ProviderSpec
	// SecretsSet names the secrets stored (never their values).
	SecretsSet map[string]bool
	// DefaultCredentials: an AWS account without keys, using the platform's
	// default credential chain.
	DefaultCredentials bool
	// ActiveOther is the channel's other ACTIVE account, if any.
	ActiveOther *app.ChannelAccount
	// History holds the newest audit entries about the account (status
	// changes, edits, breaker transitions).
	History  []*app.AuditEntry
	Messages []*app.Message
	// Astray are the SES events that named another configuration set
	// than the account's (SES accounts only).
	Astray AstrayReceipts
	// DeliveryLogs is how the SNS account's delivery logs are read (SNS
	// accounts only).
	DeliveryLogs *app.SMSLogState
	// Number is a Meta account's messaging limit, its use in the last 24
	// hours and what Meta reported about the number (nil for others).
	Number *app.NumberState
}

// Accounts manages channel accounts from the console: settings and
// write-only secrets per provider, activation, suspension and test sends.
type Accounts struct {
	*app.Accounts
	Store app.Store[AccountTx]
	// Registry resolves a template test's event.
	Registry *app.Registry
	Queue    app.Queue
	// CheckWebhookURLFunc applies the WEBHOOK adapter's destination rules to
	// a URL without sending anything; nil accepts https URLs only.
	CheckWebhookURLFunc func(raw string) error
	// TemplateSync, when set, syncs a Meta account's templates soon after
	// it is saved.
	TemplateSync TemplateSyncQueue
	// CheckEndpointURLFunc applies the AWS adapters' endpoint rules to an
	// account's endpoint URL, so the form refuses what the first send
	// would; nil checks the URL's shape only.
	CheckEndpointURLFunc func(raw string) error
	// SMSLogs, when set, tells an SNS account's page how its delivery logs
	// are read.
	SMSLogs *app.SMSLogs
	// NumberHealths, when set, registers Herald's app on a WhatsApp
	// account's WABA at activation and reads the number's messaging limit
	// and health for the account page.
	NumberHealths *app.NumberHealths
	// TestSendLimit caps the tenant's test messages per TestSendWindow;
	// zero is DefaultTestSendLimit.
	TestSendLimit int
	Now           app.Clock
}

// TemplateSyncQueue enqueues, in the caller's transaction, a sync of one
// Meta account's message templates.
type TemplateSyncQueue interface {
	EnqueueTemplateSync(ctx context.Context, tx app.Tx, tenantID, accountID uuid.UUID) error
}

// syncTemplates asks for the account's Meta templates to be listed once the
// transaction commits, so that its business-initiated messages can go as
// approved templates without waiting for the hourly sync.
func (s *Accounts) syncTemplates(ctx context.Context, tx app.Tx, a *app.ChannelAccount) error {
	if s.TemplateSync == nil || a.Provider != "meta" || a.Config[KeyMetaWABAID] == "" {
		return nil
	}
	return s.TemplateSync.EnqueueTemplateSync(ctx, tx, a.TenantID, a.ID)
}

// List returns a page of the tenant's channel accounts with their rate
// and breaker state.
func (s *Accounts) List(ctx context.Context, tenantID uuid.UUID, f AccountFilter, page PageRequest) ([]*AccountRow, bool, error) {
	var rows []*AccountRow
	var more bool
	err := s.Store.InTenant(ctx, tenantID, func(tx AccountTx) error {
		as, err := tx.ListAccounts(ctx, tenantID, f, page)
		if err != nil {
			return err
		}
		as, more = Page(as, page)
		rows, err = s.rows(ctx, tx, tenantID, as)
		return err
	})
	return rows, more, err
}

// rows adds the rate and breaker state to accounts.
func (s *Accounts) rows(ctx context.Context, tx AccountTx, tenantID uuid.UUID, as []*app.ChannelAccount) ([]*AccountRow, error) {
	ids := make([]uuid.UUID, len(as))
	keys := make([]string, len(as))
	for i, a := range as {
		ids[i], keys[i] = a.ID, rateKey(a)
	}
	buckets, err := tx.RateBuckets(ctx, keys)
	if err != nil {
		return nil, err
	}
	breakers, err := tx.BreakerStates(ctx, tenantID, ids)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	out := make([]*AccountRow, len(as))
	for i, a := range as {
		r := &AccountRow{ChannelAccount: a}
		if b, ok := breakers[a.ID]; ok {
			r.Breaker = &b
		}
		perSecond, burst, limited, err := app.AccountRate(a)
		switch {
		case err != nil:
			r.Rate.Err = err.Error()
		case limited:
			r.Rate = RateState{Limited: true, PerSecond: perSecond, Capacity: burst, Tokens: burst}
			if b, ok := buckets[keys[i]]; ok {
				r.Rate.Used = true
				r.Rate.Tokens = min(burst, b.Tokens+max(0, now.Sub(b.RefilledAt).Seconds())*perSecond)
			}
		}
		out[i] = r
	}
	return out, nil
}

// rateKey is the account's bucket key, as RateLimiter names it.
func rateKey(a *app.ChannelAccount) string {
	return "rate:" + a.TenantID.String() + ":" + a.ID.String()
}

// Get returns an account with its state, history and recent messages.
func (s *Accounts) Get(ctx context.Context, tenantID, id uuid.UUID) (*AccountDetail, error) {
	var d AccountDetail
	err := s.Store.InTenant(ctx, tenantID, func(tx AccountTx) error {
		a, err := tx.AccountByID(ctx, tenantID, id)
		if err != nil {
			return err
		}
		rows, err := s.rows(ctx, tx, tenantID, []*app.ChannelAccount{a})
		if err != nil {
			return err
		}
		d.AccountRow = *rows[0]
		if other, err := tx.ActiveAccount(ctx, tenantID, a.Channel); err == nil && other.ID != a.ID {
			d.ActiveOther = other
		} else if err != nil && app.ErrorCode(err) != app.ENOTFOUND {
			return err
		}
		if d.History, err = tx.AccountAudit(ctx, tenantID, id, 20); err != nil {
			return err
		}
		if a.Provider == "ses" {
			if d.Astray, err = tx.AstrayReceipts(ctx, tenantID, id, AstrayLimit); err != nil {
				return err
			}
		}
		d.Messages, err = tx.MessagesByAccount(ctx, tenantID, id, 10)
		return err
	})
	if err != nil {
		return nil, err
	}
	d.Spec, _ = ProviderSpecOf(d.Provider)
	secrets, err := s.Accounts.Open(d.ChannelAccount)
	if err != nil {
		return nil, fmt.Errorf("channel account %s: %w", id, err)
	}
	d.SecretsSet = map[string]bool{}
	for k, v := range secrets {
		d.SecretsSet[k] = v != ""
	}
	d.DefaultCredentials = d.Spec != nil && d.Spec.AWS && !d.SecretsSet[KeyAWSAccessKeyID]
	if d.Provider == "sns" && s.SMSLogs != nil {
		st, err := s.SMSLogs.State(ctx, tenantID, id)
		if err != nil {
			return nil, err
		}
		d.DeliveryLogs = &st
	}
	if d.Provider == "meta" && s.NumberHealths != nil {
		if d.Number, err = s.NumberHealths.State(ctx, tenantID, d.ChannelAccount); err != nil {
			return nil, err
		}
	}
	return &d, nil
}

// Create validates the form and stores a new PENDING account. For webhook
// accounts it returns the generated signing secret, which the caller shows
// once and Herald never shows again.
func (s *Accounts) Create(ctx context.Context, u app.Principal, tenantID uuid.UUID, f AccountForm) (*app.ChannelAccount, string, error) {
	if err := app.RequirePermission(u, app.PermChannels); err != nil {
		return nil, "", err
	}
	spec, ok := ProviderSpecOf(f.Provider)
	if !ok {
		return nil, "", app.FieldErrorf("provider", "Choose a provider.")
	}
	ch := spec.Channels[0]
	if len(spec.Channels) > 1 {
		c, ok := app.ParseChannel(f.Channel)
		if !ok || !slices.Contains(spec.Channels, c) {
			return nil, "", app.FieldErrorf("channel", "Choose the channel this account serves.")
		}
		ch = c
	}
	config, secrets, audit, err := s.settings(u, spec, f, nil, nil)
	if err != nil {
		return nil, "", err
	}
	signing := ""
	if spec.SigningSecret {
		signing = newSigningSecret()
		secrets[KeyWebhookSigningSecret] = signing
	}
	a, err := s.Accounts.NewAccount(tenantID, app.AccountInput{Channel: ch, Provider: spec.Name, Name: f.Name, Config: config, Secrets: secrets})
	if err != nil {
		return nil, "", err
	}
	audit["channel"], audit["provider"], audit["name"], audit["status"] = a.Channel, a.Provider, a.Name, a.Status
	err = s.Store.InTenant(ctx, tenantID, func(tx AccountTx) error {
		if err := tx.CreateAccount(ctx, a); err != nil {
			return err
		}
		if err := s.syncTemplates(ctx, tx, a); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, u.Actor().Entry(&tenantID, "channel_account.create", "channel_account", a.ID.String(), audit))
	})
	if err != nil {
		return nil, "", err
	}
	return a, signing, nil
}

// Update changes an account's name and settings. A blank secret keeps the
// stored one; Clear removes optional ones.
func (s *Accounts) Update(ctx context.Context, u app.Principal, tenantID, id uuid.UUID, f AccountForm) error {
	if err := app.RequirePermission(u, app.PermChannels); err != nil {
		return err
	}
	return s.Store.InTenant(ctx, tenantID, func(tx AccountTx) error {
		a, err := tx.AccountForUpdate(ctx, tenantID, id)
		if err != nil {
			return err
		}
		spec, ok := ProviderSpecOf(a.Provider)
		if !ok {
			return app.Errorf(app.ECONFLICT, "Provider %s cannot be edited here.", a.Provider)
		}
		stored, err := s.Accounts.Open(a)
		if err != nil {
			return fmt.Errorf("channel account %s: %w", id, err)
		}
		config, secrets, audit, err := s.settings(u, spec, f, a.Config, stored)
		if err != nil {
			return err
		}
		in := app.AccountInput{Channel: a.Channel, Provider: a.Provider, Name: f.Name}
		if err := in.Validate(); err != nil {
			return err
		}
		if in.Name != a.Name {
			audit["name"] = in.Name
		}
		a.Name, a.Config, a.UpdatedAt = in.Name, config, s.Now()
		if err := s.seal(a, secrets); err != nil {
			return err
		}
		if err := tx.UpdateAccount(ctx, a); err != nil {
			return err
		}
		if err := s.syncTemplates(ctx, tx, a); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, u.Actor().Entry(&tenantID, "channel_account.update", "channel_account", a.ID.String(), audit))
	})
}

// seal replaces the account's sealed secrets.
func (s *Accounts) seal(a *app.ChannelAccount, secrets map[string]string) error {
	if len(secrets) == 0 {
		a.Secrets, a.SecretsKeyID = nil, nil
		return nil
	}
	sealed, keyID, err := s.Accounts.Sealer.Seal(a.TenantID, a.ID, secrets)
	if err != nil {
		return err
	}
	a.Secrets, a.SecretsKeyID = sealed, &keyID
	return nil
}

// RotateSigningSecret gives a webhook account a new signing secret, which
// signs every delivery from now on, and returns it to be shown once.
func (s *Accounts) RotateSigningSecret(ctx context.Context, u app.Principal, tenantID, id uuid.UUID) (string, error) {
	if err := app.RequirePermission(u, app.PermChannels); err != nil {
		return "", err
	}
	secret := newSigningSecret()
	err := s.Store.InTenant(ctx, tenantID, func(tx AccountTx) error {
		a, err := tx.AccountForUpdate(ctx, tenantID, id)
		if err != nil {
			return err
		}
		spec, _ := ProviderSpecOf(a.Provider)
		if spec == nil || !spec.SigningSecret {
			return app.Errorf(app.ECONFLICT, "Only webhook accounts have a signing secret.")
		}
		stored, err := s.Accounts.Open(a)
		if err != nil {
			return fmt.Errorf("channel account %s: %w", id, err)
		}
		stored[KeyWebhookSigningSecret] = secret
		a.UpdatedAt = s.Now()
		if err := s.seal(a, stored); err != nil {
			return err
		}
		if err := tx.UpdateAccount(ctx, a); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, u.Actor().Entry(&tenantID, "channel_account.rotate_secret", "channel_account", a.ID.String(),
			map[string]any{"secret": KeyWebhookSigningSecret}))
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// newSigningSecret returns 32 random bytes, hex encoded with a prefix that
// says what the value is when it turns up in someone's configuration.
func newSigningSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + hex.EncodeToString(b)
}

// Activate makes the account the channel's sending account. Only one
// account per channel is ACTIVE: while another is, activation fails with
// ECONFLICT unless replace is set, which suspends the other first.
func (s *Accounts) Activate(ctx context.Context, u app.Principal, tenantID, id uuid.UUID, replace bool) error {
	if err := app.RequirePermission(u, app.PermChannels); err != nil {
		return err
	}
	actor := u.Actor()
	if err := s.subscribe(ctx, actor, tenantID, id, replace); err != nil {
		return err
	}
	return s.Store.InTenant(ctx, tenantID, func(tx AccountTx) error {
		a, err := tx.AccountForUpdate(ctx, tenantID, id)
		if err != nil {
			return err
		}
		if a.Status == app.AccountActive {
			return app.Errorf(app.ECONFLICT, "%s is already active.", a.Name)
		}
		if err := s.complete(a); err != nil {
			return err
		}
		other, err := tx.ActiveAccount(ctx, tenantID, a.Channel)
		switch {
		case app.ErrorCode(err) == app.ENOTFOUND:
		case err != nil:
			return err
		case !replace:
			return &app.Error{Code: app.ECONFLICT, Reason: "channel_has_active_account", Message: fmt.Sprintf(
				"%s is the active %s account, and a channel sends through one account only. Activate this account in its place to suspend %s.",
				other.Name, a.Channel, other.Name)}
		default:
			reason := fmt.Sprintf("Replaced by %s, activated by %s.", a.Name, actor.Label)
			if err := tx.SetAccountStatus(ctx, tenantID, other.ID, app.AccountSuspended, reason, s.Now()); err != nil {
				return err
			}
			if err := tx.InsertAudit(ctx, actor.Entry(&tenantID, "channel_account.status", "channel_account", other.ID.String(),
				map[string]any{"status": app.AccountSuspended, "from": other.Status, "reason": reason, "replaced_by": a.ID.String()})); err != nil {
				return err
			}
		}
		if err := tx.SetAccountStatus(ctx, tenantID, a.ID, app.AccountActive, "", s.Now()); app.ErrorCode(err) == app.ECONFLICT {
			// The one-active index caught an activation that raced this one.
			return app.Errorf(app.ECONFLICT, "Another account of this channel was activated at the same time. Reload the page and try again.")
		} else if err != nil {
			return err
		}
		meta := map[string]any{"status": app.AccountActive, "from": a.Status}
		if other != nil && replace {
			meta["replaces"] = other.ID.String()
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "channel_account.status", "channel_account", a.ID.String(), meta))
	})
}

// subscribe registers Herald's app on a WhatsApp account's WABA before
// the account is activated, outside the activation's transaction (no
// lock is held while Meta answers). A refusal stops the activation with
// Meta's reason; an account that is active already or incomplete is left
// to the activation's own checks.
func (s *Accounts) subscribe(ctx context.Context, actor app.Actor, tenantID, id uuid.UUID, replace bool) error {
	if s.NumberHealths == nil {
		return nil
	}
	var a *app.ChannelAccount
	blocked := false
	err := s.Store.InTenant(ctx, tenantID, func(tx AccountTx) (err error) {
		if a, err = tx.AccountByID(ctx, tenantID, id); err != nil {
			return err
		}
		other, err := tx.ActiveAccount(ctx, tenantID, a.Channel)
		blocked = err == nil && other.ID != a.ID && !replace
		if app.ErrorCode(err) == app.ENOTFOUND {
			err = nil
		}
		return err
	})
	if err != nil {
		return err
	}
	// Another active account without replace: the activation refuses.
	if a.Provider != "meta" || a.Status == app.AccountActive || blocked || s.complete(a) != nil {
		return nil
	}
	return s.NumberHealths.Subscribe(ctx, actor, a)
}

// complete checks an account has what sending needs before it goes live.
func (s *Accounts) complete(a *app.ChannelAccount) error {
	spec, ok := ProviderSpecOf(a.Provider)
	if !ok {
		return nil
	}
	secrets, err := s.Accounts.Open(a)
	if err != nil {
		return fmt.Errorf("channel account %s: %w", a.ID, err)
	}
	for _, f := range spec.Fields {
		missing := f.Required && (f.Secret && secrets[f.Key] == "" || !f.Secret && a.Config[f.Key] == "")
		if missing {
			return app.Errorf(app.ECONFLICT, "%s has no %s yet. Edit the account before activating it.", a.Name, strings.ToLower(f.Label))
		}
	}
	if spec.SigningSecret && secrets[KeyWebhookSigningSecret] == "" {
		return app.Errorf(app.ECONFLICT, "%s has no signing secret. Rotate the secret before activating it.", a.Name)
	}
	return nil
}

// MaxReasonLength caps a suspension reason.
const MaxReasonLength = 500

// Suspend stops an account from sending, with a reason the tenant sees.
func (s *Accounts) Suspend(ctx context.Context, u app.Principal, tenantID, id uuid.UUID, reason string) error {
	if err := app.RequirePermission(u, app.PermChannels); err != nil {
		return err
	}
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return app.FieldErrorf("reason", "Say why the account is suspended; everyone who opens it will see the reason.")
	case len([]rune(reason)) > MaxReasonLength:
		return app.FieldErrorf("reason", "The reason must be at most %d characters.", MaxReasonLength)
	}
	return s.Store.InTenant(ctx, tenantID, func(tx AccountTx) error {
		a, err := tx.AccountForUpdate(ctx, tenantID, id)
		if err != nil {
			return err
		}
		if a.Status == app.AccountDisabled {
			return app.Errorf(app.ECONFLICT, "%s is disabled.", a.Name)
		}
		if err := tx.SetAccountStatus(ctx, tenantID, id, app.AccountSuspended, reason, s.Now()); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, u.Actor().Entry(&tenantID, "channel_account.status", "channel_account", id.String(),
			map[string]any{"status": app.AccountSuspended, "from": a.Status, "reason": reason}))
	})
}

// TestMessage returns a message sent through the account, with its timeline.
func (s *Accounts) TestMessage(ctx context.Context, tenantID, accountID, messageID uuid.UUID) (*app.MessageDetail, error) {
	var d app.MessageDetail
	err := s.Store.InTenant(ctx, tenantID, func(tx AccountTx) (err error) {
		if d.Message, err = tx.MessageByID(ctx, tenantID, messageID, false); err != nil {
			return err
		}
		if d.ChannelAccountID == nil || *d.ChannelAccountID != accountID {
			return app.Errorf(app.ENOTFOUND, "Message %s was not sent through this account.", messageID)
		}
		d.Timeline, err = tx.Timeline(ctx, tenantID, messageID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

func addressKind(ch app.Channel) string {
	switch {
	case ch.Phone():
		return "phone number"
	case ch == app.Email:
		return "e-mail address"
	}
	return "recipient"
}

var (
	awsRegionPattern   = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)
	digitsPattern      = regexp.MustCompile(`^[0-9]{5,32}$`)
	configSetPattern   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	snsTopicPattern    = regexp.MustCompile(`^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$`)
	senderIDPattern    = regexp.MustCompile(`^[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*$`)
	shortCodePattern   = regexp.MustCompile(`^[0-9]{3,8}$`)
	e164Pattern        = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
	accessKeyIDPattern = regexp.MustCompile(`^[A-Z0-9]{16,128}$`)
)

// settings validates the form's settings and secrets for the provider and
// merges them with the stored ones (nil when creating). It returns the
// config, the secrets to seal, and audit metadata naming what changed (never
// a secret's value).
func (s *Accounts) settings(u app.Principal, spec *ProviderSpec, f AccountForm, storedConfig app.Attrs, storedSecrets map[string]string) (app.Attrs, map[string]string, map[string]any, error) {
	creating := storedSecrets == nil
	config := app.Attrs{}
	// Settings the form does not show (rate overrides set by an operator)
	// survive an edit.
	maps.Copy(config, storedConfig)
	secrets := map[string]string{}
	maps.Copy(secrets, storedSecrets)
	changed, setSecrets, cleared := map[string]any{}, []string{}, []string{}

	useDefault := false
	if spec.AWS {
		switch f.Credentials {
		case CredentialsDefault:
			if !u.Can(app.PermPlatform) {
				return nil, nil, nil, app.FieldErrorf("credentials",
					"Only Herald's operators may use the platform's own AWS credentials. Enter this account's access key ID and secret access key.")
			}
			useDefault = true
		case CredentialsKeys, "":
		default:
			return nil, nil, nil, app.FieldErrorf("credentials", "Choose access keys or the default credential chain.")
		}
	}

	for _, fd := range spec.Fields {
		if !fd.Secret {
			v, err := checkSetting(s, spec, fd, strings.TrimSpace(f.Config[fd.Key]))
			if err != nil {
				return nil, nil, nil, err
			}
			if v == "" {
				delete(config, fd.Key)
			} else {
				config[fd.Key] = v
			}
			if v != storedConfig[fd.Key] {
				changed[fd.Key] = map[string]any{"from": storedConfig[fd.Key], "to": v}
			}
			continue
		}
		if fd.AWSKey && useDefault {
			if secrets[fd.Key] != "" {
				cleared = append(cleared, fd.Key)
			}
			delete(secrets, fd.Key)
			continue
		}
		v := strings.TrimSpace(f.Secrets[fd.Key])
		switch {
		case v != "":
			if err := checkSecret(fd, v); err != nil {
				return nil, nil, nil, err
			}
			secrets[fd.Key] = v
			setSecrets = append(setSecrets, fd.Key)
		case f.Clear[fd.Key] && !fd.Required && !(fd.AWSKey && fd.Key != KeyAWSSessionToken):
			if secrets[fd.Key] != "" {
				cleared = append(cleared, fd.Key)
			}
			delete(secrets, fd.Key)
		case fd.Required && secrets[fd.Key] == "":
			if creating {
				return nil, nil, nil, app.FieldErrorf("secret_"+fd.Key, "%s is required.", fd.Label)
			}
			return nil, nil, nil, app.FieldErrorf("secret_"+fd.Key, "%s is required; none is stored.", fd.Label)
		}
	}
	if spec.AWS && !useDefault {
		id, key := secrets[KeyAWSAccessKeyID], secrets[KeyAWSSecretAccessKey]
		switch {
		case id == "" && key == "" && !u.Can(app.PermPlatform):
			return nil, nil, nil, app.FieldErrorf("secret_"+KeyAWSAccessKeyID, "Enter the access key ID and the secret access key of the account's IAM user.")
		case id == "" && key == "":
			return nil, nil, nil, app.FieldErrorf("secret_"+KeyAWSAccessKeyID, "Enter the access key ID and the secret access key, or choose the default credential chain.")
		case id == "":
			return nil, nil, nil, app.FieldErrorf("secret_"+KeyAWSAccessKeyID, "Enter the access key ID that belongs to the secret access key.")
		case key == "":
			return nil, nil, nil, app.FieldErrorf("secret_"+KeyAWSSecretAccessKey, "Enter the secret access key that belongs to the access key ID.")
		}
	}
	if spec.AWS && secrets[KeyAWSAccessKeyID] == "" && config[KeyAWSEndpoint] != "" {
		// Requests signed with the platform's identity go to AWS's own
		// endpoints only (the adapters refuse the combination too).
		return nil, nil, nil, app.FieldErrorf("config_"+KeyAWSEndpoint, "An endpoint URL needs the account's own access keys.")
	}
	if spec.AWS && secrets[KeyAWSAccessKeyID] == "" && config[KeySNSLogEndpoint] != "" {
		return nil, nil, nil, app.FieldErrorf("config_"+KeySNSLogEndpoint, "A delivery log endpoint URL needs the account's own access keys.")
	}
	if spec.AWS {
		// The default chain uses the platform's AWS identity: only an
		// operator may leave an account on it, whoever edits it later.
		if secrets[KeyAWSAccessKeyID] == "" && !u.Can(app.PermPlatform) {
			return nil, nil, nil, app.FieldErrorf("credentials",
				"Only Herald's operators may use the platform's own AWS credentials. Enter this account's access key ID and secret access key.")
		}
		mode, was := CredentialsKeys, CredentialsKeys
		if secrets[KeyAWSAccessKeyID] == "" {
			mode = CredentialsDefault
		}
		if storedSecrets[KeyAWSAccessKeyID] == "" {
			was = CredentialsDefault
		}
		if creating {
			was = ""
		}
		if mode != was {
			changed["credentials"] = map[string]any{"from": was, "to": mode}
		}
	}
	audit := map[string]any{}
	if len(changed) > 0 {
		audit["config"] = changed
	}
	if len(setSecrets) > 0 {
		audit["secrets_set"] = setSecrets
	}
	if len(cleared) > 0 {
		audit["secrets_cleared"] = cleared
	}
	return config, secrets, audit, nil
}

// checkSetting validates and normalises one non-secret setting.
func checkSetting(s *Accounts, spec *ProviderSpec, fd ProviderField, v string) (string, error) {
	field := "config_" + fd.Key
	if v == "" {
		if fd.Required {
			if len(fd.Options) > 0 {
				return "", app.FieldErrorf(field, "Choose the %s.", strings.ToLower(fd.Label))
			}
			return "", app.FieldErrorf(field, "%s is required.", fd.Label)
		}
		return "", nil
	}
	if len(v) > 2048 {
		return "", app.FieldErrorf(field, "%s must be at most 2048 characters.", fd.Label)
	}
	if strings.ContainsFunc(v, unicode.IsControl) {
		return "", app.FieldErrorf(field, "%s must be one line of text.", fd.Label)
	}
	if len(fd.Options) > 0 {
		for _, o := range fd.Options {
			if o.Value == v {
				return v, nil
			}
		}
		return "", app.FieldErrorf(field, "%q is not one of the choices.", v)
	}
	switch fd.Key {
	case KeyMetaPhoneNumberID:
		if strings.HasPrefix(v, "+") {
			return "", app.FieldErrorf(field, "Enter the phone number's ID from WhatsApp Manager, not the phone number.")
		}
		if !digitsPattern.MatchString(v) {
			return "", app.FieldErrorf(field, "The phone number ID is a number of 5 to 32 digits.")
		}
	case KeyMetaWABAID:
		if !digitsPattern.MatchString(v) {
			return "", app.FieldErrorf(field, "The WhatsApp Business Account ID is a number of 5 to 32 digits.")
		}
	case KeyMetaAppID:
		if !digitsPattern.MatchString(v) {
			return "", app.FieldErrorf(field, "The app ID is a number of 5 to 32 digits.")
		}
	case KeyAWSRegion, KeySNSLogRegion:
		if !awsRegionPattern.MatchString(v) {
			return "", app.FieldErrorf(field, "%q is not an AWS region; regions look like eu-central-1.", v)
		}
	case KeyAWSEndpoint, KeySNSLogEndpoint:
		u, err := url.Parse(v)
		if err != nil || !u.IsAbs() || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") ||
			u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return "", app.FieldErrorf(field, "Enter the endpoint's URL, such as https://vpce-….email.eu-central-1.vpce.amazonaws.com, without credentials or query.")
		}
		if s.CheckEndpointURLFunc != nil {
			if err := s.CheckEndpointURLFunc(v); err != nil {
				return "", app.FieldErrorf(field, "%s.", capitalize(err.Error()))
			}
		}
	case KeySESSenderEmail:
		a, err := mail.ParseAddress(v)
		if err != nil || a.Name != "" || !isASCII(a.Address) {
			return "", app.FieldErrorf(field, "%q is not an e-mail address; enter the bare address, the name goes below.", v)
		}
		v = a.Address
	case KeySESSenderName:
		if len([]rune(v)) > 100 || strings.ContainsAny(v, "<>\"") {
			return "", app.FieldErrorf(field, "The from name must be at most 100 characters, without < > or quotes.")
		}
	case KeySESConfigurationSet:
		if !configSetPattern.MatchString(v) {
			return "", app.FieldErrorf(field, "A configuration set name has 1 to 64 letters, digits, _ or -.")
		}
	case KeySESReplyTo:
		list, err := mail.ParseAddressList(v)
		if err != nil {
			return "", app.FieldErrorf(field, "Enter one or more e-mail addresses, separated by commas.")
		}
		for _, a := range list {
			if !isASCII(a.Address) {
				return "", app.FieldErrorf(field, "%q is not an address SES can use.", a.Address)
			}
		}
	case KeySNSSenderID:
		if len(v) > 11 || !senderIDPattern.MatchString(v) {
			return "", app.FieldErrorf(field, "A sender ID has 1 to 11 letters and digits, with at least one letter.")
		}
	case KeyAWSStatusTopic:
		if !snsTopicPattern.MatchString(v) {
			return "", app.FieldErrorf(field, "%q is not an SNS topic ARN; they look like arn:aws:sns:eu-central-1:123456789012:name.", v)
		}
	case KeySNSOriginationNumber:
		if !e164Pattern.MatchString(v) && !shortCodePattern.MatchString(v) {
			return "", app.FieldErrorf(field, "Enter a number in E.164 format (+4915112345678) or a short code of 3 to 8 digits.")
		}
	case KeyWebhookURL:
		if s.CheckWebhookURLFunc != nil {
			if err := s.CheckWebhookURLFunc(v); err != nil {
				return "", app.FieldErrorf(field, "%s", err.Error())
			}
		} else if !strings.HasPrefix(v, "https://") {
			return "", app.FieldErrorf(field, "The webhook URL must start with https://.")
		}
	}
	return v, nil
}

// checkSecret validates a secret's shape, without echoing it.
func checkSecret(fd ProviderField, v string) error {
	field := "secret_" + fd.Key
	switch {
	case len(v) > 4096:
		return app.FieldErrorf(field, "%s is longer than 4096 characters.", fd.Label)
	case strings.ContainsFunc(v, unicode.IsSpace):
		return app.FieldErrorf(field, "%s must not contain spaces or line breaks.", fd.Label)
	case fd.Key == KeyAWSAccessKeyID && !accessKeyIDPattern.MatchString(v):
		return app.FieldErrorf(field, "An access key ID has 16 or more capital letters and digits; it usually starts with AKIA.")
	case fd.Key == KeyAWSSecretAccessKey && len(v) < 20:
		return app.FieldErrorf(field, "That is too short for a secret access key (they have 40 characters).")
	case fd.Key == KeyMetaAccessToken && len(v) < 20:
		return app.FieldErrorf(field, "That is too short for an access token.")
	case fd.Key == KeyMetaAppSecret && len(v) < 16:
		return app.FieldErrorf(field, "That is too short for an app secret (they have 32 characters).")
	}
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// capitalize makes an adapter's error, written to be wrapped, a sentence.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
