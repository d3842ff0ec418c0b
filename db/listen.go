package db

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listen signals on the returned channel when a notification arrives on
// channel, and once each time it starts listening (on a new connection it
// may have missed some). Signals fold: the channel holds at most one. It
// holds one connection of the pool while ctx lasts, and takes a new one,
// a second later, when the connection fails.
func (d *DB) Listen(ctx context.Context, channel string, log *slog.Logger) <-chan struct{} {
	wake := make(chan struct{}, 1)
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	go func() {
		retry := time.NewTicker(time.Second)
		defer retry.Stop()
		for {
			err := d.listen(ctx, channel, signal)
			if ctx.Err() != nil {
				return
			}
			log.Warn("listening for notifications failed; listening again", "channel", channel, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-retry.C:
			}
		}
	}()
	return wake
}

func (d *DB) listen(ctx context.Context, channel string, signal func()) error {
	conn, err := d.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A connection that listened goes back to no pool: closing it ends the
	// LISTEN with it.
	defer func() {
		_ = conn.Conn().Close(context.WithoutCancel(ctx))
		conn.Release()
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	signal()
	for {
		if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
			return err
		}
		signal()
	}
}
