package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// spyIntakeTx records the statements Submit's transaction runs. Its
// embedded IntakeTx is nil: a statement it does not know panics, which
// fails the test and names the statement to add.
type spyIntakeTx struct {
	IntakeTx
	calls []string
}

func (s *spyIntakeTx) TenantID() uuid.UUID { return uuid.Nil }

func (s *spyIntakeTx) InsertEvent(context.Context, *Event) (bool, error) {
	s.calls = append(s.calls, "insert the event")
	return true, nil
}

func (s *spyIntakeTx) InsertEvents(_ context.Context, es []*Event) (map[uuid.UUID]bool, error) {
	stored := map[uuid.UUID]bool{}
	for _, e := range es {
		s.calls = append(s.calls, "insert the event")
		stored[e.ID] = true
	}
	return stored, nil
}

func (s *spyIntakeTx) InsertTenantsEvents(ctx context.Context, parts [][]*Event) (map[uuid.UUID]bool, error) {
	stored := map[uuid.UUID]bool{}
	for _, part := range parts {
		ids, _ := s.InsertEvents(ctx, part)
		maps.Copy(stored, ids)
	}
	return stored, nil
}

// ScopeTenant is not recorded: a batch of one tenant stays in the scope it
// began in, as Submit's own transaction does.
func (s *spyIntakeTx) ScopeTenant(context.Context, uuid.UUID) error { return nil }

func (s *spyIntakeTx) SetLockTimeout(context.Context, time.Duration) error {
	s.calls = append(s.calls, "SetLockTimeout")
	return nil
}
func (s *spyIntakeTx) InsertAudit(context.Context, *AuditEntry) error {
	s.calls = append(s.calls, "InsertAudit")
	return nil
}

func (s *spyIntakeTx) LockEntities(_ context.Context, _ uuid.UUID, exclusive bool, _ ...Entity) error {
	s.calls = append(s.calls, fmt.Sprintf("LockEntities(exclusive=%t)", exclusive))
	return nil
}

func (s *spyIntakeTx) SupersedingEvent(context.Context, uuid.UUID, SupersessionQuery) (*SupersedingRef, error) {
	s.calls = append(s.calls, "SupersedingEvent")
	return nil, nil
}

func (s *spyIntakeTx) Supersede(context.Context, Supersession) (SupersedeResult, error) {
	s.calls = append(s.calls, "Supersede")
	return SupersedeResult{}, nil
}

func (s *spyIntakeTx) TripAudienceSize(context.Context, uuid.UUID, string) (bool, int, error) {
	s.calls = append(s.calls, "TripAudienceSize")
	return true, 3, nil
}

func (s *spyIntakeTx) PendingRelativeEvents(context.Context, uuid.UUID, string, string) ([]*Event, error) {
	s.calls = append(s.calls, "PendingRelativeEvents")
	return nil, nil
}

// spyStore runs every transaction on one spyIntakeTx.
type spyStore struct{ tx *spyIntakeTx }

func (s spyStore) InTenant(_ context.Context, _ uuid.UUID, fn func(IntakeTx) error) error {
	return fn(s.tx)
}

func (s spyStore) InPlatform(_ context.Context, fn func(IntakeTx) error) error { return fn(s.tx) }

// spyQueue records the jobs enqueued.
type spyQueue struct{ tx *spyIntakeTx }

func (q spyQueue) EnqueueRoute(context.Context, Tx, RouteJob) error {
	q.tx.calls = append(q.tx.calls, "enqueue the route job")
	return nil
}

func (q spyQueue) EnqueueRoutes(_ context.Context, _ Tx, jobs ...RouteJob) error {
	for range jobs {
		q.tx.calls = append(q.tx.calls, "enqueue the route job")
	}
	return nil
}

func (q spyQueue) EnqueueDispatch(context.Context, Tx, ...DispatchJob) error {
	q.tx.calls = append(q.tx.calls, "EnqueueDispatch")
	return nil
}

