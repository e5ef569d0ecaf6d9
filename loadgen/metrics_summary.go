package loadgen

import (
	"fmt"

	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/worker"
)

// Names of the histograms a worker's summary carries.
const (
	summaryProduceAck            = "produce_ack"
	summaryProduceAckUncorrected = "produce_ack_uncorrected"
	summaryCommit                = "commit"
	summaryWindow                = "window"
	summaryEndToEnd              = "end_to_end"
)

// takeSummary returns what m measured since the previous call (a load
// worker's summary) and starts afresh: counters are swapped to zero and
// histograms replaced, so each summary is a delta the runner adds up.
func (m *runMetrics) takeSummary() worker.Summary {
	summary := worker.Summary{
		Acked: m.ackedAll.Swap(0), AckedBytes: m.ackedAllBytes.Swap(0),
		Measured: m.ackedMeasured.Swap(0), MeasuredBytes: m.ackedBytes.Swap(0),
		Errors: m.errors.Swap(0), Retries: m.retries.Swap(0),
	}
	m.mu.Lock()
	histograms := map[string]*hdrHistogram{summaryProduceAck: m.produceAck, summaryProduceAckUncorrected: m.produceAckUncorrected,
		summaryCommit: m.commit, summaryWindow: m.window, summaryEndToEnd: m.endToEnd}
	m.produceAck, m.produceAckUncorrected = report.NewLatencyHistogram(), report.NewLatencyHistogram()
	m.commit, m.window, m.endToEnd = report.NewLatencyHistogram(), report.NewLatencyHistogram(), report.NewLatencyHistogram()
	summary.ErrorsByCode, m.errorsByCode = m.errorsByCode, make(map[string]int64)
	summary.Committed, summary.Aborted, summary.Failed = m.transactions.Committed, m.transactions.Aborted, m.transactions.Failed
	m.transactions = report.Transactions{}
	summary.Unsupported = m.unsupported
	m.mu.Unlock()
	for name, histogram := range histograms {
		if histogram.TotalCount() == 0 {
			continue
		}
		encoded := worker.EncodeHistogram(histogram)
		if summary.Histograms == nil {
			summary.Histograms = make(map[string][]byte)
		}
		summary.Histograms[name] = encoded
	}
	if seconds, err := processCPU(); err == nil {
		summary.CPUNanos = int64(seconds * 1e9)
	}
	return summary
}

// mergeSummary adds a worker's summary to m and returns its produce-ack
// histogram (nil if empty), for the worker's own share. A summary whose
// histograms do not decode is refused whole: nothing of it is added.
func (m *runMetrics) mergeSummary(summary worker.Summary) (*hdrHistogram, error) {
	decoded := make(map[string]*hdrHistogram, len(summary.Histograms))
	like := report.NewLatencyHistogram()
	for name, encoded := range summary.Histograms {
		histogram, err := worker.DecodeHistogram(encoded, like)
		if err != nil {
			return nil, fmt.Errorf("a summary whose %s histogram does not decode: %w", name, err)
		}
		decoded[name] = histogram
	}
	m.ackedAll.Add(summary.Acked)
	m.ackedAllBytes.Add(summary.AckedBytes)
	m.ackedMeasured.Add(summary.Measured)
	m.ackedBytes.Add(summary.MeasuredBytes)
	m.errors.Add(summary.Errors)
	m.retries.Add(summary.Retries)
	m.mu.Lock()
	defer m.mu.Unlock()
	targets := map[string]*hdrHistogram{summaryProduceAck: m.produceAck, summaryProduceAckUncorrected: m.produceAckUncorrected,
		summaryCommit: m.commit, summaryWindow: m.window, summaryEndToEnd: m.endToEnd}
	for name, histogram := range decoded {
		if target, ok := targets[name]; ok {
			target.Merge(histogram)
		}
	}
	for name, count := range summary.ErrorsByCode {
		if _, known := m.errorsByCode[name]; !known && len(m.errorsByCode) >= maxErrorKeys {
			name = "other"
		}
		m.errorsByCode[name] += count
	}
	m.transactions.Committed += summary.Committed
	m.transactions.Aborted += summary.Aborted
	m.transactions.Failed += summary.Failed
	if summary.Unsupported != "" {
		m.markUnsupportedLocked(summary.Unsupported)
	}
	return decoded[summaryProduceAck], nil
}
