package app

import "time"

// Metrics receives what the pipeline counts. The Prometheus implementation
// lives with the job runner (jobs.NewMetrics).
type Metrics interface {
	// MessageOutcome counts a dispatch result: sent, failed, retry, snoozed.
	MessageOutcome(ch Channel, outcome string)
	// ProviderError counts a provider failure by provider and code.
	ProviderError(provider, code string)
	// DispatchLatency observes the time from queueing to the provider's answer.
	DispatchLatency(ch Channel, d time.Duration)
	// Receipt counts a provider receipt by provider and outcome.
	Receipt(provider, outcome string)
	// Snooze counts a job put back without using an attempt, by reason.
	Snooze(reason string)
	// BreakerState reports an account's breaker state: 0 closed, 1 half-open, 2 open.
	BreakerState(accountID string, provider string, state int)
	// ServerCredentialsRefused counts a send refused for the server's own
	// credentials (see ServerCredentials), by provider and code.
	ServerCredentialsRefused(provider, code string)
}

// nopMetrics counts nothing: the Metrics of a service given none.
type nopMetrics struct{}

func (nopMetrics) MessageOutcome(Channel, string)          {}
func (nopMetrics) ProviderError(string, string)            {}
func (nopMetrics) DispatchLatency(Channel, time.Duration)  {}
func (nopMetrics) Receipt(string, string)                  {}
func (nopMetrics) Snooze(string)                           {}
func (nopMetrics) BreakerState(string, string, int)        {}
func (nopMetrics) ServerCredentialsRefused(string, string) {}
