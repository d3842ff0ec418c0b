package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// The fake provider is a tenant webhook receiver on loopback. The webhook
// channel is the one channel whose wire format names the message itself (the
// payload's "id" is Herald's message id, the same on every retry), so the
// receiver can count calls per message without any mapping, and a tenant
// sets it up with one API call. The SMS route through an SNS endpoint
// override would need one phone number per message to tell messages apart
// and an AWS signature stub; it tests nothing the dispatch path does not
// already do for webhooks. Loopback targets need HERALD_WEBHOOK_ALLOW_PRIVATE
// (dev only), which the suite sets for the processes it starts.

// Provider modes.
const (
	healthy int32 = iota
	unavailable
	throttled
)

// provider counts every call by message id.
type provider struct {
	srv  *httptest.Server
	mode atomic.Int32

	active   atomic.Int64 // requests being answered right now
	total    atomic.Int64 // every call
	accepted atomic.Int64 // calls answered 2xx

	mu       sync.Mutex
	calls    map[string]int            // message id -> calls, whatever the answer
	accepts  map[string]int            // message id -> 2xx answers
	hookIDs  map[string]map[string]int // message id -> webhook-id header -> 2xx answers
	callTime []time.Time               // every call's arrival, for the rate check
}

func newProvider() *provider {
	p := &provider{calls: map[string]int{}, accepts: map[string]int{}, hookIDs: map[string]map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

func (p *provider) URL() string { return p.srv.URL + "/hook" }

func (p *provider) Close() { p.srv.Close() }

func (p *provider) serve(w http.ResponseWriter, r *http.Request) {
	p.active.Add(1)
	defer p.active.Add(-1)
	var body struct {
		ID string `json:"id"`
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(raw, &body); err != nil || body.ID == "" {
		http.Error(w, "no message id", http.StatusBadRequest)
		return
	}
	mode := p.mode.Load()
	p.mu.Lock()
	p.calls[body.ID]++
	p.callTime = append(p.callTime, time.Now())
	if mode == healthy {
		p.accepts[body.ID]++
		if p.hookIDs[body.ID] == nil {
			p.hookIDs[body.ID] = map[string]int{}
		}
		p.hookIDs[body.ID][r.Header.Get("webhook-id")]++
	}
	p.mu.Unlock()
	p.total.Add(1)
	switch mode {
	case unavailable:
		http.Error(w, "storm", http.StatusServiceUnavailable)
	case throttled:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	default:
		p.accepted.Add(1)
		w.WriteHeader(http.StatusOK)
	}
}

// acceptedIDs lists the messages the provider took at least once.
func (p *provider) acceptedIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, 0, len(p.accepts))
	for id := range p.accepts {
		ids = append(ids, id)
	}
	return ids
}

// acceptsOf is how often the provider took each of ids.
func (p *provider) acceptsOf(ids []string) map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(ids))
	for _, id := range ids {
		out[id] = p.accepts[id]
	}
	return out
}

// duplicates returns the accepted calls beyond one per message and up to
// ten of the messages that had them.
func (p *provider) duplicates() (n int, examples []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, c := range p.accepts {
		if c > 1 {
			n += c - 1
			examples = append(examples, id)
		}
	}
	sort.Strings(examples)
	if len(examples) > 10 {
		examples = examples[:10]
	}
	return n, examples
}

// repeats splits the accepted calls beyond one per message by their
// webhook-id: sameID repeated one the message had already been taken with
// (which a receiver deduplicates, as Standard Webhooks intends), newID
// carried another (which no receiver can tell from a second message).
func (p *provider) repeats() (sameID, newID int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ids := range p.hookIDs {
		newID += len(ids) - 1
		for _, n := range ids {
			sameID += n - 1
		}
	}
	return sameID, newID
}

// maxInWindow is the most calls that arrived within any window of length w.
func (p *provider) maxInWindow(w time.Duration) int {
	p.mu.Lock()
	ts := append([]time.Time(nil), p.callTime...)
	p.mu.Unlock()
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	best, lo := 0, 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= w {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// waitIdle waits until no request is being answered: after a kill, a call
// the dead process made may still be in the handler.
func (p *provider) waitIdle() {
	deadline := time.Now().Add(30 * time.Second)
	for p.active.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}
