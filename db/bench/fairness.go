package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/heraldhq/herald/app"
)

// The fairness phases measure what an operator's tenants feel when another
// tenant is busy: a burst of one tenant beside another's everyday
// confirmations (goal 1), and an urgent event behind a backlog of
// reminders (goal 2). Both start on an idle worker and read every latency
// from the database's own timestamps, as the latency phase does.

// neighbourRate is the quiet tenant's pace: booking confirmations at 5/s.
const neighbourRate = 5

// idleLimit bounds the wait for an earlier phase's backlog to clear.
const idleLimit = 10 * time.Minute

// fairTenants are the fairness phases' own tenants, which no other phase
// sends for: each starts with its whole fair share (app.BurstWindow), so no
// phase waits for an earlier one's events to age out of it.
type fairTenants struct {
	// busy bursts and broadcasts; approver is another key of busy's that
	// may approve its broadcast (an approval needs a key other than the
	// sender's); quiet posts confirmations beside it; urgent queues the
	// reminders of the urgent-first phase.
	busy, approver, quiet, urgent fairTenant
}

// fairTenant is one of them: its API key and id.
type fairTenant struct{ key, id string }

// fairnessTenants creates the fairness phases' tenants and keys.
func (b *bench) fairnessTenants(ctx context.Context) error {
	for _, t := range []struct {
		slug string
		to   *fairTenant
	}{{"bench-busy", &b.fair.busy}, {"bench-quiet", &b.fair.quiet}, {"bench-urgent", &b.fair.urgent}} {
		if _, err := b.herald(ctx, "admin", "create-tenant", "--slug", t.slug, "--name", t.slug, "--plan", "ENTERPRISE"); err != nil {
			return err
		}
		if err := b.unlimit(ctx, t.slug); err != nil {
			return err
		}
		key, err := b.herald(ctx, "admin", "create-api-key", "--tenant", t.slug, "--name", "bench")
		if err != nil {
			return err
		}
		t.to.key = strings.TrimSpace(key)
		if err := b.mon.QueryRow(ctx, benchTag+`SELECT id::text FROM tenants WHERE slug = $1`, t.slug).Scan(&t.to.id); err != nil {
			return err
		}
	}
	key, err := b.herald(ctx, "admin", "create-api-key", "--tenant", "bench-busy", "--name", "bench approver", "--scopes", "read,approve")
	b.fair.approver = fairTenant{key: strings.TrimSpace(key), id: b.fair.busy.id}
	return err
}

// phaseNeighbour has the first tenant post Burst booking confirmations as
// fast as Concurrency clients can, all on one trip, while the second posts
// confirmations at neighbourRate per second until the burst is all handed
// to the provider. Then the first tenant broadcasts an incident to that
// trip (Burst passengers), approved through the API, while the second
// goes on at its pace. Each part reports the quiet tenant's latency and
// the rate the busy tenant's messages were handed over at.
func (b *bench) phaseNeighbour(ctx context.Context) error {
	if b.cfg.Burst <= 0 {
		b.logf("   skipped (--burst 0)")
		return nil
	}
	if err := b.idle(ctx); err != nil {
		return err
	}
	busy, quiet := b.fair.busy.id, b.fair.quiet.id
	trip := fmt.Sprintf("TRIP-BURST-%d", time.Now().UnixNano())
	since, err := dbNow(ctx, b.mon)
	if err != nil {
		return err
	}
	b.res.Burst, err = b.beside(ctx, quiet, since, func() error {
		return b.burst(ctx, b.fair.busy.key, b.cfg.Burst, trip)
	}, func() (bool, error) {
		n, err := countSentOf(ctx, b.mon, busy, since)
		return n >= b.cfg.Burst, err
	})
	if err != nil {
		return err
	}
	if b.res.Burst.Sent, b.res.Burst.MPS, err = sendRate(ctx, b.mon, busy, since); err != nil {
		return err
	}
	b.logf("   burst of %d events: handed over at %.0f messages/s; the other tenant's %d confirmations at %d/s: p50 %s, p99 %s (load %s)",
		b.cfg.Burst, b.res.Burst.MPS, b.res.Burst.Events, neighbourRate, b.res.Burst.P50.Round(time.Millisecond),
		b.res.Burst.P99.Round(time.Millisecond), b.res.Burst.Load)

	if since, err = dbNow(ctx, b.mon); err != nil {
		return err
	}
	var broadcast string
	b.res.Broadcast, err = b.beside(ctx, quiet, since, func() error {
		var err error
		broadcast, err = b.broadcast(ctx, b.fair.busy.key, b.fair.approver.key, trip)
		return err
	}, func() (bool, error) {
		if broadcast == "" {
			return false, nil
		}
		n, err := countSentOf(ctx, b.mon, busy, since)
		return n >= b.cfg.Burst, err
	})
	if err != nil {
		return err
	}
	if b.res.Broadcast.Sent, b.res.Broadcast.MPS, err = sendRate(ctx, b.mon, busy, since); err != nil {
		return err
	}
	b.logf("   incident broadcast to the trip's %d passengers: %d handed over at %.0f messages/s; the other tenant's %d confirmations: p50 %s, p99 %s (load %s)",
		b.cfg.Burst, b.res.Broadcast.Sent, b.res.Broadcast.MPS, b.res.Broadcast.Events, b.res.Broadcast.P50.Round(time.Millisecond),
		b.res.Broadcast.P99.Round(time.Millisecond), b.res.Broadcast.Load)
	return nil
}

