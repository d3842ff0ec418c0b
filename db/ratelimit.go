package db

import (
	"context"
	"time"
)

// TakeToken implements app.RateStore with one statement outside any
// transaction, so that the bucket row is locked only for that statement.
func (s *Store) TakeToken(ctx context.Context, key string, capacity, perSecond float64) (time.Duration, error) {
	var wait float64
	if err := s.db.GetContext(ctx, &wait, `SELECT herald_take_token($1, $2, $3)`, key, capacity, perSecond); err != nil {
		return 0, mapErr(err)
	}
	return time.Duration(wait * float64(time.Second)), nil
}
