package app

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// ReasonMessagingLimit fails a business-initiated WhatsApp message (a
// template to a user outside the customer service window) that would
// reach one unique user more than the number's messaging limit allows
// within 24 hours, when the message has a fallback chain to continue on.
// Without one the message waits until a user's 24 hours have passed.
const ReasonMessagingLimit = "messaging_limit_reached"

// ReachWindow is Meta's moving window of messaging limits: a user
// reached outside a customer service window counts for 24 hours.
const ReachWindow = 24 * time.Hour

// Sources of an account's enforced messaging tier.
const (
	TierFromMeta    = "meta"
	TierFromAccount = "account"
)

// messagingTiers are Meta's messaging limits by name: the names Meta
// reports now (TIER_250, TIER_2K, ...), those it reported before
// (TIER_1K), and the numbered tiers the account form offered first
// (TIER_1 .. TIER_4).
var messagingTiers = map[string]int{
	"TIER_50": 50, "TIER_250": 250, "TIER_1": 250, "TIER_1K": 1000,
	"TIER_2K": 2000, "TIER_2": 2000, "TIER_10K": 10000, "TIER_3": 10000,
	"TIER_100K": 100000, "TIER_4": 100000, "TIER_UNLIMITED": Unlimited, "UNLIMITED": Unlimited,
}

// TierLimit returns how many unique users a messaging tier lets a number
// reach in 24 hours (Unlimited for none), and false for a tier that names
// no limit (empty, TIER_NOT_SET, unknown words). A plain number is taken
// as the limit itself, as Meta's max_daily_conversations_per_business may
// give it.
func TierLimit(tier string) (int, bool) {
	tier = strings.ToUpper(strings.TrimSpace(tier))
	if n, ok := messagingTiers[tier]; ok {
		return n, true
	}
	if n, err := strconv.Atoi(tier); err == nil && n > 0 {
		return n, true
	}
	return 0, false
}

// NumberHealth is what Meta reported about a WhatsApp account's number
// and whether Herald's app is subscribed to its WABA.
type NumberHealth struct {
	TenantID  uuid.UUID `db:"tenant_id"`
	AccountID uuid.UUID `db:"account_id"`
	// MetaTier is the messaging limit Meta last reported
	// (phone_number_quality_update); it takes over from the account's
	// configured tier.
	MetaTier       *string    `db:"meta_tier"`
	TierReportedAt *time.Time `db:"tier_reported_at"`
	// Flagged: Meta flagged the number's quality (FLAGGED, until
	// UNFLAGGED or an UPGRADE).
	Flagged            bool       `db:"flagged"`
	QualityEvent       string     `db:"quality_event"`
	QualityEventAt     *time.Time `db:"quality_event_at"`
	DisplayPhoneNumber string     `db:"display_phone_number"`
	// AccountEvent is the newest account_update event, Detail what it said
	// (ban state, restrictions, violation).
	AccountEvent   string     `db:"account_event"`
	AccountDetail  string     `db:"account_detail"`
	AccountEventAt *time.Time `db:"account_event_at"`
	LastWebhookAt  *time.Time `db:"last_webhook_at"`
	// Subscription is SubscriptionOK, SubscriptionFailed or empty (never
	// tried).
	Subscription      string     `db:"subscription"`
	SubscriptionError string     `db:"subscription_error"`
	SubscriptionAt    *time.Time `db:"subscription_at"`
}

// Subscription states of a Meta account's WABA.
const (
	SubscriptionOK     = "subscribed"
	SubscriptionFailed = "failed"
)

// MessagingLimit is the limit Herald enforces on an account's
// business-initiated WhatsApp messages.
type MessagingLimit struct {
	// Tier is the tier in force and Source where it came from
	// (TierFromMeta, TierFromAccount); empty when none is known.
	Tier   string
	Source string
	// Base is the tier's limit; Limit what Herald allows, halved while
	// Meta flags the number's quality (SlowedDown). Unlimited for none.
	Base, Limit int
	SlowedDown  bool
	// Enforced: a limit applies (a known tier short of unlimited).
	Enforced bool
}

