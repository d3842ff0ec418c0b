package app_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db/dbtest"
)

// quotaUsed is the month's quota use of the tenant's channel as reserved.
func (b *pipelineBundle) quotaUsed(t *testing.T, tenantID uuid.UUID, ch app.Channel) int {
	t.Helper()
	return b.count(t, `SELECT coalesce(sum(used), 0) FROM quota_usage WHERE tenant_id = $1 AND channel = $2 AND month = $3`,
		tenantID, ch, app.MonthOf(b.clock.Now()))
}

func TestDispatcher_QuotaReservation(t *testing.T) {
	t.Parallel()

	t.Run("GivenBackWhenNotSent", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, func(c *app.Config) { c.Quotas[app.PlanPro][app.WhatsApp] = 1 })
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		refused := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		b.meta.reply(graphError(t, "131026"))
		out, err := b.dispatch(refused, 1, 5, &completion{})
		require.NoError(t, err)
		require.True(t, out.Done)
		require.Equal(t, app.MessageFailed, b.message(t, tn.ID, refused.ID).Status)
		require.Zero(t, b.quotaUsed(t, tn.ID, app.WhatsApp), "a refused send gives its reservation back")

		b.sendOK(t, b.routeOne(t, tn, booking("evt-2", "BK-2", anna, "WHATSAPP")))
		require.Equal(t, 1, b.quotaUsed(t, tn.ID, app.WhatsApp))
	})

	t.Run("SnoozesAndRetriesHoldOneReservation", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, func(c *app.Config) { c.Quotas[app.PlanPro][app.WhatsApp] = 1 })
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		b.meta.reply(graphError(t, "130429"), graphError(t, "131000"))

		out, err := b.dispatch(m, 1, 5, &completion{})
		require.NoError(t, err)
		require.Positive(t, out.Snooze, "rate limited")
		// The job runs again after each snooze: the account's slowed rate
		// after the 130429 may snooze it more than once (its jitter is
		// random) before the provider is called again.
		for out.Snooze > 0 {
			b.clock.Advance(out.Snooze)
			out, err = b.dispatch(m, 1, 5, &completion{})
			require.NoError(t, err)
		}
		require.NotNil(t, out.Retry, "transient failure")
		require.Equal(t, 1, b.quotaUsed(t, tn.ID, app.WhatsApp), "one reservation however often the job runs")

		// The job's next attempt comes after its backoff, when the
		// account's slowed rate has a token again.
		b.clock.Advance(5 * time.Second)
		sent := b.sendOK(t, m)
		require.Equal(t, app.MessageSent, sent.Status)
		require.Equal(t, 1, b.quotaUsed(t, tn.ID, app.WhatsApp))
		require.Equal(t, 1, b.usage(t, tn.ID, app.WhatsApp))
	})

	t.Run("SentAgainAfterRateLimitReceiptCountsOnce", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, func(c *app.Config) { c.Quotas[app.PlanPro][app.WhatsApp] = 1 })
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.sendOK(t, b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP")))
		outcome, err := b.apply(b.ctx, b.via(t, tn), metaFailed(t, m, 130429, testStart.Add(time.Second)))
		require.NoError(t, err)
		require.Equal(t, app.ReceiptRequeued, outcome)

		again := b.sendOK(t, b.message(t, tn.ID, m.ID))
		require.Equal(t, app.MessageSent, again.Status, "the quota of 1 is this message's own")
		require.Len(t, b.meta.received(), 2)
		require.Equal(t, 1, b.usage(t, tn.ID, app.WhatsApp), "one message, counted once")
		require.Equal(t, 1, b.quotaUsed(t, tn.ID, app.WhatsApp))
	})

	t.Run("MovesToTheMonthOfTheSend", func(t *testing.T) {
		t.Parallel()
		b := setupPipeline(t, func(c *app.Config) { c.Quotas[app.PlanPro][app.WhatsApp] = 1 })
		tn := b.tenant(t, "acme")
		b.useMeta(t, tn, nil)
		m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
		b.meta.reply(graphError(t, "131000"))
		_, err := b.dispatch(m, 1, 5, &completion{})
		require.NoError(t, err)
		march := b.quotaUsed(t, tn.ID, app.WhatsApp)
		require.Equal(t, 1, march)

		b.clock.Advance(20 * 24 * time.Hour) // April
		b.sendOK(t, m)
		require.Equal(t, 1, b.quotaUsed(t, tn.ID, app.WhatsApp), "April's quota holds the send")
		require.Zero(t, b.count(t, `SELECT used FROM quota_usage WHERE tenant_id = $1 AND month = $2`, tn.ID, app.MonthOf(testStart)),
			"March's reservation went back: nothing was sent in March")
	})
}