// beside runs load (the busy tenant's part) while the quiet tenant posts
// confirmations at neighbourRate, until done says the busy tenant's
// messages are all handed over (at most idleLimit), and returns the quiet
// tenant's accepted-to-provider latency over that time.
func (b *bench) beside(ctx context.Context, quiet string, since time.Time, load func() error, done func() (bool, error)) (Neighbour, error) {
	out := Neighbour{Load: loadAverage()}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var posted, failed atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second / neighbourRate)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := b.postBody(b.fair.quiet.key, b.eventBody("BOOKING_CONFIRMED", "", nil)); err != nil {
					failed.Add(1)
					return
				}
				posted.Add(1)
			}()
		}
	}()
	err := load()
	var ok bool
	if err == nil {
		ok, err = waitFor(ctx, time.Second, idleLimit, done)
	}
	close(stop)
	wg.Wait()
	if err != nil {
		return out, err
	}
	if !ok {
		return out, fmt.Errorf("the busy tenant's messages were not all handed over within %s", idleLimit)
	}
	out.Failed = int(failed.Load())
	// The quiet tenant's last confirmations may still be on their way.
	if _, err := waitFor(ctx, 250*time.Millisecond, time.Minute, func() (bool, error) {
		n, err := countUnsentOf(ctx, b.mon, quiet, since)
		return n == 0, err
	}); err != nil {
		return out, err
	}
	out.P50, _, out.P99, out.Events, out.Unsent, err = readLatencyOf(ctx, b.mon, quiet, since)
	return out, err
}

// phaseUrgent stops the worker, has the first tenant post Backlog
// reminders (optional messages), starts the worker again and, once it is
// working through them, posts one urgent DEPARTURE_CHANGED and one
// BOOKING_CONFIRMED: each should pass the reminders.
func (b *bench) phaseUrgent(ctx context.Context) error {
	if b.cfg.Backlog <= 0 {
		b.logf("   skipped (--backlog 0)")
		return nil
	}
	if err := b.idle(ctx); err != nil {
		return err
	}
	busy := b.fair.urgent.id
	if err := b.stopWorker(); err != nil {
		return err
	}
	since, err := dbNow(ctx, b.mon)
	if err != nil {
		return err
	}
	if err := b.closedLoop(ctx, b.fair.urgent.key, b.cfg.Backlog, func() []byte { return b.eventBody("PRE_TRIP_REMINDER", "", nil) }); err != nil {
		return err
	}
	if b.worker, err = b.start("worker"); err != nil {
		return err
	}
	b.startRSS(b.worker)
	// The worker is working through the backlog once it has sent some.
	if ok, err := waitFor(ctx, 100*time.Millisecond, time.Minute, func() (bool, error) {
		n, err := countSentOf(ctx, b.mon, busy, since)
		return n > 0, err
	}); err != nil || !ok {
		return errors.Join(err, errors.New("the restarted worker sent nothing within a minute"))
	}
	load := loadAverage()
	queued, err := countUnsentOf(ctx, b.mon, busy, since)
	if err != nil {
		return err
	}
	urgent, err := b.postBody(b.fair.urgent.key, b.eventBody("DEPARTURE_CHANGED", "", nil))
	if err != nil {
		return err
	}
	confirm, err := b.postBody(b.fair.urgent.key, b.eventBody("BOOKING_CONFIRMED", "", nil))
	if err != nil {
		return err
	}
	if ok, err := waitFor(ctx, time.Second, idleLimit, func() (bool, error) {
		n, err := countUnsentOf(ctx, b.mon, busy, since)
		return n == 0, err
	}); err != nil || !ok {
		return errors.Join(err, fmt.Errorf("the backlog was not handed over within %s", idleLimit))
	}
	u := &b.res.Urgent
	u.Backlog, u.Load = queued, load
	if u.Urgent, err = eventLatency(ctx, b.mon, busy, urgent); err != nil {
		return err
	}
	if u.Confirmation, err = eventLatency(ctx, b.mon, busy, confirm); err != nil {
		return err
	}
	if u.BacklogDone, err = lastSentAfter(ctx, b.mon, busy, since, urgent); err != nil {
		return err
	}
	b.logf("   behind %d unsent reminders: the urgent event reached the provider in %s, the confirmation in %s; the last reminder %s after the urgent event was accepted (load %s)",
		u.Backlog, u.Urgent.Round(time.Millisecond), u.Confirmation.Round(time.Millisecond), u.BacklogDone.Round(time.Millisecond), load)
	return nil
}

