package brokerscrape

import (
	"math"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// The broker's metric names this package reads (see broker/metrics).
const (
	requestsTotal     = "exactly_requests_total"
	queueSeconds      = "exactly_request_queue_seconds"
	localSeconds      = "exactly_request_local_seconds"
	durabilitySeconds = "exactly_request_durability_wait_seconds"
	sendSeconds       = "exactly_request_send_seconds"
	totalSeconds      = "exactly_request_total_seconds"
	fsyncTotal        = "exactly_fsync_total"
	markersWritten    = "exactly_transaction_markers_written_total"
	txnCommitted      = "exactly_transactions_committed_total"
	txnAborted        = "exactly_transactions_aborted_total"
	duplicates        = "exactly_idempotent_duplicates_total"
	endTxnSeconds     = "exactly_end_txn_seconds"
	brokerPrefix      = "exactly_"
)

// BreakdownAPIs are the Kafka APIs whose request time the results split,
// in the order they are listed: the ones a delivery mode adds or slows.
var BreakdownAPIs = []string{"Produce", "EndTxn", "AddPartitionsToTxn", "TxnOffsetCommit", "Fetch"}

// series is one series' change between two scrapes (a gauge's value
// after them).
type series struct {
	family string
	labels map[string]string
	value  float64   // counters, untyped series (the change); gauges (the value after)
	after  float64   // counters, untyped series and gauges: the value after
	hist   histogram // histograms
	// backwards is set on an untyped series that went backwards: a
	// counter's reset if the series is a counter, nothing if it is a
	// gauge, so only a reader that knows which says so.
	backwards bool
}

// deltas are the changes of every counter and histogram series.
type deltas struct {
	counters, histograms []series
	// untyped are the changes of series without a TYPE (the JMX
	// exporter's rules that set none); gauges are the values after.
	untyped, gauges []series
	families        map[string]bool // families present after
	reset           bool            // some counter went backwards: the broker restarted
}

// Compare turns two scrapes of url into a run's BrokerMetrics. A scrape
// that failed (its error non-nil) leaves a warning and no figures.
func Compare(url string, before, after *Snapshot, beforeErr, afterErr error) *report.BrokerMetrics {
	out := &report.BrokerMetrics{URL: url}
	for _, err := range []error{beforeErr, afterErr} {
		if err != nil {
			out.Warnings = append(out.Warnings, err.Error())
		}
	}
	if before == nil || after == nil {
		if len(out.Warnings) == 0 {
			out.Warnings = append(out.Warnings, "no scrape to compare")
		}
		return out
	}
	out.Seconds = after.At.Sub(before.At).Seconds()
	d := diff(before.Families, after.Families)
	flavour := detect(d.families)
	fillSeries(out, d)
	if flavour == nil {
		out.Warnings = append(out.Warnings, "no exactly_, Apache Kafka (JMX exporter) or redpanda_ metrics at "+url+
			": not a broker's /metrics?")
	} else {
		out.Flavour = flavour.name
		flavour.fill(out, &d)
	}
	if d.reset {
		out.Warnings = append(out.Warnings, "a counter went backwards between the scrapes (the broker restarted?): its value after is counted from zero")
	}
	return out
}

// diff computes the change of every counter and histogram series present
// in after; a series missing before counts from zero.
func diff(before, after map[string]*dto.MetricFamily) deltas {
	d := deltas{families: map[string]bool{}}
	for name, family := range after {
		d.families[name] = true
		previous := map[string]*dto.Metric{}
		if old := before[name]; old != nil {
			for _, metric := range old.GetMetric() {
				previous[seriesKey(name, metric)] = metric
			}
		}
		for _, metric := range family.GetMetric() {
			old := previous[seriesKey(name, metric)]
			s := series{family: name, labels: labelMap(metric)}
			switch family.GetType() {
			case dto.MetricType_COUNTER:
				s.value = metric.GetCounter().GetValue()
				if old != nil {
					s.value -= old.GetCounter().GetValue()
				}
				if s.value < 0 {
					d.reset, s.value = true, metric.GetCounter().GetValue()
				}
				d.counters = append(d.counters, s)
			case dto.MetricType_HISTOGRAM:
				s.hist = histogramOf(metric.GetHistogram())
				if old != nil {
					s.hist = s.hist.minus(histogramOf(old.GetHistogram()))
				}
				if s.hist.count < 0 {
					d.reset, s.hist = true, histogramOf(metric.GetHistogram())
				}
				d.histograms = append(d.histograms, s)
			case dto.MetricType_UNTYPED:
				s.value = metric.GetUntyped().GetValue()
				s.after = s.value
				if old != nil {
					s.value -= old.GetUntyped().GetValue()
				}
				if s.value < 0 {
					s.backwards, s.value = true, metric.GetUntyped().GetValue()
				}
				d.untyped = append(d.untyped, s)
			case dto.MetricType_GAUGE:
				s.value = metric.GetGauge().GetValue()
				s.after = s.value
				d.gauges = append(d.gauges, s)
			}
		}
	}
	return d
}

func labelMap(metric *dto.Metric) map[string]string {
	labels := make(map[string]string, len(metric.GetLabel()))
	for _, pair := range metric.GetLabel() {
		labels[pair.GetName()] = pair.GetValue()
	}
	return labels
}

// matches reports whether s is of family and carries every label of want.
func (s series) matches(family string, want map[string]string) bool {
	if s.family != family {
		return false
	}
	for name, value := range want {
		if s.labels[name] != value {
			return false
		}
	}
	return true
}

// counter sums the changes of family's series carrying want's labels.
func (d deltas) counter(family string, want map[string]string) float64 {
	total := 0.0
	for _, s := range d.counters {
		if s.matches(family, want) {
			total += s.value
		}
	}
	return total
}

// histogram merges the changes of family's series carrying want's labels
// (buckets added bound by bound).
func (d deltas) histogram(family string, want map[string]string) histogram {
	var merged histogram
	byBound := map[float64]int{}
	for _, s := range d.histograms {
		if !s.matches(family, want) {
			continue
		}
		merged.count += s.hist.count
		merged.sum += s.hist.sum
		for i, bound := range s.hist.bounds {
			index, seen := byBound[bound]
			if !seen {
				index = len(merged.bounds)
				byBound[bound] = index
				merged.bounds = append(merged.bounds, bound)
				merged.counts = append(merged.counts, 0)
			}
			merged.counts[index] += s.hist.counts[i]
		}
	}
	return merged
}

// fillSeries sets out's counters and histograms that moved, whatever
// the flavour.
func fillSeries(out *report.BrokerMetrics, d deltas) {
	for _, s := range d.counters {
		if s.value != 0 {
			if out.Counters == nil {
				out.Counters = map[string]float64{}
			}
			out.Counters[keyOf(s)] = tidy(s.value)
		}
	}
	for _, s := range d.histograms {
		if s.hist.count > 0 {
			if out.Histograms == nil {
				out.Histograms = map[string]report.BrokerHistogram{}
			}
			out.Histograms[keyOf(s)] = report.BrokerHistogram{Count: uint64(s.hist.count), Sum: tidy(s.hist.sum),
				P50: finite(s.hist.quantile(0.5)), P99: finite(s.hist.quantile(0.99))}
		}
	}
}

// fillExactly sets the derived figures from this broker's own names.
func fillExactly(out *report.BrokerMetrics, d *deltas) {
	var bucketless []string
	for _, api := range BreakdownAPIs {
		if time, ok := apiTime(d, api); ok {
			out.APIs = append(out.APIs, time)
			if total := d.histogram(totalSeconds, map[string]string{"api": api}); total.count > 0 && len(total.bounds) == 0 {
				bucketless = append(bucketless, api)
			}
		}
	}
	if len(bucketless) > 0 {
		out.Notes = append(out.Notes, "no p99 for "+strings.Join(bucketless, ", ")+": the broker publishes their "+totalSeconds+
			" without buckets (its setting metrics.request.histograms), so their p99 is 0, unknown")
	}
	if d.families[fsyncTotal] && out.Seconds > 0 {
		out.FsyncsPerSecond = pointer(d.counter(fsyncTotal, nil) / out.Seconds)
	}
	markers := d.counter(markersWritten, nil)
	committed, aborted := d.counter(txnCommitted, nil), d.counter(txnAborted, nil)
	out.MarkersWritten, out.TransactionsCommitted, out.TransactionsAborted = &markers, &committed, &aborted
	out.DuplicatesDropped = pointer(d.counter(duplicates, nil))
	if ended := committed + aborted; ended > 0 {
		out.MarkersPerCommit = pointer(markers / ended)
	}
	if endTxn := d.histogram(endTxnSeconds, nil); endTxn.count > 0 {
		out.EndTxnMeanMs = pointer(endTxn.sum / endTxn.count * 1000)
	}
}

// apiTime is api's time breakdown; ok is false when it served no request
// between the scrapes.
func apiTime(d *deltas, api string) (report.APITime, bool) {
	want := map[string]string{"api": api}
	total := d.histogram(totalSeconds, want)
	requests := d.counter(requestsTotal, want)
	for _, family := range []string{totalSeconds, queueSeconds, localSeconds, durabilitySeconds, sendSeconds} {
		if requests == 0 {
			// A broker without the counter: every request is observed
			// once in each histogram.
			requests = d.histogram(family, want).count
		}
	}
	if requests <= 0 {
		return report.APITime{}, false
	}
	meanMs := func(family string) float64 {
		h := d.histogram(family, want)
		if h.count <= 0 {
			return 0
		}
		return h.sum / h.count * 1000
	}
	out := report.APITime{API: api, Requests: requests, QueueMs: meanMs(queueSeconds), LocalMs: meanMs(localSeconds),
		DurabilityMs: meanMs(durabilitySeconds), SendMs: meanMs(sendSeconds), TotalMs: meanMs(totalSeconds),
		TotalP99Ms: finite(total.quantile(0.99)) * 1000}
	if total.count <= 0 {
		out.TotalMs = out.QueueMs + out.LocalMs + out.DurabilityMs + out.SendMs
	}
	return out, true
}

// keyOf names a series for the results.
func keyOf(s series) string {
	metric := &dto.Metric{}
	for name, value := range s.labels {
		metric.Label = append(metric.Label, &dto.LabelPair{Name: &name, Value: &value})
	}
	return seriesKey(s.family, metric)
}

func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

func pointer(x float64) *float64 { return &x }

// tidy rounds a difference of two floats to 12 significant digits, so
// that 3.37 − 2.7 reads 0.67, not 0.6699999999999999.
func tidy(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	scale := math.Pow(10, 11-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*scale) / scale
}
