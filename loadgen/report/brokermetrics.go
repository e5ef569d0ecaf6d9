package report

// BrokerMetrics is the target broker's own view of one run: the
// difference between two scrapes of its /metrics, one before the run's
// load and one after it drained (added within schema version 1; omitted
// when no broker metrics address was known). A failed scrape leaves a
// warning and no figures, never a failed run.
type BrokerMetrics struct {
	// URL is the address scraped.
	URL string `json:"url"`
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
	// Derived figures; a pointer is nil when its divisor was zero.
	FsyncsPerSecond       *float64 `json:"fsyncs_per_second,omitempty"`
	MarkersPerCommit      *float64 `json:"markers_per_commit,omitempty"`
	MarkersWritten        float64  `json:"markers_written"`
	DuplicatesDropped     float64  `json:"duplicates_dropped"`
	TransactionsCommitted float64  `json:"transactions_committed"`
	TransactionsAborted   float64  `json:"transactions_aborted"`
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
type APITime struct {
	API          string  `json:"api"`
	Requests     float64 `json:"requests"`
	QueueMs      float64 `json:"queue_ms"`
	LocalMs      float64 `json:"local_ms"`
	DurabilityMs float64 `json:"durability_ms"`
	SendMs       float64 `json:"send_ms"`
	TotalMs      float64 `json:"total_ms"`
	TotalP99Ms   float64 `json:"total_p99_ms"`
}
