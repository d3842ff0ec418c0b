package app

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/google/uuid"
)

// Group commit of accepted sends (see groupCommit). The sends of a tenant
// that the providers accept at about the same time (a route job's inline
// sends, the dispatch workers' sends) are recorded in one transaction: the
// jobs completed, every send's receipt lock taken with one statement, then
// each send recorded as alone (RecordSent, its callbacks, the receipts that
// came before it), and one commit, instead of a transaction each. A batch
// that fails records each of its sends alone, as before; recordSent's
// retries and the unrecorded-send memory work as for a send alone.
//
// Locks are taken in one order by every batch, so that batches never wait
// for each other in a circle: the receipt locks in the order of their lock
// ids (as the receipt inbox takes them), and the usage counters one row per
// channel, in the order of the channels, all the batch's sends of a channel
// counting on one shard.

// UsageShards is how many rows a tenant's usage of a channel in a month is
// spread over (migration 00027).
const UsageShards = 256

// DefaultSendBatch is the most sends one transaction records.
const DefaultSendBatch = 64

// DefaultSendWriters is how many send batches are recorded at once.
const DefaultSendWriters = 4

// SendBatcher records accepted sends in shared transactions.
type SendBatcher struct {
	// MaxBatch is the most sends in one transaction (DefaultSendBatch when
	// 0); Writers the most transactions at once (DefaultSendWriters when
	// 0), each holding one database connection.
	MaxBatch, Writers int
	// Observe, when set, is told each batch's size.
	Observe func(size int)

	once  sync.Once
	group groupCommit[*sentSend]
}

// add records s with the sends added meanwhile; an error means the batch
// failed and s is not recorded.
func (b *SendBatcher) add(ctx context.Context, d *Dispatcher, s *sentSend) error {
	b.once.Do(func() {
		b.group.key = func(s *sentSend) uuid.UUID { return s.message.TenantID }
		b.group.write = d.recordSentBatch
	})
	return b.group.add(ctx, s, cmp.Or(b.MaxBatch, DefaultSendBatch), cmp.Or(b.Writers, DefaultSendWriters))
}

// Waiting returns how many sends wait for a batch to be recorded.
func (b *SendBatcher) Waiting() int { return b.group.waiting() }

// recordSentBatch records one tenant's batch of sends in one transaction.
func (d *Dispatcher) recordSentBatch(ctx context.Context, tenant uuid.UUID, batch []*sentSend) error {
	if o := d.SendBatch.Observe; o != nil {
		o(len(batch))
	}
	sends := slices.Clone(batch)
	slices.SortStableFunc(sends, func(a, b *sentSend) int { return cmp.Compare(a.message.Channel, b.message.Channel) })
	keys := make([]ReceiptKey, len(sends))
	for i, s := range sends {
		keys[i] = ReceiptKey{Provider: s.account.Provider, ExternalID: s.rec.externalID}
	}
	shard := rand.IntN(UsageShards)
	return d.Store.InTenant(ctx, tenant, func(tx DispatchTx) error {
		for _, s := range sends {
			if err := s.completeJob(ctx, tx); err != nil {
				return err
			}
		}
		if err := tx.LockReceiptKeys(ctx, keys); err != nil {
			return err
		}
		for _, s := range sends {
			if err := d.recordSentTx(ctx, tx, s, &shard); err != nil {
				return err
			}
		}
		return nil
	})
}
