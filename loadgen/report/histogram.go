package report

import (
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram summarizes a latency distribution recorded in microseconds.
type Histogram struct {
	Count         int64              `json:"count"`
	MinMillis     float64            `json:"min_ms"`
	MaxMillis     float64            `json:"max_ms"`
	MeanMillis    float64            `json:"mean_ms"`
	PercentilesMs map[string]float64 `json:"percentiles_ms"`
	// Encoded is the HdrHistogram V2 compressed encoding (base64) of the
	// microsecond histogram; empty if encoding failed.
	Encoded string `json:"hdr,omitempty"`
}

// ReportedPercentiles are the percentiles every Histogram lists.
var ReportedPercentiles = []float64{50, 90, 99, 99.9, 99.99, 100}

// NewLatencyHistogram returns an HdrHistogram for latencies in microseconds
// from 1 µs to 10 minutes with 3 significant digits.
func NewLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, 600_000_000, 3)
}

// Summarize converts a microsecond histogram into its report form. It
// returns nil for an empty histogram.
func Summarize(h *hdrhistogram.Histogram) *Histogram {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	summary := &Histogram{
		Count:         h.TotalCount(),
		MinMillis:     float64(h.Min()) / 1000,
		MaxMillis:     float64(h.Max()) / 1000,
		MeanMillis:    h.Mean() / 1000,
		PercentilesMs: make(map[string]float64, len(ReportedPercentiles)),
	}
	for _, p := range ReportedPercentiles {
		summary.PercentilesMs[strconv.FormatFloat(p, 'f', -1, 64)] = float64(h.ValueAtPercentile(p)) / 1000
	}
	if encoded, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
		summary.Encoded = string(encoded)
	}
	return summary
}

// Percentile returns the summary's value at p (one of
// ReportedPercentiles) in milliseconds, or -1 when h is nil.
func (h *Histogram) Percentile(p float64) float64 {
	if h == nil {
		return -1
	}
	value, ok := h.PercentilesMs[strconv.FormatFloat(p, 'f', -1, 64)]
	if !ok {
		return -1
	}
	return value
}
