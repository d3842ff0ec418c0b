package app

import (
	"context"
	"slices"
	"strings"
	"time"

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
	AccountByWebhookToken(ctx context.Context, token string) (*ChannelAccount, error)
}

// Hooks serves the provider webhooks' lookups.
type Hooks struct {
	Store    Store[HookTx]
	Accounts *Accounts
	// Rates throttles Meta's subscription checks per client address.
	Rates RateStore
}

// Meta's subscription checks are rare (one when a webhook is configured):
// a client gets a burst of 10 and then one every 6 seconds, so the check
// cannot be used to guess verify tokens or paths.
const (
	metaVerifyBurst     = 10
	metaVerifyPerSecond = 1.0 / 6
)

// ThrottleMetaVerify counts a subscription check from the client address
// ip and returns how long it must wait first (0: go ahead).
func (h *Hooks) ThrottleMetaVerify(ctx context.Context, ip string) (time.Duration, error) {
	if h.Rates == nil {
		return 0, nil
	}
	return h.Rates.TakeToken(ctx, "meta-verify:"+ip, metaVerifyBurst, metaVerifyPerSecond, time.Time{}, DefaultSlowDown)
}

// MetaCredentialsByToken returns the credentials of the Meta accounts of
// the tenant whose account has the webhook token (the path
// /webhooks/meta/a/{token}): the path finds the tenant, and the signature
// (or verify token) of any of its Meta accounts is accepted, since one Meta
// app may serve several of the tenant's numbers. An unknown token is
// ENOTFOUND.
func (h *Hooks) MetaCredentialsByToken(ctx context.Context, token string) (*MetaCredentials, error) {
	var creds *MetaCredentials
	err := h.Store.InPlatform(ctx, func(tx HookTx) error {
		a, err := tx.AccountByWebhookToken(ctx, token)
		if err != nil {
			return err
		}
		if a.Provider != "meta" {
			return Errorf(ENOTFOUND, "No Meta account has this webhook path.")
		}
		creds, err = h.metaCredentials(ctx, tx, a.TenantID)
		return err
	})
	return creds, err
}

// MetaCredentials returns the credentials of the tenant's Meta accounts
// (all but DISABLED ones, so a suspended account still hears its statuses),
// for the older path that names the tenant's slug. An unknown tenant, or
// one without a Meta account, is ENOTFOUND.
func (h *Hooks) MetaCredentials(ctx context.Context, tenantSlug string) (*MetaCredentials, error) {
	var creds *MetaCredentials
	err := h.Store.InPlatform(ctx, func(tx HookTx) error {
		t, err := tx.TenantBySlug(ctx, strings.ToLower(tenantSlug))
		if err != nil {
			return err
		}
		creds, err = h.metaCredentials(ctx, tx, t.ID)
		return err
	})
	return creds, err
}

func (h *Hooks) metaCredentials(ctx context.Context, tx HookTx, tenantID uuid.UUID) (*MetaCredentials, error) {
	accounts, err := tx.AccountsByProvider(ctx, tenantID, "meta")
	if err != nil {
		return nil, err
	}
	if len(accounts) == 0 {
		return nil, Errorf(ENOTFOUND, "The tenant has no WhatsApp (Meta) account.")
	}
	creds := &MetaCredentials{TenantID: tenantID}
	for _, a := range accounts {
		secrets, err := h.Accounts.Open(a)
		if err != nil {
			return nil, err
		}
		creds.Accounts = append(creds.Accounts, MetaAccount{
			ID: a.ID, PhoneNumberID: a.Config["phone_number_id"], VerifyToken: a.VerifyToken, AppSecret: secrets["app_secret"],
		})
	}
	return creds, nil
}

// SESVia returns what an SES event came through: the SES accounts that
// hear the SNS topic (see AccountStatusTopic) and send with the
// configuration set the event names (none when it names none), and the
// topic setting of the accounts that hear it whatever their configuration
// set (Via.AccountTopic).
func (h *Hooks) SESVia(ctx context.Context, topicARN, configurationSet string) (Via, error) {
	via, heard, err := h.awsVia(ctx, "ses", topicARN, map[string]string{accountConfigurationSet: configurationSet})
	via.AccountTopic = &heard
	return via, err
}

// SMSVia returns what an SNS SMS delivery status came through: the SNS
// accounts that hear the topic, or, for a record posted directly with the
// deployment's secret (topicARN empty), the accounts that name no topic.
func (h *Hooks) SMSVia(ctx context.Context, topicARN string) (Via, error) {
	via, _, err := h.awsVia(ctx, "sns", topicARN, nil)
	return via, err
}

// SMSInboundAccount returns the SNS account an inbound SMS came to: among
// the accounts that hear the topic (as SMSVia finds them), the one whose
// origination_number is the number the person wrote to. None, or several
// (a number claimed twice), is ENOTFOUND: the message is not placed.
func (h *Hooks) SMSInboundAccount(ctx context.Context, topicARN, destination string) (*ChannelAccount, error) {
	via, err := h.SMSVia(ctx, topicARN)
	if err != nil {
		return nil, err
	}
	var found []*ChannelAccount
	err = h.Store.InPlatform(ctx, func(tx HookTx) error {
		as, err := tx.AccountsByConfig(ctx, "sns", map[string]string{"origination_number": destination})
		for _, a := range as {
			if slices.Contains(via.Accounts, a.ID) {
				found = append(found, a)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(found) != 1 {
		return nil, Errorf(ENOTFOUND, "No SMS account hearing this topic has the number %s.", destination)
	}
	return found[0], nil
}

// awsVia finds the provider's accounts (of every tenant: Amazon's routes
// are shared) that claim the topic and match the other settings; a topic
// no account claims is the deployment's own and serves the accounts that
// claim none. heard is the topic setting of the accounts that hear the
// topic, whatever their other settings: the topic, or "" for the
// deployment's.
func (h *Hooks) awsVia(ctx context.Context, provider, topicARN string, match map[string]string) (via Via, heard string, err error) {
	via = Via{Route: provider + ":" + topicARN}
	if topicARN == "" {
		via.Route = provider + ":secret"
	}
	err = h.Store.InPlatform(ctx, func(tx HookTx) error {
		var accounts []*ChannelAccount
		for _, topic := range []string{topicARN, ""} {
			heard = topic
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
	return via, heard, err
}
