package db

import (
	"github.com/prometheus/client_golang/prometheus"
)

// PoolCollector exports the pgx pool's statistics to Prometheus.
type PoolCollector struct {
	db                                   *DB
	acquired, idle, total, max, acquires *prometheus.Desc
	acquireSeconds, emptyAcquires        *prometheus.Desc
}

// NewPoolCollector returns a collector for d's pool.
func NewPoolCollector(d *DB) *PoolCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("herald_db_pool_"+name, help, nil, nil)
	}
	return &PoolCollector{
		db:             d,
		acquired:       desc("acquired_conns", "Connections currently in use."),
		idle:           desc("idle_conns", "Idle connections in the pool."),
		total:          desc("total_conns", "Open connections."),
		max:            desc("max_conns", "Largest number of connections the pool opens."),
		acquires:       desc("acquires_total", "Connections handed out since start."),
		acquireSeconds: desc("acquire_seconds_total", "Time spent waiting for a connection."),
		emptyAcquires:  desc("empty_acquires_total", "Acquires that had to wait because the pool was empty."),
	}
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.acquired, c.idle, c.total, c.max, c.acquires, c.acquireSeconds, c.emptyAcquires} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.db.Pool.Stat()
	ch <- prometheus.MustNewConstMetric(c.acquired, prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.IdleConns()))
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(s.TotalConns()))
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(c.acquires, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(c.acquireSeconds, prometheus.CounterValue, s.AcquireDuration().Seconds())
	ch <- prometheus.MustNewConstMetric(c.emptyAcquires, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
}
