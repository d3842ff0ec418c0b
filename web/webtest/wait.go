package webtest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/app"
	"github.com/heraldhq/herald/app/provider"
	"github.com/heraldhq/herald/db/dbtest"
)

// WaitUntil waits until ok holds, what says what that means for the failure
// message. It polls a condition; it is never a pause that hopes something
// happened meanwhile. It gives up after dbtest.HangGuard.
func (h *Herald) WaitUntil(what string, ok func() bool) {
	h.T.Helper()
	deadline := time.Now().Add(dbtest.HangGuard)
	for !ok() {
		if time.Now().After(deadline) {
			h.T.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitReceipts waits until the receipt applier has settled every receipt
// webhooks stored in the inbox: the applier deletes a receipt in the
// transaction that applies it, and parks one whose message is not known
// yet until the send names it.
func (h *Herald) WaitReceipts() {
	h.T.Helper()
	h.WaitUntil("the receipt inbox to be applied", func() bool {
		return h.Count(`SELECT count(*) FROM receipt_inbox WHERE available_at <> 'infinity'`) == 0
	})
}

// Receive stores receipts in the inbox as a provider's webhook does, and
// waits until the workers' applier has settled them; without workers
// (Options.NoWorkers) it runs the applier's rounds itself.
func (h *Herald) Receive(via app.Via, rs ...provider.Receipt) {
	h.T.Helper()
	in := make([]app.InboxReceipt, len(rs))
	for i, r := range rs {
		in[i] = app.InboxReceipt{Via: via, Receipt: r}
	}
	require.NoError(h.T, h.Services.Receipts.Accept(h.Ctx, in...))
	if h.Worker != nil {
		h.WaitReceipts()
		return
	}
	for {
		round, err := h.Services.Receipts.ApplyInbox(h.Ctx, 0)
		require.NoError(h.T, err)
		if round.Taken == 0 {
			return
		}
	}
}
