package app_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/meta"
	"github.com/heraldhq/herald/db"
	"github.com/heraldhq/herald/db/dbtest"
)

// drain applies the inbox as the receipt applier does when woken, until
// nothing is due, and returns what became of each receipt.
func (b *pipelineBundle) drain(t *testing.T) []app.ReceiptResult {
	t.Helper()
	results, err := b.applyInbox(b.ctx)
	require.NoError(t, err)
	return results
}

// resultOutcomes lists the results' outcomes in order.
func resultOutcomes(results []app.ReceiptResult) []string {
	out := []string{}
	for _, r := range results {
		out = append(out, r.Outcome)
	}
	return out
}

// outcomes counts results by outcome.
func outcomes(results []app.ReceiptResult) map[string]int {
	n := map[string]int{}
	for _, r := range results {
		n[r.Outcome]++
	}
	return n
}

// accept stores receipts in the inbox as a webhook does.
func (b *pipelineBundle) accept(t *testing.T, via app.Via, rs ...provider.Receipt) {
	t.Helper()
	in := make([]app.InboxReceipt, len(rs))
	for i, r := range rs {
		in[i] = app.InboxReceipt{Via: via, Receipt: r}
	}
	require.NoError(t, b.svc.Receipts.Accept(b.ctx, in...))
}