// EffectiveLimit is the account's messaging limit: the tier Meta last
// reported, else the tier set on the account, else none. While Meta flags
// the number's quality (its quality rating fell to low), Herald halves the
// limit: Meta restricts a flagged number's limit if its quality does not
// recover within days, and fewer templates to users who did not write
// first are what lets it recover.
func EffectiveLimit(a *ChannelAccount, h *NumberHealth) MessagingLimit {
	l := MessagingLimit{Base: Unlimited, Limit: Unlimited}
	if h != nil && h.MetaTier != nil {
		if n, ok := TierLimit(*h.MetaTier); ok {
			l.Tier, l.Source, l.Base = strings.ToUpper(*h.MetaTier), TierFromMeta, n
		}
	}
	if l.Source == "" {
		if n, ok := TierLimit(a.Config[ConfigMessagingTier]); ok {
			l.Tier, l.Source, l.Base = strings.ToUpper(a.Config[ConfigMessagingTier]), TierFromAccount, n
		}
	}
	l.Limit = l.Base
	if l.Base != Unlimited && h != nil && h.Flagged {
		l.Limit, l.SlowedDown = max(1, l.Base/2), true
	}
	l.Enforced = l.Limit != Unlimited
	return l
}

// ConfigMessagingTier is the account setting of a Meta account's
// messaging tier, as the tenant knows it from WhatsApp Manager.
const ConfigMessagingTier = "messaging_tier"

// ReachTake asks for a recipient's place among the users an account
// reaches in the window: none is needed when the address was reached
// within it already; otherwise one is taken if fewer than Limit
// (Unlimited: always) are counted.
type ReachTake struct {
	TenantID, AccountID, MessageID uuid.UUID
	Address                        string
	Limit                          int
	At                             time.Time
	Window                         time.Duration
}

// ReachSlot is the answer: OK, or the users counted and when the first of
// them leaves the window.
type ReachSlot struct {
	OK     bool
	Used   int
	FreeAt time.Time
}

// ReachTx lists the statements of the messaging limit, which the claim of
// a send runs.
type ReachTx interface {
	// LockNumberHealth returns the account's health, creating its row, and
	// locks it until the transaction ends: the account's sends take their
	// places one at a time.
	LockNumberHealth(ctx context.Context, tenantID, accountID uuid.UUID) (*NumberHealth, error)
	// TakeReach takes the recipient's place (see ReachTake), with the
	// account's health locked.
	TakeReach(ctx context.Context, r ReachTake) (ReachSlot, error)
}

// reachCheck holds a business-initiated WhatsApp message to the number's
// messaging limit, in the claim's transaction after the quota was taken:
// the recipient takes a place among the unique users reached in the last
// 24 hours, or the plan says what to do instead. A message with a
// fallback chain fails ReasonMessagingLimit (its next channel goes out);
// one without waits until the first user's 24 hours are over. Free text
// (inside the window) and other providers are not limited.
func (d *Dispatcher) reachCheck(ctx context.Context, tx SendTx, s *send, plan *sendPlan, now time.Time) (bool, error) {
	m, acct := s.message, s.account
	if s.waTemplate == nil || acct.Provider != "meta" {
		return true, nil
	}
	h, err := tx.LockNumberHealth(ctx, m.TenantID, acct.ID)
	if err != nil {
		return false, err
	}
	l := EffectiveLimit(acct, h)
	slot, err := tx.TakeReach(ctx, ReachTake{TenantID: m.TenantID, AccountID: acct.ID, MessageID: m.ID, Address: m.ToAddress,
		Limit: l.Limit, At: now, Window: ReachWindow})
	if err != nil || slot.OK {
		return slot.OK, err
	}
	detail := fmt.Sprintf("The WhatsApp number reached %d unique users with templates in the last 24 hours; its messaging limit is %d (%s",
		slot.Used, l.Limit, l.Tier)
	if l.SlowedDown {
		detail += fmt.Sprintf(", halved from %d while Meta flags the number's quality", l.Base)
	}
	detail += ")."
	if len(m.FallbackChain) > 0 && m.EventID != nil && m.ContactID != nil {
		plan.refusal = &sendRefusal{ReasonMessagingLimit, ReasonMessagingLimit, detail}
		return false, nil
	}
	plan.reachWait, plan.reachDetail = max(slot.FreeAt.Sub(now), time.Second), detail
	return false, nil
}

