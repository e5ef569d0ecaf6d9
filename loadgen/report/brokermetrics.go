package report

// BrokerMetrics is the target broker's own view of one run: the
// difference between two scrapes of its /metrics, one before the run's
// load and one after it drained (added within schema version 1; omitted
// when no broker metrics address was known). A failed scrape leaves a
// warning and no figures, never a failed run.
type BrokerMetrics struct {
	// URL is the address scraped.
	URL string `json:"url"`
	// Flavour names whose metric names were read: "exactly" (this
	// broker's), "kafka-jmx" (Apache Kafka through the Prometheus JMX
	// exporter) or "redpanda" (Redpanda's /public_metrics); "" in results
	// written before other brokers were understood (then "exactly").
	Flavour string `json:"flavour,omitempty"`
	// Notes say what the flavour does not publish (a figure left absent,
	// never a zero) and what a figure means when it differs from this
	// broker's (a median instead of a mean, replicas instead of
	// partitions).
	Notes []string `json:"notes,omitempty"`
	// Seconds is the time between the two scrapes.
	Seconds float64 `json:"seconds,omitempty"`
	// Warnings say what could not be scraped or computed.
	Warnings []string `json:"warnings,omitempty"`
	// Counters are the counters that moved, by series
	// (name{label="value",…}), as the difference between the scrapes.
	Counters map[string]float64 `json:"counters,omitempty"`
	// Histograms are the histograms that observed something between the
	// scrapes, by series, from the differences of their buckets.
	Histograms map[string]BrokerHistogram `json:"histograms,omitempty"`
	// APIs is where each request's time went, per Kafka API that served
	// requests between the scrapes (Produce, EndTxn, AddPartitionsToTxn,
	// TxnOffsetCommit, Fetch, in that order).
	APIs []APITime `json:"apis,omitempty"`
	// Derived figures; a pointer is nil when its divisor was zero or
	// when the broker does not publish what it counts (see Notes).
	FsyncsPerSecond       *float64 `json:"fsyncs_per_second,omitempty"`
	MarkersPerCommit      *float64 `json:"markers_per_commit,omitempty"`
	MarkersWritten        *float64 `json:"markers_written,omitempty"`
	DuplicatesDropped     *float64 `json:"duplicates_dropped,omitempty"`
	TransactionsCommitted *float64 `json:"transactions_committed,omitempty"`
	TransactionsAborted   *float64 `json:"transactions_aborted,omitempty"`
	// BytesIn and BytesOut are the bytes the broker took in from
	// producers and sent out to consumers between the scrapes, RecordsIn
	// the records produced; nil when the broker does not publish them.
	BytesIn   *float64 `json:"bytes_in,omitempty"`
	BytesOut  *float64 `json:"bytes_out,omitempty"`
	RecordsIn *float64 `json:"records_in,omitempty"`
	// UnderReplicatedPartitions (Kafka) and UnderReplicatedReplicas
	// (Redpanda, which counts replicas) are gauges read from the scrape
	// after the load.
	UnderReplicatedPartitions *float64 `json:"under_replicated_partitions,omitempty"`
	UnderReplicatedReplicas   *float64 `json:"under_replicated_replicas,omitempty"`
	// Gauges are coordinator gauges as read after the load, by series
	// (Kafka: groups and offsets held by the group coordinator, the
	// transaction coordinator's marker queues).
	Gauges map[string]float64 `json:"gauges,omitempty"`
	// EndTxnMeanMs is the broker's mean EndTxn time (request to
	// response, markers included) in milliseconds, nil without EndTxn.
	EndTxnMeanMs *float64 `json:"end_txn_mean_ms,omitempty"`
}

// BrokerHistogram is one histogram series over a run: how many
// observations, their sum, and the p50 and p99 estimated from the bucket
// differences (Prometheus' histogram_quantile: linear within a bucket),
// in the histogram's unit (seconds).
type BrokerHistogram struct {
	Count uint64  `json:"count"`
	Sum   float64 `json:"sum"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
}

// APITime is the mean time per request of one Kafka API, split as Kafka's
// RequestMetrics split it, in milliseconds: waiting in the request queue,
// in the handler (local append), waiting for durability (fsync or the
// in-sync replicas), and sending the response. TotalP99Ms is the p99 of
// the whole request.
//
// Statistic says what the milliseconds are: "" (or "mean") the mean over
// the requests served between the scrapes; "median" the broker's own
// median as read after the load (Kafka's JMX exporter publishes request
// times as percentiles of a recent sample, not as sums). TotalOnly says
// the broker publishes the whole request's time only (Redpanda): the
// parts are unknown, not zero.
type APITime struct {
	API          string  `json:"api"`
	Requests     float64 `json:"requests"`
	QueueMs      float64 `json:"queue_ms"`
	LocalMs      float64 `json:"local_ms"`
	DurabilityMs float64 `json:"durability_ms"`
	SendMs       float64 `json:"send_ms"`
	TotalMs      float64 `json:"total_ms"`
	TotalP99Ms   float64 `json:"total_p99_ms"`
	Statistic    string  `json:"statistic,omitempty"`
	TotalOnly    bool    `json:"total_only,omitempty"`
}

// Mean reports whether the times are means over the requests between the
// scrapes.
func (a APITime) Mean() bool { return a.Statistic == "" || a.Statistic == "mean" }