func TestBreakers_CutShortSendIsNoFailure(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, func(c *app.Config) { c.BreakerThreshold = 1 })
	tn := b.tenant(t, "acme")
	acct := b.useMeta(t, tn, nil)
	ctx, cancel := context.WithCancel(b.ctx)
	cancel() // shutdown or the job's timeout ended the send
	_, _, err := b.svc.Breakers.Send(ctx, acct, func() (string, error) { return "", ctx.Err() })
	require.True(t, errors.Is(err, context.Canceled), "the send's own error comes back")
	require.Equal(t, app.BreakerClosed, b.svc.Breakers.State(acct.ID), "a send Herald cut short says nothing about the provider")

	_, _, err = b.svc.Breakers.Send(b.ctx, acct, func() (string, error) { return "", errors.New("connection reset") })
	require.Error(t, err)
	require.Equal(t, app.BreakerOpen, b.svc.Breakers.State(acct.ID), "a provider failure still counts")
}

func TestDispatcher_QuotaReleasedOnCancel(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, func(c *app.Config) { c.Quotas[app.PlanPro][app.WhatsApp] = 1 })
	tn := b.tenant(t, "acme")
	b.useMeta(t, tn, nil)
	m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))
	b.meta.reply(graphError(t, "131000"))
	out, err := b.dispatch(m, 1, 5, &completion{})
	require.NoError(t, err)
	require.NotNil(t, out.Retry)
	require.Equal(t, 1, b.quotaUsed(t, tn.ID, app.WhatsApp), "held while the send is retried")

	_, err = b.svc.Intake.Cancel(b.ctx, app.CLIActor, tn.ID, *m.EventID)
	require.NoError(t, err)
	require.Equal(t, app.MessageCancelled, b.message(t, tn.ID, m.ID).Status)
	require.Zero(t, b.quotaUsed(t, tn.ID, app.WhatsApp), "a cancelled message gives its reservation back")
	b.sendOK(t, b.routeOne(t, tn, booking("evt-2", "BK-2", anna, "WHATSAPP")))
}

// TestBreakers_FailedProbeWaitsWithTheOthers: the one send a half-open
// breaker lets through fails while the provider is still down. The message
// waits for the breaker like those it refused, with its attempts intact,
// even on its last one; a message that fails while the breaker is closed
// still spends its attempt.
func TestBreakers_FailedProbeWaitsWithTheOthers(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, func(c *app.Config) { c.BreakerThreshold, c.BreakerOpenFor = 1, 20*time.Millisecond })
	tn := b.tenant(t, "acme")
	acct := b.useMeta(t, tn, nil)
	m := b.routeOne(t, tn, booking("evt-1", "BK-1", anna, "WHATSAPP"))

	// Closed: a transient failure is the message's own retry.
	b.meta.reply(graphError(t, "131000"))
	out, err := b.dispatch(m, 1, 5, &completion{})
	require.NoError(t, err)
	require.NotNil(t, out.Retry, "retried as the message's own attempt")
	// Its open spell is 20 ms of real time, so a busy machine may find it
	// half-open already; only a successful probe closes it.
	require.NotEqual(t, app.BreakerClosed, b.svc.Breakers.State(acct.ID), "one failure trips a threshold of one")
	opened := func() int {
		return b.count(t, `SELECT count(*) FROM audit_log WHERE action = 'channel_account.breaker' AND target_id = $1 AND metadata->>'to' = 'open'`,
			acct.ID.String())
	}
	require.Eventually(t, func() bool { return opened() == 1 }, dbtest.HangGuard, 5*time.Millisecond, "the breaker's opening recorded")

	// The provider is still down when the breaker lets a probe through.
	require.Eventually(t, func() bool { return b.svc.Breakers.State(acct.ID) == app.BreakerHalfOpen }, dbtest.HangGuard, time.Millisecond)
	b.meta.reply(graphError(t, "131000"))
	out, err = b.dispatch(m, 5, 5, &completion{})
	require.NoError(t, err)
	require.Nil(t, out.Retry)
	require.GreaterOrEqual(t, out.Snooze, time.Second, "waits for the breaker's next probe")
	require.Equal(t, app.MessageQueued, b.message(t, tn.ID, m.ID).Status, "its last attempt was not spent on the outage")
	require.NotEqual(t, app.BreakerClosed, b.svc.Breakers.State(acct.ID))
	require.Eventually(t, func() bool { return opened() == 2 }, dbtest.HangGuard, 5*time.Millisecond, "the failed probe opened the breaker again")

	// The provider is back: the next probe sends it.
	require.Eventually(t, func() bool { return b.svc.Breakers.State(acct.ID) == app.BreakerHalfOpen }, dbtest.HangGuard, time.Millisecond)
	sent := b.sendOK(t, m)
	require.Equal(t, app.MessageSent, sent.Status)
	require.Equal(t, app.BreakerClosed, b.svc.Breakers.State(acct.ID))
}
