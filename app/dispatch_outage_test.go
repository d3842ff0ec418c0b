package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db/dbtest"
)

// stepTimer paces the dispatcher's retries of a recording on the injected
// clock: each wait moves the clock on by that much and calls step with the
// number of waits so far, then fires at once.
type stepTimer struct {
	c     chan time.Time
	clock *testClock
	mu    sync.Mutex
	waits int
	step  func(waits int)
}

func newStepTimer(clock *testClock, step func(waits int)) *stepTimer {
	return &stepTimer{c: make(chan time.Time, 1), clock: clock, step: step}
}

func (s *stepTimer) Start(d time.Duration) {
	s.mu.Lock()
	s.waits++
	n := s.waits
	s.mu.Unlock()
	s.clock.Advance(d)
	if s.step != nil {
		s.step(n)
	}
	s.c <- s.clock.Now()
}

func (s *stepTimer) Stop()               {}
func (s *stepTimer) C() <-chan time.Time { return s.c }
func (s *stepTimer) count() int          { s.mu.Lock(); defer s.mu.Unlock(); return s.waits }

// setupOutage is setupPipeline with Herald reaching its database through a
// proxy the test can cut, and a WhatsApp message queued on a Meta account
// whose send cuts the database the moment Meta has accepted it (the
// provider has the message; the transaction that records it fails).
func setupOutage(t *testing.T) (*pipelineBundle, *dbtest.Proxy, *app.Message) {
	t.Helper()
	var proxy *dbtest.Proxy
	b := setupPipeline(t, func(c *app.Config) { proxy, c.DatabaseURL = dbtest.NewProxy(t, c.DatabaseURL) })
	tn := b.tenant(t, "acme")
	b.useMeta(t, tn, nil)
	m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
	var once sync.Once
	b.meta.mu.Lock()
	b.meta.before = func() { once.Do(proxy.Cut) }
	b.meta.mu.Unlock()
	return b, proxy, m
}

