package db

import (
	"context"
	"math"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/heraldhq/herald/app"
)

// TakeToken implements app.RateStore with one statement outside any
// transaction, so that the bucket row is locked only for that statement. A
// zero at reads the database's clock.
func (s *Store) TakeToken(ctx context.Context, key string, capacity, perSecond float64, at time.Time, slow app.SlowDown) (time.Duration, error) {
	return takeToken(ctx, s.db, key, capacity, perSecond, at, slow)
}

// TakeToken serves app.DispatchPlanTx: the claim of a send takes its token
// in its own transaction, holding the bucket row until it commits (a few
// statements), so that it needs no second connection and a claim rolled
// back gives its token back.
func (t *Tx) TakeToken(ctx context.Context, key string, capacity, perSecond float64, at time.Time, slow app.SlowDown) (time.Duration, error) {
	return takeToken(ctx, t.tx, key, capacity, perSecond, at, slow)
}

func takeToken(ctx context.Context, q sqlx.QueryerContext, key string, capacity, perSecond float64, at time.Time, slow app.SlowDown) (time.Duration, error) {
	var wait float64
	if err := sqlx.GetContext(ctx, q, &wait, `SELECT herald_take_token_at($1, $2, $3, $4, $5, $6)`,
		key, capacity, perSecond, clockParam(at), slow.Cooldown.Seconds(), slow.Recover.Seconds()); err != nil {
		return 0, unavailable(mapErr(err))
	}
	// A bucket a rounding error short of a token answers a wait of less
	// than a nanosecond: that is still no token, so it is never rounded
	// down to a zero wait (which would send without taking one).
	return time.Duration(math.Ceil(wait * float64(time.Second))), nil
}

// Throttle implements app.RateStore, in one statement like TakeToken.
func (s *Store) Throttle(ctx context.Context, key string, capacity float64, at time.Time, retryAfter time.Duration, slow app.SlowDown) error {
	_, err := s.db.ExecContext(ctx, `SELECT herald_rate_throttled($1, $2, $3, $4, $5, $6, $7)`,
		key, capacity, clockParam(at), retryAfter.Seconds(), slow.MinFactor, slow.Cooldown.Seconds(), slow.Recover.Seconds())
	return unavailable(mapErr(err))
}

// clockParam is at as a statement parameter: NULL, the database's own
// clock, when at is zero.
func clockParam(at time.Time) *time.Time {
	if at.IsZero() {
		return nil
	}
	return &at
}

// TakeIntakeToken implements app.IntakeTokens: one upsert, outside any
// transaction, refills the bucket to at (NULL: the database's clock once
// the row is locked) and takes a token where one is there; a new bucket
// starts full. Only a refusal runs a second statement, for how long until
// a token comes. Intake buckets are never throttled (no provider answers
// them), so unlike herald_take_token_at this ignores a block and a slow
// factor, and needs no function of several statements.
func (s *Store) TakeIntakeToken(ctx context.Context, key string, capacity, perSecond float64, at time.Time) (time.Duration, error) {
	var taken []bool
	err := s.db.SelectContext(ctx, &taken, `
		INSERT INTO rate_buckets AS b (key, tokens, refilled_at)
		VALUES ($1, $2::float8 - 1, coalesce($4::timestamptz, clock_timestamp()))
		ON CONFLICT (key) DO UPDATE SET
			tokens = least($2::float8, b.tokens + extract(epoch FROM greatest(coalesce($4::timestamptz, clock_timestamp()), b.refilled_at) - b.refilled_at) * $3::float8) - 1,
			refilled_at = greatest(coalesce($4::timestamptz, clock_timestamp()), b.refilled_at)
		WHERE least($2::float8, b.tokens + extract(epoch FROM greatest(coalesce($4::timestamptz, clock_timestamp()), b.refilled_at) - b.refilled_at) * $3::float8) >= 1
		RETURNING true`, key, capacity, perSecond, clockParam(at))
	if err != nil {
		return 0, unavailable(mapErr(err))
	}
	if len(taken) > 0 {
		return 0, nil
	}
	// No token: the refused upsert changed nothing. The bucket is brought
	// up to at, at the rate it had until now (a rate an operator changes
	// counts from here on), and says when the next token comes.
	var wait float64
	err = s.db.GetContext(ctx, &wait, `
		UPDATE rate_buckets SET
			tokens = least($2::float8, tokens + extract(epoch FROM greatest(coalesce($4::timestamptz, clock_timestamp()), refilled_at) - refilled_at) * $3::float8),
			refilled_at = greatest(coalesce($4::timestamptz, clock_timestamp()), refilled_at)
		WHERE key = $1
		RETURNING (1 - tokens) / $3::float8`, key, capacity, perSecond, clockParam(at))
	if err != nil {
		return 0, unavailable(mapErr(err))
	}
	// A token that came in between still answers a wait: this request
	// found none.
	return max(time.Duration(math.Ceil(wait*float64(time.Second))), time.Nanosecond), nil
}
