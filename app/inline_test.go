package app_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/app/provider/sandbox"
	"github.com/heraldhq/herald/db"
)

// inlineLease is the lease of the tests' inline sends: far longer than any
// test runs, so a dispatch job only runs when a test runs it.
const inlineLease = time.Hour

// inlineRetry is the tests' wait before a second attempt.
const inlineRetry = 10 * time.Second

func inlineOptions() app.InlineOptions {
	return app.InlineOptions{Lease: inlineLease, MaxAttempts: 5, Backoff: func(int) time.Duration { return inlineRetry }}
}

// routeInline submits the request and runs its route job as the worker
// does, sending each new message's first attempt, and returns the event's
// messages.
func (b *pipelineBundle) routeInline(t *testing.T, tn *app.Tenant, req map[string]any) []*app.Message {
	t.Helper()
	id := b.submit(t, tn, req)
	require.NoError(t, b.svc.Router.RouteAndSend(b.ctx, app.RouteJob{TenantID: tn.ID, EventID: id, Version: 1}, b.svc.Dispatcher, inlineOptions()))
	return b.messagesOf(t, tn.ID, id)
}

// dispatchJob is a message's one dispatch job as River sees it.
type dispatchJob struct {
	State   string
	Attempt int
	// DueIn is how long until the job is due, by the database's clock.
	DueIn time.Duration
}

func (b *pipelineBundle) dispatchJob(t *testing.T, messageID uuid.UUID) dispatchJob {
	t.Helper()
	require.Equal(t, 1, b.dispatchJobs(t, messageID), "one dispatch job")
	var j dispatchJob
	var seconds float64
	require.NoError(t, b.svc.Store.InPlatform(b.ctx, func(tx *db.Tx) error {
		return tx.SQL().QueryRowContext(b.ctx, `
			SELECT state::text, attempt, extract(epoch FROM scheduled_at - now())::float8 FROM river_job
			WHERE kind = 'dispatch' AND args->>'message_id' = $1`, messageID.String()).Scan(&j.State, &j.Attempt, &seconds)
	}))
	j.DueIn = time.Duration(seconds * float64(time.Second))
	return j
}

// sendMarked tells whether a provider call of the message is marked as
// started and not finished.
func (b *pipelineBundle) sendMarked(t *testing.T, m *app.Message) bool {
	t.Helper()
	return b.count(t, `SELECT count(*) FROM messages WHERE id = $1 AND send_started_at IS NOT NULL`, m.ID) == 1
}

