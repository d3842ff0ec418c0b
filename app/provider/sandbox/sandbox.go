// Package sandbox is a provider that sends nothing: it accepts messages,
// reports them delivered and read a moment later through the same receipt
// path as real providers, and fails on documented addresses, so that a new
// tenant can see the whole lifecycle without credentials.
package sandbox

import (
	"context"
	"log/slog"
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

// Provider is the sandbox.
type Provider struct {
	// Report receives the sandbox's receipts.
	Report provider.ReportFunc
	// Delay is how long after sending it reports delivered (and again until
	// read); 0 reports at once.
	Delay time.Duration
	Log   *slog.Logger

	throttled sync.Map // message id -> struct{}
	pending   sync.Map // external id -> Behaviour, until the send is committed
}

// firstTry reports whether the message is seen for the first time.
func (p *Provider) firstTry(id uuid.UUID) bool {
	_, seen := p.throttled.LoadOrStore(id, struct{}{})
	return !seen
}

// Send implements provider.Provider.
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
	if b != Silent && p.Report != nil {
		p.pending.Store(id, b)
	}
	return id, nil
}

// Committed implements provider.Committer: the send is recorded, so its
// receipts may follow.
func (p *Provider) Committed(externalID string) {
	if b, ok := p.pending.LoadAndDelete(externalID); ok {
		go p.report(externalID, b.(Behaviour))
	}
}

// report sends the receipts of one message, retrying briefly when the
// receipt path fails.
func (p *Provider) report(id string, b Behaviour) {
	steps := []string{provider.StatusDelivered, provider.StatusRead}
	if b == Bounce {
		steps = []string{provider.StatusFailed}
	}
	for _, status := range steps {
		time.Sleep(p.Delay)
		r := provider.Receipt{Provider: Name, ExternalID: id, ReceiptID: id + ":" + status, Status: status, At: time.Now()}
		if status == provider.StatusFailed {
			r.Code, r.Reason = "sandbox_bounce", "The sandbox mailbox bounced the message."
		}
		var err error
		for try := 0; try < 10; try++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = p.Report(ctx, r)
			cancel()
			if err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil && p.Log != nil {
			p.Log.Warn("sandbox receipt not applied", "external_id", id, "status", status, "err", err)
		}
	}
}

// Idempotent implements provider.Idempotent: the sandbox delivers nowhere,
// so sending a message again is harmless.
func (p *Provider) Idempotent() bool { return true }
