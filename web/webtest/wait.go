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
