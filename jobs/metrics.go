package jobs

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/app"
)

// Metrics is the Prometheus implementation of app.Metrics.
type Metrics struct {
	messages *prometheus.CounterVec
	errors   *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	receipts *prometheus.CounterVec
	snoozes  *prometheus.CounterVec
	breakers *prometheus.GaugeVec
	refused  *prometheus.CounterVec
}

var _ app.Metrics = (*Metrics)(nil)

// NewMetrics registers the pipeline's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_messages_total", Help: "Dispatch results by channel and outcome (sent, failed, retry, snoozed).",
		}, []string{"channel", "outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_provider_errors_total", Help: "Provider failures by provider and provider code.",
		}, []string{"provider", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_dispatch_latency_seconds", Help: "Time from a message being queued to the provider accepting it.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"channel"}),
		receipts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_receipts_total", Help: "Provider receipts by provider and outcome (applied, recorded, duplicate, pending, foreign, requeued), counted when applied.",
		}, []string{"provider", "outcome"}),
		snoozes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_snoozes_total", Help: "Dispatch jobs put back without using an attempt, by reason.",
		}, []string{"reason"}),
		breakers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_breaker_state", Help: "Circuit breaker state per channel account: 0 closed, 1 half-open, 2 open.",
		}, []string{"channel_account_id", "provider"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_server_credentials_refused_total",
			Help: "Sends refused for the server's own AWS credentials (accounts without keys of their own), by provider and code: every such account's messages wait.",
		}, []string{"provider", "code"}),
	}
	reg.MustRegister(m.messages, m.errors, m.latency, m.receipts, m.snoozes, m.breakers, m.refused)
	return m
}

// MessageOutcome implements app.Metrics.
func (m *Metrics) MessageOutcome(ch app.Channel, outcome string) {
	m.messages.WithLabelValues(string(ch), outcome).Inc()
}

// ProviderError implements app.Metrics.
func (m *Metrics) ProviderError(provider, code string) {
	m.errors.WithLabelValues(provider, code).Inc()
}

// DispatchLatency implements app.Metrics.
func (m *Metrics) DispatchLatency(ch app.Channel, d time.Duration) {
	m.latency.WithLabelValues(string(ch)).Observe(d.Seconds())
}

// Receipt implements app.Metrics.
func (m *Metrics) Receipt(provider, outcome string) {
	m.receipts.WithLabelValues(provider, outcome).Inc()
}

// Snooze implements app.Metrics.
func (m *Metrics) Snooze(reason string) { m.snoozes.WithLabelValues(reason).Inc() }

// BreakerState implements app.Metrics.
func (m *Metrics) BreakerState(accountID, provider string, state int) {
	m.breakers.WithLabelValues(accountID, provider).Set(float64(state))
}

// ServerCredentialsRefused implements app.Metrics.
func (m *Metrics) ServerCredentialsRefused(provider, code string) {
	m.refused.WithLabelValues(provider, code).Inc()
}