// TestBatchable holds batchable and Submit's transaction together: for
// every event of the registry, with and without a booking, a trip, an
// audience, a schedule and a redacted secret, a batchable submission runs
// the same statements in IntakeBatcher's transaction as one by one, and a
// submission that is not batchable runs one the batch does not (an audit
// entry, a supersession, moved schedules or an audience's size).
func TestBatchable(t *testing.T) {
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	key := &APIKey{ID: uuid.New(), TenantID: uuid.New(), Name: "system"}
	variants := map[string]func(body map[string]any){
		"NoEntity": func(body map[string]any) { delete(body, "conversation_context") },
		"Booking":  func(map[string]any) {},
		"BookingOnTrip": func(body map[string]any) {
			body["context"].(map[string]any)["trip_id"] = "TRIP-7"
		},
		"Audience": func(body map[string]any) {
			delete(body, "recipients")
			delete(body, "conversation_context")
			body["audience"] = map[string]any{"trip_id": "TRIP-7"}
		},
		"Scheduled": func(body map[string]any) { body["send_at"] = now.Add(48 * time.Hour).Format(time.RFC3339) },
		"Redacted":  func(body map[string]any) { body["context"].(map[string]any)["portal_token"] = "abc" },
	}
	extra := []string{"InsertAudit", "Supersede", "PendingRelativeEvents", "TripAudienceSize"}
	var batched, alone int
	for _, def := range Events() {
		for name, change := range variants {
			t.Run(def.Name+"/"+name, func(t *testing.T) {
				body := map[string]any{
					"event_id": "ev-" + name, "trigger_event": def.Name,
					"recipients":           []map[string]any{{"name": "Anna Schmidt", "email": "anna@example.com"}},
					"context":              maps.Clone(def.Sample),
					"conversation_context": map[string]any{"type": "booking", "id": "BK-1"},
				}
				change(body)
				raw, err := json.Marshal(body)
				require.NoError(t, err)
				if _, err := ParseNotificationRequest(raw, now); err != nil {
					t.Skipf("not a valid request for this event: %v", err)
				}
				clock := func() time.Time { return now }

				one := &spyIntakeTx{}
				in := &Intake{Store: spyStore{one}, Queue: spyQueue{one}, Now: clock}
				want, err := in.Submit(context.Background(), key, raw)
				require.NoError(t, err)

				shared := &spyIntakeTx{}
				in = &Intake{Store: spyStore{&spyIntakeTx{}}, Queue: spyQueue{&spyIntakeTx{}}, Now: clock,
					Batch: &IntakeBatcher{Store: spyStore{shared}, Queue: spyQueue{shared}}}
				got, err := in.Submit(context.Background(), key, raw)
				require.NoError(t, err)
				require.Equal(t, want.Status, got.Status)
				require.Equal(t, want.StatusReason, got.StatusReason)

				if len(shared.calls) > 0 {
					batched++
					require.Equal(t, one.calls, shared.calls, "the batch runs what the submission runs alone")
					return
				}
				alone++
				require.True(t, slices.ContainsFunc(one.calls, func(c string) bool { return slices.Contains(extra, c) }),
					"a submission kept out of batches runs a statement the batch does not: %v", one.calls)
			})
		}
	}
	require.Positive(t, batched)
	require.Positive(t, alone)
}

// TestIntakeBatcher_Write checks the shared transaction's statements: each
// tenant's events in that tenant's scope (the parts that lock entities one
// by one, the others in one round trip), one insert of every route job,
// and a lock timeout only when an event of the batch locks an entity.
func TestIntakeBatcher_Write(t *testing.T) {
	a, b := uuid.New(), uuid.New()
	item := func(tenant uuid.UUID, locks bool) *intakeItem {
		e := &Event{ID: uuid.New(), TenantID: tenant}
		it := &intakeItem{event: e, locks: locks}
		if locks {
			it.settle = func(ctx context.Context, tx IntakeTx) error {
				return tx.LockEntities(ctx, tenant, false, Entity{Type: EntityBooking, ID: "BK-1"})
			}
		}
		return it
	}
	run := func(batch ...*intakeItem) []string {
		tx := &scopeSpyTx{}
		bt := &IntakeBatcher{Store: scopeSpyStore{tx}, Queue: spyQueue{&tx.spyIntakeTx}}
		require.NoError(t, bt.write(context.Background(), uuid.Nil, batch))
		for _, it := range batch {
			require.True(t, it.stored)
		}
		return tx.calls
	}

	// Tenants' parts without locks go in one round trip, after the
	// parts with; a lock timeout only when an event locks.
	require.Equal(t, []string{"scope " + a.String(), "insert in one round trip: " + a.String() + " 2, " + b.String() + " 1",
		"enqueue the route job", "enqueue the route job", "enqueue the route job"},
		run(item(a, false), item(b, false), item(a, false)), "no lock, no lock timeout; A's part first, as its request was")
	require.Equal(t, []string{"scope " + b.String(), "SetLockTimeout", "scope " + a.String(), "LockEntities(exclusive=false)",
		"insert the event", "insert in one round trip: " + b.String() + " 1", "enqueue the route job", "enqueue the route job"},
		run(item(b, false), item(a, true)), "an event that locks sets the timeout for the batch; its part runs in its tenant's scope")
	// The spy records every ScopeTenant; the store's is a no-op for the
	// tenant the transaction is in.
	require.Equal(t, []string{"scope " + a.String(), "scope " + a.String(), "LockEntities(exclusive=false)", "insert the event",
		"enqueue the route job"}, run(item(a, true)), "a batch of one waits for its lock as one by one does")
}

// scopeSpyTx records ScopeTenant and the scope InTenant opens with.
type scopeSpyTx struct{ spyIntakeTx }

func (s *scopeSpyTx) ScopeTenant(_ context.Context, tenant uuid.UUID) error {
	s.calls = append(s.calls, "scope "+tenant.String())
	return nil
}

func (s *scopeSpyTx) InsertTenantsEvents(_ context.Context, parts [][]*Event) (map[uuid.UUID]bool, error) {
	stored := map[uuid.UUID]bool{}
	var names []string
	for _, part := range parts {
		names = append(names, fmt.Sprintf("%s %d", part[0].TenantID, len(part)))
		for _, e := range part {
			stored[e.ID] = true
		}
	}
	s.calls = append(s.calls, "insert in one round trip: "+strings.Join(names, ", "))
	return stored, nil
}

type scopeSpyStore struct{ tx *scopeSpyTx }

func (s scopeSpyStore) InTenant(_ context.Context, tenant uuid.UUID, fn func(IntakeTx) error) error {
	s.tx.calls = append(s.tx.calls, "scope "+tenant.String())
	return fn(s.tx)
}

func (s scopeSpyStore) InPlatform(context.Context, func(IntakeTx) error) error {
	return errors.New("intake batches are scoped to a tenant")
}
