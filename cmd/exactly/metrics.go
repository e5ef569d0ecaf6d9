package main

import (
	"sync/atomic"

	"github.com/exactly-eos/exactly/broker/metrics"
)

// brokerMetrics is a broker's metrics and the HTTP server publishing
// them (--metrics-listen). The server starts before the broker, so
// /readyz answers 503 until the broker reports ready through setReady.
type brokerMetrics struct {
	metrics *metrics.Broker
	server  *metrics.Server
	ready   atomic.Pointer[func() bool]
}

// startBrokerMetrics serves fresh broker metrics on addr ("" = off: it
// returns nil, and every method of a nil *brokerMetrics is a no-op).
func startBrokerMetrics(addr string) (*brokerMetrics, error) {
	if addr == "" {
		return nil, nil
	}
	bm := &brokerMetrics{metrics: metrics.New()}
	server, err := metrics.Serve(addr, bm.metrics, func() bool {
		ready := bm.ready.Load()
		return ready != nil && (*ready)()
	})
	if err != nil {
		return nil, err
	}
	bm.server = server
	return bm, nil
}

// collectors is the metrics to give the broker; nil when off.
func (bm *brokerMetrics) collectors() *metrics.Broker {
	if bm == nil {
		return nil
	}
	return bm.metrics
}

// setReady makes /readyz follow ready (the broker's Ready).
func (bm *brokerMetrics) setReady(ready func() bool) {
	if bm != nil {
		bm.ready.Store(&ready)
	}
}

// url is the /metrics URL, "" when off.
func (bm *brokerMetrics) url() string {
	if bm == nil {
		return ""
	}
	return bm.server.URL()
}

// close stops the HTTP server.
func (bm *brokerMetrics) close() error {
	if bm == nil {
		return nil
	}
	return bm.server.Close()
}