func TestInlineDispatch(t *testing.T) {
	t.Parallel()

	t.Run("SentByTheRouteJobWhichFinishesTheDispatchJob", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		ms := b.routeInline(t, tn, booking("evt-1", "BK-1", anna, "EMAIL"))
		require.Len(t, ms, 1)
		m := ms[0]
		require.Equal(t, app.MessageSent, m.Status, "the first attempt went out with the route job")
		require.Equal(t, 1, m.Attempts)
		require.Equal(t, "sandbox", *m.Provider)
		require.Equal(t, []string{app.MessageQueued, app.MessageSent}, statuses(b.timeline(t, tn.ID, m.ID)))
		require.Equal(t, "completed", b.dispatchJob(t, m.ID).State, "the safety-net job is finished with the send")
		require.False(t, b.sendMarked(t, m), "no call is left marked in flight")
		require.Equal(t, 1, b.usage(t, tn.ID, app.Email), "the send is counted once")
		require.Equal(t, provider.StatusDelivered, b.nextReport(t).Status, "the provider's receipts follow as for a queued send")

		// The job running anyway (its lease ended with the worker gone)
		// finds the message sent and sends nothing.
		out, err := b.dispatch(m, 1, 5, &completion{})
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Equal(t, 1, b.usage(t, tn.ID, app.Email))
	})

	t.Run("TransientFailureGoesBackToItsJobWithTheAttemptCounted", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		req := booking("evt-1", "BK-1", anna, "EMAIL")
		req["recipients"].([]map[string]any)[0]["email"] = "flaky@example.com"
		ms := b.routeInline(t, tn, req)
		require.Len(t, ms, 1)
		m := ms[0]
		require.Equal(t, app.MessageQueued, m.Status)
		require.Equal(t, 1, m.Attempts, "the failed call counts as the first attempt")
		j := b.dispatchJob(t, m.ID)
		require.Equal(t, "scheduled", j.State)
		require.Equal(t, 1, j.Attempt, "River's next run is the second attempt")
		require.Greater(t, j.DueIn, time.Duration(0), "not before the retry wait")
		require.LessOrEqual(t, j.DueIn, inlineRetry, "at the retry wait, not at the end of the lease")
		require.False(t, b.sendMarked(t, m))

		out, err := b.dispatch(m, 2, 5, &completion{})
		require.NoError(t, err)
		require.True(t, out.Done, "River's second run sends it")
		sent := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageSent, sent.Status)
		require.Equal(t, 2, sent.Attempts)
	})

	t.Run("ProviderRateLimitSnoozesWithoutAnAttempt", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		req := booking("evt-1", "BK-1", anna, "EMAIL")
		req["recipients"].([]map[string]any)[0]["email"] = "throttle@example.com"
		m := b.routeInline(t, tn, req)[0]
		require.Equal(t, app.MessageQueued, m.Status)
		require.Equal(t, 0, m.Attempts, "a rate limit uses no attempt")
		j := b.dispatchJob(t, m.ID)
		require.Equal(t, "scheduled", j.State)
		require.Equal(t, 0, j.Attempt)
		require.Greater(t, j.DueIn, time.Duration(0))
		require.Less(t, j.DueIn, inlineLease/2, "due after the snooze, not at the end of the lease")
		require.False(t, b.sendMarked(t, m))
	})

	t.Run("PermanentFailureFallsBackAndFinishesTheJob", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		req := withFallback(booking("evt-1", "BK-1", "+49 151 2345 0000"), "WHATSAPP", "SMS")
		ms := b.routeInline(t, tn, req)
		require.Len(t, ms, 2, "the failed WhatsApp message and its SMS fallback")
		failed := ms[0]
		if failed.Channel != app.WhatsApp {
			failed = ms[1]
		}
		require.Equal(t, app.WhatsApp, failed.Channel)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, "completed", b.dispatchJob(t, failed.ID).State)
		next := fallbackOf(t, b, tn, failed)
		require.Equal(t, "available", b.dispatchJob(t, next.ID).State, "the fallback goes through its queue at once")
	})

	t.Run("QuotaRefusalLeavesTheSendToItsJob", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, func(c *app.Config) { c.Quotas[app.PlanPro][app.WhatsApp] = 1 })
		tn := b.tenant(t, "acme")
		first := b.routeInline(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))[0]
		require.Equal(t, app.MessageSent, first.Status)
		require.Equal(t, 1, b.quotaUsed(t, tn.ID, app.WhatsApp))

		m := b.routeInline(t, tn, booking("evt-2", "BK-2", anna, "WHATSAPP"))[0]
		require.Equal(t, app.MessageQueued, m.Status, "over the quota nothing is sent inline")
		require.False(t, b.sendMarked(t, m), "and no call is marked")
		require.Equal(t, "available", b.dispatchJob(t, m.ID).State, "its job is due at once")
		require.Equal(t, 1, b.quotaUsed(t, tn.ID, app.WhatsApp))

		out, err := b.dispatch(m, 1, 5, &completion{})
		require.NoError(t, err)
		require.True(t, out.Done)
		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonQuotaExceeded, *failed.FailedReason)
	})

	t.Run("SendInFlightIsNotRepeatedByAnotherWorker", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		blocking := &blockingProvider{Provider: b.svc.Dispatcher.Providers[sandbox.Name], entered: make(chan struct{}, 1), release: make(chan struct{})}
		b.svc.Dispatcher.Providers[sandbox.Name] = blocking
		id := b.submit(t, tn, booking("evt-1", "BK-1", anna, "EMAIL"))
		done := make(chan error, 1)
		go func() {
			done <- b.svc.Router.RouteAndSend(b.ctx, app.RouteJob{TenantID: tn.ID, EventID: id, Version: 1}, b.svc.Dispatcher, inlineOptions())
		}()
		<-blocking.entered

		// While the provider has the call, the message is marked and its
		// job waits for the lease.
		m := b.messagesOf(t, tn.ID, id)[0]
		require.Equal(t, app.MessageQueued, m.Status)
		require.True(t, b.sendMarked(t, m))
		j := b.dispatchJob(t, m.ID)
		require.Equal(t, "scheduled", j.State)
		require.Greater(t, j.DueIn, inlineLease-time.Minute, "the job waits for the lease to end")

		// Another worker process running the job anyway holds off.
		other := &app.Dispatcher{Store: b.svc.Dispatcher.Store, Queue: b.svc.Dispatcher.Queue, Router: b.svc.Router,
			Accounts: b.svc.Accounts, Providers: b.svc.Dispatcher.Providers, Quotas: b.cfg.Quotas, Metrics: b.svc.Dispatcher.Metrics, Now: b.clock.Now, Log: b.svc.Log}
		out, err := other.Dispatch(b.ctx, app.DispatchJob{TenantID: tn.ID, MessageID: m.ID, Channel: m.Channel}, 1, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Positive(t, out.Snooze, "the call in flight may still be recorded: the other worker waits")
		require.Equal(t, 1, blocking.calls(), "and does not call the provider")

		close(blocking.release)
		require.NoError(t, <-done)
		require.Equal(t, app.MessageSent, b.message(t, tn.ID, m.ID).Status)
		require.Equal(t, "completed", b.dispatchJob(t, m.ID).State)
		require.Equal(t, 1, blocking.calls())
	})
}

// blockingProvider holds every send until release is closed; entered
// (buffered, one slot) says that the first one began.
type blockingProvider struct {
	provider.Provider
	entered, release chan struct{}
	n                atomic.Int32
}

func (p *blockingProvider) Send(ctx context.Context, out provider.Outbound) (string, error) {
	p.n.Add(1)
	select {
	case p.entered <- struct{}{}:
	default:
	}
	select {
	case <-p.release:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return p.Provider.Send(ctx, out)
}

func (p *blockingProvider) calls() int { return int(p.n.Load()) }
