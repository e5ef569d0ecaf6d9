package loadgen

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/livemetrics"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// maxErrorKeys bounds the distinct error names kept per run; later ones are
// counted under "other".
const maxErrorKeys = 64

// hdrHistogram is the HdrHistogram type, named once for brevity.
type hdrHistogram = hdrhistogram.Histogram

// runMetrics collects one run's measurements. Client callbacks (promises,
// the client logger), producers, consumers and the progress goroutine all
// write to it: counters are atomics, everything else is guarded by mu.
type runMetrics struct {
	// warmupEnd (Unix nanoseconds) is set before the load's first record
	// (a consume stage may start before the clock does): records sent
	// before it are verified but not measured.
	warmupEnd atomic.Int64

	ackedAll      atomic.Int64 // records acknowledged, warm-up included
	ackedAllBytes atomic.Int64
	ackedMeasured atomic.Int64 // records sent after warmupEnd and acknowledged
	ackedBytes    atomic.Int64
	errors        atomic.Int64
	retries       atomic.Int64
	// producersDone is when the last producer finished; written by the run's
	// driving goroutine, read after it returns.
	producersDone time.Time

	// stopped is set once a mode is known unsupported: producers stop early.
	stopped atomic.Bool

	// live is the mode's collectors of the loadgen's own /metrics (nil:
	// off); set before the first record, then only read.
	live *livemetrics.Mode

	mu         sync.Mutex
	produceAck *hdrhistogram.Histogram // µs, measured records only, from the header's send time
	// produceAckUncorrected: µs, measured records of paced producers, from
	// when each was handed to the client (see sendTimeOf).
	produceAckUncorrected *hdrhistogram.Histogram
	endToEnd              *hdrhistogram.Histogram // µs, measured records only
	commit                *hdrhistogram.Histogram // µs, EndTransaction(commit) calls
	window                *hdrhistogram.Histogram // µs, produce acks since the last progress tick
	errorsByCode          map[string]int64
	unsupported           string // first reason the target cannot run this mode
	transactions          report.Transactions
}

func newRunMetrics(warmupEnd time.Time) *runMetrics {
	metrics := &runMetrics{
		produceAck:            report.NewLatencyHistogram(),
		produceAckUncorrected: report.NewLatencyHistogram(),
		endToEnd:              report.NewLatencyHistogram(),
		commit:                report.NewLatencyHistogram(),
		window:                report.NewLatencyHistogram(),
		errorsByCode:          make(map[string]int64),
	}
	metrics.setWarmupEnd(warmupEnd)
	return metrics
}

// setWarmupEnd moves the end of the warm-up; call it before the first
// record is sent.
func (m *runMetrics) setWarmupEnd(warmupEnd time.Time) { m.warmupEnd.Store(warmupEnd.UnixNano()) }

// measured reports whether a record sent at sendTime is measured.
func (m *runMetrics) measured(sendTime time.Time) bool {
	return sendTime.UnixNano() >= m.warmupEnd.Load()
}

// warmupEndTime returns the end of the warm-up.
func (m *runMetrics) warmupEndTime() time.Time { return time.Unix(0, m.warmupEnd.Load()) }

// recordAck notes an acknowledged record of size bytes sent at times: its
// latency from the header's send time (scheduled at a fixed rate) and, for
// a paced producer, from its creation (uncorrected). Whether it is
// measured goes by the header's send time.
func (m *runMetrics) recordAck(times ackTimes, now time.Time, size int) {
	m.ackedAll.Add(1)
	m.ackedAllBytes.Add(int64(size))
	m.live.Acked(now.Sub(times.sent))
	latency := now.Sub(times.sent).Microseconds()
	m.mu.Lock()
	_ = m.window.RecordValue(max(latency, 1))
	measured := m.measured(times.sent)
	if measured {
		_ = m.produceAck.RecordValue(max(latency, 1))
		if times.paced {
			_ = m.produceAckUncorrected.RecordValue(max(now.Sub(times.created).Microseconds(), 1))
		}
	}
	m.mu.Unlock()
	if measured {
		m.ackedMeasured.Add(1)
		m.ackedBytes.Add(int64(size))
	}
}

// recordSent notes a record handed to the client (the loadgen's /metrics
// only: the ledger counts sent records for the results).
func (m *runMetrics) recordSent() { m.live.Sent() }

// recordFailed notes a record given up as failed (the loadgen's /metrics
// only, as recordSent).
func (m *runMetrics) recordFailed() { m.live.Failed() }

