package app_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
)

func TestReceiptBatcher_Add(t *testing.T) {
	t.Parallel()

	run := func(t *testing.T, b *app.ReceiptBatcher, n int) []error {
		t.Helper()
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = b.Add(context.Background(), app.InboxReceipt{Receipt: provider.Receipt{ExternalID: "x", Status: provider.StatusDelivered}})
			}()
		}
		wg.Wait()
		return errs
	}

	t.Run("SharesInserts", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var sizes []int
		b := &app.ReceiptBatcher{MaxBatch: 10, MaxWait: time.Hour, AcceptFunc: func(_ context.Context, rs ...app.InboxReceipt) error {
			mu.Lock()
			defer mu.Unlock()
			sizes = append(sizes, len(rs))
			return nil
		}}
		// A wait of an hour: only full batches can go, so 30 receipts are
		// exactly three inserts and every caller returned after its own.
		for _, err := range run(t, b, 30) {
			require.NoError(t, err)
		}
		require.Equal(t, []int{10, 10, 10}, sizes)
	})

	t.Run("EveryCallerSeesTheInsertsError", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("database unavailable")
		b := &app.ReceiptBatcher{MaxBatch: 5, MaxWait: time.Hour, AcceptFunc: func(context.Context, ...app.InboxReceipt) error { return boom }}
		for _, err := range run(t, b, 10) {
			require.ErrorIs(t, err, boom)
		}
	})
}
