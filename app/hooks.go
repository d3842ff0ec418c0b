package app

import (
	"context"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// AccountStatusTopic is the channel account setting (SES and SNS accounts)
// naming the SNS topic its delivery events arrive through. An account that
// names one hears only that topic; accounts that name none share the
// deployment's own topics (HERALD_SNS_TOPIC_ARNS that no account claims) and
// the direct SMS status posts signed with the deployment's secret.
const AccountStatusTopic = "sns_topic_arn"

// accountConfigurationSet is the SES account setting naming its
// configuration set (the adapter's and the console's key).
const accountConfigurationSet = "configuration_set"

// MetaCredentials are what a tenant's Meta webhook is checked with: its
// Meta channel accounts' verify tokens and app secrets.
type MetaCredentials struct {
	TenantID uuid.UUID
	Accounts []MetaAccount
}

// MetaAccount is one Meta account's webhook credentials.
type MetaAccount struct {
	ID            uuid.UUID
	PhoneNumberID string
	VerifyToken   string
	AppSecret     string
}

// Via returns what a status posted to the tenant's webhook came through:
// the tenant, and those of the verified accounts (the ones whose app secret
// signed the post) whose phone number is the one the status names. A status
// that names no number binds to all verified accounts.
func (c *MetaCredentials) Via(verified []uuid.UUID, phoneNumberID string) Via {
	via := Via{TenantID: c.TenantID, Route: "meta:" + c.TenantID.String()}
	for _, a := range c.Accounts {
		if slices.Contains(verified, a.ID) && (phoneNumberID == "" || a.PhoneNumberID == phoneNumberID) {
			via.Accounts = append(via.Accounts, a.ID)
		}
	}
	return via
}

// HookTx lists the statements Hooks runs.
type HookTx interface {
	Tx
	AccountsByProvider(ctx context.Context, tenantID uuid.UUID, provider string) ([]*ChannelAccount, error)
	AccountsByConfig(ctx context.Context, provider string, match map[string]string) ([]*ChannelAccount, error)
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
			secrets, err := h.Accounts.Open(a)
			if err != nil {
				return err
			}
			creds.Accounts = append(creds.Accounts, MetaAccount{
				ID: a.ID, PhoneNumberID: a.Config["phone_number_id"], VerifyToken: a.VerifyToken, AppSecret: secrets["app_secret"],
			})
		}
		return nil
	})
	return creds, err
}

// SESVia returns what an SES event came through: the SES accounts that
// hear the SNS topic (see AccountStatusTopic) and send with the
// configuration set the event names (none when it names none).
func (h *Hooks) SESVia(ctx context.Context, topicARN, configurationSet string) (Via, error) {
	return h.awsVia(ctx, "ses", topicARN, map[string]string{accountConfigurationSet: configurationSet})
}

// SMSVia returns what an SNS SMS delivery status came through: the SNS
// accounts that hear the topic, or, for a record posted directly with the
// deployment's secret (topicARN empty), the accounts that name no topic.
func (h *Hooks) SMSVia(ctx context.Context, topicARN string) (Via, error) {
	return h.awsVia(ctx, "sns", topicARN, nil)
}

// awsVia finds the provider's accounts (of every tenant: Amazon's routes
// are shared) that claim the topic and match the other settings; a topic
// no account claims is the deployment's own and serves the accounts that
// claim none.
func (h *Hooks) awsVia(ctx context.Context, provider, topicARN string, match map[string]string) (Via, error) {
	via := Via{Route: provider + ":" + topicARN}
	if topicARN == "" {
		via.Route = provider + ":secret"
	}
	err := h.Store.InPlatform(ctx, func(tx HookTx) error {
		var accounts []*ChannelAccount
		for _, topic := range []string{topicARN, ""} {
			m := map[string]string{AccountStatusTopic: topic}
			for k, v := range match {
				m[k] = v
			}
			var err error
			if accounts, err = tx.AccountsByConfig(ctx, provider, m); err != nil {
				return err
			}
			if topic == "" || len(accounts) > 0 {
				break
			}
			// Claimed by an account with other settings: not shared.
			claimed, err := tx.AccountsByConfig(ctx, provider, map[string]string{AccountStatusTopic: topic})
			if err != nil || len(claimed) > 0 {
				return err
			}
		}
		for _, a := range accounts {
			via.Accounts = append(via.Accounts, a.ID)
		}
		return nil
	})
	return via, err
}
