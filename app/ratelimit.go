package app

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// DefaultRates are the sends per second of one channel account, by
// provider, when its configuration names none (config "rate_per_second").
// Meta allows 80 messages a second per business number (1,000 once Meta
// upgrades the number: config "throughput": "high"); SES accounts out of the
// sandbox start at 14 a second; SNS sends 20 SMS a second by default; tenant
// webhooks get 50. The sandbox is unlimited. WhatsApp's messaging tiers
// (TIER_1 .. UNLIMITED) limit new conversations per 24 hours, not the send
// rate, so they do not change these numbers.
var DefaultRates = map[string]float64{
	"meta":    80,
	"ses":     14,
	"sns":     20,
	"webhook": 50,
}

// RateStore takes tokens from buckets that every worker process shares.
type RateStore interface {
	// TakeToken takes one token and returns 0, or returns how long until
	// a token will be there.
	TakeToken(ctx context.Context, key string, capacity, perSecond float64) (time.Duration, error)
}

// RateLimiter is the dispatch Gate for provider rate limits: one token
// bucket per tenant and channel account, held in Postgres.
type RateLimiter struct {
	Store RateStore
}

// AccountRate returns the account's rate (sends per second) and burst, and
// false when the account is not rate limited.
func AccountRate(a *ChannelAccount) (perSecond, burst float64, limited bool, err error) {
	perSecond, limited = DefaultRates[a.Provider]
	if a.Provider == "meta" && a.Config["throughput"] == "high" {
		perSecond = 1000
	}
	if v := a.Config["rate_per_second"]; v != "" {
		perSecond, err = strconv.ParseFloat(v, 64)
		if err != nil || perSecond <= 0 {
			return 0, 0, false, fmt.Errorf("channel account %s: rate_per_second %q is not a positive number", a.ID, v)
		}
		limited = true
	}
	if !limited {
		return 0, 0, false, nil
	}
	// A second's worth of burst lets a quiet account send a small batch at
	// once without ever exceeding the rate over a second.
	burst = max(perSecond, 1)
	if v := a.Config["burst"]; v != "" {
		if b, err := strconv.ParseFloat(v, 64); err == nil && b >= 1 {
			burst = b
		}
	}
	return perSecond, burst, true, nil
}

// Wait implements Gate. A job without a token is snoozed until about when
// one will be there, with jitter so that a backlog does not wake at once.
func (l *RateLimiter) Wait(ctx context.Context, a *ChannelAccount) (time.Duration, error) {
	perSecond, burst, limited, err := AccountRate(a)
	if err != nil || !limited {
		return 0, err
	}
	wait, err := l.Store.TakeToken(ctx, "rate:"+a.TenantID.String()+":"+a.ID.String(), burst, perSecond)
	if err != nil || wait <= 0 {
		return 0, err
	}
	spread := max(wait, 100*time.Millisecond)
	return wait + rand.N(spread), nil
}