func TestDispatcher_DatabaseOutage(t *testing.T) {
	t.Parallel()

	t.Run("RecordingRetriesThroughShortOutage", func(t *testing.T) {
		t.Parallel()
		b, proxy, m := setupOutage(t)
		// The database is back after the third failed try.
		timer := newStepTimer(b.clock, func(waits int) {
			if waits == 3 {
				proxy.Restore()
			}
		})
		b.setRecordTimer(timer)

		c := &completion{}
		out, err := b.dispatch(m, 1, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Equal(t, 3, timer.count(), "the recording was tried again, not the send")
		require.Len(t, b.meta.received(), 1, "Meta got the message once")
		sent := b.message(t, m.TenantID, m.ID)
		require.Equal(t, app.MessageSent, sent.Status)
		require.Equal(t, fakeWamid(1), *sent.ExternalMessageID)
		require.Equal(t, 1, b.usage(t, m.TenantID, app.WhatsApp))
		require.Equal(t, 1, c.count(), "the job completed with the record")
	})

	t.Run("OutageOutlastingRetriesNeverResends", func(t *testing.T) {
		t.Parallel()
		b, proxy, m := setupOutage(t)
		b.setRecordTimer(newStepTimer(b.clock, nil))

		start := b.clock.Now()
		_, err := b.dispatch(m, 1, 5, &completion{})
		require.Error(t, err, "the job fails: River runs it again later")
		require.Equal(t, app.EUNAVAILABLE, app.ErrorCode(err))
		// Backoff stops when its next wait (at most 3 s) would pass the bound.
		require.GreaterOrEqual(t, b.clock.Now().Sub(start), app.RecordSentRetryFor-3*time.Second, "it kept trying for about the whole bound")
		require.Len(t, b.meta.received(), 1)
		proxy.Restore()

		// Another worker process runs the job first: the call's outcome is
		// unknown to it, so it waits for the process that made the call.
		other := b.connect(t).Dispatcher
		c := &completion{}
		out, err := other.Dispatch(b.ctx, app.DispatchJob{TenantID: m.TenantID, MessageID: m.ID, Channel: m.Channel}, 2, 5, c.complete)
		require.NoError(t, err)
		require.Positive(t, out.Snooze)
		require.LessOrEqual(t, out.Snooze, app.DefaultConfirmWindow)
		require.Len(t, b.meta.received(), 1, "no blind send from another process")
		require.Equal(t, app.MessageQueued, b.message(t, m.TenantID, m.ID).Status)

		// The process that made the call records what Meta answered.
		out, err = b.dispatch(m, 2, 5, c)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Len(t, b.meta.received(), 1, "recorded, not sent again")
		sent := b.message(t, m.TenantID, m.ID)
		require.Equal(t, app.MessageSent, sent.Status)
		require.Equal(t, fakeWamid(1), *sent.ExternalMessageID)
		require.Equal(t, 1, b.usage(t, m.TenantID, app.WhatsApp))
	})

	t.Run("CrashedCallerIsSettledByMetasStatus", func(t *testing.T) {
		t.Parallel()
		b, proxy, m := setupOutage(t)
		b.setRecordTimer(newStepTimer(b.clock, nil))
		_, err := b.dispatch(m, 1, 5, &completion{})
		require.Error(t, err)
		proxy.Restore()

		// The process that made the call is gone (its memory with it):
		// another one waits for Meta's confirmation, and says so.
		other := b.connect(t).Dispatcher
		job := app.DispatchJob{TenantID: m.TenantID, MessageID: m.ID, Channel: m.Channel}
		out, err := other.Dispatch(b.ctx, job, 2, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Positive(t, out.Snooze)
		waiting := b.message(t, m.TenantID, m.ID)
		require.NotNil(t, waiting.SendUnknownUntil)
		notes := fromSource(b.timeline(t, m.TenantID, m.ID), app.SourceDispatch)
		require.Contains(t, notes[len(notes)-1].Detail["note"], "left no outcome")

		// Meta's status names the message: the send is recorded from it.
		outcome, err := b.apply(b.ctx, b.viaTenant(t, m.TenantID), metaEcho(t, b, 0, "sent", b.clock.Now()))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptApplied, outcome)
		out, err = other.Dispatch(b.ctx, job, 3, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Len(t, b.meta.received(), 1, "never sent twice")
		sent := b.message(t, m.TenantID, m.ID)
		require.Equal(t, app.MessageSent, sent.Status)
		require.Equal(t, fakeWamid(1), *sent.ExternalMessageID)
		require.Equal(t, 1, b.usage(t, m.TenantID, app.WhatsApp), "counted once")
	})
}

// TestDispatcher_SlowProvider: a provider call has its own time, whatever
// the job spent before it, and a call Herald cuts has an unknown outcome:
// the message is not sent again at once.
func TestDispatcher_SlowProvider(t *testing.T) {
	t.Parallel()

	// blockMeta has the fake Graph API keep each send's request open until
	// the returned release is called (at the latest when the test ends).
	blockMeta := func(t *testing.T, b *pipelineBundle, entered func()) (release func()) {
		gate := make(chan struct{})
		var once sync.Once
		release = func() { once.Do(func() { close(gate) }) }
		t.Cleanup(release)
		b.meta.mu.Lock()
		b.meta.before = func() {
			if entered != nil {
				entered()
			}
			<-gate
		}
		b.meta.mu.Unlock()
		return release
	}

	t.Run("TheJobsTimeRunningOutDoesNotCutTheCall", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		// River ends a job's context when its timeout passes; here that
		// happens while Meta is working on the request.
		job, endJob := context.WithCancelCause(b.ctx)
		defer endJob(nil)
		b.meta.before = func() { endJob(context.DeadlineExceeded) }

		c := &completion{}
		out, err := b.svc.Dispatcher.Dispatch(job, jobOf(m), 1, 5, c.complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out, "the call had its own time")
		require.Len(t, b.meta.received(), 1)
		sent := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageSent, sent.Status)
		require.Equal(t, fakeWamid(1), *sent.ExternalMessageID)
	})

	t.Run("ACallCutByItsTimeIsNotRepeatedAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		// The call's time runs out once Meta has the request, however
		// fast or slow the machine is.
		worker, release := cutCalls(t, b)

		out, err := worker.Dispatch(b.ctx, jobOf(m), 1, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Snooze: app.DefaultConfirmWindow}, out, "Meta may have the message: no retry now")
		release()
		queued := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageQueued, queued.Status)
		require.Zero(t, queued.Attempts, "counted once it is settled")
		require.Equal(t, b.clock.Now().Add(app.DefaultConfirmWindow), queued.SendUnknownUntil.UTC())
		notes := fromSource(b.timeline(t, tn.ID, m.ID), app.SourceDispatch)
		require.Equal(t, "unknown", notes[len(notes)-1].Detail["outcome"])
		require.Contains(t, notes[len(notes)-1].Detail["note"], "no answer from meta after")
		require.Contains(t, notes[len(notes)-1].Detail["note"], "for its confirmation")

		// The job runs again early (a rescue, another worker): the call's
		// outcome is still unknown, so the message waits.
		for _, d := range []*app.Dispatcher{worker, b.svc.Dispatcher} {
			out, err = d.Dispatch(b.ctx, jobOf(m), 2, 5, (&completion{}).complete)
			require.NoError(t, err)
			require.Equal(t, app.DispatchOutcome{Snooze: app.DefaultConfirmWindow}, out)
		}
		require.Len(t, b.meta.received(), 1, "not sent twice")

		// Nothing confirmed it within the window, and a booking
		// confirmation is not urgent: it fails, and is not sent again.
		b.clock.Advance(app.DefaultConfirmWindow)
		out, err = b.svc.Dispatcher.Dispatch(b.ctx, jobOf(m), 2, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Done: true}, out)
		require.Len(t, b.meta.received(), 1)
		failed := b.message(t, tn.ID, m.ID)
		require.Equal(t, app.MessageFailed, failed.Status)
		require.Equal(t, app.ReasonOutcomeUnknown, *failed.FailedReason)
	})

	t.Run("AHardStopCutsTheCallWithAnUnknownOutcome", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, nil)
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		// The worker stops hard (shutdown timeout passed) while Meta works
		// on the request.
		job, stop := context.WithCancelCause(b.ctx)
		defer stop(nil)
		release := blockMeta(t, b, func() { stop(context.Canceled) })

		out, err := b.svc.Dispatcher.Dispatch(job, jobOf(m), 1, 5, (&completion{}).complete)
		release()
		require.NoError(t, err)
		require.Equal(t, app.DispatchOutcome{Snooze: app.DefaultConfirmWindow}, out)
		require.Equal(t, app.MessageQueued, b.message(t, tn.ID, m.ID).Status)
		out, err = b.svc.Dispatcher.Dispatch(b.ctx, jobOf(m), 2, 5, (&completion{}).complete)
		require.NoError(t, err)
		require.Positive(t, out.Snooze, "held, not sent again at once")
		require.Len(t, b.meta.received(), 1)
	})
}
