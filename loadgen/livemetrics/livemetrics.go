// Package livemetrics holds the load generator's own Prometheus metrics,
// served on /metrics while `exactly loadgen --metrics-listen ADDR` runs so
// that a long run can be watched in Prometheus or Grafana: records sent,
// acknowledged and failed per delivery mode, the produce-ack latency
// histogram, the checker's counts of the cells checked so far and the
// faults fired. It imports only Prometheus' client and the standard
// library; the runner feeds it.
//
// A nil *Loadgen (metrics off) and a nil *Mode are valid and do nothing,
// so the hot path pays one nil check when metrics are off and a few atomic
// additions when they are on.
package livemetrics

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Checker verdicts, the values of the verdict label.
const (
	VerdictLost        = "lost"
	VerdictDuplicated  = "duplicated"
	VerdictReordered   = "reordered"
	VerdictAbortedRead = "aborted_read"
)

// AckLatencyBuckets are the bounds, in seconds, of the produce-ack latency
// histogram: 100 µs to 30 s, about three per decade.
var AckLatencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Loadgen is the load generator's collectors and their registry.
type Loadgen struct {
	registry   *prometheus.Registry
	sent       *prometheus.CounterVec
	acked      *prometheus.CounterVec
	failed     *prometheus.CounterVec
	ackLatency *prometheus.HistogramVec
	checker    *prometheus.GaugeVec
	faults     *prometheus.CounterVec
}

// New registers the load generator's collectors, with the Go runtime and
// process collectors, in a registry of their own.
func New() *Loadgen {
	l := &Loadgen{
		registry: prometheus.NewRegistry(),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "exactly_loadgen_records_sent_total",
			Help: "Records handed to the client by the load's producers, per delivery mode."}, []string{"mode"}),
		acked: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "exactly_loadgen_records_acked_total",
			Help: "Records the broker acknowledged, per delivery mode."}, []string{"mode"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "exactly_loadgen_records_failed_total",
			Help: "Records whose produce failed for good, per delivery mode."}, []string{"mode"}),
		ackLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "exactly_loadgen_ack_latency_seconds",
			Help:    "Produce-ack latency of acknowledged records, from the record's send time, per delivery mode.",
			Buckets: AckLatencyBuckets}, []string{"mode"}),
		checker: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "exactly_loadgen_checker_records",
			Help: "Records the checker found lost, duplicated, reordered or read from aborted transactions, summed over the cells checked so far, per delivery mode."},
			[]string{"mode", "verdict"}),
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "exactly_loadgen_faults_fired_total",
			Help: "Faults the fault plans fired, per kind of fault."}, []string{"fault"}),
	}
	l.registry.MustRegister(l.sent, l.acked, l.failed, l.ackLatency, l.checker, l.faults,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return l
}

// Registry returns the registry holding the collectors.
func (l *Loadgen) Registry() *prometheus.Registry { return l.registry }

// Handler serves the registry in the Prometheus text format.
func (l *Loadgen) Handler() http.Handler {
	return promhttp.HandlerFor(l.registry, promhttp.HandlerOpts{})
}

// Mode is one delivery mode's hot-path collectors, resolved once per cell
// so that counting a record does not look its labels up.
type Mode struct {
	sent, acked, failed prometheus.Counter
	ackLatency          prometheus.Observer
}

// Mode returns mode's collectors; nil when l is nil.
func (l *Loadgen) Mode(mode string) *Mode {
	if l == nil {
		return nil
	}
	return &Mode{sent: l.sent.WithLabelValues(mode), acked: l.acked.WithLabelValues(mode),
		failed: l.failed.WithLabelValues(mode), ackLatency: l.ackLatency.WithLabelValues(mode)}
}

// Sent counts a record handed to the client.
func (m *Mode) Sent() {
	if m != nil {
		m.sent.Inc()
	}
}

// Acked counts an acknowledged record and observes its latency.
func (m *Mode) Acked(latency time.Duration) {
	if m != nil {
		m.acked.Inc()
		m.ackLatency.Observe(latency.Seconds())
	}
}

// AckedUntimed counts an acknowledged record whose latency is not known
// (a worker subprocess reported it).
func (m *Mode) AckedUntimed() {
	if m != nil {
		m.acked.Inc()
	}
}

// Failed counts a record whose produce failed.
func (m *Mode) Failed() {
	if m != nil {
		m.failed.Inc()
	}
}

// CheckerCounts are one checked cell's records by verdict.
type CheckerCounts struct {
	Lost, Duplicated, Reordered, AbortedRead uint64
}

// AddChecked adds one checked cell's counts to mode's totals.
func (l *Loadgen) AddChecked(mode string, counts CheckerCounts) {
	if l == nil {
		return
	}
	for verdict, count := range map[string]uint64{VerdictLost: counts.Lost, VerdictDuplicated: counts.Duplicated,
		VerdictReordered: counts.Reordered, VerdictAbortedRead: counts.AbortedRead} {
		// Every verdict gets a series, zero included, so that a query
		// finds it before the first violation.
		l.checker.WithLabelValues(mode, verdict).Add(float64(count))
	}
}

// FaultFired counts one fault of kind.
func (l *Loadgen) FaultFired(kind string) {
	if l != nil {
		l.faults.WithLabelValues(kind).Inc()
	}
}

// Server serves a Loadgen's /metrics on a listener of its own.
type Server struct {
	server   *http.Server
	listener net.Listener
	done     chan error
}

// Serve listens on address (host:port; port 0 picks a free one) and serves
// l's metrics on /metrics until Close.
func Serve(address string, l *Loadgen) (*Server, error) {
	listener, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("metrics listener on %s: %w", address, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", l.Handler())
	s := &Server{server: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, listener: listener, done: make(chan error, 1)}
	go func() { s.done <- s.server.Serve(listener) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// URL is the address of the server's /metrics.
func (s *Server) URL() string { return "http://" + s.Addr() + "/metrics" }

// Close stops the server and waits for its goroutine.
func (s *Server) Close() error {
	err := s.server.Close()
	if serveErr := <-s.done; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}
