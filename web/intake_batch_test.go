package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/web/webtest"
)

// gatedStore holds the first transaction it opens until release is closed,
// so that the requests sent meanwhile wait for the next batch together;
// fail, when set, fails every transaction before it starts.
type gatedStore struct {
	app.Store[app.IntakeTx]
	entered, release chan struct{}
	once             sync.Once
	fail             error

	mu    sync.Mutex
	sizes []int
}

func (g *gatedStore) InTenant(ctx context.Context, tenantID uuid.UUID, fn func(app.IntakeTx) error) error {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.release
	}
	if g.fail != nil {
		return g.fail
	}
	return g.Store.InTenant(ctx, tenantID, fn)
}

// gate puts a gatedStore in front of the intake batches of h, with one
// writer, and records each batch's size.
func gate(h *webtest.Herald) *gatedStore {
	b := h.Services.Intake.Batch
	g := &gatedStore{Store: b.Store, entered: make(chan struct{}), release: make(chan struct{})}
	b.Store, b.Writers = g, 1
	b.Observe = func(n int) {
		g.mu.Lock()
		g.sizes = append(g.sizes, n)
		g.mu.Unlock()
	}
	return g
}

// answer is one request's outcome.
type answer struct {
	status int
	res    submitted
	err    apiErrorBody
}

// sendAll sends the bodies at once, each with its key, and waits until
// all of them wait for a batch; then it opens the gate and returns the
// answers in the bodies' order.
func sendAll(t *testing.T, h *webtest.Herald, g *gatedStore, keys []string, bodies []map[string]any) []answer {
	t.Helper()
	// The first request takes the one writer and holds it at the gate.
	first := make(chan int, 1)
	go func() {
		first <- h.RequestWithKey(h.Key, http.MethodPost, "/api/v1/notifications", webtest.Notification("gate-"+uuid.NewString(), "BK-GATE"), nil)
	}()
	<-g.entered
	out := make([]answer, len(bodies))
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := &out[i]
			var raw map[string]any
			a.status = h.RequestWithKey(keys[i], http.MethodPost, "/api/v1/notifications", bodies[i], &raw)
			if a.status == http.StatusOK || a.status == http.StatusAccepted || a.status == http.StatusCreated {
				require.NoError(t, remarshal(raw, &a.res))
			} else {
				require.NoError(t, remarshal(raw, &a.err))
			}
		}()
	}
	h.WaitUntil(fmt.Sprintf("%d requests waiting for a batch", len(bodies)), func() bool {
		return h.Services.Intake.Batch.Waiting() == len(bodies)
	})
	close(g.release)
	wg.Wait()
	require.Less(t, <-first, 300)
	return out
}

