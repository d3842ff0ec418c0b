package app_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// TestDispatcher_RateLimitStorm offers a backlog of messages to an account
// whose provider answers every call with 429 and Retry-After for the first
// ten seconds, on an injected clock with deterministic jitter: the job
// runner is simulated by running each message's dispatch when its snooze
// ends. Snoozes follow Retry-After and are spread, and the provider is
// called at a fraction of the account's rate during the storm instead of
// once per waiting message every few seconds.
func TestDispatcher_RateLimitStorm(t *testing.T) {
	t.Parallel()
	const (
		n          = 40
		rate       = 10 // the account's sends per second (and burst)
		retryAfter = 2 * time.Second
		storm      = 10 * time.Second
	)
	graph := webtest.NewGraph(t)
	b := setupPipeline(t, func(c *app.Config) { c.MetaBaseURL = graph.URL })
	tn := b.tenant(t, "acme")
	b.useMeta(t, tn, app.Attrs{"rate_per_second": fmt.Sprint(rate)})
	rng := rand.New(rand.NewPCG(1, 2))
	jitter := func(d time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(d))) }
	b.setJitter(jitter)
	b.svc.Limiter.JitterFunc = jitter

	start := b.clock.Now()
	stormEnd := start.Add(storm)
	var mu sync.Mutex
	var calls []time.Time
	var throttled bool
	graph.Reply(func(int) (int, string, string) {
		mu.Lock()
		defer mu.Unlock()
		now := b.clock.Now()
		calls = append(calls, now)
		if now.Before(stormEnd) {
			throttled = true
			return http.StatusTooManyRequests, fmt.Sprint(int(retryAfter.Seconds())), string(readTestdata(t, "error_130429.json"))
		}
		return 0, "", ""
	})

	type job struct {
		m  *app.Message
		at time.Time
	}
	var queue []job
	for i := range n {
		queue = append(queue, job{m: b.routeOne(t, tn, booking(fmt.Sprintf("evt-%d", i), fmt.Sprintf("BK-%d", i), anna, "WHATSAPP")), at: start})
	}
	var afterThrottle []time.Duration
	wakes := map[time.Time]bool{}
	for len(queue) > 0 {
		sort.SliceStable(queue, func(i, j int) bool { return queue[i].at.Before(queue[j].at) })
		next := queue[0]
		queue = queue[1:]
		if d := next.at.Sub(b.clock.Now()); d > 0 {
			b.clock.Advance(d)
		}
		mu.Lock()
		throttled = false
		mu.Unlock()
		out, err := b.dispatch(next.m, 1, 5, &completion{})
		require.NoError(t, err)
		require.Nil(t, out.Retry, "a rate limit uses no attempt")
		if out.Done {
			continue
		}
		require.Positive(t, out.Snooze)
		mu.Lock()
		if throttled {
			afterThrottle = append(afterThrottle, out.Snooze)
		}
		mu.Unlock()
		at := b.clock.Now().Add(out.Snooze)
		wakes[at] = true
		queue = append(queue, job{m: next.m, at: at})
	}

	mu.Lock()
	defer mu.Unlock()
	inStorm, perSecond := 0, map[int]int{}
	for _, c := range calls {
		if c.Before(stormEnd) {
			inStorm++
			perSecond[int(c.Sub(start)/time.Second)]++
		}
	}
	busiest := 0
	for _, c := range perSecond {
		busiest = max(busiest, c)
	}
	t.Logf("storm of %s at an account rate of %d/s: %d provider calls in it (%.2f/s, busiest second %d), %d in all for %d messages; %d distinct wake times",
		storm, rate, inStorm, float64(inStorm)/storm.Seconds(), busiest, len(calls), n, len(wakes))

	require.Equal(t, n, b.count(t, `SELECT count(*) FROM messages WHERE tenant_id = $1 AND status = 'SENT'`, tn.ID), "every message went out after the storm")
	require.Equal(t, n, len(calls)-inStorm, "each once after the storm")
	require.NotEmpty(t, afterThrottle)
	for _, s := range afterThrottle {
		require.GreaterOrEqual(t, s, retryAfter, "a snooze after a 429 follows its Retry-After")
	}
	require.Greater(t, len(wakes), n/2, "snoozes are spread, not one wake-up for all")
	// Without the bucket slowing down, every waiting message would call
	// once per snooze: n calls every retryAfter. Halved at least once, the
	// account's rate bounds the storm's calls, and so does every second.
	require.LessOrEqual(t, float64(inStorm), rate/2*storm.Seconds(), "calls during the storm stay within the halved rate")
	require.LessOrEqual(t, busiest, rate, "no second of the storm goes past the account's rate")
}
