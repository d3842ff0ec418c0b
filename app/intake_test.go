package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/db"
)

// TestIntake_Submit runs requests through Intake.Submit as production wires
// it, on a real database whose every transaction may belong to one tenant
// only (db/dbtest's guard): each request is stored in one transaction of
// its key's tenant, whatever arrives beside it, and waits for or fails
// with no other tenant's work.
func TestIntake_Submit(t *testing.T) {
	t.Parallel()
	b := setupPipeline(t, nil)
	const phone = "+4915123456789"
	// The tenants first: the bundle's keys are not shared with the
	// subtests while they run.
	every := b.tenant(t, "intake-every")
	tenants := []*app.Tenant{b.tenant(t, "many-a"), b.tenant(t, "many-b"), b.tenant(t, "many-c")}
	heldA, heldOther := b.tenant(t, "held-a"), b.tenant(t, "held-b")
	timeoutA, timeoutOther := b.tenant(t, "timeout-a"), b.tenant(t, "timeout-b")

	t.Run("EveryEventInOneTransactionOfItsTenant", func(t *testing.T) {
		t.Parallel()
		tn := every
		rec := &scopeRecorder{Store: b.svc.Intake.Store}
		intake := &app.Intake{Store: rec, Registry: b.svc.Intake.Registry, Queue: b.svc.Intake.Queue, Now: b.svc.Intake.Now}
		// Every event of the registry, with and without a booking, a
		// trip, an audience, a schedule and a redacted secret: the
		// entity's locks, supersessions, moved schedules and audiences,
		// and the audit of redactions, all in the one transaction.
		variants := map[string]func(body map[string]any, trip string){
			"NoEntity": func(body map[string]any, _ string) { delete(body, "conversation_context") },
			"Booking":  func(map[string]any, string) {},
			"BookingOnTrip": func(body map[string]any, trip string) {
				body["context"].(map[string]any)["trip_id"] = trip
			},
			"Audience": func(body map[string]any, trip string) {
				delete(body, "recipients")
				delete(body, "conversation_context")
				body["audience"] = map[string]any{"trip_id": trip}
			},
			"Scheduled": func(body map[string]any, _ string) {
				body["send_at"] = b.clock.Now().Add(48 * time.Hour).Format(time.RFC3339)
			},
			"Redacted": func(body map[string]any, _ string) { body["context"].(map[string]any)["portal_token"] = "abc" },
		}
		stored := 0
		for _, def := range app.Events() {
			for name, change := range variants {
				t.Run(def.Name+"/"+name, func(t *testing.T) {
					ref, trip := "BK-"+def.Name+"-"+name, "TRIP-"+def.Name+"-"+name
					body := map[string]any{
						"event_id": "every-" + def.Name + "-" + name, "trigger_event": def.Name,
						"recipients":           []map[string]any{{"name": "Anna Schmidt", "email": "anna@example.com"}},
						"context":              maps.Clone(def.Sample),
						"conversation_context": map[string]any{"type": "booking", "id": ref},
					}
					change(body, trip)
					raw, err := json.Marshal(body)
					require.NoError(t, err)
					if _, err := app.ParseNotificationRequest(raw, b.clock.Now(), app.BuiltIn); err != nil {
						t.Skipf("not a valid request for this event: %v", err)
					}
					if name == "Audience" {
						// The trip has a passenger: a booking on it was
						// routed.
						on := booking("every-on-"+trip, "BK-ON-"+trip, phone)
						on["context"].(map[string]any)["trip_id"] = trip
						require.NotEmpty(t, b.route(t, tn, on))
					}

					rec.reset()
					res, err := intake.Submit(b.ctx, b.keys[tn.ID], raw)
					require.NoError(t, err)
					require.False(t, res.Duplicate)
					require.Equal(t, []scopeRecord{{opened: tn.ID, tx: tn.ID, database: tn.ID.String()}}, rec.taken(),
						"one transaction, in the key's tenant from its first statement to its last")
					require.Equal(t, 1, b.count(t, `SELECT count(*) FROM events WHERE id = $1 AND tenant_id = $2 AND status = $3`,
						res.ID, tn.ID, res.Status), "the event is stored as answered")
					jobs := 1
					if res.Status == app.EventAwaitingApproval || res.Status == app.EventCancelled {
						jobs = 0
					}
					require.Equal(t, jobs, routeJobs(t, b, res.ID), "status %s", res.Status)
					redacted := 0
					if name == "Redacted" {
						redacted = 1
					}
					require.Equal(t, redacted, b.count(t, `SELECT count(*) FROM audit_log
						WHERE action = 'notification.redacted' AND target_id = $1`, res.ID.String()))

					again, err := intake.Submit(b.ctx, b.keys[tn.ID], raw)
					require.NoError(t, err)
					require.True(t, again.Duplicate)
					require.Equal(t, res.ID, again.ID)
					require.Equal(t, jobs, routeJobs(t, b, res.ID), "a duplicate enqueues nothing")
					stored++
				})
			}
		}
		require.Greater(t, stored, len(app.Events()), "most variants are valid requests")
	})

	t.Run("ManyTenantsAtOnce", func(t *testing.T) {
		t.Parallel()
		a := tenants[0]
		used := b.submit(t, a, booking("many-used", "BK-U", phone))
		rec := &scopeRecorder{Store: b.svc.Intake.Store}
		intake := &app.Intake{Store: rec, Registry: b.svc.Intake.Registry, Queue: b.svc.Intake.Queue, Now: b.svc.Intake.Now}
		var subs []submission
		for i := range 12 {
			subs = append(subs, submission{tenants[i%3], booking(fmt.Sprintf("many-%d", i), fmt.Sprintf("BK-%d", i), phone)})
		}
		// An event id one tenant uses is free for the others.
		for _, tn := range tenants {
			subs = append(subs, submission{tn, booking("many-shared", "BK-S", phone)})
		}
		// The same request twice at once, and another request under an
		// id used before.
		subs = append(subs, submission{a, booking("many-twice", "BK-T", phone)}, submission{a, booking("many-twice", "BK-T", phone)},
			submission{a, booking("many-used", "BK-OTHER", phone)})
		out := submitAll(t, b, intake, subs)

		for i, o := range out[:15] {
			require.NoError(t, o.err, "request %d", i)
			require.False(t, o.res.Duplicate)
			require.Equal(t, 1, b.count(t, `SELECT count(*) FROM events WHERE id = $1 AND tenant_id = $2`, o.res.ID, subs[i].tn.ID),
				"request %d is stored under its key's tenant", i)
			require.Equal(t, 1, routeJobs(t, b, o.res.ID))
		}
		twice := out[15:17]
		require.NoError(t, twice[0].err)
		require.NoError(t, twice[1].err)
		require.NotEqual(t, twice[0].res.Duplicate, twice[1].res.Duplicate, "one of two equal requests is a duplicate of the other")
		require.Equal(t, twice[0].res.ID, twice[1].res.ID)
		require.Equal(t, 1, routeJobs(t, b, twice[0].res.ID))
		conflict := out[17].err
		require.Equal(t, app.ECONFLICT, app.ErrorCode(conflict), "%v", conflict)
		require.Equal(t, "idempotency_conflict", app.ErrorReason(conflict))
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM events WHERE id = $1 AND entity_id = 'BK-U'`, used), "the first request stays")

		require.Equal(t, 4+1+1+1, b.count(t, `SELECT count(*) FROM events WHERE tenant_id = $1`, a.ID),
			"4 of the 12, the shared id, the request sent twice and the one before")
		for _, tn := range tenants[1:] {
			require.Equal(t, 4+1, b.count(t, `SELECT count(*) FROM events WHERE tenant_id = $1`, tn.ID))
		}
		taken := rec.taken()
		require.Len(t, taken, len(subs)-1, "one transaction a request (the conflict's rolled back)")
		for _, r := range taken {
			require.Equal(t, scopeRecord{opened: r.opened, tx: r.opened, database: r.opened.String()}, r)
		}
	})

	t.Run("AHeldBookingLockHoldsOnlyItsOwnRequests", func(t *testing.T) {
		t.Parallel()
		a, other := heldA, heldOther
		// A cancellation's intake holds A's booking BK-L exclusively.
		release := holdBooking(t, b, a.ID, "BK-L")
		body, err := json.Marshal(booking("held-l", "BK-L", phone))
		require.NoError(t, err)
		waiting := make(chan outcome, 1)
		go func() {
			var o outcome
			o.res, o.err = b.svc.Intake.Submit(b.ctx, b.keys[a.ID], body)
			waiting <- o
		}()
		waitForBookingLock(t, b, a.ID, "BK-L")
		// Another tenant's booking of the same id, and A's other booking,
		// are stored while A's BK-L waits.
		out := submitAll(t, b, b.svc.Intake, []submission{
			{other, booking("held-other", "BK-L", phone)}, {a, booking("held-m", "BK-M", phone)},
		})
		for i, o := range out {
			require.NoError(t, o.err, "request %d", i)
			require.Equal(t, 1, routeJobs(t, b, o.res.ID))
		}
		select {
		case o := <-waiting:
			t.Fatalf("the request about the held booking did not wait: %+v", o)
		default:
		}
		release()
		held := <-waiting
		require.NoError(t, held.err, "the request waited for the lock, then was stored")
		require.Equal(t, 1, b.count(t, `SELECT count(*) FROM events WHERE id = $1 AND tenant_id = $2`, held.res.ID, a.ID))
		require.Equal(t, 1, routeJobs(t, b, held.res.ID))
	})

	t.Run("ALockTimeoutFailsOnlyItsOwnRequest", func(t *testing.T) {
		t.Parallel()
		a, other := timeoutA, timeoutOther
		release := holdBooking(t, b, a.ID, "BK-X")
		// A's transactions give up on a lock after 20 ms; the others'
		// wait as production's do.
		intake := &app.Intake{Store: lockTimeoutStore{b.svc.Intake.Store, a.ID}, Registry: b.svc.Intake.Registry, Queue: b.svc.Intake.Queue, Now: b.svc.Intake.Now}
		subs := []submission{
			{a, booking("timeout-x", "BK-X", phone)},
			{other, booking("timeout-other-x", "BK-X", phone)}, {other, booking("timeout-other-y", "BK-Y", phone)},
			{a, booking("timeout-z", "BK-Z", phone)},
		}
		out := submitAll(t, b, intake, subs)
		require.ErrorContains(t, out[0].err, "lock timeout")
		require.Zero(t, b.count(t, `SELECT count(*) FROM events WHERE tenant_id = $1 AND source_event_id = 'timeout-x'`, a.ID),
			"the failed request stored nothing")
		for i, o := range out[1:] {
			require.NoError(t, o.err, "request %d fails with no other request", i+1)
			require.Equal(t, 1, b.count(t, `SELECT count(*) FROM events WHERE id = $1 AND tenant_id = $2`, o.res.ID, subs[i+1].tn.ID))
			require.Equal(t, 1, routeJobs(t, b, o.res.ID))
		}
		release()
		again := submitAll(t, b, intake, subs[:1])[0]
		require.NoError(t, again.err)
		require.False(t, again.res.Duplicate, "the request sent again is stored")
		require.Equal(t, 1, routeJobs(t, b, again.res.ID))
	})
}

// routeJobs counts the route jobs of an event.
func routeJobs(t *testing.T, b *pipelineBundle, eventID uuid.UUID) int {
	t.Helper()
	return b.count(t, `SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, eventID.String())
}

// submission is one request of a tenant's.
type submission struct {
	tn  *app.Tenant
	req map[string]any
}

// outcome is a submission's answer.
type outcome struct {
	res *app.SubmitResult
	err error
}

// submitAll submits the requests at once, each with its tenant's key, and
// returns their outcomes in order.
func submitAll(t *testing.T, b *pipelineBundle, intake *app.Intake, subs []submission) []outcome {
	t.Helper()
	out := make([]outcome, len(subs))
	var start, wg sync.WaitGroup
	start.Add(1)
	for i, s := range subs {
		body, err := json.Marshal(s.req)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			out[i].res, out[i].err = intake.Submit(b.ctx, b.keys[s.tn.ID], body)
		}()
	}
	start.Done()
	wg.Wait()
	return out
}

