// Package sandbox is a provider that sends nothing: it accepts messages,
// reports them delivered and read a moment later through the same receipt
// path as real providers (the inbox, where its receipts wait until they
// are due), and fails on documented addresses, so that a new tenant can
// see the whole lifecycle without credentials.
package sandbox

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/app/provider"
)

// Name is the provider name of the sandbox.
const Name = "sandbox"

// Behaviour is what the sandbox does for an address.
type Behaviour string

// Behaviours, chosen by the recipient address. Phones are matched by their
// last four digits, e-mail addresses by their local part.
const (
	Deliver  Behaviour = "deliver"  // accepted, delivered, read
	Reject   Behaviour = "reject"   // permanent failure: ...0000, fail@
	Flaky    Behaviour = "flaky"    // transient failure on the first attempt, then delivered: ...0001, flaky@
	Bounce   Behaviour = "bounce"   // accepted, then a failed receipt: ...0002, bounce@
	Silent   Behaviour = "silent"   // accepted, no receipt ever: ...0003, silent@
	Throttle Behaviour = "throttle" // rate limited on the first attempt: ...0004, throttle@
	Down     Behaviour = "down"     // transient failure on every attempt: ...0005, down@
	// NoWhatsApp: WhatsApp rejects permanently (not on WhatsApp), other channels deliver: ...0006.
	NoWhatsApp Behaviour = "no_whatsapp"
)

// Addresses documents the special addresses, for the console.
var Addresses = []struct {
	Phone, Email string
	Behaviour    Behaviour
	Meaning      string
}{
	{"+49 …0000", "fail@…", Reject, "rejected permanently (fallback applies)"},
	{"+49 …0001", "flaky@…", Flaky, "fails transiently once, then succeeds on retry"},
	{"+49 …0002", "bounce@…", Bounce, "accepted, then bounces (FAILED after SENT)"},
	{"+49 …0003", "silent@…", Silent, "accepted, never reports (becomes stale)"},
	{"+49 …0004", "throttle@…", Throttle, "rate limited once, then succeeds"},
	{"+49 …0005", "down@…", Down, "fails transiently on every attempt"},
	{"+49 …0006", "", NoWhatsApp, "not on WhatsApp: WhatsApp rejects permanently, SMS delivers"},
}

// BehaviourOf returns what the sandbox does for an address.
func BehaviourOf(to string) Behaviour {
	if at := strings.IndexByte(to, '@'); at > 0 {
		switch local := strings.ToLower(to[:at]); local {
		case "fail":
			return Reject
		case "flaky", "bounce", "silent", "throttle", "down":
			return Behaviour(local)
		}
		return Deliver
	}
	switch {
	case strings.HasSuffix(to, "0000"):
		return Reject
	case strings.HasSuffix(to, "0001"):
		return Flaky
	case strings.HasSuffix(to, "0002"):
		return Bounce
	case strings.HasSuffix(to, "0003"):
		return Silent
	case strings.HasSuffix(to, "0004"):
		return Throttle
	case strings.HasSuffix(to, "0005"):
		return Down
	case strings.HasSuffix(to, "0006"):
		return NoWhatsApp
	}
	return Deliver
}

// Receipt is a receipt the sandbox reports, due After its send.
type Receipt struct {
	provider.Receipt
	After time.Duration
}

// ReportFunc stores the receipts of one send durably, to be applied when
// they are due, as a provider's webhook would post them.
type ReportFunc func(ctx context.Context, rs []Receipt) error

// Provider is the sandbox.
type Provider struct {
	// Report receives the sandbox's receipts of a send before the send
	// returns, so that no stop of the process loses them; nil reports
	// none.
	Report ReportFunc
	// Delay is how long after sending it reports delivered (and again until
	// read); 0 reports at once.
	Delay time.Duration

	throttled sync.Map // message id -> struct{}
}

// firstTry reports whether the message is seen for the first time.
func (p *Provider) firstTry(id uuid.UUID) bool {
	_, seen := p.throttled.LoadOrStore(id, struct{}{})
	return !seen
}

// Send implements provider.Provider. The message's receipts are reported
// before it returns; a report that fails fails the send (transiently),
// so that a message the sandbox "accepted" always reports.
func (p *Provider) Send(ctx context.Context, m provider.Outbound) (string, error) {
	b := BehaviourOf(m.To)
	switch {
	case b == Reject:
		return "", &provider.Error{Code: "sandbox_rejected", Class: provider.Permanent, Reason: "The sandbox rejects this address."}
	case b == NoWhatsApp && m.Channel == "WHATSAPP":
		return "", &provider.Error{Code: "sandbox_not_on_whatsapp", Class: provider.Permanent, Reason: "The recipient is not on WhatsApp."}
	case b == Down, b == Flaky && m.Attempt <= 1:
		return "", &provider.Error{Code: "sandbox_unavailable", Class: provider.Transient, Reason: "The sandbox is unavailable for this address."}
	case b == Throttle && p.firstTry(m.MessageID):
		// A rate-limited job is snoozed without using an attempt, so the
		// sandbox remembers which messages it has throttled already.
		return "", &provider.Error{Code: "sandbox_throttled", Class: provider.RateLimited, Reason: "The sandbox asks to slow down.", RetryAfter: 200 * time.Millisecond}
	}
	id := "sbx_" + uuid.NewString()
	if b == Silent || p.Report == nil {
		return id, nil
	}
	if err := p.Report(ctx, receipts(id, b, p.Delay)); err != nil {
		return "", &provider.Error{Code: "sandbox_unavailable", Class: provider.Transient, Reason: "The sandbox could not report: " + err.Error()}
	}
	return id, nil
}

// receipts are the receipts of a message the sandbox accepted: delivered
// after delay and read after twice that, or a bounce after delay.
func receipts(id string, b Behaviour, delay time.Duration) []Receipt {
	steps := []string{provider.StatusDelivered, provider.StatusRead}
	if b == Bounce {
		steps = []string{provider.StatusFailed}
	}
	rs := make([]Receipt, len(steps))
	now := time.Now()
	for i, status := range steps {
		after := delay * time.Duration(i+1)
		r := provider.Receipt{Provider: Name, ExternalID: id, ReceiptID: id + ":" + status, Status: status, At: now.Add(after)}
		if status == provider.StatusFailed {
			r.Code, r.Reason = "sandbox_bounce", "The sandbox mailbox bounced the message."
		}
		rs[i] = Receipt{Receipt: r, After: after}
	}
	return rs
}

// Idempotent implements provider.Idempotent: the sandbox delivers nowhere,
// so sending a message again is harmless.
func (p *Provider) Idempotent() bool { return true }