func TestIntakeBatch(t *testing.T) {
	t.Parallel()

	t.Run("RequestsArrivingTogetherShareATransactionWhateverTheirTenants", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{NoWorkers: true})
		used := h.Submit(webtest.Notification("batch-used", "BK-U"))
		g := gate(h)
		other := otherTenantKey(t, &testBundle{h}, "batch-other")
		var keys []string
		var bodies []map[string]any
		for i := range 12 {
			key, booking := h.Key, fmt.Sprintf("BK-A%d", i)
			if i%3 == 2 {
				key, booking = other, fmt.Sprintf("BK-B%d", i)
			}
			keys = append(keys, key)
			bodies = append(bodies, webtest.Notification(fmt.Sprintf("batch-%d", i), booking))
		}
		// The same request twice in one batch, and another request under
		// an id used before: a duplicate and a conflict.
		keys = append(keys, h.Key, h.Key, h.Key)
		bodies = append(bodies, webtest.Notification("batch-twice", "BK-T"), webtest.Notification("batch-twice", "BK-T"),
			webtest.Notification("batch-used", "BK-OTHER"))

		out := sendAll(t, h, g, keys, bodies)
		for i := range 12 {
			require.Less(t, out[i].status, 300, "request %d: %+v", i, out[i].err)
			require.False(t, out[i].res.Duplicate)
		}
		twice := []answer{out[12], out[13]}
		slices.SortFunc(twice, func(a, b answer) int {
			if a.res.Duplicate == b.res.Duplicate {
				return 0
			}
			if a.res.Duplicate {
				return 1
			}
			return -1
		})
		require.False(t, twice[0].res.Duplicate)
		require.True(t, twice[1].res.Duplicate, "the second of two equal requests is a duplicate")
		require.Equal(t, twice[0].res.ID, twice[1].res.ID)
		require.Equal(t, http.StatusConflict, out[14].status)
		require.Equal(t, "idempotency_conflict", out[14].err.Error.Code)

		// Every event once, under its own tenant, with one route job.
		otherTenant := h.Count(`SELECT count(DISTINCT tenant_id) FROM events WHERE tenant_id <> $1`, h.Tenant.ID)
		require.Equal(t, 1, otherTenant)
		require.Equal(t, 8+1+1+1, h.Count(`SELECT count(*) FROM events WHERE tenant_id = $1`, h.Tenant.ID),
			"8 of the 12, the gate's, the request sent twice and the one before")
		require.Equal(t, "BK-U", queryString(t, &testBundle{h}, `SELECT entity_id FROM events WHERE id = $1`, used))
		require.Equal(t, 4, h.Count(`SELECT count(*) FROM events WHERE tenant_id <> $1`, h.Tenant.ID))
		for i := range 12 {
			id := out[i].res.ID
			require.Equal(t, 1, h.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, id.String()))
			own := h.Count(`SELECT count(*) FROM events WHERE id = $1 AND tenant_id = $2`, id, h.Tenant.ID)
			require.Equal(t, i%3 != 2, own == 1, "event %d is stored under its key's tenant", i)
		}
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, twice[0].res.ID.String()))

		// The gate's request alone, then one transaction for both tenants'
		// requests, interleaved as they were (the duplicate and the
		// conflict were stored by none).
		g.mu.Lock()
		defer g.mu.Unlock()
		require.Equal(t, []int{1, 15}, g.sizes)
	})

	t.Run("AFailedBatchIsStoredOneByOne", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{NoWorkers: true})
		g := gate(h)
		g.fail = errors.New("connection reset by peer")
		var keys []string
		var bodies []map[string]any
		for i := range 5 {
			keys = append(keys, h.Key)
			bodies = append(bodies, webtest.Notification(fmt.Sprintf("fail-%d", i), fmt.Sprintf("BK-F%d", i)))
		}
		out := sendAll(t, h, g, keys, bodies)
		for i, a := range out {
			require.Less(t, a.status, 300, "request %d: %+v", i, a.err)
			require.Equal(t, 1, h.Count(`SELECT count(*) FROM river_job WHERE kind = 'route' AND args->>'event_id' = $1`, a.res.ID.String()))
		}
		require.Equal(t, 6, h.Count(`SELECT count(*) FROM events WHERE tenant_id = $1`, h.Tenant.ID))
	})

	t.Run("ABatchGivesWayToAHeldEntityLock", func(t *testing.T) {
		t.Parallel()
		h := webtest.New(t, webtest.Options{NoWorkers: true})
		g := gate(h)
		// A cancellation's transaction holds booking BK-L exclusively.
		held, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- h.Services.Intake.Store.InTenant(h.Ctx, h.Tenant.ID, func(tx app.IntakeTx) error {
				if err := tx.LockEntities(h.Ctx, h.Tenant.ID, true, app.Entity{Type: app.EntityBooking, ID: "BK-L"}); err != nil {
					return err
				}
				close(held)
				<-release
				return nil
			})
		}()
		<-held
		// Two supersedable events, one about the held booking: their batch
		// gives up on the lock instead of waiting; one by one, the held
		// booking's waits until the lock is let go.
		var failed sync.Once
		h.Services.Intake.Batch.Log = nil
		inner := g.Store
		g.Store = storeFunc(func(ctx context.Context, id uuid.UUID, fn func(app.IntakeTx) error) error {
			err := inner.InTenant(ctx, id, fn)
			if err != nil {
				failed.Do(func() { close(release) })
			}
			return err
		})
		// Another tenant's request shares the batch's fate: it goes one
		// by one too, and is stored under its own tenant.
		other := otherTenantKey(t, &testBundle{h}, "lock-other")
		out := sendAll(t, h, g, []string{h.Key, other, h.Key}, []map[string]any{
			webtest.Notification("lock-held", "BK-L"), webtest.Notification("lock-other", "BK-L"),
			webtest.Notification("lock-free", "BK-M"),
		})
		require.NoError(t, <-done)
		for i, a := range out {
			require.Less(t, a.status, 300, "request %d: %+v", i, a.err)
		}
		require.Equal(t, 3, h.Count(`SELECT count(*) FROM events WHERE tenant_id = $1`, h.Tenant.ID))
		require.Equal(t, 1, h.Count(`SELECT count(*) FROM events WHERE tenant_id <> $1 AND id = $2`, h.Tenant.ID, out[1].res.ID))
	})
}

// storeFunc is a Store of IntakeTx from its InTenant.
type storeFunc func(ctx context.Context, tenantID uuid.UUID, fn func(app.IntakeTx) error) error

func (f storeFunc) InTenant(ctx context.Context, tenantID uuid.UUID, fn func(app.IntakeTx) error) error {
	return f(ctx, tenantID, fn)
}

func (f storeFunc) InPlatform(context.Context, func(app.IntakeTx) error) error {
	return errors.New("intake batches are scoped to a tenant")
}

// remarshal decodes the JSON of v into out.
func remarshal(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
