package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// SubscribeTimeout bounds the call that registers Herald's app on a WABA.
const SubscribeTimeout = 20 * time.Second

// ApplyUpdate records one of Meta's number webhooks on the accounts it
// belongs to: those of verified (the accounts whose app secret signed the
// post) that are the tenant's Meta accounts of the update's WABA. A number
// of the WABA that Meta named differently from the one stored for the
// account is another number's news and is skipped. News older than what
// is stored (Meta redelivers, and out of order) changes nothing. It
// returns how many accounts took the update.
func (s *NumberHealths) ApplyUpdate(ctx context.Context, tenantID uuid.UUID, verified []uuid.UUID, u NumberUpdate) (int, error) {
	if u.WABAID == "" || len(verified) == 0 {
		return 0, nil
	}
	if u.At.IsZero() {
		u.At = s.Now()
	}
	applied := 0
	err := s.Store.InTenant(ctx, tenantID, func(tx NumberHealthTx) error {
		as, err := tx.MetaAccountsOfWABA(ctx, tenantID, verified, u.WABAID)
		if err != nil {
			return err
		}
		for _, a := range as {
			h, err := tx.LockNumberHealth(ctx, tenantID, a.ID)
			if err != nil {
				return err
			}
			before := EffectiveLimit(a, h)
			if !h.apply(u, s.Now()) {
				continue
			}
			if err := tx.SaveNumberHealth(ctx, h); err != nil {
				return err
			}
			applied++
			after := EffectiveLimit(a, h)
			meta := map[string]any{"field": u.Field, "event": u.Event}
			if u.Tier != "" {
				meta["tier"] = u.Tier
			}
			if before != after {
				meta["limit"] = map[string]any{"from": limitText(before), "to": limitText(after)}
			}
			if err := tx.InsertAudit(ctx, SystemActor.Entry(&tenantID, "channel_account.meta_health", "channel_account", a.ID.String(), meta)); err != nil {
				return err
			}
		}
		return nil
	})
	return applied, err
}

// limitText is a limit as the audit log states it.
func limitText(l MessagingLimit) string {
	if !l.Enforced {
		return "none"
	}
	return fmt.Sprintf("%d", l.Limit)
}

// apply changes the health by the update, unless it is older news than
// what is stored or names another number; it reports whether it did.
func (h *NumberHealth) apply(u NumberUpdate, now time.Time) bool {
	if u.DisplayPhoneNumber != "" && h.DisplayPhoneNumber != "" && digitsOf(u.DisplayPhoneNumber) != digitsOf(h.DisplayPhoneNumber) {
		return false
	}
	switch u.Field {
	case FieldQualityUpdate:
		if h.QualityEventAt != nil && u.At.Before(*h.QualityEventAt) {
			return false
		}
		h.QualityEvent, h.QualityEventAt = u.Event, &u.At
		switch u.Event {
		case "FLAGGED":
			h.Flagged = true
		case "UNFLAGGED", "UPGRADE":
			h.Flagged = false
		}
		if _, ok := TierLimit(u.Tier); ok {
			tier := strings.ToUpper(u.Tier)
			h.MetaTier, h.TierReportedAt = &tier, &u.At
		}
	case FieldAccountUpdate:
		if h.AccountEventAt != nil && u.At.Before(*h.AccountEventAt) {
			return false
		}
		h.AccountEvent, h.AccountDetail, h.AccountEventAt = u.Event, u.Detail, &u.At
	default:
		return false
	}
	if u.DisplayPhoneNumber != "" {
		h.DisplayPhoneNumber = u.DisplayPhoneNumber
	}
	h.LastWebhookAt = &now
	return true
}

func digitsOf(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// Subscribe registers Herald's app on a Meta account's WABA with the
// account's own token and records the outcome on the account (and in
// the audit log). A refusal is an ECONFLICT that says what Meta answered:
// the caller does not activate the account, since Meta would send its
// statuses and replies nowhere.
func (s *NumberHealths) Subscribe(ctx context.Context, actor Actor, a *ChannelAccount) error {
	if s.Subscriber == nil || a.Provider != "meta" {
		return nil
	}
	secrets, err := s.Accounts.Open(a)
	if err != nil {
		return fmt.Errorf("channel account %s: %w", a.ID, err)
	}
	call, cancel := context.WithTimeout(ctx, SubscribeTimeout)
	defer cancel()
	callErr := s.Subscriber.SubscribeApp(call, provider.Account{ID: a.ID, TenantID: a.TenantID, Provider: a.Provider, Config: a.Config, Secrets: secrets})
	why := ""
	if callErr != nil {
		why = callErr.Error()
		var pe *provider.Error
		if errors.As(callErr, &pe) && pe.Reason != "" {
			why = pe.Reason
		}
		why = truncateRunes(why, 900)
	}
	now := s.Now()
	err = s.Store.InTenant(ctx, a.TenantID, func(tx NumberHealthTx) error {
		h, err := tx.LockNumberHealth(ctx, a.TenantID, a.ID)
		if err != nil {
			return err
		}
		h.Subscription, h.SubscriptionError, h.SubscriptionAt = SubscriptionOK, why, &now
		meta := map[string]any{"waba_id": a.Config[ConfigWABAID], "outcome": SubscriptionOK}
		if callErr != nil {
			h.Subscription, meta["outcome"], meta["error"] = SubscriptionFailed, SubscriptionFailed, why
		}
		if err := tx.SaveNumberHealth(ctx, h); err != nil {
			return err
		}
		return tx.InsertAudit(ctx, actor.Entry(&a.TenantID, "channel_account.subscribe_app", "channel_account", a.ID.String(), meta))
	})
	if err != nil {
		return err
	}
	if callErr != nil {
		return &Error{Code: ECONFLICT, Reason: "meta_subscription_failed", Message: fmt.Sprintf(
			"Meta did not subscribe Herald's app to WhatsApp Business Account %s: %s The account was not activated; check that its access token may manage the WABA (whatsapp_business_management) and try again.",
			a.Config[ConfigWABAID], sentence(why))}
	}
	return nil
}

// ConfigWABAID is the account setting of a Meta account's WhatsApp
// Business Account id.
const ConfigWABAID = "waba_id"

// sentence ends a provider's reason with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "no reason given."
	}
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