// holdBooking locks the tenant's booking exclusively, as a cancellation's
// intake does, until release is called (or the test ends).
func holdBooking(t *testing.T, b *pipelineBundle, tenantID uuid.UUID, ref string) (release func()) {
	t.Helper()
	held, done, errc := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		errc <- b.svc.Intake.Store.InTenant(b.ctx, tenantID, func(tx app.IntakeTx) error {
			if err := tx.LockEntities(b.ctx, tenantID, true, app.Entity{Type: app.EntityBooking, ID: ref}); err != nil {
				return err
			}
			close(held)
			<-done
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-errc:
		t.Fatalf("lock booking %s: %v", ref, err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(done)
			require.NoError(t, <-errc)
		})
	}
	t.Cleanup(release)
	return release
}

// waitForBookingLock waits until a transaction waits for the tenant's
// booking's lock (db/entity.go's key).
func waitForBookingLock(t *testing.T, b *pipelineBundle, tenantID uuid.UUID, ref string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		err := b.svc.DB.SQL.GetContext(b.ctx, &n, `
			SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
			WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted
			  AND l.objid = hashtext($1::text || '/' || $2 || '/' || $3)::oid`, tenantID, app.EntityBooking, ref)
		return err == nil && n > 0
	}, time.Minute, 5*time.Millisecond, "a request waits for booking %s", ref)
}