// idle waits until every accepted event's messages reached the provider,
// so that a phase starts without an earlier one's backlog.
func (b *bench) idle(ctx context.Context) error {
	start := time.Now()
	ok, err := waitFor(ctx, time.Second, idleLimit, func() (bool, error) {
		n, err := countBacklog(ctx, b.mon)
		return n == 0, err
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("an earlier phase's backlog did not clear within %s", idleLimit)
	}
	if d := time.Since(start); d > 2*time.Second {
		b.logf("   waited %s for an earlier phase's backlog", d.Round(time.Second))
	}
	return nil
}

// stopWorker stops the worker process and waits for it to exit.
func (b *bench) stopWorker() error {
	if b.worker == nil || b.worker.Process == nil {
		return nil
	}
	b.stopRSS()
	_ = b.worker.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- b.worker.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = b.worker.Process.Kill()
		<-done
	}
	b.worker = nil
	return nil
}

// burst posts n booking confirmations for the trip with Concurrency
// clients, closed loop.
func (b *bench) burst(ctx context.Context, key string, n int, trip string) error {
	return b.closedLoop(ctx, key, n, func() []byte { return b.eventBody("BOOKING_CONFIRMED", trip, nil) })
}

// closedLoop posts n requests with Concurrency clients, each sending its
// next when the last is answered; any refused request fails the phase.
func (b *bench) closedLoop(ctx context.Context, key string, n int, body func() []byte) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, b.cfg.Concurrency)
	for range b.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && next.Add(1) <= int64(n) {
				if _, err := b.postBody(key, body()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return errors.Join(<-errs, ctx.Err())
}

// broadcast posts an INCIDENT_BROADCAST to the trip's passengers and has
// approver approve it, as a manager would; it returns the event's id.
func (b *bench) broadcast(ctx context.Context, key, approver, trip string) (string, error) {
	body := b.eventBody("INCIDENT_BROADCAST", "", map[string]any{"audience": map[string]any{"trip_id": trip}})
	id, err := b.postBody(key, body)
	if err != nil {
		return "", err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+b.addr+"/api/v1/notifications/"+id+"/approve",
		bytes.NewReader([]byte(`{"reason":"benchmark"}`)))
	req.Header.Set("Authorization", "Bearer "+approver)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return "", err
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("approve the broadcast: status %d: %s", resp.StatusCode, msg)
	}
	return id, nil
}

// eventBody is one e-mail-only event of a trigger event with its
// registry's sample context, for one passenger with a booking of its own
// (or, with extra["audience"], the trip's passengers). trip, when set,
// puts the booking on that trip.
func (b *bench) eventBody(trigger, trip string, extra map[string]any) []byte {
	n := b.seq.Add(1)
	def, _ := app.BuiltInEvent(trigger)
	ctxVars := map[string]any{}
	for k, v := range def.Sample {
		ctxVars[k] = v
	}
	if trip != "" {
		ctxVars["trip_id"] = trip
	}
	req := map[string]any{
		"event_id":      fmt.Sprintf("bench-%s-%d-%d", trigger, time.Now().UnixNano(), n),
		"trigger_event": trigger,
		"context":       ctxVars,
		"channels":      []string{"EMAIL"},
	}
	if _, audience := extra["audience"]; !audience {
		req["recipients"] = []map[string]any{{"name": "Bench Passenger", "email": fmt.Sprintf("p%d@bench.example", n)}}
		req["conversation_context"] = map[string]any{"type": "booking", "id": fmt.Sprintf("BK-%d-%d", time.Now().UnixNano(), n)}
	}
	for k, v := range extra {
		req[k] = v
	}
	body, _ := json.Marshal(req)
	return body
}

// postBody posts one notification and returns its event id.
func (b *bench) postBody(key string, body []byte) (string, error) {
	req, _ := http.NewRequest(http.MethodPost, "http://"+b.addr+"/api/v1/notifications", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, msg)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(msg, &out); err != nil || out.ID == "" {
		return "", fmt.Errorf("no event id in %s", msg)
	}
	return out.ID, nil
}
