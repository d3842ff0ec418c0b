package app

import (
	"context"
	"sync"
	"time"
)

// ReceiptBatcher gathers receipts Herald makes itself (the sandbox's, one
// goroutine per message) into shared inbox inserts: the first receipt of a
// batch waits up to MaxWait for others, a full batch goes at once, and
// every caller returns when the insert holding its receipt committed (or
// failed). Under load a receipt costs a small share of one commit instead
// of one commit.
type ReceiptBatcher struct {
	// AcceptFunc stores a batch (Receipts.Accept).
	AcceptFunc func(ctx context.Context, rs ...InboxReceipt) error
	// MaxBatch is the most receipts one insert holds (DefaultReceiptBatch
	// when 0).
	MaxBatch int
	// MaxWait is how long the first receipt of a batch waits for others.
	MaxWait time.Duration

	mu  sync.Mutex
	cur *receiptBatch
}

type receiptBatch struct {
	items []InboxReceipt
	full  chan struct{}
	done  chan struct{}
	err   error
}

// Add stores r with the receipts added about the same time.
func (b *ReceiptBatcher) Add(ctx context.Context, r InboxReceipt) error {
	limit := b.MaxBatch
	if limit <= 0 {
		limit = DefaultReceiptBatch
	}
	b.mu.Lock()
	cur, leader := b.cur, false
	if cur == nil {
		cur, leader = &receiptBatch{full: make(chan struct{}), done: make(chan struct{})}, true
		b.cur = cur
	}
	cur.items = append(cur.items, r)
	if len(cur.items) >= limit {
		// Closed: later receipts start the next batch.
		b.cur = nil
		close(cur.full)
	}
	b.mu.Unlock()
	if !leader {
		select {
		case <-cur.done:
			return cur.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	timer := time.NewTimer(b.MaxWait)
	select {
	case <-cur.full:
	case <-timer.C:
	}
	timer.Stop()
	b.mu.Lock()
	if b.cur == cur {
		b.cur = nil
	}
	items := cur.items
	b.mu.Unlock()
	// The batch is the others' too: the leader's own deadline does not
	// cut it short.
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	cur.err = b.AcceptFunc(flushCtx, items...)
	close(cur.done)
	return cur.err
}
