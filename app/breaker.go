package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/sony/gobreaker/v2"

	"github.com/heraldhq/herald/app/provider"
)

// Breaker states as metrics report them.
const (
	BreakerClosed   = 0
	BreakerHalfOpen = 1
	BreakerOpen     = 2
)

// BreakerTx lists the statements Breakers runs.
type BreakerTx interface {
	Tx
	InsertAudit(ctx context.Context, e *AuditEntry) error
}

// Breakers keeps one circuit breaker per channel account in this process.
// A breaker opens after Threshold transient failures within Window; while it
// is open, dispatch jobs snooze instead of spending attempts on a provider
// that is down, and after OpenFor one probe send decides whether it closes.
// Only transient failures count: a rejected recipient says nothing about the
// provider's health.
type Breakers struct {
	Threshold int
	Window    time.Duration
	OpenFor   time.Duration
	Store     Store[BreakerTx]
	Metrics   Metrics
	Log       *slog.Logger
	Now       Clock

	mu       sync.Mutex
	breakers map[uuid.UUID]*accountBreaker
}

type accountBreaker struct {
	cb       *gobreaker.CircuitBreaker[string]
	mu       sync.Mutex
	openedAt time.Time
}

// countsAsFailure reports whether err counts against a breaker.
func countsAsFailure(err error) bool {
	if err == nil {
		return false
	}
	pe := provider.Classify(err)
	return pe.Class == provider.Transient
}

func (b *Breakers) get(a *ChannelAccount) *accountBreaker {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.breakers == nil {
		b.breakers = map[uuid.UUID]*accountBreaker{}
	}
	if ab, ok := b.breakers[a.ID]; ok {
		return ab
	}
	threshold, window, openFor := b.Threshold, b.Window, b.OpenFor
	if threshold <= 0 {
		threshold = 10
	}
	if window <= 0 {
		window = 5 * time.Minute
	}
	if openFor <= 0 {
		openFor = time.Minute
	}
	ab := &accountBreaker{}
	tenantID, accountID, providerName := a.TenantID, a.ID, a.Provider
	ab.cb = gobreaker.NewCircuitBreaker[string](gobreaker.Settings{
		Name:         a.ID.String(),
		MaxRequests:  1,
		Interval:     window,
		BucketPeriod: window / 10,
		Timeout:      openFor,
		ReadyToTrip:  func(c gobreaker.Counts) bool { return c.TotalFailures >= uint32(threshold) },
		IsSuccessful: func(err error) bool { return !countsAsFailure(err) },
		// A send Herald itself cut short (shutdown, the job's timeout)
		// says nothing about the provider: neither failure nor success.
		IsExcluded: func(err error) bool {
			var c cutShort
			return errors.As(err, &c)
		},
		OnStateChange: func(_ string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				ab.mu.Lock()
				ab.openedAt = b.Now()
				ab.mu.Unlock()
			}
			b.changed(tenantID, accountID, providerName, from, to)
		},
	})
	b.breakers[a.ID] = ab
	return ab
}

func stateNumber(s gobreaker.State) int {
	switch s {
	case gobreaker.StateOpen:
		return BreakerOpen
	case gobreaker.StateHalfOpen:
		return BreakerHalfOpen
	}
	return BreakerClosed
}

// changed records a transition in the metrics, the log and the audit log.
func (b *Breakers) changed(tenantID, accountID uuid.UUID, providerName string, from, to gobreaker.State) {
	b.Metrics.BreakerState(accountID.String(), providerName, stateNumber(to))
	b.Log.Warn("circuit breaker changed state", "tenant_id", tenantID, "channel_account_id", accountID,
		"provider", providerName, "from", from.String(), "to", to.String())
	// The transition happens inside a send; the audit write must not hold it up.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := b.Store.InTenant(ctx, tenantID, func(tx BreakerTx) error {
			return tx.InsertAudit(ctx, SystemActor.Entry(&tenantID, "channel_account.breaker", "channel_account", accountID.String(),
				map[string]any{"from": from.String(), "to": to.String(), "provider": providerName}))
		})
		if err != nil {
			b.Log.Error("audit breaker transition", "err", err)
		}
	}()
}

// cutShort marks the error of a send whose context ended (shutdown, job
// timeout) for the breaker, which must not count it.
type cutShort struct{ err error }

func (c cutShort) Error() string { return c.err.Error() }
func (c cutShort) Unwrap() error { return c.err }

// Send runs send through the account's breaker. When the breaker refuses,
// it returns how long to wait before trying again, and no error. A send
// that fails because ctx ended is not held against the provider.
//
// A probe that fails (the one send a half-open breaker lets through) is
// answered like a refusal: the breaker opens again, and the message waits
// with the others instead of spending one of its attempts. Otherwise each
// failed probe would spend an attempt of the message that ran it: through
// a long outage, with one probe a minute and few messages waiting, the same
// messages would probe again and again and fail with their retries
// exhausted, while the breaker kept the others waiting unharmed.
func (b *Breakers) Send(ctx context.Context, a *ChannelAccount, send func() (string, error)) (string, time.Duration, error) {
	ab := b.get(a)
	probe := ab.cb.State() == gobreaker.StateHalfOpen
	id, err := ab.cb.Execute(func() (string, error) {
		id, err := send()
		if err != nil && ctx.Err() != nil {
			return id, cutShort{err}
		}
		return id, err
	})
	var c cutShort
	cut := errors.As(err, &c)
	if cut {
		err = c.err
	}
	refused := errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
	// A failed probe always opens the breaker again; by the time its state
	// is read here the open spell may even be over (half-open), but it is
	// never closed.
	if refused || (probe && !cut && countsAsFailure(err) && ab.cb.State() != gobreaker.StateClosed) {
		return "", b.untilHalfOpen(ab), nil
	}
	return id, 0, err
}

// untilHalfOpen is how long a message waits for an open breaker: until it
// lets a probe through, and at least a second.
func (b *Breakers) untilHalfOpen(ab *accountBreaker) time.Duration {
	ab.mu.Lock()
	wait := ab.openedAt.Sub(b.Now())
	ab.mu.Unlock()
	openFor := b.OpenFor
	if openFor <= 0 {
		openFor = time.Minute
	}
	return max(wait+openFor, time.Second)
}

// State returns the account's breaker state (BreakerClosed when it has none).
func (b *Breakers) State(accountID uuid.UUID) int {
	b.mu.Lock()
	ab, ok := b.breakers[accountID]
	b.mu.Unlock()
	if !ok {
		return BreakerClosed
	}
	return stateNumber(ab.cb.State())
}