// awaitReach snoozes a message the messaging limit holds until a place
// frees, saying so on its timeline; one that would expire first expires.
func (d *Dispatcher) awaitReach(ctx context.Context, s *send, plan sendPlan) (DispatchOutcome, error) {
	m := s.message
	if d.expiresBefore(m, plan.reachWait) {
		return d.expire(ctx, m, map[string]any{"note": "it would expire before the WhatsApp messaging limit lets it go",
			"error_code": ReasonMessagingLimit, "error": plan.reachDetail}, s.complete)
	}
	wait := plan.reachWait + d.jitter(min(plan.reachWait, time.Minute))
	d.note(ctx, m, map[string]any{"error_code": ReasonMessagingLimit, "error": plan.reachDetail,
		"waits_until": d.Now().Add(wait).UTC().Format(time.RFC3339)})
	return d.snooze(m, ReasonMessagingLimit, wait), nil
}

// NumberUpdate is one of Meta's webhooks about a WhatsApp number:
// phone_number_quality_update (Event FLAGGED, UNFLAGGED, DOWNGRADE,
// UPGRADE, ...; Tier the number's limit now) or account_update (Event,
// Detail).
type NumberUpdate struct {
	WABAID             string
	Field              string
	DisplayPhoneNumber string
	Event              string
	Tier               string
	Detail             string
	// At is when Meta says the change happened (zero: unknown); older
	// news than what is stored is not applied.
	At time.Time
}

// Webhook fields of NumberUpdate.
const (
	FieldQualityUpdate = "phone_number_quality_update"
	FieldAccountUpdate = "account_update"
)

// NumberHealthTx lists the statements NumberHealths runs.
type NumberHealthTx interface {
	Tx
	// MetaAccountsOfWABA returns those of the accounts (ids) that are the
	// tenant's Meta accounts of the WABA.
	MetaAccountsOfWABA(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, waba string) ([]*ChannelAccount, error)
	LockNumberHealth(ctx context.Context, tenantID, accountID uuid.UUID) (*NumberHealth, error)
	// NumberHealth returns the account's health, ENOTFOUND when nothing
	// was recorded.
	NumberHealth(ctx context.Context, tenantID, accountID uuid.UUID) (*NumberHealth, error)
	SaveNumberHealth(ctx context.Context, h *NumberHealth) error
	// ReachUsed counts the unique users the account reached since a time.
	ReachUsed(ctx context.Context, tenantID, accountID uuid.UUID, since time.Time) (int, error)
	InsertAudit(ctx context.Context, e *AuditEntry) error
	AccountByID(ctx context.Context, tenantID, id uuid.UUID) (*ChannelAccount, error)
}

// AppSubscriber registers Herald's app on a WhatsApp Business Account
// (Meta's POST /{waba-id}/subscribed_apps), so that Meta sends the WABA's
// webhooks to it.
type AppSubscriber interface {
	SubscribeApp(ctx context.Context, a provider.Account) error
}

// NumberHealths keeps what Meta says about tenants' WhatsApp numbers and
// registers Herald's app on their WABAs.
type NumberHealths struct {
	Store      Store[NumberHealthTx]
	Accounts   *Accounts
	Subscriber AppSubscriber
	Now        Clock
}

// NumberState is an account's health with its limit and use now.
type NumberState struct {
	Health *NumberHealth
	Limit  MessagingLimit
	// Used is the unique users reached with templates in the last 24 hours.
	Used int
}

// State returns the account's number state for the console.
func (s *NumberHealths) State(ctx context.Context, tenantID uuid.UUID, a *ChannelAccount) (*NumberState, error) {
	st := &NumberState{}
	err := s.Store.InTenant(ctx, tenantID, func(tx NumberHealthTx) (err error) {
		st.Health, err = tx.NumberHealth(ctx, tenantID, a.ID)
		if ErrorCode(err) == ENOTFOUND {
			st.Health, err = nil, nil
		}
		if err != nil {
			return err
		}
		st.Used, err = tx.ReachUsed(ctx, tenantID, a.ID, s.Now().Add(-ReachWindow))
		return err
	})
	if err != nil {
		return nil, err
	}
	st.Limit = EffectiveLimit(a, st.Health)
	return st, nil
}
