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

// TokenTaker takes tokens from buckets that every worker process shares:
// the store on its own, or the transaction that claims a send.
type TokenTaker interface {
	// TakeToken takes one token at time at (zero: the store's own clock)
	// and returns 0, or returns how long until a token will be there. A throttled bucket (see Throttle)
	// gives no token before its block ends and refills at its slowed rate.
	TakeToken(ctx context.Context, key string, capacity, perSecond float64, at time.Time, slow SlowDown) (time.Duration, error)
}

// RateStore takes tokens from buckets that every worker process shares.
type RateStore interface {
	TokenTaker
	// Throttle records a provider's rate limit on the bucket at time at:
	// no token for retryAfter, then the rate slowed down.
	Throttle(ctx context.Context, key string, capacity float64, at time.Time, retryAfter time.Duration, slow SlowDown) error
}

// SlowDown is how a bucket slows after a provider's rate limit: its rate
// halves (not below MinFactor of the account's rate), stays there for
// Cooldown, then grows back to the full rate over Recover. Halving
// per 429 and growing back linearly is the usual AIMD way of finding the
// rate a provider takes.
type SlowDown struct {
	MinFactor         float64
	Cooldown, Recover time.Duration
}

// DefaultSlowDown halves an account's rate down to an eighth, for 30 s,
// then recovers within a minute.
var DefaultSlowDown = SlowDown{MinFactor: 0.125, Cooldown: 30 * time.Second, Recover: time.Minute}

// RateLimiter is the dispatch Gate for provider rate limits: one token
// bucket per tenant and channel account, held in Postgres.
type RateLimiter struct {
	Store RateStore
	// Now is the clock buckets are read with; nil reads the database's,
	// once the bucket is locked, so that every worker process shares one
	// clock. Tests inject theirs.
	Now Clock
	// JitterFunc returns a random wait in [0, n); nil uses math/rand.
	JitterFunc func(n time.Duration) time.Duration
	// SlowDown is the reaction to a provider's 429; zero: DefaultSlowDown.
	SlowDown SlowDown
}

func (l *RateLimiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Time{}
}

func (l *RateLimiter) slowDown() SlowDown {
	if l.SlowDown == (SlowDown{}) {
		return DefaultSlowDown
	}
	return l.SlowDown
}

func bucketKey(a *ChannelAccount) string { return "rate:" + a.TenantID.String() + ":" + a.ID.String() }

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

// Wait implements Gate: it takes the token through tokens (nil: the
// limiter's own store). A job without a token is snoozed until about when
// one will be there, with jitter so that a backlog does not wake at once.
func (l *RateLimiter) Wait(ctx context.Context, tokens TokenTaker, a *ChannelAccount) (time.Duration, error) {
	perSecond, burst, limited, err := AccountRate(a)
	if err != nil || !limited {
		return 0, err
	}
	if tokens == nil {
		tokens = l.Store
	}
	wait, err := tokens.TakeToken(ctx, bucketKey(a), burst, perSecond, l.now(), l.slowDown())
	if err != nil || wait <= 0 {
		return 0, err
	}
	spread := max(wait, 100*time.Millisecond)
	return wait + l.jitter(spread), nil
}

// Throttled implements Gate: the provider answered a send of the account
// with a rate limit. Every worker's sends of the account wait retryAfter,
// then go at a slowed rate. Accounts without a rate limit of their own
// (the sandbox) keep none.
func (l *RateLimiter) Throttled(ctx context.Context, a *ChannelAccount, retryAfter time.Duration) error {
	_, burst, limited, err := AccountRate(a)
	if err != nil || !limited {
		return err
	}
	return l.Store.Throttle(ctx, bucketKey(a), burst, l.now(), retryAfter, l.slowDown())
}

func (l *RateLimiter) jitter(n time.Duration) time.Duration {
	if l.JitterFunc != nil {
		return l.JitterFunc(n)
	}
	return rand.N(n)
}
