// Package brokerscrape reads a broker's Prometheus /metrics (the text
// format) and turns two scrapes, one before a run's load and one after it,
// into the run's report.BrokerMetrics: counter deltas, histogram counts,
// sums and percentiles from bucket deltas, and the derived figures the
// dashboard shows (where each request's time went, fsyncs per second,
// markers per commit). It knows the broker's metric names (the contract
// of package broker/metrics) but not the broker: it only speaks HTTP.
package brokerscrape

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// maxBody bounds a scrape's body: a broker with many partitions has a few
// megabytes of series at most.
const maxBody = 64 << 20

// Snapshot is one scrape: the metric families by name, and when.
type Snapshot struct {
	At       time.Time
	Families map[string]*dto.MetricFamily
}

// Scraper scrapes one /metrics address.
type Scraper struct {
	// URL is the address of the broker's /metrics.
	URL    string
	client *http.Client
}

// New returns a scraper of url whose requests time out after timeout.
func New(url string, timeout time.Duration) *Scraper {
	return &Scraper{URL: url, client: &http.Client{Timeout: timeout}}
}

// Scrape fetches and parses the metrics once.
func (s *Scraper) Scrape(ctx context.Context) (*Snapshot, error) {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", s.URL, err)
	}
	// The classic text format: the one TextParser reads.
	request.Header.Set("Accept", "text/plain;version=0.0.4")
	response, err := s.client.Do(request)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", s.URL, err)
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: HTTP status %s", s.URL, response.Status)
	}
	at := time.Now()
	families, err := Parse(io.LimitReader(response.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", s.URL, err)
	}
	return &Snapshot{At: at, Families: families}, nil
}

// Parse reads metrics in the Prometheus text format.
func Parse(in io.Reader) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(in)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return families, nil
}

// seriesKey names one series: the family's name and its labels, sorted,
// as name{a="1",b="2"} (name alone without labels).
func seriesKey(name string, metric *dto.Metric) string {
	labels := make([]string, 0, len(metric.GetLabel()))
	for _, pair := range metric.GetLabel() {
		labels = append(labels, fmt.Sprintf("%s=%q", pair.GetName(), pair.GetValue()))
	}
	if len(labels) == 0 {
		return name
	}
	sort.Strings(labels)
	return name + "{" + strings.Join(labels, ",") + "}"
}

// histogram is a classic histogram's state: cumulative counts by upper
// bound (finite bounds only), the count (the +Inf bucket) and the sum.
type histogram struct {
	bounds []float64 // ascending, finite
	counts []float64 // cumulative, one per bound
	count  float64
	sum    float64
}

func histogramOf(h *dto.Histogram) histogram {
	out := histogram{count: float64(h.GetSampleCount()), sum: h.GetSampleSum()}
	if h.GetSampleCountFloat() != 0 {
		out.count = h.GetSampleCountFloat()
	}
	for _, bucket := range h.GetBucket() {
		if math.IsInf(bucket.GetUpperBound(), +1) {
			continue // the count is the +Inf bucket
		}
		cumulative := float64(bucket.GetCumulativeCount())
		if bucket.GetCumulativeCountFloat() != 0 {
			cumulative = bucket.GetCumulativeCountFloat()
		}
		out.bounds = append(out.bounds, bucket.GetUpperBound())
		out.counts = append(out.counts, cumulative)
	}
	return out
}

// minus returns h − before bucket by bucket (a bucket before lacks counts
// as zero). Both come from the same broker, so their bounds agree.
func (h histogram) minus(before histogram) histogram {
	previous := make(map[float64]float64, len(before.bounds))
	for i, bound := range before.bounds {
		previous[bound] = before.counts[i]
	}
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)),
		count: h.count - before.count, sum: h.sum - before.sum}
	for i, bound := range h.bounds {
		out.counts[i] = h.counts[i] - previous[bound]
	}
	return out
}

// quantile estimates the q-quantile as Prometheus' histogram_quantile
// does: find the bucket holding rank q·count and interpolate linearly
// within it (from 0 for the first bucket); a rank in the +Inf bucket
// returns the highest finite bound. NaN without observations.
func (h histogram) quantile(q float64) float64 {
	if h.count <= 0 {
		return math.NaN()
	}
	rank := q * h.count
	lower, below := 0.0, 0.0
	for i, bound := range h.bounds {
		if h.counts[i] >= rank {
			inBucket := h.counts[i] - below
			if inBucket <= 0 {
				return bound
			}
			if i == 0 && bound <= 0 {
				return bound
			}
			return lower + (bound-lower)*(rank-below)/inBucket
		}
		lower, below = bound, h.counts[i]
	}
	if len(h.bounds) == 0 {
		return math.NaN()
	}
	return h.bounds[len(h.bounds)-1]
}
