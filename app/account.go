package app

import (
	"context"
	"crypto/rand"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Channel account statuses. Only ACTIVE accounts send.
const (
	AccountPending   = "PENDING"
	AccountActive    = "ACTIVE"
	AccountSuspended = "SUSPENDED"
	AccountDisabled  = "DISABLED"
)

// Providers by name, and the channel each serves.
var providerChannels = map[string][]Channel{
	"meta":    {WhatsApp},
	"ses":     {Email},
	"sns":     {SMS},
	"webhook": {Webhook},
	"sandbox": {WhatsApp, Email, SMS, Webhook},
}

// ChannelAccount is a tenant's account with a provider on one channel: its
// settings, its sealed secrets and whether it may send.
type ChannelAccount struct {
	ID           uuid.UUID `db:"id"`
	TenantID     uuid.UUID `db:"tenant_id"`
	Channel      Channel   `db:"channel"`
	Provider     string    `db:"provider"`
	Name         string    `db:"name"`
	Status       string    `db:"status"`
	Config       Attrs     `db:"config"`
	Secrets      []byte    `db:"secrets"`
	SecretsKeyID *string   `db:"secrets_key_id"`
	VerifyToken  string    `db:"verify_token"`
	// WebhookToken names the account's Meta webhook path,
	// /webhooks/meta/a/{token}: unguessable, so the path tells nobody which
	// tenants exist.
	WebhookToken    string    `db:"webhook_token"`
	SuspendedReason *string   `db:"suspended_reason"`
	CreatedAt       time.Time `db:"created_at"`
	UpdatedAt       time.Time `db:"updated_at"`
}

// AccountInput is what creating a channel account takes.
type AccountInput struct {
	Channel  Channel
	Provider string
	Name     string
	Config   Attrs
	Secrets  map[string]string
	// Activate makes the account ACTIVE at once (and suspends no other:
	// activation fails while another account of the channel is ACTIVE).
	Activate bool
}

// Validate checks the provider serves the channel and the name is set.
func (in *AccountInput) Validate() error {
	in.Name = strings.TrimSpace(in.Name)
	chans, ok := providerChannels[in.Provider]
	switch {
	case !ok:
		return FieldErrorf("provider", "Provider %q is not one of meta, ses, sns, webhook, sandbox.", in.Provider)
	case in.Name == "":
		return FieldErrorf("name", "Name is required.")
	case len(in.Name) > 100:
		return FieldErrorf("name", "Name must be at most 100 characters.")
	}
	for _, c := range chans {
		if c == in.Channel {
			return nil
		}
	}
	return FieldErrorf("channel", "Provider %s does not serve channel %s.", in.Provider, in.Channel)
}

// AccountTx lists the statements Accounts runs.
type AccountTx interface {
	Tx
	CreateAccount(ctx context.Context, a *ChannelAccount) error
	SetAccountStatus(ctx context.Context, tenantID, id uuid.UUID, status, reason string, at time.Time) error
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// Accounts manages channel accounts.
type Accounts struct {
	Store  Store[AccountTx]
	Sealer *Sealer
	Now    Clock
}

// NewAccount builds an account with sealed secrets and a fresh verify token.
func (s *Accounts) NewAccount(tenantID uuid.UUID, in AccountInput) (*ChannelAccount, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	now := s.Now()
	a := &ChannelAccount{
		ID: uuid.New(), TenantID: tenantID, Channel: in.Channel, Provider: in.Provider, Name: in.Name,
		Status: AccountPending, Config: in.Config, VerifyToken: strings.ToLower(rand.Text()),
		WebhookToken: strings.ToLower(rand.Text() + rand.Text()),
		CreatedAt:    now, UpdatedAt: now,
	}
	if a.Config == nil {
		a.Config = Attrs{}
	}
	if in.Activate {
		a.Status = AccountActive
	}
	if len(in.Secrets) > 0 {
		sealed, keyID, err := s.Sealer.Seal(tenantID, a.ID, in.Secrets)
		if err != nil {
			return nil, err
		}
		a.Secrets, a.SecretsKeyID = sealed, &keyID
	}
	return a, nil
}

// Create stores a new channel account for the tenant.
func (s *Accounts) Create(ctx context.Context, actor Actor, tenantID uuid.UUID, in AccountInput) (*ChannelAccount, error) {
	a, err := s.NewAccount(tenantID, in)
	if err != nil {
		return nil, err
	}
	err = s.Store.InTenant(ctx, tenantID, func(tx AccountTx) error {
		if err := tx.CreateAccount(ctx, a); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "channel_account.create", "channel_account", a.ID.String(),
			map[string]any{"channel": a.Channel, "provider": a.Provider, "status": a.Status}))
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// SetStatus activates, suspends or disables an account. Suspending needs a
// reason, which the tenant sees.
func (s *Accounts) SetStatus(ctx context.Context, actor Actor, tenantID, accountID uuid.UUID, status, reason string) error {
	switch status {
	case AccountActive, AccountDisabled, AccountPending:
		reason = ""
	case AccountSuspended:
		if strings.TrimSpace(reason) == "" {
			return FieldErrorf("reason", "Say why the account is suspended.")
		}
	default:
		return FieldErrorf("status", "Status %q is not one of ACTIVE, SUSPENDED, DISABLED, PENDING.", status)
	}
	return s.Store.InTenant(ctx, tenantID, func(tx AccountTx) error {
		if err := tx.SetAccountStatus(ctx, tenantID, accountID, status, reason, s.Now()); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&tenantID, "channel_account.status", "channel_account", accountID.String(),
			map[string]any{"status": status, "reason": reason}))
	})
}

// Open decrypts an account's secrets.
func (s *Accounts) Open(a *ChannelAccount) (map[string]string, error) {
	keyID := ""
	if a.SecretsKeyID != nil {
		keyID = *a.SecretsKeyID
	}
	return s.Sealer.Open(a.TenantID, a.ID, keyID, a.Secrets)
}