// recordEndToEnd notes a record a live consumer received.
func (m *runMetrics) recordEndToEnd(sendTime, now time.Time) {
	if !m.measured(sendTime) {
		return
	}
	m.mu.Lock()
	_ = m.endToEnd.RecordValue(max(now.Sub(sendTime).Microseconds(), 1))
	m.mu.Unlock()
}

// recordTransactionEnd notes how a transaction ended and, for commits, how
// long EndTransaction took.
func (m *runMetrics) recordTransactionEnd(committed, aborted bool, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case committed:
		m.transactions.Committed++
		_ = m.commit.RecordValue(max(took.Microseconds(), 1))
	case aborted:
		m.transactions.Aborted++
	default:
		m.transactions.Failed++
	}
}

// recordError counts err by its Kafka error name (or client error text) and
// notes it if it shows the target cannot run this mode.
func (m *runMetrics) recordError(err error) {
	m.errors.Add(1)
	name := errorName(err)
	reason := unsupportedReason(err)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, known := m.errorsByCode[name]; !known && len(m.errorsByCode) >= maxErrorKeys {
		name = "other"
	}
	m.errorsByCode[name]++
	if reason != "" {
		m.markUnsupportedLocked(reason)
	}
}

// markUnsupported notes that the target cannot run this mode and stops the
// producers.
func (m *runMetrics) markUnsupported(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.markUnsupportedLocked(reason)
}

// markUnsupportedLocked keeps the first reason; the caller holds mu.
func (m *runMetrics) markUnsupportedLocked(reason string) {
	if m.unsupported == "" {
		m.unsupported = reason
	}
	m.stopped.Store(true)
}

// unsupportedMode returns why the target cannot run this mode, or "".
func (m *runMetrics) unsupportedMode() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.unsupported
}

// takeWindowP99 returns the p99 produce-ack latency in milliseconds since
// the previous call and starts a new window.
func (m *runMetrics) takeWindowP99() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	p99 := float64(m.window.ValueAtPercentile(99)) / 1000
	m.window.Reset()
	return p99
}

// errorName names err for errors_by_code: the Kafka error name when the
// broker sent one, else "client: " and the error text.
func errorName(err error) string {
	var kafkaErr *kerr.Error
	switch {
	case errors.As(err, &kafkaErr):
		return kafkaErr.Message
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, kgo.ErrClientClosed), errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, kgo.ErrRecordRetries):
		return "client: " + err.Error()
	}
	text := err.Error()
	if len(text) > 100 {
		text = text[:100]
	}
	return "client: " + text
}

// unsupportedMarkers are error texts meaning the target lacks an API or a
// version a mode needs (kgo's "broker is too old" when ApiVersions lacks the
// key, UNSUPPORTED_VERSION from the broker).
var unsupportedMarkers = []string{"broker is too old", "request key is unknown", "UNSUPPORTED_VERSION", "not support"}

// unsupportedReason returns err's text if it means the target does not
// support what was asked, else "".
func unsupportedReason(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, kerr.UnsupportedVersion) {
		return err.Error()
	}
	text := err.Error()
	for _, marker := range unsupportedMarkers {
		if strings.Contains(text, marker) {
			return text
		}
	}
	return ""
}

// noProducerIDMessage is what kgo logs when the broker lacks InitProducerId;
// kgo then produces without a producer id, that is without idempotence.
const noProducerIDMessage = "unable to initialize a producer id because the broker is too old or the client is pinned to an old version, continuing without a producer id"

// clientLogger receives kgo's log lines at info level and above. It counts
// produce retries (kgo logs each failed produce attempt it will retry) and
// notes fatal client errors that show a mode is unsupported.
type clientLogger struct{ metrics *runMetrics }

func (l clientLogger) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l clientLogger) Log(level kgo.LogLevel, message string, keyvals ...any) {
	switch message {
	case "batch in a produce request failed",
		"produce request failed, triggering metadata update",
		"random error while producing, requeueing unattempted request":
		l.metrics.retries.Add(1)
	case noProducerIDMessage:
		// kgo would go on without idempotence: the mode would not be
		// what it claims to measure.
		l.metrics.markUnsupported("InitProducerId is not supported by the target (kgo: " + message + ")")
		return
	}
	if level != kgo.LogLevelError {
		return
	}
	for i := 1; i < len(keyvals); i += 2 {
		if err, ok := keyvals[i].(error); ok && unsupportedReason(err) != "" {
			l.metrics.recordError(err)
			return
		}
	}
}