func TestReceipts_ApplyInbox(t *testing.T) {
	t.Parallel()

	t.Run("MixedBatchAcrossTenants", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		acme, globex := b.tenant(t, "acme"), b.tenant(t, "globex")
		ma, mg := b.sentViaMeta(t, acme, "BK-1"), b.sentViaMeta(t, globex, "BK-2")
		deliveredAt, readAt := testStart.Add(time.Minute), testStart.Add(time.Hour)
		read := receipt(ma, provider.StatusRead, readAt)
		// Read arrives before delivered, and twice; Globex's webhook names
		// Acme's message; one names a message nobody sent yet.
		b.accept(t, b.via(t, acme), read, receipt(ma, provider.StatusDelivered, deliveredAt), read,
			provider.Receipt{Provider: meta.Name, ExternalID: "wamid.nobody", Status: provider.StatusDelivered})
		b.accept(t, b.via(t, globex), receipt(ma, provider.StatusFailed, deliveredAt), receipt(mg, provider.StatusDelivered, deliveredAt))
		require.Equal(t, 6, b.count(t, `SELECT count(*) FROM receipt_inbox`))
		require.Equal(t, app.MessageSent, b.message(t, acme.ID, ma.ID).Status, "stored, not applied yet")

		round, err := b.svc.Receipts.ApplyInbox(b.ctx, 0)
		require.NoError(t, err)
		require.Equal(t, 6, round.Taken)
		require.Equal(t, map[string]int{app.ReceiptApplied: 3, app.ReceiptDuplicate: 1, app.ReceiptForeign: 1, app.ReceiptPending: 1},
			outcomes(round.Results))
		require.Zero(t, b.count(t, `SELECT count(*) FROM receipt_inbox WHERE available_at <> 'infinity'`),
			"settled receipts leave the inbox in the transaction that settles them")

		got := b.message(t, acme.ID, ma.ID)
		require.Equal(t, app.MessageRead, got.Status)
		require.True(t, got.DeliveredAt.Equal(deliveredAt), "delivered at the delivered receipt's time")
		require.True(t, got.ReadAt.Equal(readAt))
		tl := b.timeline(t, acme.ID, ma.ID)
		require.Equal(t, []string{app.MessageQueued, app.MessageSent, app.MessageDelivered, app.MessageRead}, statuses(tl),
			"applied in the order of the receipts' own times")
		require.Len(t, fromSource(tl, app.SourceWebhook), 2, "the replayed read is a no-op")
		require.Equal(t, app.MessageDelivered, b.message(t, globex.ID, mg.ID).Status)

		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE outcome = 'foreign' AND tenant_id = $1 AND message_id IS NULL`, globex.ID),
			"Globex's receipt naming Acme's message is kept as foreign and changes nothing")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM receipt_inbox WHERE external_id = 'wamid.nobody' AND available_at = 'infinity'`),
			"the receipt of a message nobody sent yet waits, parked, for its send")
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM webhook_receipts WHERE outcome = 'matched' AND message_id = $1`, ma.ID))
		receipts := b.count(t, `SELECT count(*) FROM webhook_receipts`)

		// The provider posts everything again: nothing changes.
		b.accept(t, b.via(t, acme), read, receipt(ma, provider.StatusDelivered, deliveredAt),
			provider.Receipt{Provider: meta.Name, ExternalID: "wamid.nobody", Status: provider.StatusDelivered})
		b.accept(t, b.via(t, globex), receipt(ma, provider.StatusFailed, deliveredAt), receipt(mg, provider.StatusDelivered, deliveredAt))
		b.drain(t)
		require.Equal(t, receipts, b.count(t, `SELECT count(*) FROM webhook_receipts`))
		require.Len(t, fromSource(b.timeline(t, acme.ID, ma.ID), app.SourceWebhook), 2)
		require.Len(t, fromSource(b.timeline(t, globex.ID, mg.ID), app.SourceWebhook), 1)
	})

	t.Run("LateDeliveredAfterRead", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sentViaMeta(t, tn, "BK-1")
		readAt := testStart.Add(time.Hour)
		b.accept(t, b.via(t, tn), receipt(m, provider.StatusRead, readAt))
		b.drain(t)
		require.True(t, b.message(t, tn.ID, m.ID).DeliveredAt.Equal(readAt), "the read stands in for the delivery")

		// The delivered that comes after the read keeps its own time and
		// moves nothing.
		late := testStart.Add(time.Minute)
		b.accept(t, b.via(t, tn), receipt(m, provider.StatusDelivered, late))
		b.drain(t)
		got := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageRead, got.Status)
		require.True(t, got.DeliveredAt.Equal(late))
		hooks := fromSource(b.timeline(t, tn.ID, m.ID), app.SourceWebhook)
		require.Len(t, hooks, 2)
		require.Nil(t, hooks[1].ToStatus)
		require.Equal(t, "no status change: read does not move to delivered", hooks[1].Detail["note"])
	})

	t.Run("ReceiptBeforeSendWaitsForTheSend", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		early := func(status string, at time.Time) provider.Receipt {
			return provider.Receipt{Provider: meta.Name, ExternalID: fakeWamid(1), ReceiptID: fakeWamid(1) + ":" + status,
				Status: status, At: at, AccountRef: metaPhoneNumberID}
		}
		delivered := early(provider.StatusDelivered, testStart.Add(2*time.Second))
		b.accept(t, b.via(t, tn), delivered, early(provider.StatusSent, testStart.Add(time.Second)))
		require.Equal(t, map[string]int{app.ReceiptPending: 2}, outcomes(b.drain(t)))
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM receipt_inbox WHERE external_id = $1 AND available_at = 'infinity'`, fakeWamid(1)),
			"parked until the send names them")
		require.Empty(t, b.drain(t), "a parked receipt is not tried again by itself")

		b.sendOK(t, m)
		require.Equal(t, 2, b.count(t, `SELECT count(*) FROM receipt_inbox WHERE external_id = $1 AND available_at <= $2`, fakeWamid(1), b.clock.Now()),
			"the record of the send wakes them")
		require.Equal(t, map[string]int{app.ReceiptRecorded: 1, app.ReceiptApplied: 1}, outcomes(b.drain(t)))
		require.Equal(t, app.MessageDelivered, b.message(t, tn.ID, m.ID).Status, "applied in the order of their own times")
		b.accept(t, b.via(t, tn), delivered)
		require.Equal(t, map[string]int{app.ReceiptDuplicate: 1}, outcomes(b.drain(t)))
		require.Len(t, fromSource(b.timeline(t, tn.ID, m.ID), app.SourceWebhook), 2, "a replay after the send is a no-op")
		require.Zero(t, b.count(t, `SELECT count(*) FROM receipt_inbox`))
	})

	t.Run("ParkedReceiptExpiresAfterTheHorizon", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.accept(t, b.via(t, tn), provider.Receipt{Provider: meta.Name, ExternalID: "wamid.never", Status: provider.StatusDelivered})
		require.Equal(t, map[string]int{app.ReceiptPending: 1}, outcomes(b.drain(t)))
		n, err := b.svc.Maintenance.PrunePending(b.ctx)
		require.NoError(t, err)
		require.Zero(t, n, "kept within the horizon")

		b.clock.Advance(app.DefaultPendingHorizon + time.Second)
		n, err = b.svc.Maintenance.PrunePending(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Zero(t, b.count(t, `SELECT count(*) FROM receipt_inbox`))
	})

	t.Run("FailureFallsBackOnce", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		wa := b.sendOK(t, b.routeOne(t, tn, withFallback(booking("evt-1", "BK-1", anna), "WHATSAPP", "SMS")))
		failed := receipt(wa, provider.StatusFailed, testStart.Add(time.Minute))
		failed.Code, failed.Reason = "131026", "Message undeliverable"
		// Delivered, the failure, its replay in the same batch and another
		// in the next.
		b.accept(t, b.via(t, tn), receipt(wa, provider.StatusDelivered, testStart.Add(time.Second)), failed, failed)
		b.drain(t)
		b.accept(t, b.via(t, tn), failed)
		b.drain(t)

		got := b.message(t, tn.ID, wa.ID)
		require.Equal(t, app.MessageFailed, got.Status)
		require.Equal(t, app.ReasonFallbackTriggered+"SMS", *got.FailedReason)
		fallbackOf(t, b, tn, got)
		require.Len(t, b.messagesOf(t, tn.ID, *wa.EventID), 2, "one fallback message")
		require.Equal(t, []string{app.MessageQueued, app.MessageSent, app.MessageDelivered, app.MessageFailed}, statuses(b.timeline(t, tn.ID, wa.ID)))
	})

	t.Run("ConcurrentAppliers", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		const n = 24
		var ms []*app.Message
		for i := range n {
			ms = append(ms, b.sentViaMeta(t, tn, "BK-"+string(rune('A'+i))))
		}
		via := b.via(t, tn)
		// Every message's delivered and read, each posted twice, in many
		// small posts.
		for round := range 2 {
			for _, m := range ms {
				b.accept(t, via, receipt(m, provider.StatusDelivered, testStart.Add(time.Minute)))
				b.accept(t, via, receipt(m, provider.StatusRead, testStart.Add(time.Duration(round+2)*time.Minute)))
			}
		}
		var settled atomic.Int64
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					round, err := b.svc.Receipts.ApplyInbox(b.ctx, 7)
					if err != nil {
						t.Error(err)
						return
					}
					if round.Taken == 0 {
						return
					}
					settled.Add(int64(len(round.Results)))
				}
			}()
		}
		wg.Wait()
		require.EqualValues(t, 4*n, settled.Load(), "every receipt was settled by exactly one applier")
		require.Zero(t, b.count(t, `SELECT count(*) FROM receipt_inbox`))
		for _, m := range ms {
			require.Equal(t, app.MessageRead, b.message(t, tn.ID, m.ID).Status)
			require.Len(t, fromSource(b.timeline(t, tn.ID, m.ID), app.SourceWebhook), 3,
				"delivered, read, and the second read (another timestamp, another receipt id) recorded once each")
		}
	})

	t.Run("UnreadableRowSetAside", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sentViaMeta(t, tn, "BK-1")
		require.NoError(t, b.svc.Store.InPlatform(b.ctx, func(tx *db.Tx) error {
			_, err := tx.SQL().ExecContext(b.ctx, `INSERT INTO receipt_inbox (provider, receipt) VALUES ('meta', '{"ExternalID": 42}')`)
			return err
		}))
		b.accept(t, b.via(t, tn), receipt(m, provider.StatusDelivered, testStart.Add(time.Minute)))
		b.drain(t)
		require.Equal(t, app.MessageDelivered, b.message(t, tn.ID, m.ID).Status, "one unreadable row holds up nothing")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM receipt_inbox WHERE last_error LIKE '%cannot unmarshal%' AND available_at > now() + interval '1 year'`),
			"it stays, set aside, with its error")
	})

	t.Run("AcceptRefusesUnknownStatus", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sentViaMeta(t, tn, "BK-1")
		err := b.svc.Receipts.Accept(b.ctx,
			app.InboxReceipt{Via: b.via(t, tn), Receipt: receipt(m, provider.StatusDelivered, testStart)},
			app.InboxReceipt{Via: b.via(t, tn), Receipt: receipt(m, "teleported", testStart)})
		require.Equal(t, app.EINVALID, app.ErrorCode(err))
		require.Zero(t, b.count(t, `SELECT count(*) FROM receipt_inbox`), "none of the post is stored")
	})
}

// statementCounter counts the statements and commits a pgx pool runs.
type statementCounter struct {
	statements, commits atomic.Int64
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.statements.Add(1)
	if strings.EqualFold(strings.TrimSpace(data.SQL), "commit") {
		c.commits.Add(1)
	}
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *statementCounter) reset() (statements, commits int64) {
	return c.statements.Swap(0), c.commits.Swap(0)
}

// countedReceipts returns the bundle's Receipts on a pool of their own
// whose statements and commits the counter counts.
func (b *pipelineBundle) countedReceipts(t *testing.T) (*app.Receipts, *statementCounter) {
	t.Helper()
	counter := &statementCounter{}
	cfg, err := pgxpool.ParseConfig(b.cfg.DatabaseURL)
	require.NoError(t, err)
	cfg.ConnConfig.Tracer, cfg.MaxConns = counter, 2
	pool, err := pgxpool.NewWithConfig(b.ctx, cfg)
	require.NoError(t, err)
	d := db.New(pool)
	t.Cleanup(d.Close)
	counted := *b.svc.Receipts
	counted.Store, counted.InboxStore, counted.Inbox = db.Scope[app.ReceiptTx](d.Store()), db.Scope[app.ReceiptInboxTx](d.Store()), d.Store()
	return &counted, counter
}

// TestReceipts_StatementsPerReceipt counts what a delivered and a read
// receipt cost the database through the inbox: a receipt a post and
// applied at once (a quiet moment), and ten a post applied in one round
// (a busy provider's posts, or the sandbox's two of a send).
func TestReceipts_StatementsPerReceipt(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	tn := b.tenant(t, "acme")
	const n = 40
	var ms []*app.Message
	for i := range n {
		ms = append(ms, b.sentViaMeta(t, tn, "BK-"+string(rune('A'+i))))
	}
	via := b.via(t, tn)
	counted, counter := b.countedReceipts(t)
	applyAll := func() {
		for {
			round, err := counted.ApplyInbox(b.ctx, 0)
			require.NoError(t, err)
			if round.Taken == 0 {
				return
			}
		}
	}

	// One at a time: the first half of the messages.
	counter.reset()
	for _, m := range ms[:n/2] {
		for _, status := range []string{provider.StatusDelivered, provider.StatusRead} {
			require.NoError(t, counted.Accept(b.ctx, app.InboxReceipt{Via: via, Receipt: receipt(m, status, testStart.Add(time.Minute))}))
			applyAll()
		}
	}
	oneStatements, oneCommits := counter.reset()

	// Ten receipts a post, applied in one round: the other half.
	var batch []app.InboxReceipt
	for _, m := range ms[n/2:] {
		for _, status := range []string{provider.StatusDelivered, provider.StatusRead} {
			batch = append(batch, app.InboxReceipt{Via: via, Receipt: receipt(m, status, testStart.Add(time.Minute))})
			if len(batch) == 10 {
				require.NoError(t, counted.Accept(b.ctx, batch...))
				batch = nil
			}
		}
	}
	// Accept runs in autocommit: each statement is its own commit.
	acceptStatements, _ := counter.reset()
	acceptCommits := acceptStatements
	applyAll()
	applyStatements, applyCommits := counter.reset()
	for _, m := range ms {
		require.Equal(t, app.MessageRead, b.message(t, tn.ID, m.ID).Status)
	}

	receipts := float64(n) // n/2 messages, two receipts each
	t.Logf("one at a time: %.2f statements, %.2f commits per receipt (accept and apply)", float64(oneStatements)/receipts, float64(oneCommits)/receipts)
	t.Logf("ten a post: accept %.2f statements, %.2f commits; apply %.2f statements, %.2f commits per receipt",
		float64(acceptStatements)/receipts, float64(acceptCommits)/receipts, float64(applyStatements)/receipts, float64(applyCommits)/receipts)
	require.EqualValues(t, 4, acceptCommits, "one insert per post, in autocommit")
	require.LessOrEqual(t, applyStatements, int64(n+15), "a round is a handful of statements and one per receipt")
	require.LessOrEqual(t, applyCommits, int64(3), "the round's read, the tenant's transaction, and the empty look at the end")
}

// TestReceiptApplier_GathersAfterANotification runs the applier as the
// worker does, with the gathering's wait held open by the test: a
// notification starts the gathering instead of a transaction, the receipts
// that arrive meanwhile go in the same transaction, and a worker stopping
// mid-gathering leaves the inbox to the next applier.
func TestReceiptApplier_GathersAfterANotification(t *testing.T) {
	t.Parallel()

	// start runs an applier over counted's store, once it has looked at the
	// inbox as it does when it starts (one commit); gathering receives each
	// wait the applier starts, which the test ends by sending on it.
	start := func(t *testing.T, b *pipelineBundle, counted *app.Receipts, counter *statementCounter) (wake chan struct{}, gathering chan chan time.Time, stop func()) {
		counter.reset()
		wake, gathering = make(chan struct{}, 1), make(chan chan time.Time)
		ctx, cancel := context.WithCancel(b.ctx)
		applier := &app.ReceiptApplier{Receipts: counted, Wake: wake, Poll: time.Hour, Gather: time.Hour,
			Log: b.svc.Log,
			After: func(time.Duration) <-chan time.Time {
				ch := make(chan time.Time, 1)
				select {
				case gathering <- ch:
				case <-ctx.Done():
				}
				return ch
			}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			applier.Run(ctx)
		}()
		require.Eventually(t, func() bool { return counter.commits.Load() > 0 }, dbtest.HangGuard, time.Millisecond,
			"the applier's first look at the inbox")
		return wake, gathering, func() {
			cancel()
			<-done
		}
	}

	t.Run("ReceiptsOfTheMomentShareOneTransaction", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		var ms []*app.Message
		for i := range 6 {
			ms = append(ms, b.sentViaMeta(t, tn, "BK-G"+string(rune('A'+i))))
		}
		via, at := b.via(t, tn), testStart.Add(time.Minute)
		counted, counter := b.countedReceipts(t)
		wake, gathering, stop := start(t, b, counted, counter)
		defer stop()

		b.accept(t, via, receipt(ms[0], provider.StatusDelivered, at))
		wake <- struct{}{}
		open := <-gathering
		require.Equal(t, app.MessageSent, b.message(t, tn.ID, ms[0].ID).Status, "the notification started the gathering, not a transaction")
		for _, m := range ms[1:] {
			b.accept(t, via, receipt(m, provider.StatusDelivered, at))
		}
		require.Equal(t, 6, b.count(t, `SELECT count(*) FROM receipt_inbox`))

		counter.reset()
		open <- time.Now()
		require.Eventually(t, func() bool {
			return b.count(t, `SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'DELIVERED'`, tn.ID) == len(ms)
		}, dbtest.HangGuard, 10*time.Millisecond, "every receipt of the gathering applied")
		stop()
		_, commits := counter.reset()
		require.EqualValues(t, 2, commits, "one read and one transaction of the tenant for the six receipts")
		require.Zero(t, b.count(t, `SELECT count(*) FROM receipt_inbox`))
	})

	t.Run("AStopWhileGatheringLeavesTheInboxToTheNextApplier", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		m := b.sentViaMeta(t, tn, "BK-S")
		counted, counter := b.countedReceipts(t)
		wake, gathering, stop := start(t, b, counted, counter)

		b.accept(t, b.via(t, tn), receipt(m, provider.StatusDelivered, testStart.Add(time.Minute)))
		wake <- struct{}{}
		<-gathering
		stop()
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM receipt_inbox`), "kept for the next applier")
		require.Equal(t, app.MessageSent, b.message(t, tn.ID, m.ID).Status)

		// The next applier looks at the inbox when it starts, before any
		// notification.
		_, _, stop = start(t, b, counted, counter)
		defer stop()
		require.Eventually(t, func() bool {
			return b.message(t, tn.ID, m.ID).Status == app.MessageDelivered
		}, dbtest.HangGuard, 10*time.Millisecond)
	})
}
