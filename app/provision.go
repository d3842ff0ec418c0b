package app

import (
	"context"
	"fmt"
)

// ProvisionTx lists the statements provisioning a new tenant runs, inside the tenant's creating transaction.
type ProvisionTx interface {
	Tx
	CreateAccount(ctx context.Context, a *ChannelAccount) error
	CreateTemplates(ctx context.Context, ts []*Template) error
}

// Provisioner sets a new tenant up so that it can send at once: the default
// templates for every registry event, channel and locale, and one sandbox
// channel account per channel.
type Provisioner struct {
	Accounts *Accounts
	Now      Clock
	// SandboxInactive leaves the sandbox accounts PENDING instead of ACTIVE.
	SandboxInactive bool
}

// Provision runs inside the transaction that creates the tenant.
func (p *Provisioner) Provision(ctx context.Context, tx ProvisionTx, t *Tenant) error {
	if err := provisionTemplates(ctx, tx, t.ID, p.Now()); err != nil {
		return fmt.Errorf("default templates: %w", err)
	}
	for _, ch := range []Channel{WhatsApp, Email, SMS} {
		a, err := p.Accounts.NewAccount(t.ID, AccountInput{
			Channel: ch, Provider: "sandbox", Name: "Sandbox " + string(ch), Activate: !p.SandboxInactive,
		})
		if err != nil {
			return err
		}
		if err := tx.CreateAccount(ctx, a); err != nil {
			return fmt.Errorf("sandbox %s account: %w", ch, err)
		}
	}
	return nil
}
