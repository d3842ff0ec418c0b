package app

import (
	"context"
	"strings"

	"github.com/google/uuid"
)

// MetaCredentials are what a tenant's Meta webhook is checked with: the
// verify tokens and app secrets of its Meta channel accounts.
type MetaCredentials struct {
	TenantID     uuid.UUID
	VerifyTokens []string
	AppSecrets   []string
}

// HookTx lists the statements Hooks runs.
type HookTx interface {
	Tx
	AccountsByProvider(ctx context.Context, tenantID uuid.UUID, provider string) ([]*ChannelAccount, error)
	TenantBySlug(ctx context.Context, slug string) (*Tenant, error)
}

// Hooks serves the provider webhooks' lookups.
type Hooks struct {
	Store    Store[HookTx]
	Accounts *Accounts
}

// MetaCredentials returns the credentials of the tenant's Meta accounts
// (all but DISABLED ones, so a suspended account still hears its statuses).
// An unknown tenant, or one without a Meta account, is ENOTFOUND.
func (h *Hooks) MetaCredentials(ctx context.Context, tenantSlug string) (*MetaCredentials, error) {
	var creds *MetaCredentials
	err := h.Store.InPlatform(ctx, func(tx HookTx) error {
		t, err := tx.TenantBySlug(ctx, strings.ToLower(tenantSlug))
		if err != nil {
			return err
		}
		accounts, err := tx.AccountsByProvider(ctx, t.ID, "meta")
		if err != nil {
			return err
		}
		if len(accounts) == 0 {
			return Errorf(ENOTFOUND, "Tenant %s has no WhatsApp (Meta) account.", tenantSlug)
		}
		creds = &MetaCredentials{TenantID: t.ID}
		for _, a := range accounts {
			creds.VerifyTokens = append(creds.VerifyTokens, a.VerifyToken)
			secrets, err := h.Accounts.Open(a)
			if err != nil {
				return err
			}
			if s := secrets["app_secret"]; s != "" {
				creds.AppSecrets = append(creds.AppSecrets, s)
			}
		}
		return nil
	})
	return creds, err
}
