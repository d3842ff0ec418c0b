package app

import (
	"context"
	"slices"

	"github.com/google/uuid"
)

// An SES event that names another configuration set than the account
// whose message it names, arriving through a topic that account hears, is
// foreign like any receipt that names a message it may not touch: it is
// stored, never applied. It is kept as that account's, not under no
// tenant, and the account's console page counts such events: they are
// what an account sees when SES sends its mail with another configuration
// set than the account names (a default set on the identity, a set
// renamed in SES), and while it lasts none of its messages gets its
// delivery. Events through a topic the account does not hear (another
// tenant's) stay under no tenant: they say nothing about the account.

// findAstray marks the receipts of a round that went astray (see
// InboxReceipt.Astray). It reads the accounts of those that may have,
// foreign receipts from a route whose accounts' topic setting is known
// (Via.AccountTopic), in the round's transaction; a round without such
// receipts reads nothing.
func (s *Receipts) findAstray(ctx context.Context, tx ReceiptInboxTx, found []*InboxReceipt) error {
	var ids []uuid.UUID
	var maybe []*InboxReceipt
	for _, in := range found {
		t := in.Target
		if in.Unreadable != nil || in.Via.AccountTopic == nil || t.MessageID == uuid.Nil || t.AccountID == nil ||
			in.Via.allows(t.TenantID, t.AccountID) {
			continue
		}
		maybe = append(maybe, in)
		if !slices.Contains(ids, *t.AccountID) {
			ids = append(ids, *t.AccountID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	accounts, err := tx.AccountsByID(ctx, ids)
	if err != nil {
		return err
	}
	for _, in := range maybe {
		for _, a := range accounts {
			if a.ID == *in.Target.AccountID && a.TenantID == in.Target.TenantID && a.Provider == in.Receipt.Provider &&
				a.Config[AccountStatusTopic] == *in.Via.AccountTopic {
				in.Astray = a
			}
		}
	}
	return nil
}

// logAstray warns of a receipt kept as the account's it went astray from.
func (s *Receipts) logAstray(ctx context.Context, in *InboxReceipt) {
	s.Log.WarnContext(ctx, "SES event names another configuration set than its message's account; kept as the account's foreign receipt, not applied",
		"tenant_id", in.Astray.TenantID, "channel_account_id", in.Astray.ID, "configuration_set", in.Receipt.AccountRef,
		"account_configuration_set", in.Astray.Config[accountConfigurationSet], "route", in.Via.Route,
		"provider", in.Receipt.Provider, "external_id", in.Receipt.ExternalID)
}
