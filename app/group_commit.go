package app

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// groupCommit writes work that arrives together in shared transactions,
// the items of one key per batch (a tenant, or one key for all when the
// writer scopes each tenant's part itself). A batch is written as soon as
// a writer is free, never after a timer: a lone item goes at once, and only items that
// arrive while every writer is busy wait for the next batch, which is then
// the larger. Each caller returns when the transaction holding its item
// has committed or failed. The intake (IntakeBatcher) and the record of
// accepted sends (Dispatcher.SendBatch) use it.
type groupCommit[I any] struct {
	key func(I) uuid.UUID
	// write runs one key's batch in one transaction; an error fails every
	// item of it.
	write func(ctx context.Context, key uuid.UUID, items []I) error

	mu      sync.Mutex
	pending []*groupItem[I]
	writing int
	// max is the most items in one batch, writers the most batches
	// written at once (each holds one database connection); the latest
	// add's.
	max, writers int
}

type groupItem[I any] struct {
	v    I
	err  error
	done chan struct{}
}

// groupCommitTimeout bounds a batch's transaction. The batch is several
// callers' at once, so no caller's own deadline cuts it short.
const groupCommitTimeout = 10 * time.Second

// add writes v with the items added meanwhile, in batches of up to max
// items and writers batches at once, and returns its batch's error, or
// ctx's when the caller stops waiting.
func (g *groupCommit[I]) add(ctx context.Context, v I, max, writers int) error {
	it := &groupItem[I]{v: v, done: make(chan struct{})}
	g.mu.Lock()
	g.max, g.writers = max, writers
	g.pending = append(g.pending, it)
	start := g.writing < g.writers
	if start {
		g.writing++
	}
	g.mu.Unlock()
	if start {
		go g.run()
	}
	select {
	case <-it.done:
		return it.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waiting returns how many items wait for a batch.
func (g *groupCommit[I]) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending)
}

// run writes batches until none is waiting.
func (g *groupCommit[I]) run() {
	for {
		g.mu.Lock()
		batch := g.take()
		if len(batch) == 0 {
			g.writing--
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		vs := make([]I, len(batch))
		for i, it := range batch {
			vs[i] = it.v
		}
		ctx, cancel := context.WithTimeout(context.Background(), groupCommitTimeout)
		err := g.write(ctx, g.key(vs[0]), vs)
		cancel()
		for _, it := range batch {
			it.err = err
			close(it.done)
		}
	}
}

// take removes the next batch from pending: the oldest waiting item's
// key, and that key's other waiting items in arrival order, up to max. The
// caller holds mu.
func (g *groupCommit[I]) take() []*groupItem[I] {
	if len(g.pending) == 0 {
		return nil
	}
	key := g.key(g.pending[0].v)
	var batch []*groupItem[I]
	rest := g.pending[:0]
	for _, it := range g.pending {
		if len(batch) < g.max && g.key(it.v) == key {
			batch = append(batch, it)
		} else {
			rest = append(rest, it)
		}
	}
	clear(g.pending[len(rest):])
	g.pending = rest
	return batch
}