// scopeRecord is one transaction Intake opened: the tenant it asked for,
// and, when its work was done, the tenant the transaction said it was in
// and the database's herald.tenant_id.
type scopeRecord struct {
	opened, tx uuid.UUID
	database   string
}

// scopeRecorder is production's store of Intake, recording the scope of
// each transaction it opens and commits; a platform transaction fails.
type scopeRecorder struct {
	app.Store[app.IntakeTx]
	mu      sync.Mutex
	records []scopeRecord
}

func (r *scopeRecorder) InTenant(ctx context.Context, tenantID uuid.UUID, fn func(app.IntakeTx) error) error {
	return r.Store.InTenant(ctx, tenantID, func(tx app.IntakeTx) error {
		if err := fn(tx); err != nil {
			return err
		}
		rec := scopeRecord{opened: tenantID, tx: tx.TenantID()}
		if err := tx.(*db.Tx).SQL().QueryRowContext(ctx, `SELECT current_setting('herald.tenant_id', true)`).Scan(&rec.database); err != nil {
			return err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.records = append(r.records, rec)
		return nil
	})
}

func (r *scopeRecorder) InPlatform(context.Context, func(app.IntakeTx) error) error {
	return fmt.Errorf("intake opened a platform transaction")
}

func (r *scopeRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = nil
}

func (r *scopeRecorder) taken() []scopeRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]scopeRecord(nil), r.records...)
}

// lockTimeoutStore is production's store of Intake, with a lock timeout of
// 20 ms in one tenant's transactions: what a Postgres under a lock timeout
// does to that tenant's requests.
type lockTimeoutStore struct {
	app.Store[app.IntakeTx]
	tenant uuid.UUID
}

func (s lockTimeoutStore) InTenant(ctx context.Context, tenantID uuid.UUID, fn func(app.IntakeTx) error) error {
	return s.Store.InTenant(ctx, tenantID, func(tx app.IntakeTx) error {
		if tenantID == s.tenant {
			if _, err := tx.(*db.Tx).SQL().ExecContext(ctx, `SELECT set_config('lock_timeout', '20ms', true)`); err != nil {
				return err
			}
			if err := fn(tx); err != nil {
				return err
			}
			// The commit waits as production's does: it takes the lock
			// of the notification queue, which a busy machine may hold
			// past 20 ms, and that is no lock the request waits for.
			_, err := tx.(*db.Tx).SQL().ExecContext(ctx, `SET LOCAL lock_timeout TO DEFAULT`)
			return err
		}
		return fn(tx)
	})
}
