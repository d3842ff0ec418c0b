package webtest

import "time"

// WaitUntil waits until ok holds, what says what that means for the failure
// message. It polls a condition; it is never a pause that hopes something
// happened meanwhile.
func (h *Herald) WaitUntil(what string, ok func() bool) {
	h.T.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			h.T.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitReceipts waits until the receipt applier has applied every receipt
// webhooks stored in the inbox: the applier deletes a receipt in the
// transaction that applies it.
func (h *Herald) WaitReceipts() {
	h.T.Helper()
	h.WaitUntil("the receipt inbox to be applied", func() bool {
		return h.Count(`SELECT count(*) FROM receipt_inbox`) == 0
	})
}
